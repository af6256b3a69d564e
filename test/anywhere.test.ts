/**
 * Use it anywhere, through the real bot, the fake Discord and the emulator, on SQLite and on
 * Redis: `Upscale image` on a member's message (a prompt form, then the upscale of its first
 * image, or an ephemeral "no image" and nothing started); with USER_INSTALL the registration
 * Discord needs for user installs (global, integration_types [0, 1], job contexts [0, 1, 2]);
 * personal jobs in a server that never installed the bot, in a DM and in a group DM, answered
 * through the interaction only and counted against the member's own limits, not the server's
 * settings; `/tasks` and `/privacy` know them. Over time (the app clock follows the fake's): a
 * training session's message past its token, every path a personal job reaches, Remove result of a
 * Re-post made there, and `/privacy delete` of personal jobs (a fresh message through its token, an
 * old one reported as Discord's, a result sent by DM replaced there), never a bot-token request to a
 * place without the bot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord, type InteractionHandle } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { customIds, messageText } from './helpers/message-text.js';
import { photoFiles, uniquePng } from './helpers/photos.js';
import { needs } from './helpers/requirements.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';

const MEMBER = String((1n << 10n) | (1n << 11n));
const JOB_COMMANDS = ['upscale', 'extend-song', 'extend-video', 'training-photos', 'Upscale image'];
const NINE = [...JOB_COMMANDS, 'tasks', 'privacy', 'settings', 'Remove result'].sort();

const names = (list: Record<string, unknown>[]) => list.map((c) => String(c['name'])).sort();

/** Opens the prompt form of `Upscale image` and submits it; the form's interaction (the job's reply). */
async function upscaleImage(
  h: Harness,
  input: { userId: string; targetMessageId: string; prompt: string; userInstall?: boolean },
): Promise<InteractionHandle> {
  const cmd = h.fake.sendMessageCommand({
    name: 'Upscale image',
    userId: input.userId,
    targetMessageId: input.targetMessageId,
    ...(input.userInstall ? { userInstall: true } : {}),
  });
  await cmd.response(10_000);
  const modal = cmd.modal;
  expect(modal?.['custom_id']).toMatch(/^modal:upscale-image:\d+:\d+$/);
  const target = h.fake.messages.get(input.targetMessageId);
  return h.fake.sendModalSubmit({
    customId: String(modal?.['custom_id']),
    components: [{ customId: 'prompt', value: input.prompt }],
    userId: input.userId,
    channelId: target?.channelId ?? '',
    ...(input.userInstall ? { userInstall: true } : {}),
  });
}

const upscaleTasks = (h: Harness) => [...h.emulator.tasks.values()].filter((t) => t.operation === 'upscale');

