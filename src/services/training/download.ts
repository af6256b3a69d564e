import { formatBytes } from '../../i18n/index.js';
import { inEnglish } from '../operations/fields.js';
import type { MemberText } from '../operations/input.js';
import { createHash } from 'node:crypto';
import { YieldingSha256 } from '../shared/hash.js';
import { Agent, interceptors, request, errors as undiciErrors, type Dispatcher } from 'undici';
import { SNIFF_BYTES, sniffImage, type ImageFormat } from './image-sniff.js';
import type { AllowList } from '../net/address-policy.js';
import { SafeDownloadError, type SafeDownloader, type SafeResponse } from '../net/safe-download.js';

/**
 * Streaming downloads of training photos: only http(s), with timeouts and a
 * byte cap enforced while reading, hashed on the fly. Nothing here holds more
 * than the chunk in flight (plus the first SNIFF_BYTES for the magic bytes).
 */

export type DownloadErrorKind =
  'invalid_url' | 'http' | 'network' | 'timeout' | 'too_large' | 'not_image' | 'mismatch';

/**
 * A photo could not be fetched or is not acceptable: `text` is what the member
 * reads (in their language), `message` the English text (logs, job errors).
 */
export class DownloadError extends Error {
  readonly text: MemberText;
  constructor(
    readonly kind: DownloadErrorKind,
    text: MemberText,
    options?: { cause?: unknown },
  ) {
    super(inEnglish(text), options);
    this.name = 'DownloadError';
    this.text = text;
  }
}

export interface DownloadResponse {
  /** Content-Length when the server sent a valid one. */
  contentLength?: number;
  contentType?: string;
  body: AsyncIterable<Uint8Array>;
  /** Stops the transfer and frees the connection; safe to call at any time, more than once. */
  abort(): void;
}

export interface DownloadRequestOptions {
  /** Time allowed until the response headers arrive. */
  headersTimeoutMs: number;
  /** Longest silence allowed between two body chunks. */
  bodyTimeoutMs: number;
  signal?: AbortSignal;
}

/** Opens a GET on `url`; throws DownloadError for a non-2xx answer or a transport failure. */
export type Downloader = (url: string, opts: DownloadRequestOptions) => Promise<DownloadResponse>;

export interface DownloadLimits {
  maxBytes: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Whole-download deadline (add-time validation); none when unset. */
  totalTimeoutMs?: number;
}

export const DEFAULT_DOWNLOAD_LIMITS: Omit<DownloadLimits, 'maxBytes'> = {
  headersTimeoutMs: 15_000,
  bodyTimeoutMs: 15_000,
  totalTimeoutMs: 60_000,
};

export function parseHttpUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new DownloadError('invalid_url', (tr) => tr.t('training.reason.invalid_url'));
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    const protocol = u.protocol.replace(/:$/, '');
    throw new DownloadError('invalid_url', (tr) => tr.t('training.reason.not_http', { protocol }));
  }
  return u;
}

function toDownloadError(err: unknown, signal?: AbortSignal): DownloadError {
  if (err instanceof DownloadError) return err;
  if (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError ||
    (signal?.aborted === true && signal.reason instanceof Error && signal.reason.name === 'TimeoutError')
  ) {
    return new DownloadError('timeout', (tr) => tr.t('training.reason.timeout'), { cause: err });
  }
  const detail = err instanceof Error ? err.message : String(err);
  return new DownloadError('network', (tr) => tr.t('training.reason.network', { detail }), { cause: err });
}

/**
 * Downloader on undici `request`: follows up to `maxRedirections` redirects
 * (http(s) only), connect timeout, per-request header/body timeouts.
 */
