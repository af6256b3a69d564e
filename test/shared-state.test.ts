/**
 * The fast lane's files share workers: undici's coarse clock, started while a file faked
 * `setTimeout`, stays on the fake clock, and no undici timeout over 1 s fires afterwards
 * (media-client's timeout tests failed so, after safe-download's). `resetSharedState`, run
 * after every file, starts it again.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resetSharedState } from './helpers/shared-state.js';

describe('shared state between files', () => {
  let server: Server;
  let origin: string;
  beforeAll(async () => {
    // Answers /quick at once and never answers anything else.
    server = createServer((req, res) => {
      if (req.url === '/quick') res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('undici times out again after a file ran it on fake timers', async () => {
    resetSharedState(); // whatever ran before in this worker
    const agent = new Agent();
    try {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      // Its 5 s headers timeout starts undici's coarse clock, on the fake setTimeout.
      const quick = await request(`${origin}/quick`, { dispatcher: agent, headersTimeout: 5000 });
      await quick.body.text();
      vi.useRealTimers();
      resetSharedState();
      const started = Date.now();
      const silent = await request(`${origin}/silent`, { dispatcher: agent, headersTimeout: 1500 }).catch(
        (e: unknown) => e,
      );
      expect(silent).toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      vi.useRealTimers();
      await agent.destroy();
    }
  }, 15_000);
});