for (const redis of [false, true])
  describe(`anywhere on ${redis ? 'redis' : 'sqlite'}`, redis ? needs('redis') : {}, () => {
    describe('Upscale image (default settings)', () => {
      let h: Harness;
      let alice: string;
      let png: Buffer;

      beforeAll(async () => {
        png = await uniquePng();
        h = await startHarness({ webhooks: true, ...(redis ? { redis: true } : {}) });
        alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
      }, 60_000);
      afterAll(async () => {
        await h?.close();
      });

      it('exactly nine commands, each for server installs only; Upscale image localized for every member', () => {
        expect(names(h.fake.guildCommands())).toEqual(NINE);
        expect(h.fake.globalCommands).toEqual([]);
        for (const c of h.fake.guildCommands())
          expect(c['integration_types'], String(c['name'])).toEqual([0]);
        const cmd = h.fake.guildCommands().find((c) => c['name'] === 'Upscale image');
        expect(cmd).toMatchObject({ type: 3, contexts: [0], default_member_permissions: null });
        expect(cmd?.['name_localizations']).toMatchObject({
          de: 'Bild hochskalieren',
          fr: expect.any(String),
          'es-ES': expect.any(String),
          'pt-BR': expect.any(String),
          ja: expect.any(String),
        });
      });

      it('on an image message: a prompt form, then the upscale of its first image as the member', async () => {
        const posted = h.fake.postUserMessage({
          content: 'look at this',
          userId: alice,
          attachments: [
            { filename: 'notes.txt', contentType: 'text/plain', bytes: 'not an image' },
            { filename: 'cat.png', contentType: 'image/png', bytes: png },
            { filename: 'dog.png', contentType: 'image/png', bytes: png },
          ],
        });
        const firstImageUrl = String(
          (posted.data['attachments'] as Record<string, unknown>[]).find(
            (a) => a['filename'] === 'cat.png',
          )?.['url'],
        );
        const before = upscaleTasks(h).length;
        const submit = await upscaleImage(h, {
          userId: alice,
          targetMessageId: posted.id,
          prompt: 'a sharper cat',
        });
        const msg = await submit.waitForMessage((m) => messageText(m).includes('Upscale again'), 20_000);
        expect(msg.ephemeral).toBe(false);
        const task = upscaleTasks(h)[before];
        expect(task?.params['image_url']).toBe(firstImageUrl);
        expect(task?.params['prompt']).toBe('a sharper cat');
        const job = await eventually(() => h.app.store.getByMessageId(msg.id), 10_000, 'the job');
        expect(job.userId).toBe(alice);
        expect(job.personal).toBeUndefined();
        for (const u of (task?.body as { image_urls: string[] }).image_urls)
          expect(messageText(msg)).toContain(u);
        h.fake.assertNoViolations();
      });

      it('on an image embed (a posted image link): the embed’s image', async () => {
        const url = `${h.emulator.url}/files/embedded-cat.png`;
        const posted = h.fake.postUserMessage({
          content: url,
          userId: alice,
          embeds: [{ type: 'image', url, thumbnail: { url, width: 64, height: 64 } }],
        });
        const before = upscaleTasks(h).length;
        const submit = await upscaleImage(h, { userId: alice, targetMessageId: posted.id, prompt: 'crisp' });
        await submit.waitForMessage((m) => messageText(m).includes('Upscale again'), 20_000);
        expect(upscaleTasks(h)[before]?.params['image_url']).toBe(url);
      });

      it('on a message without an image: an ephemeral reason, no form, nothing started', async () => {
        const posted = h.fake.postUserMessage({ content: 'just words', userId: alice });
        const before = h.emulator.requests.length;
        const cmd = h.fake.sendMessageCommand({
          name: 'Upscale image',
          userId: alice,
          targetMessageId: posted.id,
        });
        const answer = await cmd.message(10_000);
        expect(answer.ephemeral).toBe(true);
        expect(answer.content).toMatch(/no image/i);
        expect(cmd.modal).toBeUndefined();
        expect(await h.app.store.listByUser(alice, 50)).toHaveLength(2);
        expect(h.emulator.requests.length).toBe(before);
      });
    });

    describe('the operator’s limits bind personal jobs too', () => {
      let h: Harness;
      let alice: string;
      let outside: string;
      let png: Buffer;
      const upscale = (where: { guildId?: string; dm?: boolean }) =>
        h.fake.sendCommand({
          name: 'upscale',
          userId: alice,
          userInstall: true,
          ...where,
          options: { prompt: 'a bounded cat' },
          attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
        });

      beforeAll(async () => {
        png = await uniquePng();
        h = await startHarness({
          webhooks: true,
          ...(redis ? { redis: true } : {}),
          env: { USER_INSTALL: 'true', OPERATOR_DAILY_CREDITS: '1', ALLOWED_GUILD_IDS: '' },
        });
        alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
        outside = h.fake.addGuild({ name: 'Elsewhere', botInstalled: false });
        h.fake.addMember(outside, alice, { permissions: MEMBER });
      }, 60_000);
      afterAll(async () => {
        await h?.close();
      });

      it('OPERATOR_DAILY_CREDITS counts a personal job, and refuses the next wherever it comes from', async () => {
        const first = await upscale({ dm: true }).waitForMessage(
          (m) => messageText(m).includes('Upscale again'),
          20_000,
        );
        expect((await h.app.store.getByMessageId(first.id))?.personal).toBe(true);
        const before = upscaleTasks(h).length;
        const refused = await upscale({ guildId: outside }).message(10_000);
        expect(refused.ephemeral).toBe(true);
        expect(refused.content).toMatch(/credit limit for all servers/);
        expect(upscaleTasks(h)).toHaveLength(before);
      });
    });

    describe('personal places over time (the app clock follows the fake Discord’s)', () => {
      let fake: FakeDiscord;
      let h: Harness;
      let carol: string;
      let outside: string;
      let lounge: string;
      let png: Buffer;

      const upscale = (prompt: string) =>
        h.fake.sendCommand({
          name: 'upscale',
          userId: carol,
          userInstall: true,
          guildId: outside,
          options: { prompt },
          attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
        });
      const finished = async (prompt: string) => {
        const msg = await upscale(prompt).waitForMessage(
          (m) => messageText(m).includes('Upscale again'),
          20_000,
        );
        const job = await eventually(
          async () => {
            const j = await h.app.store.getByMessageId(msg.id);
            return j?.settledAt !== undefined ? j : undefined;
          },
          20_000,
          'the settled job',
        );
        return { msg, job };
      };

      beforeAll(async () => {
        png = await uniquePng();
        fake = await startFakeDiscord({ warmUpValidators: true });
        h = await startHarness({
          webhooks: true,
          ...(redis ? { redis: true } : {}),
          reuse: { fake },
          now: () => fake.now(),
          env: { USER_INSTALL: 'true', USER_DAILY_CREDITS: '100', USER_MAX_ACTIVE_JOBS: '5' },
        });
        carol = h.fake.addUser({ username: 'carol', permissions: MEMBER });
        outside = h.fake.addGuild({ name: 'Elsewhere', botInstalled: false, channels: [{ name: 'lounge' }] });
        h.fake.addMember(outside, carol, { permissions: MEMBER });
        lounge = h.fake.defaultChannelOf(outside);
      }, 60_000);
      afterAll(async () => {
        await h?.close();
        await fake?.close();
      });

      it('/training-photos: the session message only through an interaction; past its token a fresh one from the next interaction', async () => {
        const dave = h.fake.addUser({ username: 'dave', permissions: MEMBER });
        h.fake.addMember(outside, dave, { permissions: MEMBER });
        const photos = (files: { filename: string; bytes: Buffer }[]) =>
          Object.fromEntries(files.map((f, n) => [`photo${n + 1}`, f]));
        const command = (subcommand: string, files: { filename: string; bytes: Buffer }[], options = {}) =>
          h.fake.sendCommand({
            name: 'training-photos',
            subcommand,
            userId: dave,
            guildId: outside,
            userInstall: true,
            options,
            attachments: photos(files),
          });
        const start = command('start', await photoFiles(3, 'dave-start'), {
          ethnicity: 'white',
          gender: 'male',
        });
        const first = await start.waitForMessage((m) => m.content.includes('3 / 30 photos'), 10_000);
        expect(first.ephemeral).toBe(false);
        // The start's token is past its use: the session message cannot be edited any more.
        h.fake.advanceTime(15 * 60_000);
        const add = command('add', await photoFiles(2, 'dave-add'));
        const fresh = await eventually(
          () => add.followUps.find((m) => !m.ephemeral && m.content.includes('5 / 30 photos')),
          10_000,
          'a fresh session message through the add',
        );
        expect(fresh.id).not.toBe(first.id);
        expect(h.fake.messages.get(first.id)?.content).toContain('3 / 30 photos');
        // The fresh message is the session's now, edited through the interaction that posted it.
        const more = command('add', await photoFiles(1, 'dave-more'));
        await more.waitForMessage((m) => m.content.startsWith('Added'), 10_000);
        await eventually(
          () => h.fake.messages.get(fresh.id)?.content.includes('6 / 30 photos'),
          10_000,
          'the fresh session message updated',
        );
        expect(h.fake.outsiderRequests).toEqual([]);
        expect(h.fake.requests.filter((r) => r.auth === 'bot' && r.path.includes(lounge))).toEqual([]);
        h.fake.assertNoViolations();
      });

      it('every path a personal job reaches (AutoMod, next step, Retry, /tasks Refresh and Re-post, a result by DM and its button) sends nothing with the bot token to that server', async () => {
        const finn = h.fake.addUser({ username: 'finn', permissions: MEMBER });
        h.fake.addMember(outside, finn, { permissions: MEMBER });
        const here = { guildId: outside, userInstall: true } as const;
        const jobsOf = () => h.app.store.listByUser(finn, 50);
        const settled = (id: string) =>
          eventually(
            async () => {
              const j = await h.app.store.get(id);
              return j?.settledAt !== undefined ? j : undefined;
            },
            20_000,
            'the job settled',
          );
        // AutoMod of that server refuses the prompt: shown without it, the member told once.
        h.fake.setAutoModKeywords(outside, ['forbidden']);
        const first = h.fake.sendCommand({
          name: 'upscale',
          userId: finn,
          ...here,
          options: { prompt: 'a forbidden cat' },
          attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
        });
        const result = await first.waitForMessage((m) => messageText(m).includes('Upscale again'), 20_000);
        const upscaled = await settled((await h.app.store.getByMessageId(result.id))?.id ?? '');
        expect(upscaled.personal).toBe(true);
        expect(upscaled.textWithheld).toBe(true);
        expect(h.fake.autoModBlocks.length).toBeGreaterThan(0);
        h.fake.setAutoModKeywords(outside, []);

        // A next step from the result.
        const again = customIds(result).find((id) => id.startsWith('next:upscale-again:')) ?? '';
        h.fake.sendButton({ customId: again, messageId: result.id, userId: finn, ...here });
        const next = await eventually(
          async () => (await jobsOf()).find((j) => j.params['extended_from'] !== undefined),
          20_000,
          'the next step',
        );
        expect(next.personal).toBe(true);
        await settled(next.id);

        // A failed song, then Retry.
        h.emulator.nextScenario({ steps: [20], stepMs: 100, hold: true });
        const known = new Set(h.emulator.tasks.keys());
        const song = h.fake.sendCommand({
          name: 'extend-song',
          userId: finn,
          ...here,
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        });
        const task = await eventually(
          () => [...h.emulator.tasks.values()].find((t) => !t.fixture && !known.has(t.id)),
          10_000,
          'the song task',
        );
        h.emulator.fail(task.id);
        const failed = await song.waitForMessage(
          (m) => customIds(m).some((id) => id.startsWith('next:retry:')),
          20_000,
        );
        const failedJob = await settled((await h.app.store.getByTaskId(task.id))?.id ?? '');
        const retry = customIds(failed).find((id) => id.startsWith('next:retry:')) ?? '';
        const count = (await jobsOf()).length;
        h.fake.sendButton({ customId: retry, messageId: failed.id, userId: finn, ...here });
        const retried = await eventually(
          async () => {
            const jobs = await jobsOf();
            return jobs.length > count
              ? jobs.find(
                  (j) =>
                    j.id !== failedJob.id && j.operation === 'song' && j.createdAt >= failedJob.createdAt,
                )
              : undefined;
          },
          20_000,
          'the retried job',
        );
        expect(retried.personal).toBe(true);
        await settled(retried.id);

        // /tasks id: → Refresh and Re-post.
        const detail = await h.fake
          .sendCommand({ name: 'tasks', userId: finn, ...here, options: { id: upscaled.id } })
          .message(10_000);
        const refresh = customIds(detail).find((id) => id.startsWith('tasks:refresh:')) ?? '';
        await h.fake
          .sendButton({ customId: refresh, messageId: detail.id, userId: finn, ...here })
          .response(10_000);
        const repost = customIds(detail).find((id) => id.startsWith('tasks:repost:')) ?? '';
        const reposted = await h.fake
          .sendButton({ customId: repost, messageId: detail.id, userId: finn, ...here })
          .message(10_000);
        expect(reposted.channelId).toBe(lounge);

        // A song past its token: the result by DM, and a next step from there.
        h.emulator.nextScenario({ steps: [20], stepMs: 100, hold: true });
        const known2 = new Set(h.emulator.tasks.keys());
        h.fake.sendCommand({
          name: 'extend-song',
          userId: finn,
          ...here,
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        });
        const late = await eventually(
          () => [...h.emulator.tasks.values()].find((t) => !t.fixture && !known2.has(t.id)),
          10_000,
          'the late song task',
        );
        await eventually(() => h.app.store.getByTaskId(late.id), 10_000, 'the late job');
        h.fake.advanceTime(15 * 60_000);
        h.emulator.finish(late.id);
        const dm = h.fake.dmChannelId(finn);
        const byDm = await eventually(
          () =>
            h.fake.channelMessages(dm, true).find((m) => customIds(m).some((id) => id.startsWith('next:'))),
          20_000,
          'the result by DM',
        );
        const step = customIds(byDm).find((id) => id.startsWith('next:')) ?? '';
        const before = (await jobsOf()).length;
        const press = h.fake.sendButton({
          customId: step,
          messageId: byDm.id,
          userId: finn,
          dm: true,
          userInstall: true,
        });
        await press.response(10_000);
        const fromDm = await eventually(
          async () => {
            const jobs = await jobsOf();
            return jobs.length > before ? jobs[0] : undefined;
          },
          20_000,
          'the job from the DM result',
        );
        expect(fromDm.personal).toBe(true);
        await settled(fromDm.id);

        expect(h.fake.outsiderRequests).toEqual([]);
        expect(h.fake.requests.filter((r) => r.auth === 'bot' && r.path.includes(lounge))).toEqual([]);
        h.fake.assertNoViolations();
      });

      it('Remove result of a server job leaves its Re-post in a personal place alone (no bot-token request there)', async () => {
        const gina = h.fake.addUser({ username: 'gina', permissions: MEMBER });
        const mod = h.fake.addUser({
          username: 'mod',
          permissions: String((1n << 10n) | (1n << 11n) | (1n << 13n)),
        });
        h.fake.addMember(outside, gina, { permissions: MEMBER });
        const msg = await h.fake
          .sendCommand({
            name: 'upscale',
            userId: gina,
            options: { prompt: 'a server cat' },
            attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
          })
          .waitForMessage((m) => messageText(m).includes('Upscale again'), 20_000);
        const job = await eventually(() => h.app.store.getByMessageId(msg.id), 10_000, 'the job');
        expect(job.personal).toBeUndefined();
        const detail = await h.fake
          .sendCommand({
            name: 'tasks',
            userId: gina,
            guildId: outside,
            userInstall: true,
            options: { id: job.id },
          })
          .message(10_000);
        const repostId = customIds(detail).find((id) => id.startsWith('tasks:repost:')) ?? '';
        const repost = await h.fake
          .sendButton({
            customId: repostId,
            messageId: detail.id,
            userId: gina,
            guildId: outside,
            userInstall: true,
          })
          .message(10_000);
        expect(repost.channelId).toBe(lounge);
        await eventually(
          async () =>
            JSON.stringify((await h.app.kv.get<object>(`public-posts:${job.id}`)) ?? {}).includes(repost.id),
          10_000,
          'the Re-post indexed',
        );
        await h.fake
          .sendMessageCommand({ name: 'Remove result', userId: mod, targetMessageId: msg.id })
          .message(10_000);
        expect((await h.app.store.get(job.id))?.removed?.by).toBe(mod);
        expect(h.fake.outsiderRequests).toEqual([]);
        expect(h.fake.messages.get(repost.id)?.deleted).not.toBe(true);
      });

      it('/privacy delete: a result sent by DM (past the token) is replaced there with the bot token; the live message is Discord’s', async () => {
        const erin = h.fake.addUser({ username: 'erin', permissions: MEMBER });
        h.fake.addMember(outside, erin, { permissions: MEMBER });
        h.emulator.nextScenario({ steps: [20], stepMs: 100, hold: true });
        const before = new Set(h.emulator.tasks.keys());
        const cmd = h.fake.sendCommand({
          name: 'extend-song',
          userId: erin,
          guildId: outside,
          userInstall: true,
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        });
        const task = await eventually(
          () => [...h.emulator.tasks.values()].find((t) => !t.fixture && !before.has(t.id)),
          10_000,
          'the song task',
        );
        const live = await cmd.message(10_000);
        const job = await eventually(() => h.app.store.getByTaskId(task.id), 10_000, 'the job');
        expect(job.personal).toBe(true);
        // Past the token: the final goes to erin by DM, in the bot's own DM channel with her.
        h.fake.advanceTime(15 * 60_000);
        h.emulator.finish(task.id);
        const dm = h.fake.dmChannelId(erin);
        const sent = await eventually(
          () => h.fake.channelMessages(dm, true).find((m) => messageText(m).includes('Extend')),
          20_000,
          'the result by DM',
        );
        await eventually(
          async () =>
            JSON.stringify((await h.app.kv.get<object>(`public-posts:${job.id}`)) ?? {}).includes(sent.id),
          10_000,
          'the DM indexed',
        );

        const ask = await h.fake
          .sendCommand({ name: 'privacy', subcommand: 'delete', userId: erin, dm: true, userInstall: true })
          .message(10_000);
        const confirm = customIds(ask).find((id) => id.startsWith('privacy:delete')) ?? '';
        const answer = await h.fake
          .sendButton({ customId: confirm, messageId: ask.id, userId: erin, dm: true, userInstall: true })
          .waitForMessage((m) => m.content.startsWith('Deleted:'), 30_000);
        expect(messageText(h.fake.messages.get(sent.id))).toContain("Removed at the member's request.");
        expect(answer.content).toMatch(/1 job message replaced/);
        expect(answer.content).toMatch(/can no longer change 1 message/);
        expect(answer.content).toContain(`job message in <#${lounge}>`);
        expect(messageText(h.fake.messages.get(live.id))).not.toContain("Removed at the member's request.");
        expect(await h.app.kv.get(`public-posts:${job.id}`)).toBeUndefined();
        expect(h.fake.outsiderRequests).toEqual([]);
        h.fake.assertNoViolations();
      });

      it('/privacy delete: a fresh message is replaced through its interaction; an old one and a Re-post there are reported as Discord’s, never retried, and no bot-token request reaches that server', async () => {
        const old = await finished('an old cat');
        // Re-post of it from /tasks, in that server: answered through the interaction, indexed as personal.
        const detail = await h.fake
          .sendCommand({
            name: 'tasks',
            userId: carol,
            guildId: outside,
            userInstall: true,
            options: { id: old.job.id },
          })
          .message(10_000);
        const repostId = customIds(detail).find((id) => id.startsWith('tasks:repost:')) ?? '';
        const repost = await h.fake
          .sendButton({
            customId: repostId,
            messageId: detail.id,
            userId: carol,
            guildId: outside,
            userInstall: true,
          })
          .message(10_000);
        expect(repost.ephemeral).toBe(false);
        await eventually(
          async () =>
            JSON.stringify((await h.app.kv.get<object>(`public-posts:${old.job.id}`)) ?? {}).includes(
              repost.id,
            ),
          10_000,
          'the Re-post indexed',
        );
        // The first job's interaction token is past its use; a second job's is fresh.
        h.fake.advanceTime(15 * 60_000);
        const fresh = await finished('a fresh cat');

        const ask = await h.fake
          .sendCommand({
            name: 'privacy',
            subcommand: 'delete',
            userId: carol,
            guildId: outside,
            userInstall: true,
          })
          .message(10_000);
        const confirm = customIds(ask).find((id) => id.startsWith('privacy:delete')) ?? '';
        const answer = await h.fake
          .sendButton({
            customId: confirm,
            messageId: ask.id,
            userId: carol,
            guildId: outside,
            userInstall: true,
          })
          .waitForMessage((m) => m.content.startsWith('Deleted:'), 30_000);

        expect(h.fake.outsiderRequests).toEqual([]);
        expect(h.fake.requests.filter((r) => r.auth === 'bot' && r.path.includes(lounge))).toEqual([]);
        // The fresh job's message: replaced through its interaction token.
        expect(messageText(h.fake.messages.get(fresh.msg.id))).toContain("Removed at the member's request.");
        expect(answer.content).toMatch(/1 job message replaced/);
        expect(answer.content).not.toMatch(/Discord refused/);
        // The old message and the Re-post: Discord's to keep, said so, and nothing left to retry.
        expect(messageText(h.fake.messages.get(old.msg.id))).toContain('Upscale again');
        expect(answer.content).toMatch(/can no longer change 2 messages/);
        expect(answer.content).toContain(`job message in <#${lounge}>`);
        expect(answer.content).toContain(`Re-post in <#${lounge}>`);
        expect(await h.app.kv.get(`public-posts:${old.job.id}`)).toBeUndefined();
        expect(await h.app.kv.get(`public-posts:${fresh.job.id}`)).toBeUndefined();
        h.fake.assertNoViolations();
      });
    });

    describe('USER_INSTALL=true: personal jobs', () => {
      let h: Harness;
      let alice: string;
      let bob: string;
      let outside: string;
      let outsideChannel: string;
      let closed: string;
      let png: Buffer;

      const upscale = (where: { guildId?: string; dm?: boolean; groupDm?: boolean }, prompt: string) =>
        h.fake.sendCommand({
          name: 'upscale',
          userId: alice,
          userInstall: true,
          ...where,
          options: { prompt, resemblance: 55 },
          attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
        });
      const done = (cmd: InteractionHandle) =>
        cmd.waitForMessage((m) => messageText(m).includes('Upscale again'), 20_000);
      /** Bot-token requests that touched `channelId` (the bot is not there: there must be none). */
      const botTokenTo = (channelId: string) =>
        h.fake.requests.filter((r) => r.auth === 'bot' && r.path.includes(channelId));

      beforeAll(async () => {
        png = await uniquePng();
        h = await startHarness({
          webhooks: true,
          ...(redis ? { redis: true } : {}),
          env: {
            USER_INSTALL: 'true',
            USER_DAILY_CREDITS: '5',
            USER_MAX_ACTIVE_JOBS: '3',
            // What a server's settings would impose, were they applied: a thread per job and 1 credit a day.
            DEFAULT_THREADS: 'true',
            DEFAULT_DAILY_CREDITS: '1',
          },
        });
        alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
        bob = h.fake.addUser({ username: 'bob', permissions: MEMBER });
        outside = h.fake.addGuild({ name: 'Elsewhere', botInstalled: false, channels: [{ name: 'lounge' }] });
        closed = h.fake.addGuild({
          name: 'No external apps',
          botInstalled: false,
          externalApps: false,
          channels: [{ name: 'strict' }],
        });
        for (const g of [outside, closed]) h.fake.addMember(g, alice, { permissions: MEMBER });
        h.fake.addMember(outside, bob, { permissions: MEMBER });
        outsideChannel = h.fake.defaultChannelOf(outside);
      }, 60_000);
      afterAll(async () => {
        await h?.close();
      });

      it('registers the user-installable commands globally for user installs; /settings and Remove result stay in the server', () => {
        const global = h.fake.globalCommands;
        expect(names(global)).toEqual([...JOB_COMMANDS, 'tasks', 'privacy'].sort());
        for (const c of global) {
          expect(c['integration_types'], String(c['name'])).toEqual([0, 1]);
          if (JOB_COMMANDS.includes(String(c['name'])))
            expect(c['contexts'], String(c['name'])).toEqual([0, 1, 2]);
        }
        expect(global.find((c) => c['name'] === 'tasks')?.['contexts']).toEqual([0, 1]);
        const guild = h.fake.guildCommands();
        expect(names(guild)).toEqual(['Remove result', 'settings']);
        for (const c of guild) {
          expect(c['integration_types']).toEqual([0]);
          expect(c['contexts']).toEqual([0]);
        }
        expect(names([...global, ...guild])).toEqual(NINE);
        // Discord offers /settings nowhere the server did not install the bot.
        expect(() =>
          h.fake.sendCommand({
            name: 'settings',
            subcommand: 'show',
            userId: alice,
            guildId: outside,
            userInstall: true,
          }),
        ).toThrow();
      });

      it('in a server that never installed the bot: the result through the interaction only, no thread, no bot-token call there', async () => {
        const cmd = upscale({ guildId: outside }, 'a personal cat');
        expect(cmd.payload['authorizing_integration_owners']).toEqual({ '1': alice });
        const msg = await done(cmd);
        expect(msg.channelId).toBe(outsideChannel);
        expect(msg.ephemeral).toBe(false);
        const job = await eventually(() => h.app.store.getByMessageId(msg.id), 10_000, 'the job');
        expect(job.personal).toBe(true);
        expect(job.message.guildId).toBe(outside);
        // DEFAULT_THREADS applies to servers: this job has no thread.
        expect(h.fake.threads(outsideChannel)).toHaveLength(0);
        expect(job.reply).toBeUndefined();
        await eventually(
          async () => (await h.app.store.get(job.id))?.settledAt !== undefined,
          10_000,
          'settled',
        );
        expect(botTokenTo(outsideChannel)).toEqual([]);
        expect(h.fake.outsiderRequests).toEqual([]);
        h.fake.assertNoViolations();
      });

      it('Upscale image on a message in that server works through the member’s install', async () => {
        const posted = h.fake.postUserMessage({
          content: 'bob’s photo',
          userId: bob,
          channelId: outsideChannel,
          attachments: [{ filename: 'photo.png', contentType: 'image/png', bytes: png }],
        });
        const submit = await upscaleImage(h, {
          userId: alice,
          targetMessageId: posted.id,
          prompt: 'bigger',
          userInstall: true,
        });
        const msg = await submit.waitForMessage((m) => messageText(m).includes('Upscale again'), 20_000);
        const job = await eventually(() => h.app.store.getByMessageId(msg.id), 10_000, 'the job');
        expect(job.personal).toBe(true);
        expect(botTokenTo(outsideChannel)).toEqual([]);
      });

      it('where the server disallows external apps, the answers are ephemeral and the job still ends with its result', async () => {
        const cmd = upscale({ guildId: closed }, 'a quiet cat');
        const msg = await done(cmd);
        expect(msg.ephemeral).toBe(true);
        expect(botTokenTo(h.fake.defaultChannelOf(closed))).toEqual([]);
      });

      it('in a DM with the bot, through the install; the result’s button works there (a user, no member)', async () => {
        const dm = h.fake.dmChannelId(alice);
        const msg = await done(upscale({ dm: true }, 'a dm cat'));
        expect(msg.channelId).toBe(dm);
        const button = customIds(msg).find((id) => id.startsWith('next:upscale-again:'));
        expect(button).toBeDefined();
        const press = h.fake.sendButton({
          customId: button ?? '',
          messageId: msg.id,
          userId: alice,
          dm: true,
          userInstall: true,
        });
        expect(press.payload['member']).toBeUndefined();
        const again = await eventually(
          async () => {
            const jobs = await h.app.store.listByUser(alice, 50);
            const next = jobs.find((j) => j.params['extended_from'] !== undefined && j.state === 'finished');
            return next;
          },
          20_000,
          'the next step finished',
        );
        expect(again.personal).toBe(true);
        expect(again.message.channelId).toBe(dm);
        expect(h.fake.outsiderRequests).toEqual([]);
      });

      it('the member’s own daily credits count across every place (5 used); that server’s 1 never applied', async () => {
        // Five personal upscales ran above (cost 1 each): the member's USER_DAILY_CREDITS of 5 is used up,
        // in a DM as in a group DM.
        const before = upscaleTasks(h).length;
        const refused = await upscale({ dm: true }, 'one too many').message(10_000);
        expect(refused.ephemeral).toBe(true);
        expect(refused.content).toMatch(/personal jobs/);
        expect(refused.content).toContain('0 of 5');
        expect(upscaleTasks(h)).toHaveLength(before);
        const group = await upscale({ groupDm: true }, 'still too many').message(10_000);
        expect(group.content).toMatch(/personal jobs/);
        expect(upscaleTasks(h)).toHaveLength(before);
        // The server's own budget is untouched by them.
        expect(await h.app.context.ledger.creditsUsed(outside)).toBe(0);
        expect(await h.app.context.ledger.creditsUsed(`personal:${alice}`)).toBe(5);
      });

      it('/tasks and /privacy (in a DM, through the install) include the personal jobs', async () => {
        const list = await h.fake
          .sendCommand({ name: 'tasks', userId: alice, dm: true, userInstall: true })
          .message(10_000);
        expect(list.ephemeral).toBe(true);
        const jobs = await h.app.store.listByUser(alice, 50);
        expect(jobs.filter((j) => j.personal)).toHaveLength(5);
        for (const j of jobs) expect(messageText(list)).toContain(j.taskId ?? j.id);
        const personal = jobs.find((j) => j.personal && j.taskId !== undefined);
        const detail = await h.fake
          .sendCommand({
            name: 'tasks',
            userId: alice,
            dm: true,
            userInstall: true,
            options: { id: personal?.taskId ?? '' },
          })
          .message(10_000);
        expect(messageText(detail)).toContain('Personal job');
        const show = await h.fake
          .sendCommand({ name: 'privacy', subcommand: 'show', userId: alice, dm: true, userInstall: true })
          .message(10_000);
        expect(messageText(show)).toMatch(/5 job records/);
      });

      it('a 6th follow-up of an interaction a user install brought is refused (40094), as Discord does', async () => {
        const cmd = h.fake.sendCommand({ name: 'tasks', userId: bob, guildId: outside, userInstall: true });
        await cmd.message(10_000);
        const url = `${h.fake.apiUrl}/v10/webhooks/${h.fake.applicationId}/${cmd.token}`;
        const post = () =>
          fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ content: 'more', flags: 64 }),
          });
        for (let n = 0; n < 5; n++) expect((await post()).status).toBe(200);
        const sixth = await post();
        expect(sixth.status).toBe(400);
        expect(((await sixth.json()) as { code: number }).code).toBe(40094);
      });
    });
  });
