/**
 * Redis outage, end to end: the real app on a private redis-server (own port, own
 * directory) that is stopped and restarted under it, without restarting the bot.
 *
 * The outage is a `SHUTDOWN SAVE` (the RDB snapshot goes to the private directory) so
 * the restarted server still holds the jobs created before it, like a production Redis
 * with persistence; cleanup is `SHUTDOWN NOSAVE`.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import type { FakeMessage } from './fake-discord/index.js';
import { eventually, percentagesShown, startHarness, type Harness } from './helpers/harness.js';
import { privateRedis, type PrivateRedis } from './helpers/private-redis.js';
import { needs } from './helpers/requirements.js';

const wire = (m: FakeMessage): string => JSON.stringify(m.data);
const isFinalSong = (text: string): boolean => text.includes('Extend song 2');

async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('Redis outage and recovery, without restarting the bot', needs('redisServer'), () => {
  let redis: PrivateRedis;
  /** The test's harness, closed after each test. */
  let current: Harness | undefined;

  beforeAll(async () => {
    redis = await privateRedis();
    await redis.start();
  });

  afterEach(async () => {
    await current?.close();
    current = undefined;
    // Each test starts with Redis up.
    if (!(await redis.up())) await redis.start();
  });

  afterAll(async () => {
    await redis?.remove();
  });

  it('503s and an ephemeral “temporarily unavailable” while down; everything works again once Redis is back', async () => {
    const h = await startHarness({ webhooks: true, env: { REDIS_URL: `redis://127.0.0.1:${redis.port}` } });
    current = h;
    expect(h.config.store.redisUrl).toBe(`redis://127.0.0.1:${redis.port}`);
    expect((await getJson(`${h.baseUrl}/readyz`)).status).toBe(200);

    // A job running when Redis goes away.
    h.emulator.nextScenario({ steps: [30], stepMs: 100, hold: true });
    const known = new Set(h.emulator.tasks.keys());
    const cmdA = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    await cmdA.waitForMessage((m) => percentagesShown([wire(m)]).includes(30), 10_000);
    const taskA = await eventually(() =>
      [...h.emulator.tasks.values()].find((t) => !t.fixture && !known.has(t.id)),
    );
    const jobA = await eventually(() => h.app.store.getByTaskId(taskA.id));

    await redis.stop();

    // Readiness reports the store.
    const ready = await eventually(
      async () => {
        const r = await getJson(`${h.baseUrl}/readyz`);
        return r.status === 503 ? r : undefined;
      },
      5000,
      '/readyz 503',
    );
    expect(ready.body).toMatchObject({ ok: false, discord: true, store: false });

    // Webhooks: 503 with Retry-After, for a known job and for one the bot has never seen.
    const webhook = (jobId: string, secret: string, percentage: number) =>
      fetch(`${h.baseUrl}/webhooks/media/${jobId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-secret': secret },
        body: JSON.stringify({ task_id: taskA.id, task_type: 'song', status: 'processing', percentage }),
      });
    for (const [jobId, secret] of [
      [jobA.id, jobA.secret],
      ['00000000-0000-4000-8000-000000000000', 'ab'.repeat(24)],
    ] as const) {
      const res = await webhook(jobId, secret, 50);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBeTruthy();
      expect(await res.json()).toMatchObject({ error: { code: 'STORE_UNAVAILABLE' } });
    }

    // A slash command: ephemeral explanation, nothing sent to the service.
    const requestsBefore = h.emulator.requests.length;
    const cmdB = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const refused = await cmdB.message(5000);
    expect(refused.ephemeral).toBe(true);
    expect(refused.content).toMatch(/temporarily unavailable/i);
    await new Promise((r) => setTimeout(r, 300));
    expect(h.emulator.requests.slice(requestsBefore)).toEqual([]);

    // Redis comes back on the same port; the bot reconnects by itself.
    await redis.start();
    await eventually(
      async () => (await getJson(`${h.baseUrl}/readyz`)).status === 200,
      10_000,
      '/readyz 200',
    );

    // The job from before the outage takes webhooks again and finishes.
    const res = await webhook(jobA.id, jobA.secret, 60);
    expect(res.status).toBe(202);
    await cmdA.waitForMessage((m) => percentagesShown([wire(m)]).includes(60), 10_000);
    h.emulator.finish(taskA.id);
    const msgA = await cmdA.waitForMessage((m) => isFinalSong(wire(m)), 10_000);
    expect((await h.app.store.get(jobA.id))?.state).toBe('finished');
    expect(wire(msgA)).toContain((taskA.body as { songs: { audio_url: string }[] }).songs[0]?.audio_url);

    // A new command runs end to end.
    const cmdC = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const msgC = await cmdC.waitForMessage((m) => isFinalSong(wire(m)), 10_000);
    expect(msgC.ephemeral).toBe(false);
    h.fake.assertNoViolations();
  });

  // Regression: a store outage between the service accepting the task and the bot recording
  // its task_id threw out of submit(): the user was told to try again (a second paid task), and
  // in polling mode the job sat in "Submitting…" forever with its task id forgotten.
  it('an outage right after the service accepted a task: the task id is recorded once Redis is back', async () => {
    const h = await startHarness({ webhooks: false, env: { REDIS_URL: `redis://127.0.0.1:${redis.port}` } });
    current = h;
    h.emulator.delayNext(1500, '/song-extend');
    h.emulator.nextScenario({ steps: [30, 60], stepMs: 300 });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    const msg = await cmd.message();
    // The reply and its message id are stored; the service call is still in flight.
    const job = await eventually(async () => {
      const [j] = await h.app.store.listByUser(h.fake.defaultUserId);
      return j?.message.messageId ? j : undefined;
    });
    expect(job.state).toBe('submitting');
    await redis.stop();
    const task = await eventually(
      () => [...h.emulator.tasks.values()].find((t) => !t.fixture),
      5000,
      'the service to accept the task',
    );
    await new Promise((r) => setTimeout(r, 500));
    await redis.start();
    const final = await cmd.waitForMessage((m) => isFinalSong(wire(m)), 15_000);
    expect(final.id).toBe(msg.id);
    const stored = await h.app.store.get(job.id);
    expect(stored?.taskId).toBe(task.id);
    expect(stored?.state).toBe('finished');
    expect(cmd.followUps).toEqual([]);
    expect(h.emulator.requests.filter((r) => r.path === '/song-extend')).toHaveLength(1);
    h.fake.assertNoViolations();
  });
});
