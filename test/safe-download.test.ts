/**
 * Safe outbound downloads: only http(s) without credentials, only public addresses
 * (checked after DNS, every address, on every redirect), connected to the address that was
 * checked (no DNS rebinding), operator allow-list, byte cap and one deadline.
 *
 * Every connection these tests make goes to this machine's loopback: the address classes
 * that must never be reached (private, link-local, …) are checked through `checkTarget`
 * and `classifyAddress`, which open no socket.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { classifyAddress, compileAllowList, NO_EXCEPTIONS } from '../src/services/net/address-policy.js';
import {
  checkTarget,
  createSafeDownloader,
  parseTarget,
  readAll,
  SafeDownloadError,
  type Resolver,
  type SafeDownloadOptions,
} from '../src/services/net/safe-download.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface TestServer {
  server: Server;
  port: number;
  origin: string;
  hits: string[];
  handle: (h: Handler) => void;
}

async function startServer(host = '127.0.0.1', port = 0): Promise<TestServer> {
  let handler: Handler = (_req, res) => res.end('ok');
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  server.listen(port, host);
  await once(server, 'listening');
  const actual = (server.address() as AddressInfo).port;
  return {
    server,
    port: actual,
    origin: `http://${host}:${actual}`,
    hits,
    handle: (h) => {
      handler = h;
    },
  };
}

const close = (s: TestServer) =>
  new Promise<void>((r) => {
    s.server.closeAllConnections();
    s.server.close(() => r());
  });

/** A resolver that must not be consulted. */
const noDns: Resolver = (name) => Promise.reject(new Error(`unexpected DNS lookup of ${name}`));
const answers =
  (...addresses: string[]): Resolver =>
  () =>
    Promise.resolve(
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );

async function refusal(p: Promise<unknown>): Promise<SafeDownloadError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SafeDownloadError);
    return err as SafeDownloadError;
  }
  throw new Error('expected a SafeDownloadError');
}

const MIB = 1024 * 1024;

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['64:ff9b::7f00:1', 'rfc6052 of loopback'],
    ['64:ff9b::a00:1', 'rfc6052 of private'],
    ['2002:7f00:1::1', '6to4 of loopback'],
    ['2002:a9fe:a9fe::', '6to4 of linkLocal'],
    ['::7f00:1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'teredo'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['not-an-ip', 'invalid'],
  ])('%s is not public (%s)', (ip, range) => {
    expect(classifyAddress(ip)).toEqual({ public: false, range });
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (ip) => {
    expect(classifyAddress(ip)).toEqual({ public: true });
  });
});

