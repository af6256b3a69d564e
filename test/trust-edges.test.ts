/**
 * Trust at the edges (issue 26), through the real bot, the fake Discord and the emulator:
 * limits hold from every context a request can come from, authority is checked in the
 * job's own server, a submission whose answer was lost is sent once and completes when the
 * service reports it, and Retry is one job however often it is pressed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import type { FakeMessage } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { controls } from './helpers/message-text.js';

const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});
const MANAGE = String((1n << 5n) | (1n << 10n) | (1n << 11n));
const MEMBER = String((1n << 10n) | (1n << 11n));

/** The buttons (and other controls) of a message with a custom id: label and id. */
function customIds(m: FakeMessage): { label: string; id: string }[] {
  return controls<{ label?: string; custom_id?: string }>(m).flatMap((c) =>
    typeof c.custom_id === 'string' ? [{ label: String(c.label ?? ''), id: c.custom_id }] : [],
  );
}
const buttonId = (m: FakeMessage, label: string): string => {
  const b = customIds(m).find((c) => c.label === label);
  if (!b) throw new Error(`no button "${label}" on ${text(m).slice(0, 300)}`);
  return b.id;
};
const songTasks = (h: Harness) =>
  [...h.emulator.tasks.values()].filter((t) => t.operation === 'song' && !t.fixture);

