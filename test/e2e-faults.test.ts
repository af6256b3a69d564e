/**
 * Fault injection, end to end: the real app (createApp) against the fake Discord
 * and the media-service emulator, with Discord errors, clock jumps, gateway drops,
 * lost / duplicated / shuffled webhooks, service errors and an interrupted submission.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Routes } from 'discord.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, type TaskRecord } from './emulator/server.js';
import { DiscordErrors, startFakeDiscord, type FakeDiscord, type FakeMessage } from './fake-discord/index.js';
import type { InteractionHandle } from './fake-discord/index.js';
import { eventually, percentagesShown, startHarness, type Harness } from './helpers/harness.js';
import type { JobRecord } from '../src/services/store/types.js';

const WEBHOOK_EDIT = '/webhooks/{webhook_id}/{webhook_token}/messages/@original';
const CHANNEL_EDIT = '/channels/{channel_id}/messages/{message_id}';
const MINUTE = 60_000;

const wire = (m: FakeMessage): string => JSON.stringify(m.data);
const editTexts = (m: FakeMessage): string[] => m.edits.map((e) => JSON.stringify(e.after));
/** The finished song message ends with the "extend song 2" button. */
const isFinalSong = (text: string): boolean => text.includes('Extend song 2');

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function sendSong(h: Harness): InteractionHandle {
  return h.fake.sendCommand({
    name: 'extend-song',
    options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
  });
}

/** Ids of the emulator's tasks right now (to find the one a command creates next). */
function taskIds(h: Harness): Set<string> {
  return new Set(h.emulator.tasks.keys());
}

function newTask(h: Harness, before: Set<string>): Promise<Readonly<TaskRecord>> {
  return eventually(
    () => [...h.emulator.tasks.values()].find((t) => !t.fixture && !before.has(t.id)),
    10_000,
    'the emulator task of the command',
  );
}

async function jobOf(h: Harness, taskId: string): Promise<JobRecord> {
  return eventually(() => h.app.store.getByTaskId(taskId), 10_000, `the job of task ${taskId}`);
}

async function storedState(h: Harness, jobId: string): Promise<JobRecord | undefined> {
  return h.app.store.get(jobId);
}

/** Nothing queued or in flight in the edit queue. */
function editsIdle(h: Harness): Promise<boolean> {
  return h.app.edits.drain(15_000);
}

/** Every song URL of the finished task is in the message. */
function expectSongResult(msg: FakeMessage, task: Readonly<TaskRecord>): void {
  const body = task.body as { songs: { audio_url: string }[] };
  expect(body.songs.length).toBeGreaterThan(0);
  for (const s of body.songs) expect(wire(msg)).toContain(s.audio_url);
}

/** Requests the bot sent to edit the message of the interaction with `token`, by route. */
function editRequests(fake: FakeDiscord, token: string, messageId?: string) {
  return fake.requests.filter(
    (r) =>
      r.method === 'PATCH' &&
      ((r.route === WEBHOOK_EDIT && r.path.includes(`/${token}/`)) ||
        (messageId !== undefined && r.route === CHANNEL_EDIT && r.path.endsWith(`/${messageId}`))),
  );
}