describe('parseTarget: refused before any network', () => {
  it.each([
    ['ftp://files.example/x', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['gopher://127.0.0.1:6379/_INFO', 'scheme'],
    ['data:text/plain,hello', 'scheme'],
    ['javascript:alert(1)', 'scheme'],
    ['http://user:pw@files.example/x', 'credentials'],
    ['https://token@files.example/x', 'credentials'],
    ['not a url', 'invalid_url'],
    ['/relative/path', 'invalid_url'],
  ])('%s → %s', (url, kind) => {
    let err: unknown;
    try {
      parseTarget(url);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SafeDownloadError);
    expect((err as SafeDownloadError).kind).toBe(kind);
    // The reason never repeats the URL (its query may be signed).
    expect((err as SafeDownloadError).message).not.toContain('files.example');
  });
});

describe('checkTarget: every address class, literal and after DNS', () => {
  it.each([
    ['http://127.0.0.1/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://10.0.0.1/', 'private'],
    ['http://0xa.0.0.1/', 'private'],
    ['http://172.20.1.1/', 'private'],
    ['http://192.168.0.10:8080/', 'private'],
    ['http://169.254.169.254/latest/meta-data/', 'linkLocal'],
    ['http://100.100.100.200/', 'carrierGradeNat'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://0/', 'unspecified'],
    ['http://224.0.0.251/', 'multicast'],
    ['http://255.255.255.255/', 'broadcast'],
    ['http://[fe80::1]/', 'linkLocal'],
    ['http://[fd00::1]/', 'uniqueLocal'],
    ['http://[ff02::1]/', 'multicast'],
    ['http://[::]/', 'unspecified'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'rfc6052 of linkLocal'],
  ])('literal %s → %s, no DNS', async (url, range) => {
    const err = await refusal(checkTarget(parseTarget(url), NO_EXCEPTIONS, noDns));
    expect(err.kind).toBe('blocked_address');
    expect(err.detail.range).toBe(range);
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.9.8.7', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.1.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['239.1.1.1', 'multicast'],
    ['::1', 'loopback'],
    ['fe80::abcd', 'linkLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['ff05::2', 'multicast'],
    ['::', 'unspecified'],
    ['::ffff:192.168.0.1', 'private'],
  ])('a name resolving to %s → %s', async (address, range) => {
    const err = await refusal(
      checkTarget(parseTarget('https://cdn.example.test/f.png'), NO_EXCEPTIONS, answers(address)),
    );
    expect(err.kind).toBe('blocked_address');
    expect(err.detail.range).toBe(range);
    expect(err.message).toMatch(/non-public address/);
  });

  it('every address of the answer is checked, not only the first', async () => {
    const err = await refusal(
      checkTarget(
        parseTarget('https://cdn.example.test/f.png'),
        NO_EXCEPTIONS,
        answers('8.8.8.8', '2606:4700::1', '10.0.0.5'),
      ),
    );
    expect(err.detail.range).toBe('private');
  });

  it('a public answer passes with every address kept for the connection', async () => {
    await expect(
      checkTarget(
        parseTarget('https://cdn.example.test/f.png'),
        NO_EXCEPTIONS,
        answers('8.8.8.8', '2606:4700::1'),
      ),
    ).resolves.toEqual({
      kind: 'resolved',
      hostname: 'cdn.example.test',
      addresses: [
        { address: '8.8.8.8', family: 4 },
        { address: '2606:4700::1', family: 6 },
      ],
    });
  });

  it('DNS failures and empty answers are refusals of their own', async () => {
    const nx: Resolver = () =>
      Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));
    const a = await refusal(checkTarget(parseTarget('https://nope.example.test/'), NO_EXCEPTIONS, nx));
    expect(a).toMatchObject({ kind: 'dns', detail: { code: 'ENOTFOUND' } });
    const b = await refusal(checkTarget(parseTarget('https://nope.example.test/'), NO_EXCEPTIONS, answers()));
    expect(b.kind).toBe('dns');
  });

  it('allow-list: a trusted origin skips DNS; a trusted CIDR admits its addresses only', async () => {
    const allow = compileAllowList({
      origins: ['http://localhost:4000', 'https://media.internal'],
      cidrs: ['10.0.0.0/8', 'fd00::/8', '127.0.0.2/32'],
    });
    await expect(checkTarget(parseTarget('http://localhost:4000/r/1.png'), allow, noDns)).resolves.toEqual({
      kind: 'trusted',
    });
    await expect(checkTarget(parseTarget('https://media.internal:443/x'), allow, noDns)).resolves.toEqual({
      kind: 'trusted',
    });
    // Same host, another port or scheme: not the trusted origin.
    expect(
      (await refusal(checkTarget(parseTarget('http://localhost:4001/'), allow, answers('127.0.0.1')))).kind,
    ).toBe('blocked_address');
    expect(
      (await refusal(checkTarget(parseTarget('http://media.internal/'), allow, answers('192.168.1.1')))).kind,
    ).toBe('blocked_address');
    await expect(checkTarget(parseTarget('http://10.1.2.3/'), allow, noDns)).resolves.toEqual({
      kind: 'literal',
      address: '10.1.2.3',
    });
    await expect(checkTarget(parseTarget('http://[::ffff:10.1.2.3]/'), allow, noDns)).resolves.toMatchObject({
      kind: 'literal',
    });
    await expect(
      checkTarget(parseTarget('http://files.lan/'), allow, answers('fd00::7')),
    ).resolves.toMatchObject({
      kind: 'resolved',
    });
    expect((await refusal(checkTarget(parseTarget('http://127.0.0.1/'), allow, noDns))).detail.range).toBe(
      'loopback',
    );
    expect(
      (
        await refusal(
          checkTarget(parseTarget('http://files.lan/'), allow, answers('10.0.0.1', '192.168.0.1')),
        )
      ).detail.range,
    ).toBe('private');
  });
});

describe('download', () => {
  let internal: TestServer; // 127.0.0.1: what must never be reached
  let trusted: TestServer; // 127.0.0.1 too, but its origin is on the allow-list
  const downloader = createSafeDownloader({ resolve: noDns });
  const opts = (over: Partial<SafeDownloadOptions> = {}): SafeDownloadOptions => ({
    maxBytes: MIB,
    timeoutMs: 10_000,
    allow: compileAllowList({ origins: [trusted.origin], cidrs: [] }),
    ...over,
  });

  beforeAll(async () => {
    internal = await startServer();
    trusted = await startServer();
  });
  afterEach(() => {
    vi.useRealTimers();
    internal.handle((_req, res) => res.end('internal secret'));
    internal.hits.length = 0;
    trusted.hits.length = 0;
  });
  afterAll(async () => {
    await downloader.close();
    await close(internal);
    await close(trusted);
  });

  it('a trusted origin is fetched and streamed', async () => {
    trusted.handle((_req, res) => {
      res.setHeader('content-type', 'image/png');
      res.end(Buffer.alloc(5000, 7));
    });
    const res = await downloader.download(`${trusted.origin}/r/1.png?ex=1&hm=abc`, opts());
    expect(res).toMatchObject({ status: 200, contentType: 'image/png', contentLength: 5000 });
    const bytes = await readAll(res);
    expect(bytes.equals(Buffer.alloc(5000, 7))).toBe(true);
  });

  it.each(['127.0.0.1', '0x7f.1', '2130706433', '127.1', '[::ffff:127.0.0.1]'])(
    'the loopback literal %s is refused and never connected to',
    async (host) => {
      const err = await refusal(downloader.download(`http://${host}:${internal.port}/secret`, opts()));
      expect(err).toMatchObject({ kind: 'blocked_address', detail: { range: 'loopback' } });
      expect(internal.hits).toEqual([]);
    },
  );

  it('a name resolving to loopback (the system resolver: localhost) is refused', async () => {
    const system = createSafeDownloader();
    try {
      const err = await refusal(system.download(`http://localhost:${internal.port}/secret`, opts()));
      expect(err.kind).toBe('blocked_address');
      expect(internal.hits).toEqual([]);
    } finally {
      await system.close();
    }
  });

  it('the allow-list admits a localhost origin and a loopback CIDR', async () => {
    const system = createSafeDownloader();
    try {
      internal.handle((_req, res) => res.end('self-hosted'));
      const byOrigin = await system.download(
        `http://localhost:${internal.port}/a`,
        opts({ allow: compileAllowList({ origins: [`http://localhost:${internal.port}`], cidrs: [] }) }),
      );
      expect((await readAll(byOrigin)).toString()).toBe('self-hosted');
      const byCidr = await system.download(
        `http://127.0.0.1:${internal.port}/b`,
        opts({ allow: compileAllowList({ origins: [], cidrs: ['127.0.0.0/8'] }) }),
      );
      expect((await readAll(byCidr)).toString()).toBe('self-hosted');
      expect(internal.hits).toEqual(['/a', '/b']);
    } finally {
      await system.close();
    }
  });

  it('a redirect from a trusted origin to 127.0.0.1 is refused on that hop', async () => {
    trusted.handle((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${internal.port}/secret` });
      res.end();
    });
    const err = await refusal(downloader.download(`${trusted.origin}/file`, opts()));
    expect(err).toMatchObject({ kind: 'blocked_address', detail: { range: 'loopback' } });
    expect(internal.hits).toEqual([]);
  });

  it('a redirect to a name that resolves to a private address is refused (DNS on every hop)', async () => {
    const resolve = vi.fn(answers('169.254.169.254'));
    const d = createSafeDownloader({ resolve });
    try {
      trusted.handle((_req, res) => {
        res.writeHead(307, { location: 'http://metadata.example.test/latest/meta-data/' });
        res.end();
      });
      const err = await refusal(d.download(`${trusted.origin}/file`, opts()));
      expect(err).toMatchObject({ kind: 'blocked_address', detail: { range: 'linkLocal' } });
      expect(resolve).toHaveBeenCalledWith('metadata.example.test');
    } finally {
      await d.close();
    }
  });

  it('redirects: followed within the allowed (relative Location), refused past the limit or to another scheme', async () => {
    trusted.handle((req, res) => {
      const n = Number(/\/hop\/(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
      if (req.url === '/to-ftp') {
        res.writeHead(301, { location: 'ftp://files.example/x' });
        res.end();
      } else if (n < 9) {
        res.writeHead(302, { location: `/hop/${n + 1}` });
        res.end();
      } else res.end('landed');
    });
    const ok = await downloader.download(`${trusted.origin}/hop/6`, opts());
    expect(ok.url).toBe(`${trusted.origin}/hop/9`);
    expect((await readAll(ok)).toString()).toBe('landed');
    expect((await refusal(downloader.download(`${trusted.origin}/hop/0`, opts()))).kind).toBe('redirect');
    expect((await refusal(downloader.download(`${trusted.origin}/to-ftp`, opts()))).kind).toBe('scheme');
  });

  it('DNS rebinding: the connection goes to the address that was checked', async () => {
    // Two servers on one port: 127.0.0.2 is trusted by CIDR (it plays a public host),
    // 127.0.0.1 is not. The system resolver says localhost is 127.0.0.1, and the injected
    // one answers 127.0.0.2 first, then 127.0.0.1: a download that resolved again to
    // connect (by itself or through the system) would reach the internal server.
    const publicSide = await startServer('127.0.0.2');
    const privateSide = await startServer('127.0.0.1', publicSide.port).catch(() => undefined);
    let calls = 0;
    const rebinding: Resolver = () => {
      calls++;
      return answers(calls === 1 ? '127.0.0.2' : '127.0.0.1')('localhost');
    };
    const d = createSafeDownloader({ resolve: rebinding });
    try {
      expect(privateSide, 'port taken on 127.0.0.1; rerun').toBeDefined();
      publicSide.handle((_req, res) => res.end('public content'));
      privateSide?.handle((_req, res) => res.end('internal secret'));
      const allow = compileAllowList({ origins: [], cidrs: ['127.0.0.2/32'] });
      const res = await d.download(`http://localhost:${publicSide.port}/file`, opts({ allow }));
      expect((await readAll(res)).toString()).toBe('public content');
      expect(privateSide?.hits).toEqual([]);
      // The next download asks DNS again, gets 127.0.0.1 and is refused.
      const err = await refusal(d.download(`http://localhost:${publicSide.port}/file`, opts({ allow })));
      expect(err).toMatchObject({ kind: 'blocked_address', detail: { range: 'loopback' } });
      expect(privateSide?.hits).toEqual([]);
    } finally {
      await d.close();
      await close(publicSide);
      if (privateSide) await close(privateSide);
    }
  });

  it('a Content-Length over the cap is refused before the body is read', async () => {
    let closed!: Promise<unknown>;
    trusted.handle((req, res) => {
      closed = once(req.socket, 'close');
      res.writeHead(200, { 'content-length': String(50 * MIB) });
      res.write(Buffer.alloc(1024)); // then nothing: the rest is never sent
    });
    const err = await refusal(downloader.download(`${trusted.origin}/big`, opts({ maxBytes: MIB })));
    expect(err).toMatchObject({ kind: 'too_large', detail: { limitBytes: MIB } });
    expect(err.message).toBe('50 MiB, over the 1 MiB limit');
    await closed; // the connection was dropped, not drained
  });

  it('a body without Content-Length is cut mid-stream at the cap', async () => {
    let sent = 0;
    trusted.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4' }); // chunked: no length declared
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = (): void => {
        while (sent < 8 * MIB && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const res = await downloader.download(`${trusted.origin}/stream`, opts({ maxBytes: 200 * 1024 }));
    expect(res.contentLength).toBeUndefined();
    let received = 0;
    const err = await refusal(
      (async () => {
        for await (const chunk of res.body) received += chunk.byteLength;
      })(),
    );
    expect(err).toMatchObject({ kind: 'too_large', message: 'over the 200 KiB limit' });
    expect(received).toBeLessThanOrEqual(200 * 1024);
    expect(sent).toBeLessThan(8 * MIB);
  });

  it('an HTTP error status is a refusal with its status', async () => {
    trusted.handle((_req, res) => {
      res.statusCode = 403;
      res.end('AccessDenied <Key>signed</Key>');
    });
    const err = await refusal(downloader.download(`${trusted.origin}/x?sig=abc`, opts()));
    expect(err).toMatchObject({
      kind: 'http',
      detail: { status: 403 },
      message: 'the download failed (HTTP 403)',
    });
  });

  it('a connection refused is a network refusal naming the code only', async () => {
    const gone = await startServer();
    const port = gone.port;
    await close(gone);
    const err = await refusal(
      downloader.download(
        `http://127.0.0.1:${port}/x`,
        opts({ allow: compileAllowList({ origins: [`http://127.0.0.1:${port}`], cidrs: [] }) }),
      ),
    );
    expect(err).toMatchObject({ kind: 'network', detail: { code: 'ECONNREFUSED' } });
  });

  it('the deadline covers the wait for the headers (fake timers)', async () => {
    let arrived!: () => void;
    const seen = new Promise<void>((r) => (arrived = r));
    trusted.handle(() => arrived()); // never answers
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const pending = refusal(downloader.download(`${trusted.origin}/slow`, opts({ timeoutMs: 30_000 })));
    await seen;
    vi.advanceTimersByTime(29_999);
    await Promise.resolve();
    let settled = false;
    void pending.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    vi.advanceTimersByTime(1);
    const err = await pending;
    expect(err).toMatchObject({ kind: 'timeout', message: 'timed out after 30 s' });
  });

  it('the deadline covers the body too (fake timers)', async () => {
    trusted.handle((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write(Buffer.alloc(10)); // then stalls
    });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const res = await downloader.download(`${trusted.origin}/stall`, opts({ timeoutMs: 5000 }));
    const it = res.body[Symbol.asyncIterator]();
    expect((await it.next()).value?.byteLength).toBe(10);
    const next = refusal(it.next());
    vi.advanceTimersByTime(5000);
    expect(await next).toMatchObject({ kind: 'timeout' });
  });

  it("the caller's signal cancels the download", async () => {
    trusted.handle(() => undefined); // never answers
    const ac = new AbortController();
    const pending = refusal(downloader.download(`${trusted.origin}/slow`, opts({ signal: ac.signal })));
    await vi.waitFor(() => expect(trusted.hits).toContain('/slow'));
    ac.abort();
    expect(await pending).toMatchObject({ kind: 'aborted' });
  });
});
