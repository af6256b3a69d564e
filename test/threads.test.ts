/**
 * A thread per job (/settings threads): the reply stays one line linking the
 * thread, the live message (progress, results, buttons) lives in the thread,
 * next steps clicked there run there, and a thread Discord refuses leaves the
 * job in the channel with one ephemeral note.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import { DiscordErrors, type FakeMessage } from './fake-discord/index.js';
import { eventually, jobIdInFooter, startHarness, type Harness } from './helpers/harness.js';
import { oncePerJob } from '../src/services/discord/message-nonce.js';
import { controls } from './helpers/message-text.js';

const THREADS_ROUTE = '/channels/{channel_id}/messages/{message_id}/threads';
const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});

function buttonIds(m: FakeMessage): string[] {
  return controls<{ custom_id?: string }>(m).flatMap((c) => (c.custom_id ? [c.custom_id] : []));
}

describe('a thread per job', () => {
  let h: Harness;
  let admin: string;

  beforeAll(async () => {
    h = await startHarness({ webhooks: true, env: { DEFAULT_THREADS: 'true' } });
    admin = h.fake.addUser({ username: 'admin', permissions: String((1n << 5n) | (1n << 11n)) });
  });
  afterAll(async () => {
    await h?.close();
  });
  /** /extend-song run by the admin; its reply is the message the job's thread starts from. */
  const extendSong = async (songId: string) => {
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: admin,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: songId },
    });
    return { cmd, reply: await cmd.message(10_000) };
  };

  it('reply = one line linking the thread; the live message in the thread goes to the results; next steps run there', async () => {
    const channelId = h.fake.defaultChannelId;
    const { reply } = await extendSong(FIXTURE_SONG_IDS[0]);
    // The thread starts from the reply (Discord: same id), named after the command and the task.
    const threadId = reply.id;
    await eventually(() => h.fake.channelIds.includes(threadId), 10_000, 'thread created');
    const live = await eventually(
      () => h.fake.channelMessages(threadId).find((m) => text(m).includes('Extend song 2')),
      15_000,
      'final results in the thread',
    );
    expect(live.source).toBe('channel');
    // The channel reply: one short line, linking the thread, ending on the final state.
    await eventually(() => text(reply).includes('finished'), 10_000, 'reply shows the final state');
    const r = reply.data;
    expect(String(r['content'])).toContain(`<#${threadId}>`);
    expect(String(r['content']).split('\n')).toHaveLength(1);
    expect(r['embeds']).toEqual([]);
    expect(r['components']).toEqual([]);
    // Only the reply is in the channel (plus nothing else from this job).
    expect(
      h.fake.channelMessages(channelId).filter((m) => m.interactionId === reply.interactionId),
    ).toHaveLength(1);

    // "Extend song 2" clicked inside the thread: the new job runs in the thread, no new thread.
    const channelsBefore = h.fake.channelIds.length;
    const id = buttonIds(live).find((c) => c.includes('song'));
    expect(id).toBeDefined();
    const click = h.fake.sendButton({
      customId: id ?? '',
      messageId: live.id,
      channelId: threadId,
      userId: admin,
    });
    const next = await click.message(10_000);
    expect(next.channelId).toBe(threadId);
    await click.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    expect(h.fake.channelIds.length).toBe(channelsBefore);
    h.fake.assertNoViolations();
  });

  // Regression: Discord started the thread and posted the live message but both answers were
  // lost (502); REST's retries got 160004 for the thread (the job stayed in the channel, the
  // member was told the thread failed) and made a second live message.
  it('502 after Discord started the thread and after it took the live message: one thread, one live message, no note', async () => {
    const threadLost = h.fake.injectFault({
      method: 'POST',
      route: THREADS_ROUTE,
      ...DiscordErrors.answerLost,
    });
    const postLost = h.fake.injectFault({
      method: 'POST',
      route: '/channels/{channel_id}/messages',
      ...DiscordErrors.answerLost,
    });
    try {
      const { cmd, reply } = await extendSong(FIXTURE_SONG_IDS[0]);
      const threadId = reply.id;
      await eventually(() => text(reply).includes(`<#${threadId}>`), 10_000, 'reply linking the thread');
      const live = await eventually(
        () => h.fake.channelMessages(threadId).find((m) => text(m).includes('Extend song 2')),
        15_000,
        'final results in the thread',
      );
      expect(threadLost.hits).toBe(1);
      expect(postLost.hits).toBe(1);
      expect(h.fake.channelMessages(threadId).map((m) => m.id)).toEqual([live.id]);
      expect(live.data['nonce']).toBe(oncePerJob('thread', jobIdInFooter(live)).nonce);
      expect(cmd.followUps.filter((m) => m.ephemeral)).toHaveLength(0);
      h.fake.assertNoViolations();
    } finally {
      threadLost.remove();
      postLost.remove();
    }
  });

  it('a thread Discord refuses (403 50013): the job finishes in the channel; the member is told once, ephemerally', async () => {
    h.fake.injectFault({
      ...DiscordErrors.missingPermissions,
      method: 'POST',
      route: THREADS_ROUTE,
      count: 1,
    });
    const { cmd, reply } = await extendSong(FIXTURE_SONG_IDS[1]);
    const note = await eventually(() => cmd.followUps.find((m) => m.ephemeral), 10_000, 'ephemeral note');
    expect(text(note)).toContain('Create Public Threads');
    expect(cmd.followUps.filter((m) => m.ephemeral)).toHaveLength(1);
    await cmd.waitForMessage((m) => m.id === reply.id && text(m).includes('Extend song 2'), 15_000);
    expect(h.fake.channelIds).not.toContain(reply.id);
    h.fake.assertNoViolations();
  });
});
