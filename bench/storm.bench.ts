/**
 * Storm benchmarks: the bot as its own process (compiled, `npm start`'s settings) on a
 * private Redis and on SQLite (BENCH_STORES), against the fake Discord enforcing Discord's limits (5 edits / 5 s per
 * channel and per interaction token, 50 req/s global) and the emulator, which live in
 * this process with the load. Each job gets 30 progress webhooks over ~3 s, then
 * `finished`. Figures printed; nothing asserted.
 *
 * - fresh tokens, 100 jobs in one channel and over ten channels: finished
 *   webhook → final edit (p50/p95/max), edits per job, 429s, interaction ack p99
 *   beside the same command storm answered by bench/bare-gateway.ts (what the harness
 *   itself costs: the fake reads callbacks on this process's one event loop), the bot's RSS at its peak and once the finals are shown (BENCH_HEAP_SNAPSHOTS=<dir>:
 *   a heap snapshot of the bot then);
 * - expired tokens, 30 jobs in one channel (the fake expires the tokens: channel route,
 *   one bot-token budget): the last final's delay against the budget bound (N finals
 *   ≈ N s, + 2 s), and how many progress edits went out while another job's final waited.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createClient } from '@redis/client';
import { Pool } from 'undici';
import { startEmulator } from '../test/emulator/server.js';
import { startFakeDiscord } from '../test/fake-discord/index.js';
import { eventually } from '../test/helpers/harness.js';
import { redisServerInstalled } from '../test/helpers/detect.js';
import { productionEnv, productionNodeFlags } from '../test/helpers/production-node-flags.js';
import { stopChild } from '../test/helpers/stop-child.js';
import { registrationPlan } from '../src/commands/index.js';
import type { Stores } from '../src/services/store/index.js';
import type { JobRecord } from '../src/services/store/types.js';
import {
  benchStores,
  botOnStore,
  cpuMsOf,
  finishedBody,
  heapOf,
  heapSnapshot,
  mib,
  pct,
  r1,
  rssPartsRow,
  sendCommandStorm,
  startJobs,
  vmOf,
  type BotProcess,
  type StoreKind,
} from './common.js';

const PROGRESS = 30;
const SPREAD_MS = 3000;
/** How soon the fake Discord expires interaction tokens in the expired-tokens storm. */
const TOKEN_TTL_MS = 5000;

/**
 * How long after the last final the bot's RSS is read ("after the storm"); BENCH_SETTLE_MS=30000
 * shows it once V8's memory reducer has run (about 8–20 s after a busy bot goes quiet).
 */
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 5000);

interface StormOptions {
  label: string;
  store: StoreKind;
  jobs: number;
  channels: number;
  /** Let the interaction tokens expire before the storm (channel route only). */
  expiredTokens?: boolean;
}

/** The fake Discord of a storm: Discord's limits enforced, one channel per `o.channels`. */
function fakeOptions(
  o: Pick<StormOptions, 'channels' | 'expiredTokens'>,
): Parameters<typeof startFakeDiscord>[0] {
  return {
    warmUpValidators: true,
    rateLimits: true,
    ...(o.expiredTokens ? { interactionTokenTtlMs: TOKEN_TTL_MS } : {}),
    guild: { channels: Array.from({ length: o.channels }, (_, i) => ({ name: `jobs-${i}` })) },
  };
}

export async function storm(o: StormOptions): Promise<Record<string, unknown>> {
  // The same command storm against a bare gateway handler first: what the harness itself costs.
  const bare = o.expiredTokens ? undefined : await bareHandlerAcks(fakeOptions(o), o.channels, o.jobs);
  const fake = await startFakeDiscord(fakeOptions(o));
  const emulator = await startEmulator({});
  try {
    const { bot, stores, close, redisUrl } = await botOnStore({
      store: o.store,
      fake,
      emulator,
      gateway: true,
      env: {
        LOG_LEVEL: 'warn',
        WEBHOOK_SILENCE_MS: '600000',
        POLL_INITIAL_MS: '600000',
        POLL_MAX_MS: '600000',
      },
    });
    try {
      const redis = redisUrl ? createClient({ url: redisUrl }) : undefined;
      await redis?.connect();
      try {
        return await stormAgainst({ o, fake, emulator, stores, bot, bare, redis });
      } finally {
        await redis?.quit();
      }
    } finally {
      await close();
    }
  } finally {
    await emulator.close();
    await fake.close();
  }
}

