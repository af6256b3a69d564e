/**
 * The fast lane's files share workers: undici's coarse clock, started while a file faked
 * `setTimeout`, would stay on the fake clock, and no undici timeout over 1 s would fire afterwards
 * (media-client's timeout tests failed so, after safe-download's). The lane's setup starts it on
 * real timers before any file runs.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runNode } from './helpers/run-node.js';
import { startUndiciClock, undiciTimers } from './helpers/shared-state.js';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

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

  it('undici times out as it should after a file ran it on fake timers, its clock started on real ones first', async () => {
    // undici as a fresh worker has it (this drops its pending timers: nothing else runs here now).
    undiciTimers.reset();
    startUndiciClock(); // what the lane's setup does before every file
    const agent = new Agent();
    try {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      // A 5 s headers timeout: on undici's coarse clock.
      const quick = await request(`${origin}/quick`, { dispatcher: agent, headersTimeout: 5000 });
      await quick.body.text();
      vi.useRealTimers();
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

  it("a module mock stays in its file: the catalogs file after the toy operation's, in one worker, meets the real catalogs", async () => {
    const vitest = join(ROOT, 'node_modules/vitest/vitest.mjs');
    const config = join(ROOT, 'test/fixtures/toy-then-i18n.config.ts');
    const { code, stdout, stderr } = await runNode(
      [vitest, 'run', '--config', config, '--reporter=verbose'],
      {
        cwd: ROOT,
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
        timeoutMs: 110_000,
      },
    );
    const out = stdout + stderr;
    // Both files ran, the toy's first.
    expect(out.indexOf('operations-toy.test.ts >')).toBeGreaterThanOrEqual(0);
    expect(out.indexOf('operations-toy.test.ts >')).toBeLessThan(out.indexOf('i18n.test.ts >'));
    expect(out, out.slice(-3000)).not.toContain('×');
    expect(out).toMatch(/Tests\s+\d+ passed \(/);
    expect(code).toBe(0);
  }, 120_000);
});
