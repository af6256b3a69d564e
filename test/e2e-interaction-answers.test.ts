/**
 * The first answer to a job command through the real bot, over the gateway and over
 * HTTP (`DISCORD_INTERACTIONS=http`), against the fake Discord and the emulator: an
 * answer Discord took but whose reply was lost (issue 26), and a command kept past
 * Discord's 3 s by its member's fair-use record (acknowledged on its behalf in time).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import { DiscordErrors, type FakeMessage } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';

const text = (m: FakeMessage): string => JSON.stringify(m.data);

/** The custom id of the button labelled `label`, wherever it sits (action rows, containers, sections). */
function buttonId(m: FakeMessage, label: string): string {
  const find = (node: unknown): string | undefined => {
    if (Array.isArray(node)) return node.map(find).find((x) => x !== undefined);
    if (!node || typeof node !== 'object') return undefined;
    const o = node as Record<string, unknown>;
    if (o['type'] === 2 && o['label'] === label && typeof o['custom_id'] === 'string') return o['custom_id'];
    return find(o['components']) ?? find(o['accessory']);
  };
  const id = find(m.data['components']);
  if (!id) throw new Error(`no button "${label}" on ${text(m).slice(0, 300)}`);
  return id;
}
const CALLBACK = '/interactions/{interaction_id}/{interaction_token}/callback';

