import type { IncomingMessage, ServerResponse } from 'node:http';
import { cdnSignature, signCdn } from '../attachments.js';
import { err, fieldError } from '../errors.js';
import type { Json } from '../json.js';
import { bodyObject, type Router } from '../router.js';
import type { FakeState } from '../state.js';

/** CDN family: `/cdn/attachments/...` and `/media/attachments/...` (signed links), and `POST /attachments/refresh-urls`. */

export function registerCdnRoutes(r: Router, s: FakeState): void {
  r.add('POST', '/attachments/refresh-urls', 'bot', (ctx) => {
    const body = bodyObject(ctx);
    const urls = body['attachment_urls'];
    if (!Array.isArray(urls) || urls.some((u) => typeof u !== 'string')) {
      throw err.invalidForm(fieldError(['attachment_urls'], 'BASE_TYPE_REQUIRED', 'This field is required'));
    }
    const refreshed = urls.map((original): Json => {
      const url = String(original);
      const m = /\/attachments\/\d+\/(\d+)\/([^/?]+)/.exec(url);
      const a = m ? s.attachments.get(m[1] ?? '') : undefined;
      return { original: url, refreshed: a ? signCdn(s, a.id, a.filename, a.channelId).url : url };
    });
    return { status: 200, body: { refreshed_urls: refreshed } };
  });
}

export function serveCdn(s: FakeState, url: URL, req: IncomingMessage, res: ServerResponse): void {
  const gone = (): void => {
    s.cdnRequests.push({ path: url.pathname, status: 404, at: Date.now() });
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('This content is no longer available.');
  };
  const m = /^\/(?:cdn|media)\/attachments\/(\d+)\/(\d+)\/([^/]+)$/.exec(url.pathname);
  const a = m ? s.attachments.get(m[2] ?? '') : undefined;
  if (!m || !a || decodeURIComponent(m[3] ?? '') !== a.filename) {
    gone();
    return;
  }
  const ex = url.searchParams.get('ex') ?? '';
  const is = url.searchParams.get('is') ?? '';
  const hm = url.searchParams.get('hm') ?? '';
  // Unsigned or expired links are refused, like Discord's CDN does since 2024.
  if (hm !== cdnSignature(s, a.id, ex, is) || Number.parseInt(ex, 16) * 1000 <= s.clock.now()) {
    gone();
    return;
  }
  s.cdnRequests.push({ path: url.pathname, status: 200, at: Date.now() });
  res.writeHead(200, {
    'Content-Type': a.contentType,
    'Content-Length': String(a.bytes.length),
    'Cache-Control': 'public, max-age=31536000',
  });
  if (req.method === 'HEAD') res.end();
  else res.end(a.bytes);
}
