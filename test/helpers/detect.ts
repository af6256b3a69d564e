/**
 * The probes behind test/helpers/requirements.ts: what the machine offers some suites (a Redis,
 * the redis-server binary, Chromium, nginx). The global setup runs them once per test run; no
 * vitest runtime here, so the harness, the benches and the playground can import it too.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createClient } from '@keyv/redis';
import type {} from 'vitest';

/** The Redis the suites share (CI's, or the default local one). */
export const REDIS_URL = process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379';

export type Capability = 'redis' | 'redisServer' | 'chromium' | 'nginx';

/** Found: where (the URL or the binary's path). Missing: why, and how to get it, in one line. */
export type Detected = { ok: true; at: string } | { ok: false; reason: string };
export type Capabilities = Record<Capability, Detected>;

declare module 'vitest' {
  export interface ProvidedContext {
    capabilities: Capabilities;
  }
}

/** Whether a Redis answers at `url` within a second. */
export async function redisAnswers(url: string): Promise<boolean> {
  const client = createClient({ url, socket: { connectTimeout: 1_000, reconnectStrategy: false } });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    if (client.isOpen) client.destroy();
  }
}

const runs = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;

/** Whether a private Redis can be started (test/helpers/private-redis.ts). */
export const redisServerInstalled = (): boolean =>
  runs('redis-server', ['--version']) && runs('redis-cli', ['--version']);

export async function detectCapabilities(): Promise<Capabilities> {
  const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
  const nginx = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => runs(p, ['-v']));
  return {
    redis: (await redisAnswers(REDIS_URL))
      ? { ok: true, at: REDIS_URL }
      : { ok: false, reason: `no Redis answers at ${REDIS_URL} (start one, or set REDIS_URL)` },
    redisServer: redisServerInstalled()
      ? { ok: true, at: 'redis-server' }
      : {
          ok: false,
          reason: 'no redis-server/redis-cli on PATH to start a private Redis (apt-get install redis-server)',
        },
    chromium: chromium
      ? { ok: true, at: chromium }
      : { ok: false, reason: 'no Chromium at /usr/bin/chromium (apt-get install chromium)' },
    nginx: nginx
      ? { ok: true, at: nginx }
      : { ok: false, reason: 'no nginx at /usr/sbin/nginx (apt-get install nginx)' },
  };
}

/** One line per missing capability. */
export function missingLines(caps: Capabilities): string[] {
  return Object.values(caps).flatMap((d) => (d.ok ? [] : [d.reason]));
}
