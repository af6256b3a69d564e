/**
 * Webhook intake throughput: the bot's `POST /webhooks/media/:jobId` against a
 * bare Fastify + Keyv(Redis) handler doing one get + one set per request, in the
 * same run. Each server runs in its own process (the bot compiled, as in the
 * Docker image), the fake Discord and the emulator stay in this one, and the load
 * comes from autocannon in yet another process, so neither the generator nor the
 * test doubles compete with the server's event loop. One private redis-server
 * serves both. All load from one address, as a media service flushing its
 * backlog would send it: nothing valid may be refused.
 *
 * BENCH_PAIRS (default 9) bot/bare runs of BENCH_SECONDS (default 2) alternate; the
 * ratio is the median of the pairs'. BENCH_NODE_FLAGS / BENCH_BARE_FLAGS add Node
 * flags to the bot / the bare server (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Keyv } from 'keyv';
import KeyvRedis from '@keyv/redis';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, startEmulator } from '../test/emulator/server.js';
import { startFakeDiscord } from '../test/fake-discord/index.js';
import { eventually } from '../test/helpers/harness.js';
import { redisServerInstalled } from '../test/helpers/detect.js';
import { stopChild } from '../test/helpers/stop-child.js';
import {
  botOnPrivateRedis,
  cpuMsOf,
  gcOf,
  gcSince,
  NO_GC,
  type GcTotals,
  median,
  loadFromChild,
  r1,
  vmOf,
  mib,
  type LoadResult,
} from './common.js';

const JOBS = 100;
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
/**
 * Bot/bare runs alternated this many times: the machine's speed drifts, a pair sees the
 * same drift. On a shared 2-core machine single pairs ranged 0.5-1.6, so many short pairs.
 */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 9);

