/**
 * RSS of the bot tracking 10 000 unfinished jobs, store on Redis and on SQLite. The bot runs as
 * its own process, as `npm start` and the Docker image run it (the bundle dist/bot/main.js) against
 * the fake Discord and the emulator in this process and a private redis-server (or
 * SQLite in a temporary data dir);
 * the jobs are written to the store first, so the bot's restart recovery takes
 * them all over (secrets memo, poll timers, edit-queue slots). Prints the child's
 * VmRSS / VmHWM with 0 and with 10 000 jobs, and RSS / heap every 5 s while watched.
 * BENCH_HEAP_SNAPSHOTS=<dir>: a heap snapshot of the bot at the end of each watch.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, startEmulator } from '../test/emulator/server.js';
import { startFakeDiscord } from '../test/fake-discord/index.js';
import { eventually } from '../test/helpers/harness.js';
import { redisServerInstalled } from '../test/helpers/detect.js';
import { privateRedis } from '../test/helpers/private-redis.js';
import { openBackend } from '../src/services/store/backend.js';
import type { JobRecord } from '../src/services/store/types.js';
import {
  benchStores,
  gcOf,
  heapLimitMib,
  heapOf,
  heapSnapshot,
  mb,
  mib,
  rssPartsRow,
  spawnBot,
  vmOf,
  type BotProcess,
  type StoreKind,
} from './common.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 10_000);
/** BENCH_IDLE=0: only the scenario with jobs (the no-jobs one is left out). */
const WITH_IDLE = process.env.BENCH_IDLE !== '0';
const DAY = 86_400_000;
/** How long the bot's RSS is watched after its recovery (BENCH_WATCH_SECONDS). */
const WATCH_S = Number(process.env.BENCH_WATCH_SECONDS ?? 30);
/**
 * After that, how much longer (BENCH_SETTLE_SECONDS, at most) the watch waits for V8's second full
 * GC since the recovery, to read the RSS 5 s after it. The first one comes at the limit V8 set at
 * start-up (4 × the heap then live, on a machine with a large heap limit) and sets a limit from
 * what the bot keeps; the second comes at that limit and hands the emptied pages back
 * (docs/performance.md, "What still holds memory").
 */
const SETTLE_S = Number(process.env.BENCH_SETTLE_SECONDS ?? 90);
/**
 * BENCH_BOT_OUTPUT=<prefix>: the bot's output of each scenario is written to
 * `<prefix>-<store>-<jobs>.log` (with BENCH_NODE_FLAGS=--trace-gc, V8's own account of its GCs).
 */
const BOT_OUTPUT = process.env.BENCH_BOT_OUTPUT;
/** Issue 10: RSS with 10 000 tracked jobs (either store) under 150 MB (decimal, the stricter reading). */
const RSS_TARGET_MB = 150;

