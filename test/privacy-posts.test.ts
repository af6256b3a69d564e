/**
 * `/privacy delete` on Discord, through the real bot, the fake Discord and the emulator,
 * on SQLite and on Redis: a job's public messages are found at any age (also after the
 * retention sweep deleted its record): its gallery post and Re-posts are deleted, its
 * live message and channel line replaced by "removed at the member's request" in the
 * server's language, its thread (named after the prompt) renamed; what Discord refuses is
 * reported, kept and tried again by the next deletion. Remove result deletes Re-posts too.
 */
import { Routes } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordErrors, type FakeMessage } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { controls, messageText } from './helpers/message-text.js';
import { uniquePng } from './helpers/photos.js';
import { needs } from './helpers/requirements.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import type { JobRecord } from '../src/services/store/types.js';

const BASIC = (1n << 10n) | (1n << 11n);
const MEMBER = String(BASIC);
const MODERATOR = String(BASIC | (1n << 13n));
const MANAGER = String(BASIC | (1n << 5n));
const MANAGE_THREADS = 1n << 34n;
const REMOVED_DE = 'Auf Wunsch des Mitglieds entfernt';

function buttons(m: FakeMessage): { label: string; id: string }[] {
  return controls<{ label?: string; custom_id?: string }>(m).flatMap((c) =>
    typeof c.custom_id === 'string' ? [{ label: String(c.label ?? ''), id: c.custom_id }] : [],
  );
}