describe.each(['gateway', 'http'] as const)('the first answer to a job command (%s)', (mode) => {
  let h: Harness;
  beforeAll(async () => {
    // A cooldown refuses a member's second submission: the refusal case below.
    h = await startHarness({ interactions: mode, webhooks: true, env: { DEFAULT_COOLDOWN_SECONDS: '600' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  const song = (userId: string) =>
    h.fake.sendCommand({
      name: 'extend-song',
      userId,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
  const member = (username: string) => h.fake.addUser({ username, permissions: String(1n << 11n) });
  const songTasks = () => [...h.emulator.tasks.values()].filter((t) => !t.fixture).length;

  // Issue 26: "if Discord took the reply but REST's retry got 40060, the job is dropped
  // silently with a public 'Submitting…' left forever".
  it('Discord took the reply but its answer was lost: the job is submitted once and its message ends on the result', async () => {
    const before = songTasks();
    const lost = h.fake.injectFault({ ...DiscordErrors.answerLost, method: 'POST', route: CALLBACK });
    const cmd = song(member(`lost-${mode}`));
    const done = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    expect(lost.hits).toBe(1);
    expect(done.ephemeral).toBe(false);
    expect(done.content).not.toContain('Submitting');
    // The callback Discord took is the only one (REST's retry was refused 40060), no second message.
    expect(h.fake.interactionResponses.filter((r) => r.interactionId === cmd.id)).toHaveLength(1);
    expect(cmd.followUps).toHaveLength(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(songTasks()).toBe(before + 1);
    if (mode === 'http') {
      const deliveries = h.fake.httpDeliveries.filter((d) => d.interactionId === cmd.id);
      expect(deliveries.map((d) => [d.status, d.problem])).toEqual([[202, undefined]]);
    }
    h.fake.assertNoViolations();
  });

  describe('kept waiting by its member’s fair-use record (a slow store, 2.8 s)', () => {
    // Past both acknowledgement deadlines (1.5 s gateway, 2.5 s http), short of Discord's 3 s.
    const hold = (userId: string, ms: number) =>
      h.app.kv.update(
        [`fair-use:${h.fake.guildId}:${userId}`],
        () => new Promise<{ result: undefined }>((r) => setTimeout(() => r({ result: undefined }), ms)),
      );
    /** The interaction's first answer: its callback, or (http) the HTTP response's body. */
    const firstAnswer = async (id: string): Promise<unknown> => {
      if (mode === 'gateway') return (await h.fake.interaction(id).response(3000)).type;
      const d = await eventually(
        () => h.fake.httpDeliveries.find((x) => x.interactionId === id),
        3500,
        'the HTTP answer',
      );
      expect([d.status, d.problem]).toEqual([200, undefined]);
      return (d.body as { type?: number } | undefined)?.type;
    };

    it('is deferred within Discord’s 3 s; the job message then fills the deferral', async () => {
      const before = songTasks();
      const slow = member(`slow-${mode}`);
      const held = hold(slow, 2800);
      const cmd = song(slow);
      // The fake fails an interaction not acknowledged within 3 s, as Discord does.
      expect(await firstAnswer(cmd.id)).toBe(5);
      await held;
      const msg = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
      expect(msg.ephemeral).toBe(false);
      expect(cmd.followUps).toHaveLength(0);
      expect(songTasks()).toBe(before + 1);
      h.fake.assertNoViolations();
    });

    // Regression: after a component's automatic deferred update the job message is a follow-up;
    // the job record kept only the interaction token, so every edit went to `@original` (the
    // message the button sits on): the parent's result was overwritten and the new message
    // stayed on "Submitting…". The job now records the follow-up's id.
    it('a next-step button kept waiting: its job is a new message that reaches its result; the parent is untouched', async () => {
      const parentCmd = song(member(`button-${mode}`));
      const parent = await parentCmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
      const parentBefore = text(parent);
      // Clicked by a manager (Manage Server) who has not submitted yet: the cooldown does not apply.
      const manager = h.fake.addUser({
        username: `manager-${mode}`,
        permissions: String((1n << 5n) | (1n << 11n)),
      });
      const held = hold(manager, 2800);
      const click = h.fake.sendButton({
        customId: buttonId(parent, 'Extend song 1'),
        messageId: parent.id,
        userId: manager,
      });
      expect(await firstAnswer(click.id)).toBe(6);
      await held;
      const next = await eventually(
        () => click.followUps.find((m) => text(m).includes('Extend song 2')),
        6000,
        'the new job message with its result',
      );
      expect(next.ephemeral).toBe(false);
      expect(text(h.fake.messages.get(parent.id) as FakeMessage)).toBe(parentBefore);
    });

    it('refused after the deferral: the placeholder goes, the refusal is ephemeral', async () => {
      const user = member(`slow-refused-${mode}`);
      const first = song(user);
      await first.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
      const before = songTasks();
      const held = hold(user, 2800);
      const cmd = song(user);
      expect(await firstAnswer(cmd.id)).toBe(5);
      await held;
      const refusal = await eventually(
        () => cmd.followUps.find((m) => text(m).includes('you can submit again')),
        10_000,
        'the refusal',
      );
      expect(refusal.ephemeral).toBe(true);
      await eventually(() => cmd.originalMessage?.deleted, 10_000, 'the placeholder deleted');
      expect(songTasks()).toBe(before);
      h.fake.assertNoViolations();
    });
  });
});

// Regression: gateway mode had no interaction-id claim, and a 40060 was taken as "ours": a
// replayed INTERACTION_CREATE ran the command again (no cooldown to stop it), took the first
// job's message as its own and submitted a second paid task.
describe.each(['gateway', 'http'] as const)('an interaction delivered again (%s)', (mode) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ interactions: mode, webhooks: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('after it was answered: nothing runs again, one task, one message', async () => {
    const tasks = () => [...h.emulator.tasks.values()].filter((t) => !t.fixture).length;
    const userId = h.fake.addUser({ username: `replay-${mode}`, permissions: String(1n << 11n) });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const done = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    expect(tasks()).toBe(1);
    const messagesBefore = h.fake.messages.size;
    if (mode === 'gateway') h.fake.redispatch(cmd.id);
    else expect((await h.fake.redeliver(cmd.id)).status).toBe(202);
    // Nothing to wait for when the replay is dropped: give it the time a second run would take.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(tasks()).toBe(1);
    expect(h.fake.interactionResponses.filter((r) => r.interactionId === cmd.id)).toHaveLength(1);
    expect(cmd.followUps).toHaveLength(0);
    expect(h.fake.messages.size).toBe(messagesBefore);
    expect(text(h.fake.messages.get(done.id) ?? done)).toBe(text(done));
    h.fake.assertNoViolations();
  });
});