export function createHttpDownloader(
  opts: { dispatcher?: Dispatcher; connectTimeoutMs?: number; maxRedirections?: number } = {},
): Downloader {
  const dispatcher =
    opts.dispatcher ??
    new Agent({ connect: { timeout: opts.connectTimeoutMs ?? 10_000 }, connections: 8 }).compose(
      interceptors.redirect({ maxRedirections: opts.maxRedirections ?? 3 }),
    );
  return async (url, o) => {
    const u = parseHttpUrl(url);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(u, {
        method: 'GET',
        dispatcher,
        headers: { accept: 'image/*' },
        headersTimeout: o.headersTimeoutMs,
        bodyTimeout: o.bodyTimeoutMs,
        ...(o.signal ? { signal: o.signal } : {}),
      });
    } catch (err) {
      throw toDownloadError(err, o.signal);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      discard(res.body);
      const status = res.statusCode;
      throw new DownloadError('http', (tr) => tr.t('training.reason.http', { status }));
    }
    const lengthHeader = res.headers['content-length'];
    const length =
      typeof lengthHeader === 'string' && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined;
    const typeHeader = res.headers['content-type'];
    const body = res.body;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      try {
        for await (const chunk of body as AsyncIterable<Buffer>) yield chunk;
      } catch (err) {
        throw toDownloadError(err, o.signal);
      }
    }
    return {
      ...(length !== undefined ? { contentLength: length } : {}),
      ...(typeof typeHeader === 'string' ? { contentType: typeHeader } : {}),
      body: chunks(),
      abort: () => discard(body),
    };
  };
}

/** Destroys a response body nobody reads any more (its abort error is expected, not a crash). */
function discard(body: Dispatcher.ResponseData['body']): void {
  if (body.destroyed) return;
  body.on('error', () => undefined);
  body.destroy();
}

/** A photo downloaded again is not the one that was added. */
export const CHANGED_MESSAGE: MemberText = (tr) => tr.t('training.reason.mismatch');

export function tooLargeMessage(size: number | undefined, maxBytes: number): MemberText {
  return (tr) =>
    size === undefined
      ? tr.t('training.reason.too_large_unknown', { limit: formatBytes(tr, maxBytes) })
      : tr.t('training.reason.too_large', { size: formatBytes(tr, size), limit: formatBytes(tr, maxBytes) });
}

/**
 * The body's chunks, refusing (before reading) a declared length over the cap
 * and (while reading) any byte past it. The transfer is aborted whenever the
 * consumer stops early or an error is thrown.
 */
export async function* cappedBody(res: DownloadResponse, maxBytes: number): AsyncGenerator<Uint8Array> {
  let complete = false;
  try {
    if (res.contentLength !== undefined && res.contentLength > maxBytes) {
      throw new DownloadError('too_large', tooLargeMessage(res.contentLength, maxBytes));
    }
    let total = 0;
    for await (const chunk of res.body) {
      total += chunk.byteLength;
      if (total > maxBytes) throw new DownloadError('too_large', tooLargeMessage(undefined, maxBytes));
      yield chunk;
    }
    complete = true;
  } finally {
    if (!complete) res.abort();
  }
}

function deadline(limits: DownloadLimits): AbortSignal | undefined {
  return limits.totalTimeoutMs !== undefined ? AbortSignal.timeout(limits.totalTimeoutMs) : undefined;
}

function requestOptions(limits: DownloadLimits, signal: AbortSignal | undefined): DownloadRequestOptions {
  return {
    headersTimeoutMs: limits.headersTimeoutMs,
    bodyTimeoutMs: limits.bodyTimeoutMs,
    ...(signal ? { signal } : {}),
  };
}

export interface InspectedImage {
  sha256: string;
  size: number;
  format: ImageFormat;
}

/**
 * Downloads `url` once, streaming: checks the magic bytes as soon as the first
 * SNIFF_BYTES arrive (a non-image is abandoned right there), enforces the cap
 * and hashes every chunk. Throws DownloadError with a user-facing reason.
 */
export async function inspectImage(
  download: Downloader,
  url: string,
  limits: DownloadLimits,
): Promise<InspectedImage> {
  const signal = deadline(limits);
  try {
    const res = await download(url, requestOptions(limits, signal));
    const hash = createHash('sha256');
    let head: Buffer = Buffer.alloc(0);
    let format: ImageFormat | undefined;
    let size = 0;
    const notImage = () => new DownloadError('not_image', (tr) => tr.t('training.reason.content_not_image'));
    for await (const chunk of cappedBody(res, limits.maxBytes)) {
      size += chunk.byteLength;
      hash.update(chunk);
      if (format === undefined) {
        head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
        if (head.length >= SNIFF_BYTES) {
          format = sniffImage(head);
          if (format === undefined) throw notImage();
        }
      }
    }
    format ??= sniffImage(head);
    if (format === undefined) throw notImage();
    return { sha256: hash.digest('hex'), size, format };
  } catch (err) {
    throw toDownloadError(err, signal);
  }
}