for (const backend of ['sqlite', 'redis'] as const) {
  describe(
    `/privacy delete reaches every public message, on ${backend}`,
    backend === 'redis' ? needs('redis') : {},
    () => {
      let h: Harness;
      let admin: string;
      let mod: string;
      let galleryId: string;
      let generalId: string;
      let png: Buffer;
      let botPermissions: bigint;

      const upscale = (userId: string, prompt: string) =>
        h.fake.sendCommand({
          name: 'upscale',
          userId,
          options: { prompt, resemblance: 60 },
          attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
        });
      const setGallery = (channelId: string) =>
        h.fake
          .sendCommand({
            name: 'settings',
            subcommand: 'set',
            userId: admin,
            options: { gallery: channelId },
          })
          .message(10_000);

      /** A finished upscale of `userId`'s, in its thread, with its gallery post recorded. */
      async function finishedJob(userId: string, prompt: string): Promise<JobRecord> {
        await upscale(userId, prompt).message(10_000);
        return eventually(
          async () =>
            (await h.app.store.listByUser(userId)).find(
              (j) => j.params['prompt'] === prompt && j.galleryPost !== undefined && j.state === 'finished',
            ),
          30_000,
          'the finished job with its gallery post',
        );
      }

      /** `/tasks id:` → Re-post: the fresh public message, once the bot indexed it. */
      async function repost(userId: string, job: JobRecord): Promise<FakeMessage> {
        const detail = await h.fake
          .sendCommand({ name: 'tasks', userId, options: { id: job.id } })
          .message(10_000);
        const button = buttons(detail).find((b) => b.id.startsWith('tasks:repost:'));
        const fresh = await h.fake
          .sendButton({ customId: button?.id ?? '', messageId: detail.id, userId })
          .message(10_000);
        expect(fresh.ephemeral).toBe(false);
        await eventually(
          async () =>
            JSON.stringify((await h.app.kv.get<object>(`public-posts:${job.id}`)) ?? {}).includes(fresh.id),
          10_000,
          'the Re-post indexed',
        );
        return fresh;
      }

      /** /privacy delete, confirmed: the final answer. */
      async function deleteData(userId: string): Promise<FakeMessage> {
        const ask = await h.fake
          .sendCommand({ name: 'privacy', subcommand: 'delete', userId })
          .message(10_000);
        const confirm = buttons(ask).find((b) => b.id.startsWith('privacy:delete'));
        expect(confirm).toBeDefined();
        return h.fake
          .sendButton({ customId: confirm!.id, messageId: ask.id, userId })
          .waitForMessage((m) => m.content.startsWith('Deleted:'), 30_000);
      }

      const message = (channelId: string, id: string | undefined) =>
        h.fake.channelMessages(channelId, true).find((m) => m.id === id);

      beforeAll(async () => {
        png = await uniquePng();
        h = await startHarness({
          webhooks: true,
          redis: backend === 'redis',
          env: { DEFAULT_THREADS: 'true', DEFAULT_MAX_ACTIVE_JOBS: '5' },
          fake: { guild: { channels: [{ name: 'general' }, { name: 'gallery' }] } },
        });
        admin = h.fake.addUser({ username: 'admin', permissions: MANAGER });
        mod = h.fake.addUser({ username: 'mod', permissions: MODERATOR });
        galleryId = h.fake.channelIdByName('gallery');
        generalId = h.fake.channelIdByName('general');
        // The invite's permissions (Manage Threads among them); public messages speak German.
        botPermissions = BigInt(h.fake.botPermissions()) | MANAGE_THREADS;
        h.fake.setBotPermissions(String(botPermissions));
        h.fake.setGuildLocale(h.fake.guildId, 'de');
        await setGallery(galleryId);
      }, 60_000);
      afterAll(async () => {
        await h?.close();
      });

      it('a job older than retention: its gallery post and Re-post are deleted, its messages replaced, its thread renamed', async () => {
        const alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
        const bob = h.fake.addUser({ username: 'bob', permissions: MEMBER });
        const job = await finishedJob(alice, 'a secret garden at dawn');
        const bobs = await finishedJob(bob, 'a public park');
        const threadId = job.message.channelId;
        expect(job.reply?.messageId).toBeDefined();
        expect(h.fake.thread(threadId)?.name).toContain('secret garden');
        const fresh = await repost(alice, job);
        expect(fresh.channelId).toBe(generalId);

        // The retention sweep deletes the job records (every ended job, as if RETENTION_DAYS had passed).
        await h.app.store.sweepEnded(Date.now() + 1);
        expect(await h.app.store.get(job.id)).toBeUndefined();
        expect(await h.app.store.listByUser(alice)).toEqual([]);

        const show = await h.fake
          .sendCommand({ name: 'privacy', subcommand: 'show', userId: alice })
          .message(10_000);
        expect(show.content).toContain('No job records');
        expect(show.content).toContain('(1 job:');
        expect(show.content).toContain('What stays');

        const done = await deleteData(alice);
        expect(done.content).toContain('0 job records');
        expect(done.content).toContain('1 gallery post');
        expect(done.content).toContain('1 Re-post deleted');
        expect(done.content).toContain('2 job messages replaced');
        expect(done.content).toContain('1 thread renamed');
        expect(done.content).not.toContain('refused');

        expect(message(galleryId, job.galleryPost?.messageId)?.deleted).toBe(true);
        expect(message(generalId, fresh.id)?.deleted).toBe(true);
        for (const m of [
          message(threadId, job.message.messageId),
          message(generalId, job.reply?.messageId),
        ]) {
          expect(m?.deleted).toBeFalsy();
          expect(messageText(m)).toContain(REMOVED_DE);
          // What the bot wrote (Discord's own "alice used /upscale" header is not the bot's to change).
          const own = JSON.stringify([m?.data['content'], m?.data['embeds'], m?.data['components']]);
          expect(own).not.toContain('secret garden');
          expect(own).not.toContain(alice);
          expect(m?.attachments).toHaveLength(0);
        }
        expect(h.fake.thread(threadId)?.name).not.toContain('secret');
        // Nothing of hers is indexed any more; Bob's post and messages are untouched.
        expect(await h.app.kv.get(`public-posts:${job.id}`)).toBeUndefined();
        expect(message(galleryId, bobs.galleryPost?.messageId)?.deleted).toBeFalsy();
        expect(messageText(message(bobs.message.channelId, bobs.message.messageId))).not.toContain(
          REMOVED_DE,
        );
        const again = await h.fake
          .sendCommand({ name: 'privacy', subcommand: 'delete', userId: alice })
          .message(10_000);
        expect(again.content).toContain('keeps nothing about you');
        h.fake.assertNoViolations();
      });

      it('a running job: its record goes, its live message is replaced', async () => {
        const carol = h.fake.addUser({ username: 'carol', permissions: MEMBER });
        h.emulator.setScenario({ hold: true });
        try {
          const reply = await h.fake
            .sendCommand({
              name: 'extend-song',
              userId: carol,
              options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
            })
            .message(10_000);
          const job = await eventually(
            async () =>
              (await h.app.store.listByUser(carol)).find(
                (j) => j.state === 'processing' && j.reply !== undefined,
              ),
            15_000,
            'the job running in its thread',
          );
          const done = await deleteData(carol);
          expect(done.content).toContain('Stopped tracking 1 running job');
          expect(done.content).toContain('2 job messages replaced');
          expect(await h.app.store.get(job.id)).toBeUndefined();
          expect(messageText(message(job.message.channelId, job.message.messageId))).toContain(REMOVED_DE);
          expect(messageText(reply)).toContain(REMOVED_DE);
          expect(h.fake.thread(job.message.channelId)?.name).not.toContain(FIXTURE_SONG_TASK_ID);
        } finally {
          h.emulator.setScenario({ hold: false });
        }
      });

      it('an edit still waiting when the data is deleted never lands on the neutral replacement', async () => {
        const ivy = h.fake.addUser({ username: 'ivy', permissions: MEMBER });
        h.emulator.setScenario({ hold: true });
        try {
          await h.fake
            .sendCommand({
              name: 'extend-song',
              userId: ivy,
              options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
            })
            .message(10_000);
          const job = await eventually(
            async () => (await h.app.store.listByUser(ivy)).find((j) => j.state === 'processing' && j.taskId),
            15_000,
            'the job running',
          );
          // Discord asks the job's final edit to wait 5 s: it is still queued when the member deletes.
          const wait = h.fake.injectFault({
            ...DiscordErrors.rateLimited(5),
            method: 'PATCH',
            route: /^\/webhooks\//,
            count: 1,
          });
          h.emulator.finish(job.taskId ?? '');
          await eventually(async () => wait.hits === 1, 15_000, 'the final edit told to wait');
          await deleteData(ivy);
          const replaced = messageText(message(job.message.channelId, job.message.messageId));
          expect(replaced).toContain(REMOVED_DE);
          // Past the wait, with nothing queued any more, the replacement still stands, unchanged.
          expect(await h.app.edits.drain(20_000)).toBe(true);
          expect(messageText(message(job.message.channelId, job.message.messageId))).toBe(replaced);
          h.fake.assertNoViolations();
        } finally {
          h.emulator.setScenario({ hold: false });
        }
      });

      it('an archived thread is opened for the change and archived again', async () => {
        const gus = h.fake.addUser({ username: 'gus', permissions: MEMBER });
        const job = await finishedJob(gus, 'an old lantern');
        const threadId = job.message.channelId;
        await h.app.rest.patch(Routes.channel(threadId), { body: { archived: true } });
        expect(h.fake.thread(threadId)?.archived).toBe(true);
        const done = await deleteData(gus);
        expect(done.content).not.toContain('refused');
        expect(done.content).toContain('1 thread renamed');
        expect(messageText(message(threadId, job.message.messageId))).toContain(REMOVED_DE);
        expect(h.fake.thread(threadId)).toMatchObject({
          archived: true,
          name: expect.not.stringContaining('lantern'),
        });
        h.fake.assertNoViolations();
      });

      it('a message someone already deleted counts as done', async () => {
        const hal = h.fake.addUser({ username: 'hal', permissions: MEMBER });
        const job = await finishedJob(hal, 'a winter road');
        const fresh = await repost(hal, job);
        // A moderator deleted the channel line and the Re-post by hand.
        await h.app.rest.delete(Routes.channelMessage(generalId, job.reply?.messageId ?? ''));
        await h.app.rest.delete(Routes.channelMessage(generalId, fresh.id));
        const done = await deleteData(hal);
        expect(done.content).not.toContain('refused');
        expect(done.content).toContain('1 job message replaced');
        expect(await h.app.kv.get(`public-posts:${job.id}`)).toBeUndefined();
      });

      it('Remove result deletes the Re-posts too', async () => {
        const dave = h.fake.addUser({ username: 'dave', permissions: MEMBER });
        const job = await finishedJob(dave, 'a red balloon');
        const fresh = await repost(dave, job);
        const answer = await h.fake
          .sendMessageCommand({
            name: 'Remove result',
            userId: mod,
            targetMessageId: job.message.messageId ?? '',
          })
          .waitForMessage((m) => m.content !== '', 20_000);
        expect(answer.content).toContain('its Re-post was deleted');
        expect(message(generalId, fresh.id)?.deleted).toBe(true);
        expect(message(galleryId, job.galleryPost?.messageId)?.deleted).toBe(true);
        // The index no longer names the copies that are gone.
        const trace = await h.app.kv.get<{ reposts: unknown[]; gallery?: unknown }>(`public-posts:${job.id}`);
        expect(trace?.reposts).toEqual([]);
        expect(trace?.gallery).toBeUndefined();
      });

      it('Remove result used on a Re-post takes the whole result down', async () => {
        const fay = h.fake.addUser({ username: 'fay', permissions: MEMBER });
        const job = await finishedJob(fay, 'a paper boat');
        const [first, second] = [await repost(fay, job), await repost(fay, job)];
        const answer = await h.fake
          .sendMessageCommand({ name: 'Remove result', userId: mod, targetMessageId: second.id })
          .waitForMessage((m) => m.content !== '', 20_000);
        expect(answer.content).toContain('its 2 Re-posts were deleted');
        expect(answer.content).toContain('gallery post was deleted');
        for (const m of [first, second]) expect(message(generalId, m.id)?.deleted).toBe(true);
        expect((await h.app.store.get(job.id))?.removed?.by).toBe(mod);
        expect(messageText(message(job.message.channelId, job.message.messageId))).toContain(
          'Moderator entfernt',
        );
      });

      it('what Discord refuses is reported, kept and done by the next deletion', async () => {
        const erin = h.fake.addUser({ username: 'erin', permissions: MEMBER });
        const forum = h.fake.addForumChannel({ name: 'forum-gallery', tags: ['Upscale'] });
        await setGallery(forum.id);
        try {
          const job = await finishedJob(erin, 'a quiet harbour');
          expect(job.galleryPost?.threadId).toBeDefined();
          // A forum post is a thread: deleting it takes Manage Threads, which the server took away.
          h.fake.setBotPermissions(String(botPermissions & ~MANAGE_THREADS));
          const first = await deleteData(erin);
          expect(first.content).toContain('Discord refused 1 change');
          expect(first.content).toContain(`gallery post in <#${forum.id}>`);
          expect(first.content).toContain('50013');
          expect(h.fake.thread(job.galleryPost?.threadId ?? '')?.deleted).toBeFalsy();
          // The rest is done: the job's own messages are replaced.
          expect(messageText(message(job.message.channelId, job.message.messageId))).toContain(REMOVED_DE);

          h.fake.setBotPermissions(String(botPermissions));
          const second = await deleteData(erin);
          expect(second.content).toContain('1 gallery post');
          expect(second.content).not.toContain('refused');
          expect(h.fake.thread(job.galleryPost?.threadId ?? '')?.deleted).toBe(true);
          expect(await h.app.kv.get(`public-posts:${job.id}`)).toBeUndefined();
          h.fake.assertNoViolations();
        } finally {
          h.fake.setBotPermissions(String(botPermissions));
          await setGallery(galleryId);
        }
      });
    },
  );
}
