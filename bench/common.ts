/** Shared pieces of the benchmarks. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, open, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Keyv } from 'keyv';
import KeyvRedis from '@keyv/redis';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from '../test/emulator/server.js';
import { botCommand, productionEnv, productionNodeFlags } from '../test/helpers/production-node-flags.js';
import { REDIS_URL, eventually, freePort, type Harness } from '../test/helpers/harness.js';
import { pino } from 'pino';
import { privateRedis } from '../test/helpers/private-redis.js';
import { stopChild } from '../test/helpers/stop-child.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import { jobOperations } from '../src/services/operations/index.js';
import type { JobRecord } from '../src/services/store/types.js';

export const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};
export const median = (xs: number[]): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
};
export const r1 = (n: number) => Math.round(n * 10) / 10;
export const mib = (bytes: number) => r1(bytes / 1048576);
/** Decimal megabytes, as the memory target counts them. */
export const mb = (bytes: number) => r1(bytes / 1e6);

export async function redisAnswers(): Promise<boolean> {
  const kv = new Keyv({
    store: new KeyvRedis(REDIS_URL, { throwOnConnectError: true }),
    throwOnErrors: true,
  });
  try {
    await Promise.race([
      kv.get('ping'),
      new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 1500)),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    await kv.disconnect().catch(() => undefined);
  }
}

/** Where startJobs sends commands and reads the jobs back: a harness, or a bot process's store. */
export interface JobStarter {
  fake: Harness['fake'];
  emulator: Harness['emulator'];
  listOpen(): Promise<JobRecord[]>;
}

/**
 * Sends `count` /extend-song commands at once through the fake Discord (spread over
 * `channels`), each from its own member, created beforehand: adding users is the fake's
 * bookkeeping, not something Discord does while a storm arrives. `ackMs` reads each
 * interaction's ack time: INTERACTION_CREATE written to the gateway socket (sendCommand
 * has returned: without compression `ws` writes the frame synchronously) → the callback
 * request parsed by the fake (before its spec checks), in ms; NaN while unanswered.
 * `writtenInMs`: how long writing all the frames took (this process's own time); `acked`:
 * every callback recorded, with the share of that time this process's event loop was busy
 * (near 1: the fake, not the handler, set the pace of the acks).
 */
