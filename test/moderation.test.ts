/**
 * Moderation through the real bot, the fake Discord and the emulator: `Remove result`
 * (message command, Manage Messages, servers only) takes a result down in the channel,
 * its thread and the gallery, and does nothing for anyone else; AutoMod refusing a
 * job's text (thread name, message) never fails the job.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeMessage } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { uniquePng } from './helpers/photos.js';

const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});
const BASIC = (1n << 10n) | (1n << 11n);
const MEMBER = String(BASIC);
const MODERATOR = String(BASIC | (1n << 13n));
const MANAGER = String(BASIC | (1n << 5n));

describe('Remove result and AutoMod', () => {
  let h: Harness;
  let alice: string;
  let bob: string;
  let mod: string;
  let galleryId: string;
  let png: Buffer;

  const upscale = (userId: string, prompt = 'a cat in a hat') =>
    h.fake.sendCommand({
      name: 'upscale',
      userId,
      options: { prompt, resemblance: 60 },
      attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
    });
  const remove = (userId: string, targetMessageId: string) =>
    h.fake.sendMessageCommand({ name: 'Remove result', userId, targetMessageId });

  /** An upscale run to its result; its thread's live message, its channel line and its gallery post. */
  async function finishedJob(prompt?: string) {
    const cmd = upscale(alice, prompt);
    const reply = await cmd.message(10_000);
    const threadId = reply.id;
    const live = await eventually(
      () => h.fake.channelMessages(threadId).find((m) => text(m).includes('Upscale again')),
      20_000,
      'the result in the thread',
    );
    const job = await eventually(() => h.app.store.getByMessageId(live.id), 10_000, 'the job record');
    const post = await eventually(
      async () => (await h.app.store.get(job.id))?.galleryPost,
      15_000,
      'the gallery post recorded',
    );
    return { cmd, reply, threadId, live, jobId: job.id, post };
  }

  beforeAll(async () => {
    png = await uniquePng();
    h = await startHarness({
      webhooks: true,
      env: { DEFAULT_THREADS: 'true', DEFAULT_MAX_ACTIVE_JOBS: '5' },
      fake: { guild: { channels: [{ name: 'general' }, { name: 'gallery' }] } },
    });
    alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
    bob = h.fake.addUser({ username: 'bob', permissions: MEMBER });
    mod = h.fake.addUser({ username: 'mod', permissions: MODERATOR });
    const admin = h.fake.addUser({ username: 'admin', permissions: MANAGER });
    galleryId = h.fake.channelIdByName('gallery');
    // Locking a thread needs Manage Threads (the invite asks for it).
    h.fake.setBotPermissions(String(BigInt(h.fake.botPermissions()) | (1n << 34n)));
    await h.fake
      .sendCommand({ name: 'settings', subcommand: 'set', userId: admin, options: { gallery: galleryId } })
      .message(10_000);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('is registered as a message command for moderators, in servers only', () => {
    const all = [...h.fake.globalCommands, ...h.fake.guildCommands()];
    const cmd = all.find((c) => c['name'] === 'Remove result');
    expect(cmd).toMatchObject({ type: 3, default_member_permissions: '8192', contexts: [0] });
  });

  it('a member without Manage Messages is not offered it, and if a server allows them, nothing is removed', async () => {
    const job = await finishedJob();
    expect(() => remove(bob, job.live.id)).toThrow(/default_member_permissions/);
    h.fake.setCommandPermission(h.fake.guildId, 'Remove result', bob, true, 3);
    const answer = await remove(bob, job.live.id).message(10_000);
    expect(answer.ephemeral).toBe(true);
    expect(answer.content).toContain('Manage Messages');
    expect(text(job.live)).toContain('Upscale again');
    expect((await h.app.store.get(job.jobId))?.removed).toBeUndefined();
    expect(h.fake.channelMessages(galleryId).some((m) => m.id === job.post.messageId)).toBe(true);
  });

  it('a moderator on the job message takes the result down everywhere and is told what was removed', async () => {
    const job = await finishedJob();
    const answer = await remove(mod, job.live.id).message(10_000);
    expect(answer.ephemeral).toBe(true);
    expect(answer.content).toContain('gallery post was deleted');
    expect(answer.content).toContain('thread was locked');
    // The live message and the channel line say only that it was removed; no files, no buttons.
    for (const m of [job.live, job.reply]) {
      await eventually(() => text(m).includes('removed by a moderator'), 10_000, 'message replaced');
      expect(text(m)).not.toContain('Upscale again');
      expect(JSON.stringify([m.data['content'], m.data['embeds'], m.data['components']])).not.toContain(
        'a cat in a hat',
      );
      expect(m.attachments).toHaveLength(0);
    }
    expect(h.fake.channelMessages(galleryId).some((m) => m.id === job.post.messageId)).toBe(false);
    expect(h.fake.thread(job.threadId)).toMatchObject({
      locked: true,
      name: expect.not.stringContaining('cat'),
    });
    const record = await h.app.store.get(job.jobId);
    expect(record?.removed?.by).toBe(mod);
    // Once is enough.
    const again = await remove(mod, job.live.id).message(10_000);
    expect(again.content).toContain('already removed');
  });

  it('a moderator on the gallery post takes the same result down', async () => {
    const job = await finishedJob();
    const post = h.fake.channelMessages(galleryId).find((m) => m.id === job.post.messageId);
    expect(post).toBeDefined();
    const answer = await remove(mod, job.post.messageId).message(10_000);
    expect(answer.content).toContain('gallery post was deleted');
    await eventually(() => text(job.live).includes('removed by a moderator'), 10_000, 'job message replaced');
    expect((await h.app.store.get(job.jobId))?.removed?.by).toBe(mod);
  });

  it('a message that is not the bot’s is not a result', async () => {
    const own = h.fake.postUserMessage({ content: 'hello', userId: alice });
    const answer = await remove(mod, own.id).message(10_000);
    expect(answer.content).toContain('not a job result');
    expect(own.deleted).toBeFalsy();
  });

  it('AutoMod refusing the prompt: neutral thread name, the job finishes without the prompt, one note', async () => {
    h.fake.setAutoModKeywords(h.fake.guildId, ['forbidden*']);
    try {
      const cmd = upscale(alice, 'a forbidden cat');
      const reply = await cmd.message(10_000);
      const threadId = reply.id;
      await eventually(() => h.fake.thread(threadId) !== undefined, 10_000, 'the thread').catch((e) => {
        console.log(
          JSON.stringify(h.fake.autoModBlocks),
          text(reply),
          JSON.stringify(cmd.followUps.map((m) => m.data)),
        );
        throw e;
      });
      expect(h.fake.thread(threadId)?.name).not.toMatch(/forbidden/i);
      const live = await eventually(
        () => h.fake.channelMessages(threadId).find((m) => text(m).includes('Upscale again')),
        20_000,
        'the result in the thread',
      );
      expect(text(live)).not.toMatch(/forbidden/i);
      const job = await h.app.store.getByMessageId(live.id);
      expect(job?.state).toBe('finished');
      expect(job?.textWithheld).toBe(true);
      await eventually(
        () => cmd.followUps.some((m) => m.ephemeral && m.content.includes('AutoMod')),
        10_000,
        'the note',
      );
      expect(cmd.followUps.filter((m) => m.ephemeral && m.content.includes('AutoMod'))).toHaveLength(1);
      expect(h.fake.autoModBlocks.length).toBeGreaterThan(0);
    } finally {
      h.fake.setAutoModKeywords(h.fake.guildId, []);
    }
  });
});