/**
 * The bytes of `url`, read into one buffer of `size` bytes (the size recorded
 * when the photo was added: more or fewer is a changed photo) and hashed on
 * the way, letting the event loop turn every MiB (a local link delivers a
 * whole photo at once); a SHA-256 other than `expectedSha256` is a `mismatch`
 * DownloadError.
 */
export async function downloadVerified(
  download: Downloader,
  url: string,
  limits: DownloadLimits,
  expectedSha256: string,
  size: number,
): Promise<Buffer> {
  const signal = deadline(limits);
  const out = Buffer.allocUnsafe(size);
  const hash = new YieldingSha256();
  let at = 0;
  try {
    const res = await download(url, requestOptions(limits, signal));
    for await (const chunk of cappedBody(res, Math.min(limits.maxBytes, size))) {
      out.set(chunk, at);
      at += chunk.byteLength;
      await hash.update(chunk);
    }
  } catch (err) {
    if (err instanceof DownloadError && err.kind === 'too_large')
      throw new DownloadError('mismatch', CHANGED_MESSAGE);
    throw toDownloadError(err, signal);
  }
  if (at !== size || hash.hex() !== expectedSha256) throw new DownloadError('mismatch', CHANGED_MESSAGE);
  return out;
}

/**
 * The training downloader on the SSRF-safe one (net/safe-download.ts): public addresses
 * only (or what OUTBOUND_ALLOW trusts), each redirect re-checked, the connection pinned to
 * the checked address. Its refusals become DownloadErrors the member can read.
 */
export function createSafePhotoDownloader(opts: {
  downloader: SafeDownloader;
  allow: AllowList;
  maxBytes: number;
  /** The whole download's deadline (the caller's signal may end it sooner). */
  timeoutMs?: number;
}): Downloader {
  return async (url, o) => {
    let res: SafeResponse;
    try {
      res = await opts.downloader.download(url, {
        maxBytes: opts.maxBytes,
        timeoutMs: opts.timeoutMs ?? DEFAULT_DOWNLOAD_LIMITS.totalTimeoutMs ?? 60_000,
        allow: opts.allow,
        accept: 'image/*',
        ...(o.signal ? { signal: o.signal } : {}),
      });
    } catch (err) {
      throw fromSafeError(err, opts.maxBytes);
    }
    async function* chunks(): AsyncGenerator<Uint8Array> {
      try {
        yield* res.body;
      } catch (err) {
        throw fromSafeError(err, opts.maxBytes);
      }
    }
    return {
      ...(res.contentLength !== undefined ? { contentLength: res.contentLength } : {}),
      ...(res.contentType !== undefined ? { contentType: res.contentType } : {}),
      body: chunks(),
      abort: () => res.abort(),
    };
  };
}

function fromSafeError(err: unknown, maxBytes: number): DownloadError {
  if (!(err instanceof SafeDownloadError)) return toDownloadError(err);
  switch (err.kind) {
    case 'invalid_url':
    case 'scheme':
    case 'credentials':
      return new DownloadError('invalid_url', (tr) => tr.t('training.reason.not_plain_url'), { cause: err });
    case 'blocked_address':
      return new DownloadError('network', (tr) => tr.t('training.reason.private_address'), { cause: err });
    case 'http': {
      const status = err.detail.status ?? '?';
      return new DownloadError('http', (tr) => tr.t('training.reason.http', { status }), { cause: err });
    }
    case 'too_large':
      return new DownloadError('too_large', tooLargeMessage(undefined, maxBytes), { cause: err });
    case 'timeout':
    case 'aborted':
      return new DownloadError('timeout', (tr) => tr.t('training.reason.timeout'), { cause: err });
    default: {
      const detail = err.detail.code ?? err.kind;
      return new DownloadError('network', (tr) => tr.t('training.reason.network', { detail }), {
        cause: err,
      });
    }
  }
}