async function stormAgainst(a: {
  o: StormOptions;
  fake: Awaited<ReturnType<typeof startFakeDiscord>>;
  emulator: Awaited<ReturnType<typeof startEmulator>>;
  stores: Stores;
  bot: BotProcess;
  /** The same command storm against the bare gateway handler (fresh tokens only). */
  bare: Awaited<ReturnType<typeof bareHandlerAcks>> | undefined;
  /** The bot's private Redis (Redis store only): its command counts. */
  redis: StatsClient | undefined;
}): Promise<Record<string, unknown>> {
  const { o, fake, emulator, stores } = a;
  const botPid = a.bot.child.pid ?? 0;
  const channels = fake.channelIds.slice(0, o.channels);
  const { jobs, ackMs, writtenInMs, harnessBusy } = await startJobs(
    { fake, emulator, listOpen: () => stores.jobs.listOpen() },
    channels,
    o.jobs,
  );
  // Let the submission edits ("queued") settle so the storm starts from a quiet budget.
  await quiet(fake, 1500);
  if (o.expiredTokens) await new Promise((r) => setTimeout(r, TOKEN_TTL_MS));
  const pool = new Pool(a.bot.url, { connections: 64 });
  const latencies: number[] = [];
  const finishedAt = new Map<string, number>();
  let non2xx = 0;
  const count429Before = fake.count429;
  const editsBefore = new Map(
    jobs.map((j) => [j.id, fake.messages.get(j.message.messageId ?? '')?.edits.length ?? 0]),
  );
  let rssPeak = (await vmOf(botPid)).rss;
  const sampler = setInterval(
    () =>
      void vmOf(botPid).then(
        (v) => (rssPeak = Math.max(rssPeak, v.rss)),
        () => undefined,
      ),
    50,
  );

  const post = async (job: JobRecord, body: unknown) => {
    const t0 = performance.now();
    const res = await pool.request({
      method: 'POST',
      path: `/webhooks/media/${job.id}`,
      headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
      body: JSON.stringify(body),
    });
    await res.body.text();
    latencies.push(performance.now() - t0);
    if (res.statusCode >= 300) non2xx++;
  };

  await a.redis?.configResetStat();
  const t0 = Date.now();
  const cpuBefore = await cpuMsOf(botPid);
  await Promise.all(
    jobs.map(async (job) => {
      const taskId = job.taskId ?? '';
      for (let k = 1; k <= PROGRESS; k++) {
        await new Promise((r) => setTimeout(r, (SPREAD_MS / PROGRESS) * (0.5 + Math.random())));
        await post(job, {
          task_id: taskId,
          task_type: 'song',
          status: 'processing',
          percentage: Math.round((k * 99) / PROGRESS),
        });
      }
      finishedAt.set(job.id, Date.now());
      await post(job, finishedBody(taskId));
    }),
  );
  const webhooksDone = Date.now() - t0;

  const finalEditAt = new Map<string, number>();
  await eventually(
    () => {
      for (const job of jobs) {
        if (finalEditAt.has(job.id) || !job.message.messageId) continue;
        const msg = fake.messages.get(job.message.messageId);
        const edit = msg?.edits.find((e) => JSON.stringify(e.after).includes(`${job.taskId}-s2`));
        if (edit) finalEditAt.set(job.id, edit.at);
      }
      return finalEditAt.size === jobs.length;
    },
    180_000,
    'final edits',
  );
  const cpuAfter = await cpuMsOf(botPid);
  const redisCalls = a.redis ? commandCalls(await a.redis.info('commandstats')) : undefined;
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  clearInterval(sampler);
  const rssAfter = (await vmOf(botPid)).rss;
  const partsAfter = await rssPartsRow(botPid);
  const heapAfter = await heapOf(a.bot.url);
  await heapSnapshot(
    a.bot,
    `storm-${o.store}-${o.jobs}-jobs-${o.channels}-channels${o.expiredTokens ? '-expired' : ''}`,
  );

  const toFinal = jobs.map((j) => (finalEditAt.get(j.id) ?? NaN) - (finishedAt.get(j.id) ?? NaN));
  const stormEdits = jobs.map(
    (j) => (fake.messages.get(j.message.messageId ?? '')?.edits.length ?? 0) - (editsBefore.get(j.id) ?? 0),
  );
  const allEdits = jobs.map((j) => fake.messages.get(j.message.messageId ?? '')?.edits.length ?? 0);
  // Progress edits sent while another job's final was known and not yet delivered.
  let progressWhileFinalWaited = 0;
  for (const j of jobs) {
    const msg = fake.messages.get(j.message.messageId ?? '');
    for (const e of msg?.edits ?? []) {
      if (e.at >= (finalEditAt.get(j.id) ?? Infinity)) continue; // its own final
      if (e.at < t0) continue;
      const waiting = jobs.some(
        (k) =>
          k.id !== j.id &&
          (finishedAt.get(k.id) ?? Infinity) + 50 < e.at &&
          (finalEditAt.get(k.id) ?? 0) > e.at,
      );
      if (waiting) progressWhileFinalWaited++;
    }
  }
  const lastFinished = Math.max(...finishedAt.values());
  const lastFinal = Math.max(...finalEditAt.values());
  const routes = new Set(
    jobs.flatMap((j) =>
      (fake.messages.get(j.message.messageId ?? '')?.edits ?? []).filter((e) => e.at >= t0).map((e) => e.via),
    ),
  );
  const result: Record<string, unknown> = {
    scenario: o.label,
    store: o.store,
    jobs: o.jobs,
    channels: o.channels,
    'edit route': [...routes].join('+'),
    webhooks: latencies.length,
    'webhooks refused (non-2xx)': non2xx,
    'webhook phase s': r1(webhooksDone / 1000),
    'webhook p99 ms': r1(pct(latencies, 99)),
    'finished→final p50 ms': r1(pct(toFinal, 50)),
    'finished→final p95 ms': r1(pct(toFinal, 95)),
    'finished→final max ms': r1(Math.max(...toFinal)),
    'edits per message in all (incl. queued) max': Math.max(...allEdits),
    'edits per job (storm) max': Math.max(...stormEdits),
    'edits per job (storm) mean': r1(stormEdits.reduce((a, b) => a + b, 0) / stormEdits.length),
    '429s received': fake.count429 - count429Before,
    'interaction ack p99 ms': r1(pct(ackMs, 99)),
    ...(a.bare ? { 'interaction ack p99 ms (bare handler)': r1(pct(a.bare.ackMs, 99)) } : {}),
    'commands written in ms (harness)': r1(writtenInMs),
    'harness event loop busy until the last ack %': Math.round(harnessBusy * 100),
    ...(a.bare
      ? {
          'commands written in ms (harness, bare handler)': r1(a.bare.writtenInMs),
          'harness event loop busy until the last ack % (bare handler)': Math.round(a.bare.harnessBusy * 100),
        }
      : {}),
    // What the storm cost the bot, whatever the machine's load: from the first webhook to the last final.
    'bot CPU ms (webhooks to the last final)': cpuAfter.user + cpuAfter.sys - cpuBefore.user - cpuBefore.sys,
    ...(redisCalls
      ? {
          'Redis commands per webhook (scripts: each command they run)': r1(
            redisCalls.all / latencies.length,
          ),
          'Redis scripts run per webhook (EVALSHA)': r1(redisCalls.evalsha / latencies.length),
        }
      : {}),
    'bot rss MiB (peak)': mib(rssPeak),
    [`bot rss MiB (${SETTLE_MS / 1000} s after the last final)`]: mib(rssAfter),
    ...partsAfter,
    'bot heap used / total / external MiB (then)': `${mib(heapAfter.used)} / ${mib(heapAfter.total)} / ${mib(heapAfter.external)}`,
    'bot heap new / old space MiB (then)': `${mib(heapAfter.spaces['new'] ?? NaN)} / ${mib(heapAfter.spaces['old'] ?? NaN)}`,
    'spec violations': fake.violations.length,
  };
  if (o.expiredTokens) {
    result['last final after last finished webhook s'] = r1((lastFinal - lastFinished) / 1000);
    result['budget bound s (N finals at 5/5 s, +2 s)'] = o.jobs + 2;
    result['progress edits sent while a final waited'] = progressWhileFinalWaited;
  }
  await pool.close();
  return result;
}