export async function runThroughputBench(): Promise<Record<string, unknown>> {
  if (!redisServerInstalled())
    return { scenario: 'webhook throughput', skipped: 'redis-server not installed' };
  const fake = await startFakeDiscord({ validation: 'off' });
  const emulator = await startEmulator({});
  const { bot, stores, redisUrl, close } = await botOnPrivateRedis({
    fake,
    emulator,
    gateway: true,
    env: { LOG_LEVEL: 'warn', WEBHOOK_SILENCE_MS: '600000' },
  });
  let bare: ReturnType<typeof spawn> | undefined;
  try {
    // 100 live jobs, made the way members make them.
    emulator.setScenario({ hold: true, dropWebhooks: 'all' });
    for (let i = 0; i < JOBS; i++) {
      fake.sendCommand({
        name: 'extend-song',
        // A member each: fair use (max active jobs per member) must not refuse them.
        userId: fake.addUser({ username: `member-${i}` }),
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
      });
    }
    const jobs = await eventually(
      async () => {
        const all = await stores.jobs.listOpen();
        const ready = all.filter((j) => j.taskId && j.message.messageId && j.state === 'queued');
        return ready.length >= JOBS ? ready : undefined;
      },
      120_000,
      'jobs submitted',
    );
    const targets = jobs.map((j) => ({ id: j.id, secret: j.secret, taskId: j.taskId ?? '' }));

    const kv = new Keyv({ store: new KeyvRedis(redisUrl), namespace: 'bare' });
    // The same records as the bot's, so both move the same bytes.
    for (const j of jobs) await kv.set(`job:${j.id}`, j);
    await kv.disconnect();
    const bareProc = spawn(
      process.execPath,
      [
        ...(process.env.BENCH_BARE_FLAGS ?? '').split(' ').filter(Boolean),
        '--import',
        'tsx',
        fileURLToPath(new URL('./bare-server.ts', import.meta.url)),
        redisUrl,
        'bare',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    bare = bareProc;
    const botPid = bot.child.pid ?? 0;
    const bareUrl = await new Promise<string>((resolve, reject) => {
      let out = '';
      bareProc.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n')[0];
        if (out.includes('\n') && line) resolve(line.trim());
      });
      bareProc.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
    });

    // Each run also measures the server process's CPU time per request: unlike req/s, it
    // hardly depends on what else the (shared) machine is doing at that moment.
    const run = async (pid: number, url: string, pathPrefix: string, durationSec = SECONDS) => {
      const gc0 = pid === botPid ? await gcOf(bot.url) : undefined;
      const cpu0 = await cpuMsOf(pid);
      const r = await loadFromChild({
        url,
        pathPrefix,
        jobs: targets,
        connections: CONNECTIONS,
        durationSec,
      });
      const cpu1 = await cpuMsOf(pid);
      // The bot's garbage collection during the run (from its own /metrics).
      const gc = gc0 ? gcSince(gc0, await gcOf(bot.url)) : NO_GC;
      return { ...r, userMs: cpu1.user - cpu0.user, sysMs: cpu1.sys - cpu0.sys, gc };
    };
    const barePid = bareProc.pid ?? 0;
    // Warm both, then alternate so machine noise hits both alike.
    await run(botPid, bot.url, '/webhooks/media/', 1);
    await run(barePid, bareUrl, '/hook/', 1);
    type Run = Awaited<ReturnType<typeof run>>;
    const botRuns: Run[] = [];
    const bareRuns: Run[] = [];
    // Which of the two goes first alternates too, so neither always follows the other.
    for (let i = 0; i < PAIRS; i++) {
      if (i % 2 === 1) bareRuns.push(await run(barePid, bareUrl, '/hook/'));
      botRuns.push(await run(botPid, bot.url, '/webhooks/media/'));
      if (i % 2 === 0) bareRuns.push(await run(barePid, bareUrl, '/hook/'));
    }
    const botVm = await vmOf(bot.child.pid ?? 0);
    // BENCH_BOT_OUTPUT=<prefix>: the bot's output (with BENCH_NODE_FLAGS=--trace-gc-nvp, each GC's account).
    if (process.env.BENCH_BOT_OUTPUT)
      await writeFile(`${process.env.BENCH_BOT_OUTPUT}-throughput.log`, bot.output());

    const mean = (rs: LoadResult[]) => rs.reduce((a, r) => a + r.rps, 0) / rs.length;
    // Total, then user + kernel (the response write's syscall is a large part of a request).
    const cpuUsPerReq = (rs: Run[]) => {
      const n = rs.reduce((a, r) => a + r.total, 0);
      const us = (ms: number) => Math.round((ms * 1000) / n);
      const user = rs.reduce((a, r) => a + r.userMs, 0);
      const sys = rs.reduce((a, r) => a + r.sysMs, 0);
      return `${us(user + sys)} (user ${us(user)}, kernel ${us(sys)})`;
    };
    const botRps = mean(botRuns);
    const botDeliveries = botRuns.reduce((a, r) => a + r.total, 0);
    const botGc = (k: keyof GcTotals) => botRuns.reduce((a, r) => a + r.gc[k], 0);
    const per10k = (ms: number) => r1((ms * 1e4) / botDeliveries);
    const bareRps = mean(bareRuns);
    // Each pair's ratio, and their median as the figure: a slow spell of the (shared)
    // machine lowers one pair, not the result.
    const pairRatios = botRuns.map((b, i) => b.rps / (bareRuns[i]?.rps ?? NaN));
    const ratio = median(pairRatios);
    // CPU per request, pair by pair: steadier than req/s when the machine is shared.
    const cpuOf = (r: Run) => (r.userMs + r.sysMs) / r.total;
    const cpuRatio = median(
      botRuns.map((b, i) => {
        const bare = bareRuns[i];
        return bare ? cpuOf(b) / cpuOf(bare) : NaN;
      }),
    );
    const refused = botRuns.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
    // Per run; the target is on the median run (a noisy spell of the machine hits one run).
    const p99 = median(botRuns.map((r) => r.p99));
    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    return {
      scenario: `webhook throughput, ${JOBS} jobs, ${CONNECTIONS} connections, one address; bot, bare handler and autocannon each in its own process`,
      'bot req/s': Math.round(botRps),
      'bare fastify+keyv/redis get+set req/s': Math.round(bareRps),
      'ratio bot/bare (median of pairs)': Math.round(ratio * 100) / 100,
      'ratio of each pair': pairRatios.map((r) => Math.round(r * 100) / 100).join(' '),
      'bot deliveries': botDeliveries,
      'bot refused (non-2xx)': botRuns.reduce((a, r) => a + r.non2xx, 0),
      'bot errors/timeouts': botRuns.reduce((a, r) => a + r.errors + r.timeouts, 0),
      'bot p50 ms': r1(Math.max(...botRuns.map((r) => r.p50))),
      'bot p99 ms (median run)': r1(p99),
      'bot p99 ms (worst run)': r1(Math.max(...botRuns.map((r) => r.p99))),
      'bare p99 ms (median run)': r1(median(bareRuns.map((r) => r.p99))),
      'bot CPU µs/request': cpuUsPerReq(botRuns),
      'bare CPU µs/request': cpuUsPerReq(bareRuns),
      'CPU per request bot/bare (median of pairs)': Math.round(cpuRatio * 100) / 100,
      'bot GC ms per 10k requests (minor / major)': `${per10k(botGc('minorMs'))} / ${per10k(botGc('majorMs'))}`,
      'bot major GCs': botGc('majors'),
      'bot rss MiB after load': mib(botVm.rss),
      'target ratio ≥ 0.9': met(ratio >= 0.9),
      'target 0 refused': met(refused === 0),
      'target p99 < 10 ms': met(p99 < 10),
      'discord edits during the run': fake.requests.filter((r) => r.method === 'PATCH').length,
    };
  } finally {
    if (bare) await stopChild(bare, { graceMs: 5000 });
    await close();
    await emulator.close();
    await fake.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await runThroughputBench());
  process.exit(0);
}
