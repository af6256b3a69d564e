import {
  AttachmentBuilder,
  ChannelFlags,
  ChannelType,
  ContainerBuilder,
  DiscordAPIError,
  Events,
  MediaGalleryBuilder,
  MediaGalleryItemBuilder,
  MessageFlags,
  Routes,
  TextDisplayBuilder,
  type Channel,
  type ForumChannel,
  type MediaChannel,
  type TextChannel,
  type ThreadChannel,
} from 'discord.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeWithClient, type FakeWithClient } from './helpers/fake-discord-client.js';
import type { FakeDiscord, JsonObject } from './fake-discord/index.js';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000020000000308060000009d74cbb60000001049444154789c6360606060000000050001a5f645400000000049454e44ae426082',
  'hex',
);

async function refusal(p: Promise<unknown>): Promise<DiscordAPIError> {
  const e = await p.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(DiscordAPIError);
  return e as DiscordAPIError;
}

/** Forum (type 15) and media (type 16) channels: tags, posts (a thread and its starter message), Discord's errors. */
describe('fake Discord: forum and media channels', () => {
  let t: FakeWithClient;
  let fake: FakeDiscord;
  let forum: { id: string; tagIds: Record<string, string> };
  let media: { id: string; tagIds: Record<string, string> };
  let created: Channel | undefined;

  beforeAll(async () => {
    t = await fakeWithClient();
    fake = t.fake;
    const channelCreate = new Promise<Channel>((resolve) => t.client.once(Events.ChannelCreate, resolve));
    forum = fake.addForumChannel({
      name: 'gallery',
      tags: ['upscale', { name: 'song', emojiName: '🎵' }, { name: 'staff pick', moderated: true }],
      requireTag: true,
    });
    created = await channelCreate;
    media = fake.addForumChannel({ name: 'media-gallery', tags: ['video'], media: true });
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    fake.takeViolations();
  });

  it('a forum channel has its tags and REQUIRE_TAG; a connected bot gets CHANNEL_CREATE', async () => {
    expect(created?.id).toBe(forum.id);
    const c = (await t.client.channels.fetch(forum.id, { force: true })) as ForumChannel;
    expect(c.type).toBe(ChannelType.GuildForum);
    expect(c.flags.has(ChannelFlags.RequireTag)).toBe(true);
    expect(c.availableTags.map((tag) => [tag.name, tag.moderated, tag.emoji?.name ?? null])).toEqual([
      ['upscale', false, null],
      ['song', false, '🎵'],
      ['staff pick', true, null],
    ]);
    const raw = (await t.client.rest.get(Routes.channel(media.id))) as JsonObject;
    expect(raw).toMatchObject({ type: 16, flags: 0, available_tags: [{ name: 'video', moderated: false }] });
  });

  it('a post is a public thread whose id is its starter message id, with parent_id and applied_tags', async () => {
    const c = t.client.channels.cache.get(forum.id) as ForumChannel;
    const threadCreate = new Promise<Channel>((resolve) => t.client.once(Events.ThreadCreate, resolve));
    const thread = await c.threads.create({
      name: 'A cat, upscaled',
      message: { content: 'made with /upscale' },
      appliedTags: [forum.tagIds['upscale'] ?? ''],
    });
    expect(thread.type).toBe(ChannelType.PublicThread);
    expect(thread.parentId).toBe(forum.id);
    expect(thread.appliedTags).toEqual([forum.tagIds['upscale']]);
    expect((await threadCreate).id).toBe(thread.id);
    const starter = await thread.fetchStarterMessage();
    expect(starter?.id).toBe(thread.id);
    expect(starter?.content).toBe('made with /upscale');

    const [post] = fake.forumPosts(forum.id);
    expect(post).toMatchObject({
      id: thread.id,
      name: 'A cat, upscaled',
      appliedTags: [forum.tagIds['upscale']],
      archived: false,
      locked: false,
      deleted: false,
    });
    expect(post?.message?.channelId).toBe(thread.id);
    const raw = (await t.client.rest.get(Routes.channel(thread.id))) as JsonObject;
    expect(raw).toMatchObject({ type: 11, parent_id: forum.id, applied_tags: [forum.tagIds['upscale']] });
  });

  it('a post with files and Components V2 (multipart), in a media channel', async () => {
    const c = t.client.channels.cache.get(media.id) as MediaChannel;
    const thread = await c.threads.create({
      name: 'Clip',
      appliedTags: [media.tagIds['video'] ?? ''],
      message: {
        flags: MessageFlags.IsComponentsV2,
        components: [
          new ContainerBuilder()
            .addTextDisplayComponents(new TextDisplayBuilder().setContent('**Clip** by someone'))
            .addMediaGalleryComponents(
              new MediaGalleryBuilder().addItems(
                new MediaGalleryItemBuilder().setURL('attachment://still.png'),
              ),
            ),
        ],
        files: [new AttachmentBuilder(PNG, { name: 'still.png' })],
      },
    });
    const post = fake.forumPosts(media.id).find((p) => p.id === thread.id);
    expect(post?.message?.attachments.map((a) => a['filename'])).toEqual(['still.png']);
    expect(post?.message?.flags).toBe(MessageFlags.IsComponentsV2);
    const gallery = (post?.message?.components[0]?.['components'] as JsonObject[])[1];
    expect(String(((gallery?.['items'] as JsonObject[])[0]?.['media'] as JsonObject)['url'])).toContain(
      `${fake.cdnUrl}/attachments/`,
    );
    // Discord's docs do not require media in a media channel's post: a text-only post is accepted
    await c.threads.create({ name: 'Words', message: { content: 'no file' } });
  });

  it('refuses like Discord: no message, no tag where one is required, unknown tags, long names, messages in the forum', async () => {
    const threads = Routes.threads(forum.id);
    const noMessage = await refusal(
      t.client.rest.post(threads, { body: { name: 'x', applied_tags: [forum.tagIds['song']] } }),
    );
    expect(noMessage).toMatchObject({ status: 400, code: 50035 });
    expect(noMessage.message).toContain('message[BASE_TYPE_REQUIRED]');
    const noTag = await refusal(
      t.client.rest.post(threads, { body: { name: 'x', message: { content: 'y' } } }),
    );
    expect(noTag).toMatchObject({ status: 400, code: 40067 });
    expect(noTag.message).toBe('A tag is required to create a forum post in this channel');
    const unknownTag = await refusal(
      t.client.rest.post(threads, {
        body: {
          name: 'x',
          message: { content: 'y' },
          applied_tags: [forum.tagIds['song'], media.tagIds['video']],
        },
      }),
    );
    expect(unknownTag.code).toBe(50035);
    expect(unknownTag.message).toContain('applied_tags[1]');
    const longName = await refusal(
      t.client.rest.post(threads, {
        body: { name: 'n'.repeat(101), message: { content: 'y' }, applied_tags: [forum.tagIds['song']] },
      }),
    );
    expect(longName.code).toBe(50035);
    expect(longName.message).toContain('name');
    const empty = await refusal(
      t.client.rest.post(threads, { body: { name: 'x', message: {}, applied_tags: [forum.tagIds['song']] } }),
    );
    expect(empty.code).toBe(50006);
    const direct = await refusal(
      t.client.rest.post(Routes.channelMessages(forum.id), { body: { content: 'hi' } }),
    );
    expect(direct).toMatchObject({ status: 400, code: 50008 });
    expect(fake.forumPosts(forum.id)).toHaveLength(1); // only the post of the earlier test
    expect(fake.takeViolations().map((v) => v.source)).toEqual([
      'semantic',
      'semantic',
      'semantic',
      'openapi',
      'semantic',
    ]);
  });

  it('listing messages where a Container is answers 500 (discord-api-docs #8611); one message, or no Container, is fine', async () => {
    const c = t.client.channels.cache.get(media.id) as MediaChannel;
    const withContainer = fake.forumPosts(media.id)[0];
    const thread = await c.threads.fetch(withContainer?.id ?? '');
    const e = await t.client.rest
      .get(Routes.channelMessages(thread?.id ?? ''))
      .catch((error: unknown) => error);
    expect(e).toMatchObject({ status: 500 });
    const one = (await t.client.rest.get(
      Routes.channelMessage(thread?.id ?? '', thread?.id ?? ''),
    )) as JsonObject;
    expect(one['id']).toBe(thread?.id);
    const general = t.client.channels.cache.get(fake.defaultChannelId) as TextChannel;
    await general.send('plain');
    expect((await general.messages.fetch({ limit: 10 })).size).toBe(1);
    fake.setContainerListBug(false);
    expect(((await t.client.rest.get(Routes.channelMessages(thread?.id ?? ''))) as unknown[]).length).toBe(1);
    fake.setContainerListBug(true);
  });

  describe('thread state: archive, lock, tags, delete', () => {
    const MANAGE_THREADS = 1n << 34n;
    let DEFAULT_BOT = 0n;
    let post: ThreadChannel;

    beforeAll(async () => {
      DEFAULT_BOT = BigInt(fake.botPermissions());
      expect(DEFAULT_BOT & MANAGE_THREADS).toBe(0n);
      const c = t.client.channels.cache.get(forum.id) as ForumChannel;
      post = await c.threads.create({
        name: 'To be managed',
        message: { content: 'starter' },
        appliedTags: [forum.tagIds['song'] ?? ''],
      });
    });

    afterEach(() => {
      fake.setBotPermissions(String(DEFAULT_BOT));
    });

    it('the bot archives its own post without Manage Threads, but cannot lock it', async () => {
      expect(await refusal(post.setLocked(true))).toMatchObject({ status: 403, code: 50013 });
      expect(fake.thread(post.id)?.locked).toBe(false);
      await post.setArchived(true);
      expect(fake.thread(post.id)).toMatchObject({ archived: true, locked: false });
      // a message in an archived (unlocked) thread unarchives it; editing one there is refused
      const archivedEdit = await refusal(
        t.client.rest.patch(Routes.channelMessage(post.id, post.id), { body: { content: 'edited' } }),
      );
      expect(archivedEdit).toMatchObject({ status: 400, code: 50083 });
      expect(archivedEdit.message).toBe('Operation cannot be performed on an archived thread');
      await post.send('bump');
      expect(fake.thread(post.id)?.archived).toBe(false);
    });

    it('with Manage Threads the bot locks and archives; a locked archived thread refuses messages without it', async () => {
      fake.setBotPermissions(String(DEFAULT_BOT | MANAGE_THREADS));
      await post.edit({ locked: true, archived: true });
      const info = fake.thread(post.id);
      expect(info).toMatchObject({ locked: true, archived: true, parentId: forum.id, type: 11 });
      expect(info?.updates.at(-1)?.changes).toEqual({ locked: true, archived: true });
      fake.setBotPermissions(String(DEFAULT_BOT));
      const e = await refusal(post.send('let me in'));
      expect(e.code).toBe(50083);
      expect(await refusal(post.setArchived(false))).toMatchObject({ code: 50013 });
      fake.setBotPermissions(String(DEFAULT_BOT | MANAGE_THREADS));
      await post.edit({ archived: false, locked: false });
      expect(fake.thread(post.id)).toMatchObject({ locked: false, archived: false });
    });

    it('tags of a post change with PATCH (moderated ones need Manage Threads, unknown ones are refused)', async () => {
      await post.setAppliedTags([forum.tagIds['upscale'] ?? '', forum.tagIds['song'] ?? '']);
      expect(fake.thread(post.id)?.appliedTags).toEqual([forum.tagIds['upscale'], forum.tagIds['song']]);
      expect(await refusal(post.setAppliedTags([forum.tagIds['staff pick'] ?? '']))).toMatchObject({
        code: 50013,
      });
      expect(await refusal(post.setAppliedTags([media.tagIds['video'] ?? '']))).toMatchObject({
        code: 50035,
      });
      expect(await refusal(post.setAppliedTags([]))).toMatchObject({ code: 40067 }); // REQUIRE_TAG
      fake.setBotPermissions(String(DEFAULT_BOT | MANAGE_THREADS));
      await post.setAppliedTags([forum.tagIds['staff pick'] ?? '']);
      expect(fake.thread(post.id)?.appliedTags).toEqual([forum.tagIds['staff pick']]);
      fake.takeViolations();
    });

    it('deleting a post takes Manage Threads; the thread and its messages are gone, THREAD_DELETE is sent', async () => {
      expect(await refusal(post.delete())).toMatchObject({ status: 403, code: 50013 });
      fake.setBotPermissions(String(DEFAULT_BOT | MANAGE_THREADS));
      const deleted = new Promise<string>((resolve) =>
        t.client.once(Events.ThreadDelete, (th) => resolve(th.id)),
      );
      await post.delete();
      expect(await deleted).toBe(post.id);
      const info = fake.thread(post.id);
      expect(info?.deleted).toBe(true);
      expect(info?.message?.deleted).toBe(true);
      expect(fake.forumPosts(forum.id).find((p) => p.id === post.id)?.deleted).toBe(true);
      expect(await refusal(t.client.rest.get(Routes.channel(post.id)))).toMatchObject({
        status: 404,
        code: 10003,
      });
    });

    it('threads started from a message are visible too (thread(id), threads(parent))', async () => {
      const general = t.client.channels.cache.get(fake.defaultChannelId) as TextChannel;
      const starter = await general.send('job');
      const thread = await starter.startThread({ name: 'job thread' });
      expect(fake.thread(thread.id)).toMatchObject({
        id: starter.id,
        type: 11,
        parentId: fake.defaultChannelId,
        ownerId: fake.applicationId,
        archived: false,
      });
      expect(fake.threads(fake.defaultChannelId).map((th) => th.id)).toEqual([thread.id]);
    });
  });

  it('leaves no unexpected violations and answers consistently with the spec', () => {
    fake.assertNoViolations();
    expect(fake.responseViolations).toEqual([]);
  });
});