/** The interaction-webhook edit path of one interaction (discord.js sends `@original` percent-encoded). */
function interactionEditRoute(token: string): RegExp {
  return new RegExp(`^/webhooks/\\d+/${escapeRe(token)}/messages/(@|%40)original$`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------

describe('Discord errors on edits, gateway drops and webhook anomalies (real rate limits on)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ webhooks: true, fake: { rateLimits: true } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a burst of 429s on interaction edits still ends with the final state, without a 429 storm', async () => {
    const before429 = h.fake.count429;
    const fault = h.fake.injectFault({
      ...DiscordErrors.rateLimited(1),
      method: 'PATCH',
      route: WEBHOOK_EDIT,
      count: 5,
    });
    h.emulator.nextScenario({ steps: [20, 40, 60, 80], stepMs: 150 });
    const before = taskIds(h);
    const cmd = sendSong(h);
    const task = await newTask(h, before);
    const msg = await cmd.waitForMessage((m) => isFinalSong(wire(m)), 14_000);
    expect(fault.hits).toBe(5);
    expectSongResult(msg, task);
    const pcts = percentagesShown(editTexts(msg));
    expect([...pcts].sort((a, b) => a - b)).toEqual(pcts);
    await editsIdle(h);
    const new429 = h.fake.count429 - before429;
    expect(new429).toBeGreaterThanOrEqual(5);
    expect(new429).toBeLessThanOrEqual(5 + 3);
    expect((await jobOf(h, task.id)).state).toBe('finished');
    h.fake.assertNoViolations();
  });

  it('5xx answers (500, 502) on edits are retried and the final state is delivered', async () => {
    h.emulator.nextScenario({ steps: [30, 70], stepMs: 100 });
    const before = taskIds(h);
    const cmd = sendSong(h);
    // Faults only for this interaction's edits.
    const route = interactionEditRoute(cmd.token);
    const f500 = h.fake.injectFault({
      ...DiscordErrors.internalServerError,
      method: 'PATCH',
      route,
      count: 2,
    });
    const f502 = h.fake.injectFault({ ...DiscordErrors.badGateway, method: 'PATCH', route, count: 1 });
    const task = await newTask(h, before);
    const msg = await cmd.waitForMessage((m) => isFinalSong(wire(m)), 14_000);
    expect(f500.hits).toBe(2);
    expect(f502.hits).toBe(1);
    expectSongResult(msg, task);
    expect(editRequests(h.fake, cmd.token).filter((r) => r.status >= 500)).toHaveLength(3);
    h.fake.assertNoViolations();
  });

  it('10008 Unknown Message stops the edits of that message; the job still finishes; the bot keeps serving', async () => {
    h.emulator.nextScenario({ steps: [25, 50, 75], stepMs: 150 });
    const before = taskIds(h);
    const cmd = sendSong(h);
    const route = interactionEditRoute(cmd.token);
    const gone = h.fake.injectFault({ ...DiscordErrors.unknownMessage, method: 'PATCH', route, count: 1 });
    const first = await cmd.message();
    const task = await newTask(h, before);
    const job = await jobOf(h, task.id);
    await eventually(
      async () => (await storedState(h, job.id))?.state === 'finished',
      10_000,
      'job finished',
    );
    expect(gone.hits).toBe(1);
    // Let the late states settle: none of them may reach Discord.
    await sleep(1200);
    await editsIdle(h);
    const edits = editRequests(h.fake, cmd.token, first.id);
    expect(edits).toHaveLength(1);
    expect(edits[0]?.status).toBe(404);
    expect(first.edits).toHaveLength(0);

    // A second command is served normally.
    const before2 = taskIds(h);
    const cmd2 = sendSong(h);
    const task2 = await newTask(h, before2);
    const msg2 = await cmd2.waitForMessage((m) => isFinalSong(wire(m)), 10_000);
    expectSongResult(msg2, task2);
    h.fake.assertNoViolations();
  });

  it('a gateway disconnect mid-job: the job completes and the client resumes', async () => {
    const resumes = h.fake.gateway.resumes;
    h.emulator.nextScenario({ steps: [20, 40, 60, 80], stepMs: 300 });
    const before = taskIds(h);
    const cmd = sendSong(h);
    await cmd.waitForMessage((m) => percentagesShown([wire(m)]).length > 0, 10_000);
    h.fake.disconnectGateway();
    const task = await newTask(h, before);
    const msg = await cmd.waitForMessage((m) => isFinalSong(wire(m)), 10_000);
    expectSongResult(msg, task);
    await h.fake.waitForResume(resumes + 1, 10_000);
    // RESUMED follows the RESUME the fake counted.
    await eventually(() => h.app.discordReady(), 5_000, 'gateway ready again');
    // Interactions still arrive over the resumed session.
    const tasks = await h.fake.sendCommand({ name: 'tasks' }).message();
    expect(tasks.ephemeral).toBe(true);
    expect(tasks.content).toMatch(/Your jobs\*\* · page 1 of \d+/);
    h.fake.assertNoViolations();
  });

  it('silent webhooks: the job is completed by polling the fetch endpoint', async () => {
    h.emulator.nextScenario({ steps: [50], stepMs: 100, dropWebhooks: 'all' });
    const fetchesBefore = h.emulator.requests.filter((r) => r.path === '/fetch').length;
    const before = taskIds(h);
    const cmd = sendSong(h);
    const task = await newTask(h, before);
    const msg = await cmd.waitForMessage((m) => isFinalSong(wire(m)), 12_000);
    expectSongResult(msg, task);
    const deliveries = h.emulator.webhookDeliveries.filter((d) => d.taskId === task.id);
    expect(deliveries.length).toBeGreaterThan(0);
    expect(deliveries.every((d) => d.dropped)).toBe(true);
    expect(h.emulator.requests.filter((r) => r.path === '/fetch').length).toBeGreaterThan(fetchesBefore);
    expect((await jobOf(h, task.id)).state).toBe('finished');
    h.fake.assertNoViolations();
  });

  it('duplicated and shuffled webhooks never move a message backwards; the final is never overwritten', async () => {
    const runs: { cmd: InteractionHandle; task: Readonly<TaskRecord> }[] = [];
    for (let i = 0; i < 3; i++) {
      h.emulator.nextScenario({
        steps: [10, 35, 60, 85],
        stepMs: 60,
        duplicateWebhooks: true,
        shuffleWebhooks: true,
      });
      const before = taskIds(h);
      const cmd = sendSong(h);
      runs.push({ cmd, task: await newTask(h, before) });
    }
    for (const { cmd, task } of runs) {
      const msg = await cmd.waitForMessage((m) => isFinalSong(wire(m)), 12_000);
      // Every (duplicated) webhook has been delivered and handled.
      await eventually(
        () => h.emulator.webhookDeliveries.filter((d) => d.taskId === task.id && d.ok).length === 2 * 5,
        10_000,
        'all webhooks delivered',
      );
      expectSongResult(msg, task);
    }
    await sleep(300);
    await editsIdle(h);
    for (const { cmd, task } of runs) {
      const msg = cmd.originalMessage;
      expect(msg).toBeDefined();
      if (!msg) continue;
      const texts = editTexts(msg);
      const pcts = percentagesShown(texts);
      expect([...pcts].sort((a, b) => a - b)).toEqual(pcts);
      const finalAt = texts.findIndex(isFinalSong);
      expect(finalAt).toBeGreaterThanOrEqual(0);
      for (const later of texts.slice(finalAt)) expect(later).toBe(texts[finalAt]);
      expect(wire(msg)).toBe(texts[finalAt]);
      const job = await jobOf(h, task.id);
      expect(job.state).toBe('finished');
      expect(job.percentage).toBe(100);
    }
    h.fake.assertNoViolations();
  });

  // Regression: when Discord refused the public reply, the job stayed `submitting` forever (listed
  // by /tasks, kept in the unfinished set, and failed as "restarted while submitting" at the next start).
  it('a reply Discord refuses (5xx beyond the retries) ends the job; nothing is sent to the service', async () => {
    const requestsBefore = h.emulator.requests.length;
    const fault = h.fake.injectFault({
      ...DiscordErrors.internalServerError,
      method: 'POST',
      route: '/interactions/{interaction_id}/{interaction_token}/callback',
      count: 4, // the first try and @discordjs/rest's 3 retries
    });
    const cmd = sendSong(h);
    const msg = await cmd.message(10_000);
    expect(fault.hits).toBe(4);
    expect(msg.ephemeral).toBe(true);
    expect(msg.content).toMatch(/went wrong/);
    const job = await eventually(async () => {
      const list = await h.app.store.listByUser(h.fake.defaultUserId);
      return list.find((j) => j.message.interaction?.token === cmd.token);
    });
    const ended = await eventually(async () => {
      const j = await storedState(h, job.id);
      return j?.state === 'failed' ? j : undefined;
    }, 5000);
    expect(ended.error?.code).toBe('internal');
    // Its after-final work (the reservation back) closes it: nobody looks after it again.
    await eventually(
      async () => !(await h.app.store.listOpen()).some((j) => j.id === job.id),
      5000,
      'job closed',
    );
    await sleep(300);
    expect(h.emulator.requests.slice(requestsBefore)).toEqual([]);
    // The error reply is not overwritten by a job render.
    expect(msg.content).toMatch(/went wrong/);
    expect(msg.edits).toHaveLength(0);
    h.fake.assertNoViolations();
  });
});

