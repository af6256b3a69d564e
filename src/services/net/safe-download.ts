import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { formatBytes } from '../shared/format.js';
import { classifyAddress, describeRange, type AllowList } from './address-policy.js';

/**
 * Outbound GETs of URLs we did not write (result files the media service links, photos
 * members attach): refused unless they are http(s) without credentials and reach a
 * public address, checked after DNS resolution (every address of the answer) and again
 * on every redirect hop, which are followed by hand. The connection goes to the very
 * addresses that were checked (undici's `connect.lookup` answers with them), so a DNS
 * answer that changes between the check and the connect (rebinding) cannot reach a
 * private address. The body is streamed under a byte cap and one deadline for the whole
 * download; nothing here buffers it.
 *
 * Errors are SafeDownloadError with a `kind` and a short reason fit for a "linked instead"
 * note; no message carries the URL (its query may be signed).
 */

export type SafeDownloadErrorKind =
  | 'invalid_url'
  | 'scheme'
  | 'credentials'
  | 'blocked_address'
  | 'dns'
  | 'redirect'
  | 'http'
  | 'too_large'
  | 'timeout'
  | 'aborted'
  | 'network';

export class SafeDownloadError extends Error {
  constructor(
    readonly kind: SafeDownloadErrorKind,
    message: string,
    readonly detail: {
      /** HTTP status (kind `http`). */
      status?: number;
      /** The cap that was exceeded (kind `too_large`). */
      limitBytes?: number;
      /** Why an address was refused, e.g. `loopback`, `private` (kind `blocked_address`). */
      range?: string;
      /** A transport error code such as ECONNREFUSED (kind `network`, `dns`). */
      code?: string;
    } = {},
  ) {
    super(message);
    this.name = 'SafeDownloadError';
  }
}

/** A DNS answer: every address the name resolves to. */
export type Resolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export interface SafeDownloadOptions {
  /** Largest body accepted, in bytes: a larger Content-Length is refused unread, a longer body cut. */
  maxBytes: number;
  /** One deadline for the whole download: every hop, the headers and the body. */
  timeoutMs: number;
  /** What the operator trusts beyond public addresses (origins, CIDRs). */
  allow: AllowList;
  signal?: AbortSignal;
  /** Redirects followed, each re-checked (default 5). */
  maxRedirects?: number;
  /** The Accept header (default any type). */
  accept?: string;
}

export interface SafeResponse {
  /** The URL finally answered (after redirects). Signed: never log it with its query. */
  url: string;
  status: number;
  contentType?: string;
  /** Content-Length when the server declared one (never above `maxBytes`). */
  contentLength?: number;
  /**
   * The body, read once: at most `maxBytes` bytes, within the deadline. Throws
   * SafeDownloadError (`too_large`, `timeout`, `aborted`, `network`).
   */
  body: AsyncIterable<Uint8Array>;
  /** Stops the transfer and frees the connection; safe at any time, more than once. */
  abort(): void;
}

export interface SafeDownloader {
  download(url: string, opts: SafeDownloadOptions): Promise<SafeResponse>;
  /** Closes the shared connection pool (shutdown, tests). */
  close(): Promise<void>;
}

export interface SafeDownloaderDeps {
  /** DNS; default the system resolver (getaddrinfo: /etc/hosts, then DNS), every address. */
  resolve?: Resolver;
  /** Time to establish a TCP/TLS connection (default 10 s, within the download's deadline). */
  connectTimeoutMs?: number;
}

const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const defaultResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true });

/** Drops a body nobody will read: undici reports the abort as an 'error' no one else listens to. */
function discard(body: Dispatcher.ResponseData['body']): void {
  if (body.destroyed) return;
  body.on('error', () => undefined);
  body.destroy();
}

function tooLarge(maxBytes: number, size?: number): SafeDownloadError {
  return new SafeDownloadError(
    'too_large',
    size === undefined
      ? `over the ${formatBytes(maxBytes)} limit`
      : `${formatBytes(size)}, over the ${formatBytes(maxBytes)} limit`,
    { limitBytes: maxBytes },
  );
}

