import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, FIXTURE_VIDEO_TASK_ID } from './emulator/server.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import type { FakeMessage } from './fake-discord/index.js';
import { needs } from './helpers/requirements.js';
import { controls, messageText } from './helpers/message-text.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const text = (m: FakeMessage): string => JSON.stringify(m.data);

function button(m: FakeMessage, label: string): string {
  const b = controls<{ custom_id?: string; label?: string }>(m).find((c) => c.label === label);
  if (!b?.custom_id) throw new Error(`no button "${label}" on ${text(m).slice(0, 300)}`);
  return b.custom_id;
}

const deliveriesOf = (h: Harness, id: string) => h.fake.httpDeliveries.filter((d) => d.interactionId === id);

/**
 * DISCORD_INTERACTIONS=http: the real bot with no gateway; the fake Discord POSTs
 * Ed25519-signed interactions to its /interactions and reads the HTTP answer.
 */
describe('http interactions end to end', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ interactions: 'http', webhooks: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('opens no gateway connection, registers the commands over REST and is ready', async () => {
    expect(h.fake.gateway.connections).toHaveLength(0);
    expect(h.fake.requests.some((r) => r.route === '/gateway/bot')).toBe(false);
    expect(h.fake.guildCommands().map((c) => c['name'])).toContain('extend-song');
    const ready = await fetch(`${h.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ok: true, discord: true, store: true });
  });

  it('answers a PING with a PONG, and refuses bad, missing, stale and foreign signatures with 401', async () => {
    const pong = await h.fake.sendPing();
    expect(pong.status).toBe(200);
    expect(pong.body).toEqual({ type: 1 });
    for (const signature of ['bad', 'missing', 'wrong-key', 'tampered'] as const) {
      const r = await h.fake.sendPing({ signature });
      expect(r.status, signature).toBe(401);
    }
    const stale = await h.fake.sendPing({ timestamp: Math.floor(Date.now() / 1000) - 3600 });
    expect(stale.status).toBe(401);
    const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/mediabot_http_interactions_total\{[^}]*outcome="ping"[^}]*\} [1-9]/);
    expect(metrics).toMatch(
      /mediabot_http_interactions_total\{[^}]*outcome="signature_invalid"[^}]*\} [1-9]/,
    );
    expect(metrics).toMatch(
      /mediabot_http_interactions_total\{[^}]*outcome="signature_missing"[^}]*\} [1-9]/,
    );
    expect(metrics).toMatch(/mediabot_http_interactions_total\{[^}]*outcome="signature_stale"[^}]*\} [1-9]/);
  });

  it('a signed body that is not JSON, or not an interaction, is 400', async () => {
    expect((await h.fake.postRawInteraction('{"type":')).status).toBe(400);
    expect((await h.fake.postRawInteraction('{"type":2,"id":"1"}')).status).toBe(400);
  });

  it('autocomplete answers with the songs of the task', async () => {
    const ac = h.fake.sendAutocomplete({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: '' },
      focused: 'song_id',
    });
    await ac.response();
    expect((ac.choices ?? []).map((c) => (c as { value: string }).value)).toEqual([...FIXTURE_SONG_IDS]);
    // Choices (nothing follows them) come in the HTTP response body; no callback request.
    const d = await eventually(() => deliveriesOf(h, ac.id)[0]);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ type: 8, data: { choices: expect.any(Array) } });
    expect(h.fake.requests.some((r) => r.path.startsWith(`/interactions/${ac.id}/`))).toBe(false);
  });

  it('a result button and the modal it opens run the same code as over the gateway', async () => {
    const cmd = h.fake.sendCommand({
      name: 'upscale',
      options: { prompt: 'a crisp fox', resemblance: 70 },
      attachments: { image: { filename: 'fox.png', contentType: 'image/png', bytes: PNG } },
    });
    const upscaled = await cmd.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const click = h.fake.sendButton({ customId: button(upscaled, 'Upscale again'), messageId: upscaled.id });
    const again = await click.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    expect(again.ephemeral).toBe(false);
    expect(text(again)).toContain('a crisp fox');

    const video = h.fake.sendCommand({
      name: 'extend-video',
      options: { task_id: FIXTURE_VIDEO_TASK_ID, prompt: 'the camera pans to the sea' },
    });
    const done = await video.waitForMessage((m) => messageText(m).includes('.mp4'), 15_000);
    const open = h.fake.sendButton({ customId: button(done, 'Extend again'), messageId: done.id });
    await open.response();
    const modal = open.modal as { custom_id: string } | undefined;
    expect(modal?.custom_id).toBeTruthy();
    expect((await eventually(() => deliveriesOf(h, open.id)[0])).body).toMatchObject({ type: 9 });
    const submit = h.fake.sendModalSubmit({
      customId: modal?.custom_id ?? '',
      messageId: done.id,
      components: [{ customId: 'prompt', value: 'now the sky turns red' }],
    });
    const next = await submit.waitForMessage((m) => messageText(m).includes('.mp4'), 15_000);
    expect(text(next)).toContain('now the sky turns red');
    h.fake.assertNoViolations();
  });

  it('the same interaction delivered twice runs once', async () => {
    const before = [...h.emulator.tasks.values()].filter((t) => t.operation === 'video' && !t.fixture).length;
    const cmd = h.fake.sendCommand({
      name: 'extend-video',
      options: { task_id: FIXTURE_VIDEO_TASK_ID, prompt: 'twice delivered' },
    });
    await cmd.message();
    const again = await h.fake.redeliver(cmd.id);
    expect(again.status).toBe(202);
    await cmd.waitForMessage((m) => messageText(m).includes('.mp4'), 15_000);
    await new Promise((r) => setTimeout(r, 300));
    const after = [...h.emulator.tasks.values()].filter((t) => t.operation === 'video' && !t.fixture);
    expect(after).toHaveLength(before + 1);
    expect(h.fake.interactionResponses.filter((r) => r.interactionId === cmd.id)).toHaveLength(1);
    h.fake.assertNoViolations();
  });
});

/**
 * A command slower than Discord allows (the deadline set to 0 here: acknowledged before
 * the command runs): the HTTP response acknowledges (a deferred reply for a command, ephemeral
 * when its answers are private; a deferred update for a component; no choices for
 * autocomplete), and the command's own answer, given later, is translated into what
 * Discord then accepts.
 */
describe('http interactions: answers after the automatic acknowledgement', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ interactions: 'http', webhooks: true, app: { interactionAckDeadlineMs: 0 } });
  });
  afterAll(async () => {
    await h?.close();
  });

  const inlineAck = async (id: string) =>
    eventually(() => deliveriesOf(h, id).find((d) => d.status === 200), 10_000, `HTTP answer to ${id}`);

  it('a job command: the deferred reply becomes the live message and reaches its result', async () => {
    h.emulator.nextScenario({ steps: [50], stepMs: 600 });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const ack = await inlineAck(cmd.id);
    expect(ack.body).toEqual({ type: 5 });
    expect(ack.problem).toBeUndefined();
    const msg = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    expect(msg.ephemeral).toBe(false);
    expect(h.fake.interactionResponses.filter((r) => r.interactionId === cmd.id)).toHaveLength(1);
    const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /mediabot_http_interactions_total\{[^}]*outcome="auto_acknowledged"[^}]*\} [1-9]/,
    );
    h.fake.assertNoViolations();
  });

  it('a command whose answers are private (/tasks) is deferred ephemerally; its answer fills that', async () => {
    const cmd = h.fake.sendCommand({ name: 'tasks' });
    expect((await inlineAck(cmd.id)).body).toEqual({ type: 5, data: { flags: 64 } });
    const msg = await cmd.waitForMessage((m) => /Your jobs/.test(m.content), 10_000);
    expect(msg.ephemeral).toBe(true);
    expect(cmd.followUps).toHaveLength(0);
    h.fake.assertNoViolations();
  });

  it('a private answer to a public deferral: the "thinking" message goes, an ephemeral follow-up replaces it', async () => {
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: 'not a task id!', song_id: FIXTURE_SONG_IDS[0] },
    });
    expect((await inlineAck(cmd.id)).body).toEqual({ type: 5 });
    const follow = await eventually(() => cmd.followUps[0], 10_000, 'ephemeral follow-up');
    expect(follow.ephemeral).toBe(true);
    expect(follow.content).toMatch(/task_id must be a task id/);
    await eventually(() => cmd.originalMessage?.deleted, 10_000, 'deferred reply deleted');
    h.fake.assertNoViolations();
  });

  it('autocomplete: no choices at once, the late ones are dropped', async () => {
    const ac = h.fake.sendAutocomplete({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: '' },
      focused: 'song_id',
    });
    const ack = await inlineAck(ac.id);
    expect(ack.body).toEqual({ type: 8, data: { choices: [] } });
    await new Promise((r) => setTimeout(r, 300));
    expect(h.fake.interactionResponses.filter((r) => r.interactionId === ac.id)).toHaveLength(1);
    h.fake.assertNoViolations();
  });

  // Regression (see test/e2e-interaction-answers.test.ts): the job's edits went to `@original`,
  // the message the button sits on, not to the follow-up that is the job message.
  it('a button starting a job: a deferred update (the message stays), the job is a new public message that reaches its result', async () => {
    const cmd = h.fake.sendCommand({
      name: 'upscale',
      options: { prompt: 'a late fox' },
      attachments: { image: { filename: 'fox.png', contentType: 'image/png', bytes: PNG } },
    });
    const upscaled = await cmd.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const parent = text(upscaled);
    const click = h.fake.sendButton({
      customId: button(upscaled, 'Upscale again'),
      messageId: upscaled.id,
    });
    // A component's acknowledgement is a deferred update (type 6): no "thinking" message appears.
    expect((await inlineAck(click.id)).body).toEqual({ type: 6 });
    const again = await eventually(
      () => click.followUps.find((m) => text(m).includes('Upscale again')),
      6000,
      'the new job message with its result',
    );
    expect(again.id).not.toBe(upscaled.id);
    expect(again.ephemeral).toBe(false);
    expect(text(again)).toContain('a late fox');
    // The result the button sits on is left as it was.
    expect(text(h.fake.messages.get(upscaled.id) as FakeMessage)).toBe(parent);
    h.fake.assertNoViolations();
  });

  it('a form opened too late asks to click again', async () => {
    const video = h.fake.sendCommand({
      name: 'extend-video',
      options: { task_id: FIXTURE_VIDEO_TASK_ID, prompt: 'late waves' },
    });
    const done = await video.waitForMessage((m) => messageText(m).includes('.mp4'), 15_000);
    const retry = h.fake.sendButton({ customId: button(done, 'Extend again'), messageId: done.id });
    await inlineAck(retry.id);
    const follow = await eventually(() => retry.followUps[0], 10_000, 'apology');
    expect(follow.ephemeral).toBe(true);
    expect(follow.content).toMatch(/click the button again/);
    h.fake.assertNoViolations();
  });
});

/** Two instances on one Redis behind "a load balancer": either takes any interaction, each runs once. */
describe('http interactions: two instances sharing Redis', needs('redis'), () => {
  let h1: Harness;
  let h2: Harness;
  beforeAll(async () => {
    h1 = await startHarness({ interactions: 'http', redis: true, webhooks: true });
    h2 = await startHarness({
      interactions: 'http',
      redis: true,
      webhooks: true,
      reuse: { fake: h1.fake, emulator: h1.emulator, namespace: h1.namespace },
    });
  });
  afterAll(async () => {
    await h2?.close();
    await h1?.close();
  });

  it('an interaction delivered to one instance and again to the other runs once', async () => {
    const fake = h1.fake;
    const videos = () => [...h1.emulator.tasks.values()].filter((t) => t.operation === 'video' && !t.fixture);
    const before = videos().length;
    fake.setInteractionsMode('http', `${h2.baseUrl}/interactions`);
    const cmd = fake.sendCommand({
      name: 'extend-video',
      options: { task_id: FIXTURE_VIDEO_TASK_ID, prompt: 'one of two instances' },
    });
    await cmd.message();
    fake.setInteractionsMode('http', `${h1.baseUrl}/interactions`);
    const again = await fake.redeliver(cmd.id);
    expect(again.status).toBe(202);
    await cmd.waitForMessage((m) => messageText(m).includes('.mp4'), 15_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(videos()).toHaveLength(before + 1);
    expect(fake.interactionResponses.filter((r) => r.interactionId === cmd.id)).toHaveLength(1);

    // And the other instance takes the next one.
    const next = fake.sendCommand({ name: 'tasks' });
    expect((await next.message()).content).toMatch(/one of two instances|Your jobs/);
    expect(fake.gateway.connections).toHaveLength(0);
    fake.assertNoViolations();
  });
});
