/**
 * The operator's service account, through the running bot and the emulator's `GET /account`:
 * read at start (so `media_account_credits` is in /metrics, the MEDIA_LOW_CREDITS warning
 * fires and `/settings show` has the balance without any job or 402), read again on its
 * interval, and no longer read once the bot stopped. On both stores. Two instances on one
 * Redis read it once per interval between them (one Job Scheduler), and both show it.
 */
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBull } from '../src/services/queues/bull.js';
import { REDIS_URL, eventually, startHarness, type Harness, type HarnessOptions } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';

const READ_EVERY_MS = 300;
const MANAGE = String((1n << 5n) | (1n << 11n));

interface LogLine {
  level: string;
  msg: string;
  credits?: number;
}

const readTimes = (h: Harness): number[] =>
  h.emulator.requests.filter((r) => r.method === 'GET' && r.path === '/account').map((r) => r.receivedAt);
const accountReads = (h: Harness): number => readTimes(h).length;

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

describe('the operator’s account balance with two instances on one redis', needs('redis'), () => {
  let a: Harness;
  let b: Harness;
  const lines: LogLine[] = [];
  const options = (): HarnessOptions => ({
    redis: true,
    env: { LOG_LEVEL: 'info', MEDIA_LOW_CREDITS: '100', SHOW_ACCOUNT_BALANCE: 'true' },
    app: { accountReadEveryMs: READ_EVERY_MS },
    logs: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  });

  beforeAll(async () => {
    a = await startHarness({ ...options(), emulator: { account: { credits: 40, plan: 'starter' } } });
    b = await startHarness({
      ...options(),
      reuse: { fake: a.fake, emulator: a.emulator, namespace: a.namespace },
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('is read once per interval between them, and each shows the last reading', async () => {
    const before = accountReads(a);
    await eventually(() => accountReads(a) >= before + 6, 10_000, 'six readings');
    const reads = readTimes(a).slice(before, before + 6);
    // Each instance on its own timer would have read six times in three intervals.
    expect(reads[5]! - reads[0]!).toBeGreaterThanOrEqual(4 * READ_EVERY_MS);
    for (const h of [a, b]) {
      expect((await creditsMetric(h)).get('starter')).toBe(40);
      expect(await h.app.context.account.latest()).toMatchObject({ credits: 40, plan: 'starter' });
    }
    // Low all along: one warning for the deployment, whichever instance read.
    expect(lines.filter((l) => l.msg === 'the media service account is running low on credits')).toHaveLength(
      1,
    );

    // The other instance's readings reach this one's /metrics.
    a.emulator.setAccount({ credits: 900, plan: 'pro' });
    await eventually(async () => (await creditsMetric(b)).get('pro') === 900, 5_000, 'the top-up on b');
    await eventually(async () => (await creditsMetric(a)).get('pro') === 900, 5_000, 'the top-up on a');
  });

  it('is one Job Scheduler per periodic task in Redis, whatever the number of instances', async () => {
    const bull = await openBull({
      url: REDIS_URL,
      namespace: a.namespace,
      logger: pino({ level: 'silent' }),
    });
    const queue = new Queue('periodic', { connection: bull.connection, prefix: bull.prefix });
    try {
      const schedulers = await queue.getJobSchedulers();
      expect(schedulers.map((s) => [s.key, s.every]).sort()).toEqual([
        ['account-reading', READ_EVERY_MS],
        ['retention-sweep', 3_600_000],
      ]);
    } finally {
      await queue.close();
      await bull.close();
    }
  });

  it('goes on when one instance stops', async () => {
    await a.stopBot();
    const reads = accountReads(b);
    await eventually(() => accountReads(b) >= reads + 2, 5_000, 'readings by the instance left');
  });
});