// ---------------------------------------------------------------------------------------------

describe('interaction token expiry (app clock = real clock, Discord 15 min ahead)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ webhooks: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('an edit refused with 50027 falls back to the channel message edit with the bot token', async () => {
    h.emulator.nextScenario({ steps: [20, 40], stepMs: 100, hold: true });
    const before = taskIds(h);
    const cmd = sendSong(h);
    const task = await newTask(h, before);
    await cmd.waitForMessage((m) => percentagesShown([wire(m)]).includes(40), 10_000);
    const msg = await cmd.message();
    await editsIdle(h);
    const editsBefore = msg.edits.length;
    expect(msg.edits.every((e) => e.via === 'webhook')).toBe(true);

    h.fake.advanceTime(15 * MINUTE);
    h.emulator.finish(task.id);
    await cmd.waitForMessage((m) => isFinalSong(wire(m)), 10_000);
    expectSongResult(msg, task);
    const refused = h.fake.requests.filter(
      (r) => r.route === WEBHOOK_EDIT && r.path.includes(`/${cmd.token}/`) && r.status === 401,
    );
    expect(refused).toHaveLength(1);
    expect(refused[0]?.response).toMatchObject({ code: 50027 });
    const after = msg.edits.slice(editsBefore);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((e) => e.via === 'channel')).toBe(true);
    expect(
      h.fake.requests.some((r) => r.route === CHANNEL_EDIT && r.auth === 'bot' && r.path.endsWith(msg.id)),
    ).toBe(true);
    h.fake.assertNoViolations();
  });
});