export function sendCommandStorm(
  fake: Harness['fake'],
  channels: string[],
  count: number,
): { ackMs(): number[]; writtenInMs: number; acked: Promise<{ harnessBusy: number }> } {
  // A member each: fair use (max active jobs per member) must not refuse the storm.
  const users = Array.from({ length: count }, (_, i) => fake.addUser({ username: `member-${i}` }));
  const t0 = performance.now();
  const elu0 = performance.eventLoopUtilization();
  const sent = users.map((userId, i) => {
    const handle = fake.sendCommand({
      name: 'extend-song',
      userId,
      channelId: channels[i % channels.length] ?? fake.defaultChannelId,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    return { handle, at: Date.now() };
  });
  // The fake reads no callback before the last frame is written: part of every ack here.
  const writtenInMs = performance.now() - t0;
  return {
    writtenInMs,
    acked: Promise.all(sent.map((s) => s.handle.response(120_000))).then(() => ({
      harnessBusy: performance.eventLoopUtilization(elu0).utilization,
    })),
    ackMs() {
      const arrived = new Map<string, number>();
      for (const r of fake.requests)
        if (r.method === 'POST' && r.path.endsWith('/callback') && !arrived.has(r.path))
          arrived.set(r.path, r.at);
      return sent.map(
        (s) => (arrived.get(`/interactions/${s.handle.id}/${s.handle.token}/callback`) ?? NaN) - s.at,
      );
    },
  };
}

/**
 * Runs a command storm (sendCommandStorm) with the emulator holding its tasks, and
 * resolves once every job is submitted and has its message, with each ack time.
 */
export async function startJobs(
  on: JobStarter,
  channels: string[],
  count: number,
): Promise<{ jobs: JobRecord[]; ackMs: number[]; writtenInMs: number; harnessBusy: number }> {
  on.emulator.setScenario({ hold: true, dropWebhooks: 'all' });
  const storm = sendCommandStorm(on.fake, channels, count);
  const { harnessBusy } = await storm.acked;
  const jobs = await eventually(
    async () => {
      const all = await on.listOpen();
      const ready = all.filter((j) => j.taskId && j.message.messageId && j.state === 'queued');
      return ready.length >= count ? ready : undefined;
    },
    120_000,
    'jobs submitted',
  );
  return { jobs, ackMs: storm.ackMs(), writtenInMs: storm.writtenInMs, harnessBusy };
}

export function finishedBody(taskId: string) {
  const f = (n: number) => `https://files.example/${taskId}-${n}`;
  return {
    task_id: taskId,
    task_type: 'song',
    status: 'finished',
    video_url: f(0),
    songs: [1, 2].map((n) => ({
      song_id: `${taskId}-s${n}`,
      lyrics: 'la la la',
      audio_url: `${f(n)}.mp3`,
      image_url: `${f(n)}.png`,
      video_url: `${f(n)}.mp4`,
    })),
  };
}

export interface LoadResult {
  rps: number;
  total: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  p50: number;
  p99: number;
}

/** Runs autocannon (bench/load-worker.ts) in a child process against `url`. */
export function loadFromChild(spec: {
  url: string;
  pathPrefix: string;
  jobs: { id: string; secret: string; taskId: string }[];
  connections: number;
  durationSec: number;
}): Promise<LoadResult> {
  const worker = fileURLToPath(new URL('./load-worker.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', worker, JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`load worker exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as LoadResult);
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

export interface BotProcess {
  child: ChildProcess;
  port: number;
  url: string;
  /** Everything it printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/** The store a benchmarked bot runs on: Redis (URL) or the embedded SQLite (data dir). */
export type BotStore = { redisUrl: string } | { dataDir: string };
export type StoreKind = 'redis' | 'sqlite';

/** BENCH_STORES: which stores to measure (`redis,sqlite`, the default; Redis needs redis-server). */
export function benchStores(): StoreKind[] {
  const wanted = (process.env.BENCH_STORES ?? 'redis,sqlite').split(',').map((s) => s.trim());
  return (['redis', 'sqlite'] as const).filter((s) => wanted.includes(s));
}

/**
 * BENCH_HEAP_SNAPSHOTS=<dir>: the bench may ask the bot for heap snapshots (`heapSnapshot`),
 * written there. Bench-only: the flag below exists only in the benchmarked process.
 */
const HEAP_SNAPSHOT_DIR = process.env.BENCH_HEAP_SNAPSHOTS;

/**
 * Starts the bot as `npm start` runs it (the bundle dist/bot/main.js, built first when stale)
 * against the given fake Discord, emulator and store (Redis, or SQLite under a data dir), with
 * the production V8 flags and malloc settings (then `nodeFlags`, for profiling).
 */
export async function spawnBot(
  opts: {
    fake: { token: string; applicationId: string; guildId: string; apiUrl: string };
    emulator: { url: string; apiKey: string };
    nodeFlags?: string[];
    env?: Record<string, string>;
  } & BotStore,
): Promise<BotProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  if (HEAP_SNAPSHOT_DIR) await mkdir(HEAP_SNAPSHOT_DIR, { recursive: true });
  const args = await botCommand([
    // BENCH_NODE_FLAGS: extra flags for the bot under test (e.g. a CPU profile).
    ...(opts.nodeFlags ?? (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)),
    ...(HEAP_SNAPSHOT_DIR ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${HEAP_SNAPSHOT_DIR}`] : []),
    // BENCH_ALLOC_PROFILE=<file>: every allocation sampled, garbage included (bench/alloc-sampler.mjs).
    ...(process.env.BENCH_ALLOC_PROFILE
      ? ['--import', fileURLToPath(new URL('./alloc-sampler.mjs', import.meta.url))]
      : []),
  ]);
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...productionEnv(),
      PATH: process.env.PATH ?? '',
      DISCORD_TOKEN: opts.fake.token,
      DISCORD_APPLICATION_ID: opts.fake.applicationId,
      DISCORD_GUILD_ID: opts.fake.guildId,
      DISCORD_API_URL: opts.fake.apiUrl,
      MEDIA_API_URL: opts.emulator.url,
      MEDIA_API_KEY: opts.emulator.apiKey,
      ...('redisUrl' in opts ? { REDIS_URL: opts.redisUrl } : { DATA_DIR: opts.dataDir }),
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: url,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      ...(process.env.BENCH_ALLOC_PROFILE
        ? {
            BENCH_ALLOC_PROFILE: process.env.BENCH_ALLOC_PROFILE,
            BENCH_ALLOC_PROFILE_MS: process.env.BENCH_ALLOC_PROFILE_MS ?? '40000',
            BENCH_ALLOC_PROFILE_MODE: process.env.BENCH_ALLOC_PROFILE_MODE ?? 'all',
            BENCH_ALLOC_PROFILE_FROM_MS: process.env.BENCH_ALLOC_PROFILE_FROM_MS ?? '0',
          }
        : {}),
      ...opts.env,
    },
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  return {
    child,
    port,
    url,
    output: () => out,
    stop: () => stopChild(child),
  };
}

