/**
 * Several instances on one Redis, black-box, when Redis or an instance misbehaves: bot
 * processes (`src/main.ts`, the design's environment) on a private redis-server behind a
 * round-robin proxy for the service's webhooks, the fake Discord with its rate limits on.
 * What BullMQ and the store must give whatever happens: every final reaches its message
 * exactly once, no two edits of one message at once, nothing submitted twice.
 *
 * - every instance's Redis connections dropped (CLIENT KILL) again and again while the
 *   finals arrive: nothing waits on a notification, the finals all show;
 * - Redis restarted (SHUTDOWN SAVE, start again) mid-storm: once it is back, nothing is lost;
 * - an instance paused (SIGSTOP) past its queue lock and resumed: its jobs were taken by
 *   the other, and what it held when paused is not done twice (no second final, no second
 *   gallery post);
 * - one instance SIGKILLed mid-job and started again: a final that came while it was down
 *   shows within 5 s of the restarted instance being ready.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnBot, type BotProcess } from '../bench/common.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, startEmulator, type Emulator } from './emulator/server.js';
import { startFakeDiscord, type FakeDiscord } from './fake-discord/index.js';
import { eventually } from './helpers/harness.js';
import { privateRedis, type PrivateRedis } from './helpers/private-redis.js';
import { needs } from './helpers/requirements.js';
import { startRoundRobinProxy, type RoundRobinProxy } from './helpers/round-robin-proxy.js';

const run = promisify(execFile);

describe('several instances when Redis or an instance misbehaves', needs('redisServer'), () => {
  let redis: PrivateRedis;
  let fake: FakeDiscord;
  let emulator: Emulator;
  let proxy: RoundRobinProxy;
  let upstreams: string[];
  let bots: BotProcess[];

  beforeAll(async () => {
    fake = await startFakeDiscord({
      warmUpValidators: true,
      rateLimits: true,
      editLatencyMs: 20,
      guild: { channels: [{ name: 'general' }, { name: 'gallery' }] },
    });
  });
  afterAll(async () => {
    await fake?.close();
  });

  const setUp = async (): Promise<void> => {
    redis = await privateRedis();
    await redis.start();
    upstreams = [];
    bots = [];
    proxy = await startRoundRobinProxy(upstreams);
    emulator = await startEmulator({ scenario: { stepMs: 400 } });
  };
  afterEach(async (ctx) => {
    // CLUSTER_LOG_DIR=dir: each instance's log, for looking into a failure.
    const dir = process.env.CLUSTER_LOG_DIR;
    if (dir) {
      const { writeFileSync } = await import('node:fs');
      const name = ctx.task.name.slice(0, 30).replace(/\W+/g, '-');
      for (const [i, b] of bots.entries()) writeFileSync(`${dir}/${name}-bot-${i}.log`, b.output());
    }
    await Promise.all(bots.map((b) => b.stop()));
    await proxy?.close();
    await emulator?.close();
    await redis?.remove();
  });

  const start = async (i: number, env: Record<string, string> = {}): Promise<BotProcess> => {
    const bot = await spawnBot({
      fake,
      emulator,
      redisUrl: `redis://127.0.0.1:${redis.port}`,
      env: {
        PUBLIC_URL: proxy.url,
        INSTANCE_ID: `bot-${i}`,
        POLL_INITIAL_MS: '300',
        POLL_MAX_MS: '1500',
        WEBHOOK_SILENCE_MS: '2000',
        ...(process.env.CLUSTER_LOG_DIR ? { LOG_LEVEL: 'debug' } : {}),
        ...env,
      },
    });
    bots[i] = bot;
    upstreams[i] = bot.url;
    // Ready; the first instance also holds the gateway (commands reach it).
    await eventually(
      async () => {
        try {
          const r = (await (await fetch(`${bot.url}/readyz`)).json()) as { ok?: boolean; gateway?: string };
          return r.ok === true && (i > 0 || r.gateway === 'held');
        } catch {
          return false;
        }
      },
      60_000,
      `bot-${i} ready`,
    );
    return bot;
  };

  const sendJobs = async (n: number): Promise<ReturnType<FakeDiscord['sendCommand']>[]> => {
    const handles: ReturnType<FakeDiscord['sendCommand']>[] = [];
    for (let i = 0; i < n; i++) {
      handles.push(
        fake.sendCommand({
          name: 'extend-song',
          userId: fake.addUser({ username: `m-${Date.now()}-${i}` }),
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        }),
      );
    }
    await Promise.all(handles.map((h) => h.message(30_000))).catch((err: unknown) => {
      const session = fake.gateway.currentSession;
      const all = [...fake.gateway.sessions.values()].map(
        (x) => `${x.id.slice(0, 6)} resumes ${x.resumes} conn ${x.connection?.id ?? '-'} seq ${x.seq}`,
      );
      console.log(
        `unanswered: gateway session ${session?.id ?? 'none'} connected ${String(fake.gateway.connected)}; ` +
          `identifies ${fake.gateway.identifies} resumes ${fake.gateway.resumes}; sessions ${all.join(' | ')}; ` +
          `${JSON.stringify(handles.map((h) => fake.interactions.get(h.id)?.callbacks ?? null)).slice(0, 300)}`,
      );
      throw err;
    });
    return handles;
  };

  const songTasks = () => [...emulator.tasks.values()].filter((t) => t.operation === 'song' && !t.fixture);
  const finalUrl = (t: { body: unknown }) => (t.body as { video_url?: string }).video_url;

  /** Every task's final result in its message, carried by exactly one successful edit; no overlaps. */
  const expectFinalsOnce = async (handles: ReturnType<FakeDiscord['sendCommand']>[], since: number) => {
    await eventually(
      () => songTasks().length >= handles.length && songTasks().every((t) => finalUrl(t)),
      60_000,
      'the service finished every task',
    ).catch((err: unknown) => {
      console.log(songTasks().map((t) => `${t.id} ${t.state} ${JSON.stringify(t.body).slice(0, 120)}`));
      throw err;
    });
    const tasks = songTasks();
    await eventually(
      () => {
        const contents = handles.map((h) => JSON.stringify(h.originalMessage ?? ''));
        return tasks.every((t) => contents.some((c) => c.includes(finalUrl(t) ?? '\u0000')));
      },
      60_000,
      'every final result in its message',
    );
    const edits = fake.requests.filter(
      (r) => r.at >= since && r.method === 'PATCH' && r.status >= 200 && r.status < 300,
    );
    const finals = tasks.map(
      (t) => edits.filter((r) => JSON.stringify(r.body).includes(finalUrl(t) ?? '\u0000')).length,
    );
    expect(
      finals.filter((n) => n !== 1),
      `final edits per task: ${finals.join(',')}`,
    ).toEqual([]);
    expect(fake.concurrentEdits.filter((e) => e.at >= since)).toEqual([]);
    expect(emulator.requests.filter((r) => r.path === '/song-extend' && r.statusCode < 300)).toHaveLength(
      handles.length,
    );
  };

  it('every instance’s Redis connections dropped again and again while the finals arrive: every final shows once', async () => {
    await setUp();
    await start(0);
    await start(1);
    const since = Date.now();
    const handles = await sendJobs(12);
    await eventually(() => songTasks().length >= 12, 30_000, 'jobs submitted');
    // Drop every client connection (queues, store, blocking reads) every 300 ms for 4 s,
    // over the time the tasks finish.
    for (let k = 0; k < 14; k++) {
      await run('redis-cli', ['-p', String(redis.port), 'client', 'kill', 'type', 'normal']).catch(
        () => undefined,
      );
      await new Promise((r) => setTimeout(r, 300));
    }
    await expectFinalsOnce(handles, since);
  }, 180_000);

  it('Redis restarted mid-storm: once it is back, nothing is lost and nothing doubled', async () => {
    await setUp();
    await start(0);
    await start(1);
    const since = Date.now();
    const handles = await sendJobs(12);
    // Every job submitted and recorded (a command arriving while Redis is down is refused,
    // rightly: that is not this test), and the storm of progress webhooks under way.
    await eventually(() => songTasks().length >= 12, 30_000, 'jobs submitted');
    await eventually(
      () => emulator.webhookDeliveries.filter((d) => d.ok).length >= 24,
      30_000,
      'webhooks flowing',
    );
    await redis.stop(); // SHUTDOWN SAVE: what was stored survives, like a production Redis with persistence
    await new Promise((r) => setTimeout(r, 2000));
    await redis.start();
    await expectFinalsOnce(handles, since);
  }, 180_000);

  it('an instance paused (SIGSTOP) past its queue lock and resumed: no final or gallery post twice', async () => {
    await setUp();
    const env = { QUEUE_LOCK_SECONDS: '5' };
    await start(0, env);
    await start(1, env);
    // A gallery: the after-final work posts every finished job there once.
    const gallery = fake.channelIdByName('gallery');
    const admin = fake.addUser({ username: 'admin', permissions: '32' });
    await fake
      .sendCommand({ name: 'settings', subcommand: 'set', userId: admin, options: { gallery } })
      .message(20_000);
    const since = Date.now();
    const handles = await sendJobs(8);
    await eventually(() => songTasks().length >= 8, 30_000, 'jobs submitted');
    const paused = bots[1] as BotProcess;
    await eventually(
      () => emulator.webhookDeliveries.filter((d) => d.ok).length >= 8,
      30_000,
      'webhooks flowing',
    );
    paused.child.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, 9000)); // well past its 5 s locks
    paused.child.kill('SIGCONT');
    await expectFinalsOnce(handles, since);
    // One gallery post per job, whoever posted it (a claim and a nonce per job).
    await eventually(() => fake.channelMessages(gallery).length >= 8, 30_000, 'gallery posts');
    await new Promise((r) => setTimeout(r, 2000));
    expect(fake.channelMessages(gallery)).toHaveLength(8);
  }, 180_000);

  it('one instance SIGKILLed and started again: a final that came while it was down shows within 5 s of its start', async () => {
    await setUp();
    emulator.setScenario({ stepMs: 100, hold: true });
    const first = await start(0, { WEBHOOK_SILENCE_MS: '60000' });
    const handles = await sendJobs(1);
    const task = await eventually(
      () => songTasks().find((t) => t.history.length >= 3),
      15_000,
      'task in progress',
    );
    first.child.kill('SIGKILL');
    await eventually(() => first.child.signalCode !== null, 5000, 'bot killed');
    emulator.finish(task.id);
    await eventually(
      () => emulator.webhookDeliveries.some((d) => d.taskId === task.id && d.kind === 'final' && !d.ok),
      15_000,
      'final webhook refused by the dead bot',
    );
    upstreams.length = 0;
    const spawnedAt = Date.now();
    await start(0, { WEBHOOK_SILENCE_MS: '60000' });
    const readyAt = Date.now();
    const handle = handles[0];
    await handle?.waitForMessage((m) => JSON.stringify(m.data).includes(finalUrl(task) ?? '\u0000'), 20_000);
    const shownAt = Date.now();
    console.log(
      `final shown ${shownAt - readyAt} ms after the restarted instance was ready (${shownAt - spawnedAt} ms after its spawn)`,
    );
    expect(shownAt - readyAt).toBeLessThan(5000);
  }, 120_000);
});
