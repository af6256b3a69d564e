/**
 * The operator's service account, through the running bot and the emulator's `GET /account`:
 * read at start (so `media_account_credits` is in /metrics, the MEDIA_LOW_CREDITS warning
 * fires and `/settings show` has the balance without any job or 402), read again on its
 * interval, and no longer read once the bot stopped. On both stores.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';

const READ_EVERY_MS = 300;
const MANAGE = String((1n << 5n) | (1n << 11n));

interface LogLine {
  level: string;
  msg: string;
  credits?: number;
}

const accountReads = (h: Harness): number =>
  h.emulator.requests.filter((r) => r.method === 'GET' && r.path === '/account').length;

/** The `media_account_credits` samples of /metrics: plan → credits. */
async function creditsMetric(h: Harness): Promise<Map<string, number>> {
  const text = await (await fetch(`${h.baseUrl}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^media_account_credits\{([^}]*)\} (\S+)$/gm)) {
    const plan = /plan="([^"]*)"/.exec(m[1] ?? '')?.[1];
    if (plan !== undefined) out.set(plan, Number(m[2]));
  }
  return out;
}

for (const redis of [false, true]) {
  describe(
    `the operator’s account balance on ${redis ? 'redis' : 'sqlite'}`,
    redis ? needs('redis') : {},
    () => {
      let h: Harness;
      const lines: LogLine[] = [];
      const lowWarnings = () =>
        lines.filter(
          (l) => l.level === 'warn' && l.msg === 'the media service account is running low on credits',
        );

      beforeAll(async () => {
        h = await startHarness({
          redis,
          emulator: { account: { credits: 40, plan: 'starter' } },
          env: { LOG_LEVEL: 'info', MEDIA_LOW_CREDITS: '100', SHOW_ACCOUNT_BALANCE: 'true' },
          app: { accountReadEveryMs: READ_EVERY_MS },
          logs: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
        });
      });
      afterAll(async () => {
        await h?.close();
      });

      it('is read at start: the metric, the low-credit warning and /settings show, with no job run', async () => {
        const started = Date.now();
        await eventually(async () => (await creditsMetric(h)).get('starter') === 40, 5_000, 'the metric');
        expect(Date.now() - started).toBeLessThan(5_000);
        await eventually(() => lowWarnings().length > 0, 5_000, 'the low-credit warning');
        expect(lowWarnings()[0]?.credits).toBe(40);
        // Nothing was submitted: the balance does not wait for a 402.
        expect(h.emulator.requests.filter((r) => r.method === 'POST')).toEqual([]);

        const admin = h.fake.addUser({ username: 'operator', permissions: MANAGE });
        const show = await h.fake
          .sendCommand({ name: 'settings', subcommand: 'show', userId: admin })
          .message(10_000);
        expect(show.ephemeral).toBe(true);
        expect(JSON.stringify(show.data)).toContain('**40** credits left (starter)');
      });

      it('is read again every interval: a top-up ends the warning, a new fall warns once more', async () => {
        h.emulator.setAccount({ credits: 5000, plan: 'pro' });
        await eventually(async () => (await creditsMetric(h)).get('pro') === 5000, 5_000, 'the top-up');
        // One sample: the old plan's series is gone, not left at its last value.
        expect([...(await creditsMetric(h)).keys()]).toEqual(['pro']);
        const warned = lowWarnings().length;
        expect(warned).toBe(1);
        h.emulator.setAccount({ credits: 7 });
        await eventually(async () => (await creditsMetric(h)).get('pro') === 7, 5_000, 'the fall');
        await eventually(() => lowWarnings().length === warned + 1, 5_000, 'a second warning');
        // Still low on the next readings: no repeated warning.
        const reads = accountReads(h);
        await eventually(() => accountReads(h) >= reads + 2, 5_000, 'two more readings');
        expect(lowWarnings()).toHaveLength(warned + 1);
      });

      it('stops reading once the bot stopped', async () => {
        await h.stopBot();
        const reads = accountReads(h);
        // Several intervals: a timer left running would have read again by then.
        await new Promise((r) => setTimeout(r, READ_EVERY_MS * 4));
        expect(accountReads(h)).toBe(reads);
      });
    },
  );
}