describe('trust at the edges', () => {
  let h: Harness;
  let alice: string;
  let otherGuild: string;
  /** A member with Manage Server in *their own* server only. */
  let otherManager: string;
  let finished: FakeMessage;
  let finishedTaskId: string;

  beforeAll(async () => {
    // Registered globally (no DISCORD_GUILD_ID), as in production: offered in DMs and every server.
    h = await startHarness({ webhooks: true, env: { DEFAULT_MAX_ACTIVE_JOBS: '10', DISCORD_GUILD_ID: '' } });
    alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
    otherManager = h.fake.addUser({ username: 'mallory', permissions: MEMBER });
    otherGuild = h.fake.addGuild({ name: 'mallory-town' });
    h.fake.addMember(otherGuild, otherManager, { permissions: MANAGE });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: alice,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    finished = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    finishedTaskId = (await h.app.store.listByUser(alice))[0]?.taskId ?? '';
    expect(finishedTaskId).not.toBe('');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('job commands and /settings are registered for servers only; /tasks also in a DM with the bot', () => {
    const registered = new Map(h.fake.globalCommands.map((c) => [String(c['name']), c['contexts']]));
    for (const name of ['upscale', 'extend-song', 'extend-video', 'training-photos', 'settings'])
      expect(registered.get(name), name).toEqual([0]);
    expect(registered.get('tasks')).toEqual(expect.arrayContaining([0, 1]));
    // Discord would not offer a job command in a DM at all (the fake refuses as Discord does).
    expect(() =>
      h.fake.sendCommand({
        name: 'extend-song',
        userId: alice,
        dm: true,
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
      }),
    ).toThrow();
  });

  it('/tasks in a DM lists the member’s own jobs; a Retry pressed there starts nothing', async () => {
    const list = await h.fake.sendCommand({ name: 'tasks', userId: alice, dm: true }).message();
    expect(list.ephemeral).toBe(true);
    expect(text(list)).toContain('Song extension');
    const detail = await h.fake
      .sendCommand({ name: 'tasks', userId: alice, dm: true, options: { id: finishedTaskId } })
      .message();
    const before = songTasks(h).length;
    const press = h.fake.sendButton({
      customId: buttonId(detail, 'Retry'),
      messageId: detail.id,
      userId: alice,
      dm: true,
    });
    const answer = await press
      .message()
      .catch(async () => (await eventually(() => press.followUps[0], 5000))!);
    expect(text(answer)).toMatch(/server/i);
    await new Promise((r) => setTimeout(r, 500));
    expect(songTasks(h)).toHaveLength(before);
  });

  it('a manager of another server is a stranger to this server’s jobs', async () => {
    // /tasks id: from their own server: answered like an unknown id, nothing shown.
    const probe = await h.fake
      .sendCommand({
        name: 'tasks',
        userId: otherManager,
        guildId: otherGuild,
        options: { id: finishedTaskId },
      })
      .message();
    expect(probe.ephemeral).toBe(true);
    expect(text(probe)).toMatch(/No task or job/);
    expect(text(probe)).not.toContain('Extend song');
    // Job buttons naming this server's job, pressed in their server (on a bot message there):
    // refused, nothing shown, nothing started.
    const before = songTasks(h).length;
    const own = await h.fake
      .sendCommand({ name: 'tasks', userId: otherManager, guildId: otherGuild })
      .message();
    const jobId = (await h.app.store.getByTaskId(finishedTaskId))?.id ?? '';
    for (const customId of [
      `tasks:repost:${jobId}`,
      `tasks:refresh:${jobId}`,
      buttonId(finished, 'Extend song 1'),
    ]) {
      const press = h.fake.sendButton({
        customId,
        messageId: own.id,
        userId: otherManager,
        guildId: otherGuild,
      });
      const refusal = await eventually(() => press.followUps[0] ?? press.originalMessage, 5000, customId);
      expect(refusal.ephemeral, customId).toBe(true);
      expect(text(refusal), customId).not.toContain(FIXTURE_SONG_IDS[0]);
    }
    // The song_id autocomplete shows nothing of another member's task to them.
    const ac = h.fake.sendAutocomplete({
      name: 'extend-song',
      userId: otherManager,
      guildId: otherGuild,
      options: { task_id: finishedTaskId, song_id: '' },
      focused: 'song_id',
    });
    await eventually(() => ac.choices !== undefined, 5000, 'autocomplete answered');
    expect(ac.choices).toEqual([]);
    await new Promise((r) => setTimeout(r, 300));
    expect(songTasks(h)).toHaveLength(before);
    h.fake.assertNoViolations();
  });

  it('Retry pressed twice at once is one new job; the second press names it', async () => {
    h.emulator.nextScenario({ outcome: 'failed', failMessage: 'the GPU melted' });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: alice,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const failed = await cmd.waitForMessage((m) => text(m).includes('the GPU melted'), 15_000);
    h.emulator.nextScenario({ hold: true });
    const before = songTasks(h).length;
    const retry = buttonId(failed, 'Retry');
    const a = h.fake.sendButton({ customId: retry, messageId: failed.id, userId: alice });
    const b = h.fake.sendButton({ customId: retry, messageId: failed.id, userId: alice });
    await Promise.all([a.response(), b.response()]);
    await eventually(() => songTasks(h).length > before, 10_000, 'the retry submitted');
    await new Promise((r) => setTimeout(r, 1000));
    expect(songTasks(h)).toHaveLength(before + 1);
    const answers = [a, b].map((x) => [x.originalMessage, ...x.followUps].map(text).join(' '));
    expect(answers.some((t) => /already running|being started/.test(t))).toBe(true);
  });
});

describe('a submission whose answer was lost', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ webhooks: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it.each(['bad-gateway', 'reset'] as const)(
    '%s: sent once, shown as not confirmed, completed on the member’s message when the service reports it',
    async (mode) => {
      const before = h.emulator.requests.filter((r) => r.path === '/song-extend').length;
      h.emulator.loseNextAnswer(1, { mode });
      h.emulator.nextScenario({ stepMs: 600 });
      const cmd = h.fake.sendCommand({
        name: 'extend-song',
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
      });
      await cmd.waitForMessage((m) => text(m).includes('Not confirmed'), 15_000);
      const msg = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 20_000);
      const task = songTasks(h).at(-1);
      expect(text(msg)).toContain(String((task?.body as { video_url?: string }).video_url));
      expect(h.emulator.requests.filter((r) => r.path === '/song-extend').length).toBe(before + 1);
      h.fake.assertNoViolations();
    },
  );
});