/**
 * A private redis-server, the bot as its own process on it (ready), and the bot's store
 * opened beside it, to read what the bot wrote. `close` stops and removes all three.
 */
export async function botOnPrivateRedis(opts: Omit<Parameters<typeof botOnStore>[0], 'store'>) {
  const on = await botOnStore({ ...opts, store: 'redis' });
  return { ...on, redisUrl: on.redisUrl ?? '' };
}

/**
 * The bot as its own process (ready) on a fresh store, a private redis-server or SQLite in a
 * temporary data dir, and that store opened beside it, to read what the bot wrote (SQLite: the
 * same file, which the bench only reads). `close` stops and removes them all.
 */
export async function botOnStore(opts: {
  store: StoreKind;
  fake: Parameters<typeof spawnBot>[0]['fake'] & { gateway: { currentSession: unknown } };
  emulator: Parameters<typeof spawnBot>[0]['emulator'];
  env: Record<string, string>;
  /** Wait for the gateway too (the bench sends commands). */
  gateway?: boolean;
}): Promise<{ bot: BotProcess; stores: Stores; redisUrl: string | undefined; close(): Promise<void> }> {
  const redis = opts.store === 'redis' ? await privateRedis() : undefined;
  await redis?.start();
  const redisUrl = redis ? `redis://127.0.0.1:${redis.port}` : undefined;
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-'));
  const stores = await createStores({
    operations: jobOperations,
    ...(redisUrl ? { redisUrl } : {}),
    dataDir,
    logger: pino({ level: 'silent' }),
  });
  const bot = await spawnBot({
    fake: opts.fake,
    emulator: opts.emulator,
    ...(redisUrl ? { redisUrl } : { dataDir }),
    env: opts.env,
  });
  const close = async () => {
    await bot.stop();
    await stores.close().catch(() => undefined);
    await redis?.remove();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await botReady(bot, opts.gateway ? opts.fake : undefined);
  } catch (err) {
    await close();
    throw err;
  }
  return { bot, stores, redisUrl, close };
}

/** Resolves once the bot answers /readyz (and has identified on `fake`'s gateway, when given). */
export async function botReady(
  bot: BotProcess,
  fake?: { gateway: { currentSession: unknown } },
): Promise<void> {
  await eventually(
    async () => (await fetch(`${bot.url}/readyz`).catch(() => undefined))?.status === 200,
    60_000,
    'bot ready',
  );
  if (fake) await eventually(() => fake.gateway.currentSession !== null, 60_000, 'gateway identified');
}

/** The bot's own view (prom-client default metrics): live heap vs what V8 holds. */
export async function heapOf(
  botUrl: string,
): Promise<{ used: number; total: number; external: number; spaces: Record<string, number> }> {
  const metrics = await (await fetch(`${botUrl}/metrics`)).text();
  // Metrics carry labels (instance_id): match the name with or without them.
  const metric = (name: string) =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(metrics)?.[1] ?? NaN);
  // Each V8 heap space's committed size (prom-client's default metrics): new space is the young generation.
  const spaces: Record<string, number> = {};
  for (const m of metrics.matchAll(/^nodejs_heap_space_size_total_bytes\{[^}]*space="(\w+)"[^}]*\} (\S+)/gm))
    spaces[m[1] ?? ''] = Number(m[2]);
  return {
    used: metric('nodejs_heap_size_used_bytes'),
    total: metric('nodejs_heap_size_total_bytes'),
    // Memory outside the heap that heap objects own (Buffers' and ArrayBuffers' bytes, mostly in
    // the malloc arena): freed only when V8 collects the objects, garbage or not.
    external: metric('nodejs_external_memory_bytes'),
    spaces,
  };
}