// ---------------------------------------------------------------------------------------------

describe('message age rules (app clock follows the fake Discord clock)', () => {
  let fake: FakeDiscord;
  let h: Harness;
  beforeAll(async () => {
    // Discord tolerates a few edits of messages older than 1 h.
    fake = await startFakeDiscord({ warmUpValidators: true, oldMessageEditLimit: 2 });
    h = await startHarness({ webhooks: true, reuse: { fake }, now: () => fake.now() });
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  it('after 14 min edits go to the channel route; after 1 h only the final is sent (30046 retried)', async () => {
    h.emulator.nextScenario({ steps: [20, 40], stepMs: 100, hold: true });
    const before = taskIds(h);
    const cmd = sendSong(h);
    const task = await newTask(h, before);
    await cmd.waitForMessage((m) => percentagesShown([wire(m)]).includes(40), 10_000);
    const msg = await cmd.message();
    const job = await jobOf(h, task.id);
    await editsIdle(h);

    const webhook = (percentage: number) =>
      fetch(`${h.baseUrl}/webhooks/media/${job.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
        body: JSON.stringify({ task_id: task.id, task_type: 'song', status: 'processing', percentage }),
      });

    // Token no longer fresh for the bot: progress goes straight to the channel route.
    fake.advanceTime(15 * MINUTE);
    const editsBefore = msg.edits.length;
    expect((await webhook(70)).status).toBe(202);
    await cmd.waitForMessage((m) => percentagesShown([wire(m)]).includes(70), 10_000);
    expect(msg.edits.slice(editsBefore).every((e) => e.via === 'channel')).toBe(true);
    expect(h.fake.requests.some((r) => r.route === WEBHOOK_EDIT && r.status === 401)).toBe(false);

    // Over an hour old: progress is not sent at all, only the final.
    fake.advanceTime(60 * MINUTE);
    await editsIdle(h);
    const requestsBefore = editRequests(fake, cmd.token, msg.id).length;
    expect((await webhook(80)).status).toBe(202);
    await sleep(800);
    await editsIdle(h);
    expect(editRequests(fake, cmd.token, msg.id).length).toBe(requestsBefore);
    expect(percentagesShown([wire(msg)])).toEqual([70]);

    const limit = fake.injectFault({
      ...DiscordErrors.oldMessageEditLimit,
      method: 'PATCH',
      route: CHANNEL_EDIT,
      count: 1,
    });
    h.emulator.finish(task.id);
    await cmd.waitForMessage((m) => isFinalSong(wire(m)), 10_000);
    expect(limit.hits).toBe(1);
    expectSongResult(msg, task);
    expect(percentagesShown(editTexts(msg))).not.toContain(80);
    const sent = editRequests(fake, cmd.token, msg.id).slice(requestsBefore);
    expect(sent.map((r) => r.status)).toEqual([400, 200]);
    fake.assertNoViolations();
  });
});

describe('maximum job duration (app clock follows the fake Discord clock)', () => {
  let fake: FakeDiscord;
  let h: Harness;
  beforeAll(async () => {
    fake = await startFakeDiscord({ warmUpValidators: true });
    h = await startHarness({
      webhooks: true,
      reuse: { fake },
      now: () => fake.now(),
      env: { JOB_MAX_DURATION_MINUTES: '1' },
    });
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  it('a job running past JOB_MAX_DURATION_MINUTES is failed as timed out', async () => {
    h.emulator.nextScenario({ steps: [30], stepMs: 100, hold: true });
    const before = taskIds(h);
    const cmd = sendSong(h);
    const task = await newTask(h, before);
    await cmd.waitForMessage((m) => percentagesShown([wire(m)]).includes(30), 10_000);
    fake.advanceTime(2 * MINUTE);
    const msg = await cmd.waitForMessage((m) => wire(m).includes('failed'), 10_000);
    expect(wire(msg)).toMatch(/No result after 1 minute/);
    expect(wire(msg)).toContain('timed_out');
    const job = await jobOf(h, task.id);
    expect(job.state).toBe('failed');
    expect(job.error?.code).toBe('timed_out');
    // The after-final work (slot, refund) settles it just after the final shows: then it leaves the open set.
    await eventually(async () => (await h.app.store.listOpen()).length === 0, 10_000, 'the job settled');
    fake.assertNoViolations();
  });

  // Regression: the duration check sat behind the "webhook silent?" check, so a task that
  // kept sending progress webhooks (stuck, or slow) never timed out.
  it('also times out a job whose webhooks keep arriving', async () => {
    h.emulator.nextScenario({ steps: [30], stepMs: 100, hold: true });
    const before = taskIds(h);
    const cmd = sendSong(h);
    const task = await newTask(h, before);
    await cmd.waitForMessage((m) => percentagesShown([wire(m)]).includes(30), 10_000);
    const job = await jobOf(h, task.id);
    fake.advanceTime(2 * MINUTE);
    let percentage = 30;
    const deadline = Date.now() + 6000;
    let failed: JobRecord | undefined;
    while (Date.now() < deadline) {
      // Faster than WEBHOOK_SILENCE_MS (1500 ms): the job is never "silent".
      const res = await fetch(`${h.baseUrl}/webhooks/media/${job.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
        body: JSON.stringify({ task_id: task.id, status: 'processing', percentage: ++percentage }),
      });
      expect(res.status).toBe(202);
      const now = await storedState(h, job.id);
      if (now?.state === 'failed') {
        failed = now;
        break;
      }
      await sleep(300);
    }
    expect(failed?.error?.code).toBe('timed_out');
    const msg = await cmd.waitForMessage((m) => wire(m).includes('timed_out'), 10_000);
    expect(wire(msg)).toMatch(/No result after 1 minute/);
    fake.assertNoViolations();
  });
});

// ---------------------------------------------------------------------------------------------

describe('polling mode: the service rejects the API key on /fetch', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ webhooks: false });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('fails the job with the API-key message and stops polling it', async () => {
    h.emulator.nextScenario({ steps: [30], stepMs: 100, hold: true });
    h.emulator.failNext(1, { status: 401, path: '/fetch' });
    const before = taskIds(h);
    const cmd = sendSong(h);
    const task = await newTask(h, before);
    const msg = await cmd.waitForMessage((m) => wire(m).includes('failed'), 10_000);
    expect(wire(msg)).toMatch(/API key/);
    const job = await jobOf(h, task.id);
    expect(job.state).toBe('failed');
    expect(job.error?.code).toBe('service_auth');
    const fetches = () => h.emulator.requests.filter((r) => r.path === '/fetch').length;
    const n = fetches();
    expect(h.emulator.requests.some((r) => r.path === '/fetch' && r.injectedStatus === 401)).toBe(true);
    await sleep(1500); // > POLL_MAX_MS
    expect(fetches()).toBe(n);
    expect(await h.app.store.listOpen()).toEqual([]);
    h.fake.assertNoViolations();
  });
});

