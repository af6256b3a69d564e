/**
 * Every button and menu of a job, for its owner, another member and a member
 * with Manage Server: the other member gets an ephemeral refusal and nothing
 * starts; the owner and Manage Server are let through. The /tasks list itself
 * (paging, its menu) is only ever its invoker's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, FIXTURE_VIDEO_TASK_ID } from './emulator/server.js';
import type { FakeMessage } from './fake-discord/index.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { controls } from './helpers/message-text.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const MEMBER = String(1n << 11n);
const MANAGE = String((1n << 5n) | (1n << 11n));
const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});

interface Component {
  type: number;
  custom_id?: string;
  label?: string;
  options?: { value: string }[];
}
const componentsOf = (m: FakeMessage): Component[] => controls<Component>(m);
function customId(m: FakeMessage, label: string): string {
  const c = componentsOf(m).find((b) => b.label === label);
  if (!c?.custom_id) throw new Error(`no "${label}" on ${text(m).slice(0, 300)}`);
  return c.custom_id;
}

describe('who may use a job’s buttons', () => {
  let h: Harness;
  let alice: string;
  let bob: string;
  let admin: string;
  const results = new Map<string, FakeMessage>();
  const serviceTasks = () => [...h.emulator.tasks.values()].filter((t) => !t.fixture).length;

  beforeAll(async () => {
    h = await startHarness({ webhooks: true, env: { DEFAULT_MAX_ACTIVE_JOBS: '20' } });
    alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
    bob = h.fake.addUser({ username: 'bob', permissions: MEMBER });
    admin = h.fake.addUser({ username: 'admin', permissions: MANAGE });
    const wait = (label: string) => (m: FakeMessage) => text(m).includes(label);
    results.set(
      'upscale',
      await h.fake
        .sendCommand({
          name: 'upscale',
          userId: alice,
          options: { prompt: 'a fox' },
          attachments: { image: { filename: 'a.png', contentType: 'image/png', bytes: PNG } },
        })
        .waitForMessage(wait('Upscale again'), 15_000),
    );
    results.set(
      'song',
      await h.fake
        .sendCommand({
          name: 'extend-song',
          userId: alice,
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        })
        .waitForMessage(wait('Extend song 2'), 15_000),
    );
    results.set(
      'video',
      await h.fake
        .sendCommand({
          name: 'extend-video',
          userId: alice,
          options: { task_id: FIXTURE_VIDEO_TASK_ID, prompt: 'the fox runs' },
        })
        .waitForMessage(wait('Extend again'), 15_000),
    );
    h.emulator.nextScenario({ outcome: 'failed', failMessage: 'GPU on fire' });
    results.set(
      'failed',
      await h.fake
        .sendCommand({
          name: 'extend-song',
          userId: alice,
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
        })
        .waitForMessage(wait('Retry'), 15_000),
    );
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const cases = [
    ['upscale', 'Upscale again'],
    ['song', 'Extend song 1'],
    ['song', 'Extend song 2'],
    ['video', 'Extend again'],
    ['failed', 'Retry'],
  ] as const;

  it.each(cases)('%s · "%s": another member is refused and nothing starts', async (key, label) => {
    const msg = results.get(key);
    if (!msg) throw new Error(`no ${key} result`);
    const before = serviceTasks();
    const reply = await h.fake
      .sendButton({ customId: customId(msg, label), messageId: msg.id, userId: bob })
      .message(10_000);
    expect(reply.ephemeral).toBe(true);
    expect(text(reply)).toContain(`<@${alice}>`);
    expect(text(reply)).toContain('Manage Server');
    await new Promise((r) => setTimeout(r, 150));
    expect(serviceTasks()).toBe(before);
  });

  it.each(cases)('%s · "%s": a member with Manage Server is let through', async (key, label) => {
    const msg = results.get(key);
    if (!msg) throw new Error(`no ${key} result`);
    const before = serviceTasks();
    const click = h.fake.sendButton({ customId: customId(msg, label), messageId: msg.id, userId: admin });
    const cb = await click.response(10_000);
    if (label === 'Extend again') {
      // The video's next step asks for the prompt first (a modal), then starts.
      expect(cb.type).toBe(9);
      return;
    }
    const started = await click.message(10_000);
    expect(started.ephemeral).toBe(false);
    await h.fake.waitFor(() => serviceTasks() === before + 1, { timeoutMs: 10_000 });
  });

  it('the owner’s click starts the next step', async () => {
    const msg = results.get('upscale');
    if (!msg) throw new Error('no upscale result');
    const before = serviceTasks();
    const started = await h.fake
      .sendButton({ customId: customId(msg, 'Upscale again'), messageId: msg.id, userId: alice })
      .message(10_000);
    expect(started.ephemeral).toBe(false);
    await h.fake.waitFor(() => serviceTasks() === before + 1, { timeoutMs: 10_000 });
  });

  it('job centre: Re-post and Refresh are the owner’s or Manage Server’s; the list and its menu only the invoker’s', async () => {
    const job = (await h.app.store.listByUser(alice)).find((j) => j.state === 'finished');
    if (!job) throw new Error('no finished job');
    const detail = await h.fake
      .sendCommand({ name: 'tasks', userId: alice, options: { id: job.id } })
      .message(10_000);
    for (const label of ['Re-post', 'Refresh']) {
      const refused = await h.fake
        .sendButton({ customId: customId(detail, label), messageId: detail.id, userId: bob })
        .message(10_000);
      expect(refused.ephemeral).toBe(true);
      expect(text(refused)).toContain('Only the member who ran this job');
    }
    const reposted = await h.fake
      .sendButton({ customId: customId(detail, 'Re-post'), messageId: detail.id, userId: admin })
      .message(10_000);
    expect(reposted.ephemeral).toBe(false);

    const list = await h.fake.sendCommand({ name: 'tasks', userId: alice }).message(10_000);
    const menu = componentsOf(list).find((c) => c.type === 3);
    for (const userId of [bob, admin]) {
      const opened = await h.fake
        .sendComponent({
          customId: menu?.custom_id ?? '',
          messageId: list.id,
          userId,
          componentType: 3,
          values: [menu?.options?.[0]?.value ?? ''],
        })
        .message(10_000);
      expect(text(opened)).toContain('belongs to someone else');
    }
    h.fake.assertNoViolations();
  });
});