/** VmRSS and VmHWM (lifetime peak) of a process, in bytes (Linux /proc). */
export async function vmOf(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/**
 * Where a process's resident memory is (Linux /proc/<pid>/smaps), in bytes: the node binary's
 * own pages, the main malloc arena (`[heap]`: native allocations of the main thread, buffers'
 * backing stores among them) and the rest of the anonymous memory (V8's heap pages, thread arenas).
 */
async function rssPartsOf(pid: number): Promise<{ binary: number; malloc: number; anon: number }> {
  const smaps = await readFile(`/proc/${pid}/smaps`, 'utf8');
  const parts = { binary: 0, malloc: 0, anon: 0 };
  let into: keyof typeof parts | undefined;
  for (const line of smaps.split('\n')) {
    const region = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (region) {
      const name = region[1] ?? '';
      into =
        name === '[heap]'
          ? 'malloc'
          : name === ''
            ? 'anon'
            : name === process.execPath || name.endsWith('/node')
              ? 'binary'
              : undefined;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && into) parts[into] += Number(rss[1]) * 1024;
  }
  return parts;
}

/** rssPartsOf as one row of a bench's table (the storm and memory benches print it alike). */
export async function rssPartsRow(pid: number): Promise<Record<string, string>> {
  const p = await rssPartsOf(pid);
  return {
    'bot rss then: node binary / malloc arena / other anonymous MiB': `${mib(p.binary)} / ${mib(p.malloc)} / ${mib(p.anon)}`,
  };
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc, 10 ms ticks). */
export async function cpuMsOf(pid: number): Promise<{ user: number; sys: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) * 10, sys: Number(fields[12]) * 10 };
}

/**
 * With BENCH_HEAP_SNAPSHOTS set: asks the bot for a heap snapshot (SIGUSR2, see spawnBot),
 * waits until it is written, and names it `<label>.heapsnapshot`. Without it: nothing.
 */
export async function heapSnapshot(bot: BotProcess, label: string): Promise<string | undefined> {
  const dir = HEAP_SNAPSHOT_DIR;
  if (!dir || bot.child.pid === undefined) return undefined;
  const before = new Set(await readdir(dir));
  bot.child.kill('SIGUSR2');
  const file = await eventually(
    async () => (await readdir(dir)).find((f) => f.endsWith('.heapsnapshot') && !before.has(f)),
    60_000,
    'heap snapshot started',
  );
  // Written as a stream: done once its size holds still (V8 ends the JSON with `]}`).
  let size = -1;
  await eventually(
    async () => {
      const now = (await stat(join(dir, file))).size;
      const done = now === size && (await tail(join(dir, file), 16)).trimEnd().endsWith('}');
      size = now;
      return done;
    },
    120_000,
    'heap snapshot written',
  );
  const named = join(dir, `${label}.heapsnapshot`);
  await rm(named, { force: true });
  await rename(join(dir, file), named);
  return named;
}

async function tail(path: string, bytes: number): Promise<string> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const buf = Buffer.alloc(Math.min(bytes, size));
    await fh.read(buf, 0, buf.length, size - buf.length);
    return buf.toString('utf8');
  } finally {
    await fh.close();
  }
}

/**
 * Time the process spent in minor (scavenge) and major GC so far, and the major GCs'
 * count: prom-client's `nodejs_gc_duration_seconds` on the bot's /metrics.
 */
export interface GcTotals {
  minorMs: number;
  majors: number;
  majorMs: number;
}

export async function gcOf(botUrl: string): Promise<GcTotals> {
  const text = await (await fetch(`${botUrl}/metrics`)).text();
  const read = (series: 'sum' | 'count', kind: string) => {
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`nodejs_gc_duration_seconds_${series}{`) && l.includes(`kind="${kind}"`));
    return Number(line?.split(' ').at(-1) ?? 0);
  };
  return {
    minorMs: read('sum', 'minor') * 1000,
    majors: read('count', 'major'),
    majorMs: read('sum', 'major') * 1000,
  };
}

/** The GC between two readings of gcOf. */
export function gcSince(before: GcTotals, after: GcTotals): GcTotals {
  return {
    minorMs: after.minorMs - before.minorMs,
    majors: after.majors - before.majors,
    majorMs: after.majorMs - before.majorMs,
  };
}
export const NO_GC: GcTotals = { minorMs: 0, majors: 0, majorMs: 0 };

/**
 * The V8 heap limit the bot gets on this machine with its production flags (`node` sizes it from
 * the memory it may use: the machine's, or its container's limit). Above 2 GiB of old generation
 * V8 lets the heap grow to four times what was live after a full GC before the next one.
 */
export function heapLimitMib(): number {
  const out = execFileSync(process.execPath, [
    ...productionNodeFlags(),
    '-p',
    'require("node:v8").getHeapStatistics().heap_size_limit',
  ]);
  return mib(Number(out.toString().trim()));
}
