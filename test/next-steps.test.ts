/**
 * Iterating on results: result buttons are the owner's (or Manage Server's),
 * next steps keep the parameters that still apply and link their parent, a
 * failed job has Retry, forged custom ids are refused, buttons work after a
 * restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import type { FakeMessage } from './fake-discord/index.js';
import { eventually, restartBot, startHarness, type Harness } from './helpers/harness.js';
import { controls } from './helpers/message-text.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});
const MANAGE = String((1n << 5n) | (1n << 11n));
const MEMBER = String(1n << 11n);

function button(m: FakeMessage, label: string): string {
  const b = controls<{ custom_id?: string; label?: string }>(m).find((c) => c.label === label);
  if (!b?.custom_id) throw new Error(`no button "${label}" on ${text(m).slice(0, 300)}`);
  return b.custom_id;
}

const tasksOf = (h: Harness, op: string) =>
  [...h.emulator.tasks.values()].filter((t) => t.operation === op && !t.fixture);

describe('next steps and their owners', () => {
  let h: Harness;
  let alice: string;
  let bob: string;
  let admin: string;
  let upscaled: FakeMessage;

  beforeAll(async () => {
    h = await startHarness({ webhooks: true, env: { DEFAULT_MAX_ACTIVE_JOBS: '10' } });
    alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
    bob = h.fake.addUser({ username: 'bob', permissions: MEMBER });
    admin = h.fake.addUser({ username: 'admin', permissions: MANAGE });
    const cmd = h.fake.sendCommand({
      name: 'upscale',
      userId: alice,
      options: { prompt: 'a crisp fox', resemblance: 70, detail: 30, magic_prompt: 'ON', seed: 7 },
      attachments: { image: { filename: 'fox.png', contentType: 'image/png', bytes: PNG } },
    });
    upscaled = await cmd.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("another member's click is refused ephemerally and starts nothing", async () => {
    const before = tasksOf(h, 'upscale').length;
    const click = h.fake.sendButton({
      customId: button(upscaled, 'Upscale again'),
      messageId: upscaled.id,
      userId: bob,
    });
    const reply = await click.message(10_000);
    expect(reply.ephemeral).toBe(true);
    expect(text(reply)).toContain(`<@${alice}>`);
    expect(text(reply)).toContain('Manage Server');
    await new Promise((r) => setTimeout(r, 200));
    expect(tasksOf(h, 'upscale')).toHaveLength(before);
  });

  it('"Upscale again" by the owner keeps prompt, resemblance, detail and magic_prompt (not the seed) and links the parent', async () => {
    const before = tasksOf(h, 'upscale').length;
    const click = h.fake.sendButton({
      customId: button(upscaled, 'Upscale again'),
      messageId: upscaled.id,
      userId: alice,
    });
    const msg = await click.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const tasks = tasksOf(h, 'upscale');
    expect(tasks).toHaveLength(before + 1);
    const body = tasks[tasks.length - 1]?.params;
    expect(body).toMatchObject({
      prompt: 'a crisp fox',
      resemblance: 70,
      detail: 30,
      magic_prompt_option: 'ON',
    });
    expect(body?.['seed']).toBeUndefined();
    expect(text(msg)).toContain('Extended from');
    expect(text(msg)).toContain(`/channels/${h.fake.guildId}/${upscaled.channelId}/${upscaled.id}`);
    h.fake.assertNoViolations();
  });

  it('a member with Manage Server may use anyone’s buttons', async () => {
    const before = tasksOf(h, 'upscale').length;
    const click = h.fake.sendButton({
      customId: button(upscaled, 'Upscale again'),
      messageId: upscaled.id,
      userId: admin,
    });
    const msg = await click.message(10_000);
    expect(msg.ephemeral).toBe(false);
    await eventually(() => tasksOf(h, 'upscale').length === before + 1, 10_000);
  });

  it('"Extend song 2" sends the parent task and the second song', async () => {
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: alice,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    const song = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    const parent = tasksOf(h, 'song').at(-1);
    const click = h.fake.sendButton({
      customId: button(song, 'Extend song 2'),
      messageId: song.id,
      userId: alice,
    });
    await click.message(10_000);
    await eventually(() => tasksOf(h, 'song').length >= 2, 10_000);
    const body = tasksOf(h, 'song').at(-1)?.params;
    const second = (parent?.body as { songs: { song_id: string }[] }).songs[1]?.song_id;
    expect(body).toMatchObject({ parent_task_id: parent?.id, song_id: second });
  });

  it('a failed job has Retry: a new job with the same parameters and a new message; the failed job is kept', async () => {
    h.emulator.nextScenario({ outcome: 'failed', failMessage: 'GPU on fire' });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: alice,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1], continue_at: 12 },
    });
    const failed = await cmd.waitForMessage(
      (m) => text(m).includes('GPU on fire') && text(m).includes('Retry'),
      15_000,
    );
    const before = tasksOf(h, 'song').length;
    const click = h.fake.sendButton({
      customId: button(failed, 'Retry'),
      messageId: failed.id,
      userId: alice,
    });
    const retried = await click.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    expect(retried.id).not.toBe(failed.id);
    expect(tasksOf(h, 'song')).toHaveLength(before + 1);
    expect(tasksOf(h, 'song').at(-1)?.params).toMatchObject({
      parent_task_id: FIXTURE_SONG_TASK_ID,
      song_id: FIXTURE_SONG_IDS[1],
      continue_at: 12,
    });
    // The failed job's message still says it failed.
    expect(text(h.fake.messages.get(failed.id))).toContain('GPU on fire');
  });

  it('forged or oversized custom ids are refused', async () => {
    for (const customId of [
      'next:retry:not-a-job',
      `next:upscale-again:${'a'.repeat(120)}`,
      'next:retry:00000000-0000-0000-0000-000000000000:x',
    ]) {
      const click = h.fake.sendButton({ customId, messageId: upscaled.id, userId: alice });
      const reply = await click.message(10_000);
      expect(reply.ephemeral).toBe(true);
      expect(text(reply)).toMatch(/not one of this bot|no longer/);
    }
    const unknown = h.fake.sendButton({
      customId: 'next:retry:00000000-0000-4000-8000-000000000000',
      messageId: upscaled.id,
      userId: alice,
    });
    expect(text(await unknown.message(10_000))).toContain('no longer stored');
  });
});

describe('buttons after a restart', () => {
  it('a result’s button still works for its owner after the bot restarted', async () => {
    const h1 = await startHarness({ webhooks: true });
    const cmd = h1.fake.sendCommand({
      name: 'upscale',
      options: { prompt: 'restart me', resemblance: 40 },
      attachments: { image: { filename: 'a.png', contentType: 'image/png', bytes: PNG } },
    });
    const msg = await cmd.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const h2 = await restartBot(h1, { webhooks: true });
    try {
      const click = h2.fake.sendButton({ customId: button(msg, 'Upscale again'), messageId: msg.id });
      await click.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
      const last = tasksOf(h2, 'upscale').at(-1)?.params;
      expect(last).toMatchObject({ prompt: 'restart me', resemblance: 40 });
    } finally {
      await h2.close();
      await h1.close();
    }
  });
});