/**
 * Ack times of a command storm answered by bench/bare-gateway.ts (its own process, the
 * bot's gateway and callback clients, nothing else) on a fake Discord of its own set as
 * the bot's (its gateway dispatches to the last session identified), the bot's commands
 * registered there as the bot registers them.
 */
async function bareHandlerAcks(
  fakeOptions: Parameters<typeof startFakeDiscord>[0],
  channels: number,
  count: number,
): Promise<{ ackMs: number[]; writtenInMs: number; harnessBusy: number }> {
  const fake = await startFakeDiscord(fakeOptions);
  try {
    for (const scope of registrationPlan({ userInstall: false, guildId: fake.guildId })) {
      const route = scope.guildId
        ? `/applications/${fake.applicationId}/guilds/${scope.guildId}/commands`
        : `/applications/${fake.applicationId}/commands`;
      const res = await fetch(`${fake.apiUrl}/v10${route}`, {
        method: 'PUT',
        headers: { authorization: `Bot ${fake.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(scope.commands),
      });
      if (!res.ok) throw new Error(`registering the commands for the bare handler: ${res.status}`);
    }
    const bare = spawn(
      process.execPath,
      [
        ...productionNodeFlags(),
        '--import',
        'tsx',
        fileURLToPath(new URL('./bare-gateway.ts', import.meta.url)),
        fake.apiUrl,
        fake.token,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...productionEnv() } },
    );
    try {
      await eventually(() => fake.gateway.currentSession !== null, 60_000, 'bare handler identified');
      const sent = sendCommandStorm(fake, fake.channelIds.slice(0, channels), count);
      const { harnessBusy } = await sent.acked;
      return { ackMs: sent.ackMs(), writtenInMs: sent.writtenInMs, harnessBusy };
    } finally {
      await stopChild(bare);
    }
  } finally {
    await fake.close();
  }
}

/** Resolves once the fake Discord has seen no message edit for `ms`. */
async function quiet(fake: Awaited<ReturnType<typeof startFakeDiscord>>, ms: number): Promise<void> {
  const lastEdit = () => Math.max(0, ...[...fake.messages.values()].flatMap((m) => m.edits.map((e) => e.at)));
  await eventually(() => fake.now() - lastEdit() >= ms, 60_000, 'edits settled');
}

const SCENARIOS = [
  { key: 'one', label: 'fresh tokens, 100 jobs in one channel', jobs: 100, channels: 1 },
  { key: 'ten', label: 'fresh tokens, 100 jobs over ten channels', jobs: 100, channels: 10 },
  {
    key: 'expired',
    label: 'expired tokens, 30 jobs in one channel',
    jobs: 30,
    channels: 1,
    expiredTokens: true,
  },
];

type StatsClient = Pick<ReturnType<typeof createClient>, 'configResetStat' | 'info'>;

/** Calls in Redis's INFO commandstats: all (a script's own commands included) and EVALSHA. */
function commandCalls(stats: string): { all: number; evalsha: number } {
  let all = 0;
  let evalsha = 0;
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const n = Number(m[2]);
    if (m[1] === 'info' || m[1] === 'config|resetstat') continue; // the bench's own
    all += n;
    if (m[1] === 'evalsha') evalsha += n;
  }
  return { all, evalsha };
}

export async function runStormBench(): Promise<Record<string, unknown>[]> {
  /** BENCH_STORMS: which scenarios (`one,ten,expired`, the default). */
  const wanted = (process.env.BENCH_STORMS ?? 'one,ten,expired').split(',').map((w) => w.trim());
  // One storm against the bare handler, discarded: the fake's own code (this process) is then
  // compiled hot for every measured storm, the bare handler's first as the bot's.
  if (wanted.some((w) => w !== 'expired')) await bareHandlerAcks(fakeOptions({ channels: 1 }), 1, 100);
  const rows: Record<string, unknown>[] = [];
  for (const store of benchStores()) {
    if (store === 'redis' && !redisServerInstalled()) {
      rows.push({ scenario: 'webhook storms on Redis', skipped: 'redis-server not installed' });
      continue;
    }
    for (const { key, ...scenario } of SCENARIOS)
      if (wanted.includes(key)) rows.push(await storm({ store, ...scenario }));
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await runStormBench()) console.table(r);
  process.exit(0);
}