// ---------------------------------------------------------------------------------------------

describe('restart while a submission was in flight', () => {
  it('the job waits as “not confirmed” (never resubmitted) and completes when the service reports it', async () => {
    const h1 = await startHarness({ webhooks: true });
    let h2: Harness | undefined;
    try {
      const channelId = h1.fake.defaultChannelId;
      // The live message the job was replying with, sent by the bot itself.
      const posted = (await h1.app.rest.post(Routes.channelMessages(channelId), {
        body: { content: '⏳ Extend song: submitting…', allowed_mentions: { parse: [] } },
      })) as { id: string };
      // Long enough ago that its submission cannot still be in flight anywhere.
      const created = Date.now() - 15 * MINUTE;
      const job: JobRecord = {
        id: randomUUID(),
        secret: 'ab'.repeat(24),
        operation: 'song',
        userId: h1.fake.defaultUserId,
        message: { channelId, guildId: h1.fake.guildId, messageId: posted.id },
        params: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        state: 'submitting',
        percentage: 0,
        createdAt: created,
        updatedAt: created,
        version: 1,
      };
      await h1.app.store.create(job);
      await h1.stopBot();
      const requestsBefore = h1.emulator.requests.length;

      h2 = await startHarness({
        webhooks: true,
        reuse: {
          fake: h1.fake,
          emulator: h1.emulator,
          dataDir: h1.dataDir,
          namespace: h1.namespace,
          port: h1.port,
        },
      });
      const bot = h2;
      const stored = await eventually(async () => {
        const j = await bot.app.store.get(job.id);
        return j?.state === 'unconfirmed' ? j : undefined;
      });
      expect(stored.taskId).toBeUndefined();
      await h1.fake.waitFor(() => {
        const m = h1.fake.messages.get(posted.id);
        return m && wire(m).includes('Not confirmed') ? m : undefined;
      });
      await sleep(500);
      // Nothing of the job was sent to the service: no new submission, no fetch (the start's
      // read of the account's balance is not about any job).
      expect(h1.emulator.requests.slice(requestsBefore).filter((r) => r.path !== '/account')).toEqual([]);

      // The service had it after all: its webhook, at the job's URL with its secret, attaches the task.
      const hook = (body: unknown) =>
        fetch(`${bot.baseUrl}/webhooks/media/${job.id}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
          body: JSON.stringify(body),
        });
      expect(
        (await hook({ task_id: 'lost-answer-1', task_type: 'song', status: 'processing', percentage: 40 }))
          .status,
      ).toBe(202);
      const confirmed = await bot.app.store.get(job.id);
      expect(confirmed).toMatchObject({ state: 'processing', taskId: 'lost-answer-1', percentage: 40 });
      await hook({
        task_id: 'lost-answer-1',
        task_type: 'song',
        status: 'finished',
        video_url: 'https://cdn.example/lost-answer.mp4',
        songs: [{ song_id: 's1', audio_url: 'https://cdn.example/lost-1.mp3' }],
      });
      await h1.fake.waitFor(() => {
        const m = h1.fake.messages.get(posted.id);
        return m && wire(m).includes('lost-1.mp3') ? m : undefined;
      });
      h1.fake.assertNoViolations();
    } finally {
      await h2?.close();
      await h1.close();
    }
  });
});