async function runBot(jobs: number, store: StoreKind): Promise<Record<string, unknown>> {
  const fake = await startFakeDiscord({ validation: 'off' });
  const emulator = await startEmulator({});
  const redis = store === 'redis' ? await privateRedis() : undefined;
  await redis?.start();
  const dataDir = redis?.dir ?? (await mkdtemp(join(tmpdir(), 'bench-memory-')));
  let bot: BotProcess | undefined;
  try {
    const redisUrl = redis ? `redis://127.0.0.1:${redis.port}` : undefined;
    const backend = await openBackend({
      ...(redisUrl ? { redisUrl } : {}),
      dataDir,
      namespace: 'mjb', // the bot's default namespace
      opTimeoutMs: 5000,
      logger: pino({ level: 'silent' }),
    });
    // Live tasks on the service (held at processing, no webhooks): the bot's polls find them
    // running, as for real tracked jobs, instead of failing them as unknown.
    emulator.setScenario({ hold: true, dropWebhooks: 'all' });
    const taskIds: string[] = [];
    for (let start = 0; start < jobs; start += 100) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(100, jobs - start) }, async () => {
          const res = await fetch(`${emulator.url}/song-extend`, {
            method: 'POST',
            headers: { authorization: emulator.apiKey, 'content-type': 'application/json' },
            body: JSON.stringify({
              parent_task_id: FIXTURE_SONG_TASK_ID,
              song_id: FIXTURE_SONG_IDS[0],
              continue_at: 30,
            }),
          });
          if (!res.ok) throw new Error(`emulator refused a task: ${res.status} ${await res.text()}`);
          return ((await res.json()) as { task_id: string }).task_id;
        }),
      );
      taskIds.push(...batch);
    }
    // Written directly (record, task index, the open set): faster than the store's create for a
    // seed this size, which also fills the member's index and the recent-records memo.
    const now = Date.now();
    for (let start = 0; start < jobs; start += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, jobs - start) }, async (_, k) => {
          const id = randomUUID();
          const taskId = taskIds[start + k] ?? '';
          const job: JobRecord = {
            id,
            secret: randomBytes(24).toString('hex'),
            operation: 'song',
            userId: fake.defaultUserId,
            // Older than 1 h, no interaction token: progress is not re-sent, so Discord stays quiet.
            message: {
              channelId: fake.defaultChannelId,
              guildId: fake.guildId,
              messageId: String(BigInt(fake.defaultChannelId) + BigInt(start + k + 1)),
            },
            params: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0], continue_at: 30 },
            state: 'processing',
            taskId,
            percentage: 40,
            createdAt: now - 61 * 60_000,
            updatedAt: now - 60_000,
            version: 3,
          };
          await backend.set(`job:${id}`, job, 7 * DAY);
          await backend.set(`task:${taskId}`, id, 7 * DAY);
          // The open-job index the bot's restart recovery reads (a Redis set; SQLite: sorted).
          if (backend.sets) await backend.sets.add('unfinished-set', id, 7 * DAY);
          else await backend.sorted.add('open', id, job.createdAt);
        }),
      );
    }
    await backend.close();

    bot = await spawnBot({ fake, emulator, ...(redisUrl ? { redisUrl } : { dataDir }) });
    const out = () => bot?.output() ?? '';
    const t0 = Date.now();
    // The watch runs from the recovery's start: the bot reads and schedules its open jobs at
    // their checks' pace (recovery.ts), so its "recovered" line comes once the last page is due.
    await eventually(() => out().includes('resuming open jobs'), 120_000, 'bot recovery');
    const resumingAt = Date.now();
    const resumingMs = resumingAt - t0;
    const pid = bot.child.pid ?? 0;
    const secondsSinceRecovery = () => (Date.now() - resumingAt) / 1000;
    // Full GCs since the recovery (prom-client's count of V8's major GCs on /metrics), and when
    // the first and the second came.
    const botUrl = bot.url;
    const majorsAtRecovery = (await gcOf(botUrl)).majors;
    const fullGcAtS: number[] = [];
    const noteFullGc = async () => {
      const n = (await gcOf(botUrl)).majors - majorsAtRecovery;
      while (fullGcAtS.length < Math.min(n, 2)) fullGcAtS.push(secondsSinceRecovery());
    };
    // Watch for WATCH_S seconds after recovery: the bot polls its jobs meanwhile, as it would live.
    let peak = 0;
    let last = { rss: 0, hwm: 0 };
    const timeline: string[] = [];
    const heapRow = async (rss: number) => {
      const h = await heapOf(botUrl);
      return `${Math.round(mib(rss))}/${Math.round(mib(h.used))}/${Math.round(mib(h.total))}/${Math.round(mib(h.external))}`;
    };
    for (let i = 1; i <= WATCH_S * 5; i++) {
      await new Promise((r) => setTimeout(r, 200));
      last = await vmOf(pid);
      peak = Math.max(peak, last.rss);
      if (i % 5 === 0) await noteFullGc();
      if (i % 25 === 0) timeline.push(await heapRow(last.rss));
    }
    const heap = await heapOf(botUrl);
    const parts = await rssPartsRow(pid);
    const fullGcsByTarget = (await gcOf(botUrl)).majors - majorsAtRecovery;
    // Then on, for at most SETTLE_S: the RSS 5 s after the second full GC since the recovery.
    let settled: string | undefined;
    while (secondsSinceRecovery() < WATCH_S + SETTLE_S) {
      await noteFullGc();
      const second = fullGcAtS[1];
      if (second !== undefined && secondsSinceRecovery() >= second + 5) {
        const now = await vmOf(pid);
        peak = Math.max(peak, now.rss);
        settled = `${mib(now.rss)} MiB (${mb(now.rss)} MB) at ${Math.round(secondsSinceRecovery())} s; rss/used/total/external ${await heapRow(now.rss)}`;
        break;
      }
      await new Promise((r) => setTimeout(r, 1000));
      peak = Math.max(peak, (await vmOf(pid)).rss);
    }
    // Read last: with thousands of jobs the recovery's last page is due after the 30 s watch.
    const resumed = /"open":(\d+)[^\n]*recovered open jobs/.exec(out())?.[1];
    if (BOT_OUTPUT) await writeFile(`${BOT_OUTPUT}-${store}-${jobs}.log`, out());
    await heapSnapshot(bot, `memory-${store}-${jobs}-jobs`);
    return {
      store,
      'tracked jobs': jobs,
      'resumed by the bot, by the end': resumed === undefined ? '–' : Number(resumed),
      'start → resuming s': Math.round(resumingMs / 100) / 10,
      [`bot rss MiB (after ${WATCH_S} s)`]: mib(last.rss),
      [`bot rss MB (after ${WATCH_S} s)`]: mb(last.rss),
      ...(jobs > 0
        ? {
            target: `< ${RSS_TARGET_MB} MB with ${jobs} jobs: ${last.rss < RSS_TARGET_MB * 1e6 ? 'met' : 'NOT met'}`,
          }
        : {}),
      'bot rss MiB (peak while watched)': mib(peak),
      [`full GCs since the recovery, by ${WATCH_S} s`]: fullGcsByTarget,
      'first and second full GC since the recovery, s': fullGcAtS.length
        ? fullGcAtS.map((s) => Math.round(s)).join(', ')
        : `none within ${WATCH_S + SETTLE_S} s`,
      'bot rss 5 s after the second': settled ?? '–',
      'bot VmHWM MiB (lifetime peak)': mib(last.hwm),
      ...parts,
      'bot heap used / total / external MiB': `${mib(heap.used)} / ${mib(heap.total)} / ${mib(heap.external)}`,
      'rss / heap used / heap total / external MiB, every 5 s': timeline.join(' '),
    };
  } finally {
    await bot?.stop();
    await redis?.kill();
    await rm(dataDir, { recursive: true, force: true });
    await emulator.close();
    await fake.close();
  }
}

export async function runMemoryBench(): Promise<Record<string, unknown>[]> {
  const how = 'node dist/bot/main.js';
  // A property of the machine (or its container), not of a scenario: read once.
  const heapLimit = { 'V8 heap limit on this machine MiB': heapLimitMib() };
  const rows: Record<string, unknown>[] = [];
  for (const store of benchStores()) {
    if (store === 'redis' && !redisServerInstalled()) {
      rows.push({ scenario: 'bot RSS on Redis', skipped: 'redis-server not installed' });
      continue;
    }
    if (WITH_IDLE)
      rows.push({
        scenario: `bot RSS, no jobs, ${store} (${how})`,
        ...(await runBot(0, store)),
        ...heapLimit,
      });
    rows.push({
      scenario: `bot RSS, ${JOBS} tracked jobs, ${store} (${how})`,
      ...(await runBot(JOBS, store)),
      ...heapLimit,
    });
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await runMemoryBench()) console.table(r);
  process.exit(0);
}