function blocked(range: string): SafeDownloadError {
  return new SafeDownloadError(
    'blocked_address',
    `the link points to a non-public address (${describeRange(range)})`,
    {
      range,
    },
  );
}

/** Scheme and credentials: refused before anything touches the network. */
export function parseTarget(raw: string | URL): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new SafeDownloadError('invalid_url', 'the link is not a valid URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new SafeDownloadError('scheme', `the link is not http(s) (${u.protocol.replace(/:$/, '')})`);
  }
  if (u.username !== '' || u.password !== '') {
    throw new SafeDownloadError('credentials', 'the link carries a user name or password');
  }
  if (u.hostname === '') throw new SafeDownloadError('invalid_url', 'the link has no host');
  return u;
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A DNS answer whose every address is checked; `lookup` for net.connect answering only with it. */
function pinnedLookup(hostname: string, addresses: readonly LookupAddress[]) {
  return (
    host: string,
    options: LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    const list = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
    const first = list[0];
    if (host !== hostname || first === undefined) {
      callback(Object.assign(new Error(`no checked address for ${host}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    if (options.all === true) callback(null, [...list]);
    else callback(null, first.address, first.family);
  };
}

/** How a hop may be reached once checked. */
export type CheckedTarget =
  | { kind: 'trusted' }
  | { kind: 'literal'; address: string }
  | { kind: 'resolved'; hostname: string; addresses: readonly LookupAddress[] };

/**
 * The address check of one hop (already past `parseTarget`): a trusted origin passes as
 * is; an IP literal must be public or inside a trusted CIDR; a name is resolved and every
 * address of the answer must be. Throws SafeDownloadError (`blocked_address`, `dns`).
 */
export async function checkTarget(target: URL, allow: AllowList, resolve: Resolver): Promise<CheckedTarget> {
  if (allow.allowsOrigin(target)) return { kind: 'trusted' };
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) {
    // The URL parser already turned 0x7f.1, 2130706433 or 0177.0.0.1 into 127.0.0.1.
    const verdict = classifyAddress(host);
    if (!verdict.public && !allow.allowsAddress(host)) throw blocked(verdict.range);
    return { kind: 'literal', address: host };
  }
  let addresses: readonly LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch (err) {
    const code = errorCode(err);
    throw new SafeDownloadError('dns', "the link's host name could not be resolved", {
      ...(code ? { code } : {}),
    });
  }
  if (addresses.length === 0) {
    throw new SafeDownloadError('dns', "the link's host name could not be resolved");
  }
  for (const { address } of addresses) {
    const verdict = classifyAddress(address);
    if (!verdict.public && !allow.allowsAddress(address)) throw blocked(verdict.range);
  }
  return { kind: 'resolved', hostname: host, addresses };
}

export function createSafeDownloader(deps: SafeDownloaderDeps = {}): SafeDownloader {
  const resolve = deps.resolve ?? defaultResolver;
  const connectTimeoutMs = deps.connectTimeoutMs ?? 10_000;
  // Trusted origins and IP literals need no pinning: one shared pool.
  const shared = new Agent({ connect: { timeout: connectTimeoutMs } });

  /** The dispatcher for one hop, after its checks; `owned` ones are closed with the download. */
  async function dispatcherFor(
    target: URL,
    allow: AllowList,
  ): Promise<{ dispatcher: Dispatcher; owned?: Agent }> {
    const checked = await checkTarget(target, allow, resolve);
    if (checked.kind !== 'resolved') return { dispatcher: shared };
    const owned = new Agent({
      connect: { timeout: connectTimeoutMs, lookup: pinnedLookup(checked.hostname, checked.addresses) },
      connections: 1,
    });
    return { dispatcher: owned, owned };
  }

  async function download(rawUrl: string, opts: SafeDownloadOptions): Promise<SafeResponse> {
    let target = parseTarget(rawUrl);
    const controller = new AbortController();
    let owned: Agent | undefined;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onCallerAbort);
      if (owned) void owned.destroy().catch(() => undefined);
    };
    const stop = (reason: SafeDownloadError): void => {
      controller.abort(reason);
      finish();
    };
    const timer = setTimeout(
      () => stop(new SafeDownloadError('timeout', `timed out after ${Math.ceil(opts.timeoutMs / 1000)} s`)),
      // setTimeout fires at once past 2^31-1 ms.
      Math.min(opts.timeoutMs, 2 ** 31 - 1),
    );
    const onCallerAbort = (): void => stop(new SafeDownloadError('aborted', 'the download was cancelled'));
    if (opts.signal?.aborted) onCallerAbort();
    else opts.signal?.addEventListener('abort', onCallerAbort, { once: true });

    /** What an error means for the caller: the deadline's or the caller's reason wins. */
    const explain = (err: unknown): SafeDownloadError => {
      const reason: unknown = controller.signal.reason;
      if (controller.signal.aborted && reason instanceof SafeDownloadError) return reason;
      if (err instanceof SafeDownloadError) return err;
      const code = errorCode(err);
      return new SafeDownloadError('network', `the download failed (${code ?? 'network error'})`, {
        ...(code ? { code } : {}),
      });
    };

    try {
      const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
      for (let hop = 0; ; hop++) {
        if (controller.signal.aborted) throw controller.signal.reason;
        const route = await dispatcherFor(target, opts.allow);
        if (owned) void owned.destroy().catch(() => undefined);
        owned = route.owned;
        if (controller.signal.aborted) throw controller.signal.reason;
        const res = await request(target, {
          method: 'GET',
          dispatcher: route.dispatcher,
          headers: { accept: opts.accept ?? '*/*' },
          signal: controller.signal,
          headersTimeout: opts.timeoutMs,
          bodyTimeout: opts.timeoutMs,
        });
        if (REDIRECTS.has(res.statusCode)) {
          discard(res.body);
          const location = res.headers['location'];
          if (hop >= maxRedirects) {
            throw new SafeDownloadError('redirect', `too many redirects (more than ${maxRedirects})`);
          }
          if (typeof location !== 'string') {
            throw new SafeDownloadError('redirect', 'a redirect without a valid Location');
          }
          let next: URL;
          try {
            next = new URL(location, target);
          } catch {
            throw new SafeDownloadError('redirect', 'a redirect without a valid Location');
          }
          target = parseTarget(next);
          continue;
        }
        if (res.statusCode < 200 || res.statusCode >= 300) {
          discard(res.body);
          throw new SafeDownloadError('http', `the download failed (HTTP ${res.statusCode})`, {
            status: res.statusCode,
          });
        }
        const lengthHeader = res.headers['content-length'];
        const contentLength =
          typeof lengthHeader === 'string' && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined;
        if (contentLength !== undefined && contentLength > opts.maxBytes) {
          discard(res.body);
          throw tooLarge(opts.maxBytes, contentLength);
        }
        const typeHeader = res.headers['content-type'];
        const body = res.body;
        async function* capped(): AsyncGenerator<Uint8Array> {
          let total = 0;
          try {
            for await (const chunk of body as AsyncIterable<Buffer>) {
              total += chunk.byteLength;
              if (total > opts.maxBytes) throw tooLarge(opts.maxBytes);
              yield chunk;
            }
          } catch (err) {
            throw explain(err);
          } finally {
            discard(body);
            finish();
          }
        }
        return {
          url: target.href,
          status: res.statusCode,
          ...(typeof typeHeader === 'string' ? { contentType: typeHeader } : {}),
          ...(contentLength !== undefined ? { contentLength } : {}),
          body: capped(),
          abort: () => {
            discard(body);
            finish();
          },
        };
      }
    } catch (err) {
      const out = explain(err);
      finish();
      // A hop's pool made after the deadline fired (finish had already run) goes too.
      if (owned) void owned.destroy().catch(() => undefined);
      throw out;
    }
  }

  return {
    download,
    close: () => shared.close(),
  };
}

/** Reads a whole (capped) body into one Buffer. */
export async function readAll(res: SafeResponse): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    chunks.push(buf);
    size += buf.length;
  }
  return Buffer.concat(chunks, size);
}
