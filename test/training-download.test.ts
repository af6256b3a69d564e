/**
 * Training photos are fetched through the SSRF-safe downloader: a link to an address the
 * operator does not trust is refused with a reason the member can read; a trusted one is
 * read, its size capped.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileAllowList } from '../src/services/net/address-policy.js';
import { createSafeDownloader } from '../src/services/net/safe-download.js';
import { createSafePhotoDownloader, DownloadError } from '../src/services/training/download.js';

let server: Server;
let origin: string;
const downloader = createSafeDownloader();

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': '5000' });
      res.end(Buffer.alloc(5000));
      return;
    }
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(Buffer.from('not really a png'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  origin = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await downloader.close();
  await new Promise((r) => server.close(r));
});

const opts = { headersTimeoutMs: 5000, bodyTimeoutMs: 5000 };

describe('training photo downloads', () => {
  it('refuses a loopback link the operator does not trust, with a readable reason', async () => {
    const download = createSafePhotoDownloader({
      downloader,
      allow: compileAllowList({ origins: ['https://cdn.discordapp.com'], cidrs: [] }),
      maxBytes: 1000,
    });
    const err = await download(`${origin}/photo.png`, opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as DownloadError).kind).toBe('network');
    expect((err as DownloadError).message).toBe('its link points to an address the bot does not fetch from');
    const scheme = await download('file:///etc/passwd', opts).catch((e: unknown) => e);
    expect((scheme as DownloadError).kind).toBe('invalid_url');
  });

  it('reads a trusted origin, and refuses a declared size over the cap', async () => {
    const download = createSafePhotoDownloader({
      downloader,
      allow: compileAllowList({ origins: [origin], cidrs: [] }),
      maxBytes: 1000,
    });
    const res = await download(`${origin}/photo.png`, opts);
    const chunks: Uint8Array[] = [];
    for await (const c of res.body) chunks.push(c);
    expect(Buffer.concat(chunks).toString()).toBe('not really a png');
    const big = await download(`${origin}/big`, opts).catch((e: unknown) => e);
    expect((big as DownloadError).kind).toBe('too_large');
  });
});
