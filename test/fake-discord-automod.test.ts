import {
  ContainerBuilder,
  DiscordAPIError,
  EmbedBuilder,
  MessageFlags,
  TextDisplayBuilder,
  type ForumChannel,
  type TextChannel,
} from 'discord.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeWithClient, type FakeWithClient } from './helpers/fake-discord-client.js';
import type { FakeDiscord } from './fake-discord/index.js';

async function refusal(p: Promise<unknown>): Promise<DiscordAPIError> {
  const e = await p.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(DiscordAPIError);
  return e as DiscordAPIError;
}

const BLOCKED = { status: 400, code: 200000, message: 'Message was blocked by automatic moderation' };
const TITLE_BLOCKED = { status: 400, code: 200001, message: 'Title was blocked by automatic moderation' };

/** AutoMod's keyword filter (block message): 200000 for messages, 200001 for thread names and post titles. */
describe('fake Discord: AutoMod keyword filter', () => {
  let t: FakeWithClient;
  let fake: FakeDiscord;
  let otherGuild: string;
  let forumId: string;
  const channel = (id = fake.defaultChannelId): TextChannel => t.client.channels.cache.get(id) as TextChannel;

  beforeAll(async () => {
    t = await fakeWithClient();
    fake = t.fake;
    otherGuild = fake.addGuild({ name: 'Other', channels: [{ name: 'talk' }] });
    forumId = fake.addForumChannel({ name: 'gallery' }).id;
    fake.setAutoModKeywords(fake.guildId, ['forbidden', 'spam*']);
    await fake.waitFor(() => t.client.channels.cache.has(forumId), { description: 'forum in the cache' });
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    t.handler = async () => undefined;
    t.errors.length = 0;
  });

  it('blocks a message whose content, embed or Text Display has a keyword (whole words, any case, * wildcards)', async () => {
    const before = fake.autoModBlocks.length;
    expect(await refusal(channel().send('this is Forbidden!'))).toMatchObject(BLOCKED);
    expect(await refusal(channel().send('so spammy'))).toMatchObject(BLOCKED);
    expect(
      await refusal(
        channel().send({ embeds: [new EmbedBuilder().setTitle('t').setDescription('forbidden')] }),
      ),
    ).toMatchObject(BLOCKED);
    expect(
      await refusal(
        channel().send({
          flags: MessageFlags.IsComponentsV2,
          components: [
            new ContainerBuilder().addTextDisplayComponents(new TextDisplayBuilder().setContent('forbidden')),
          ],
        }),
      ),
    ).toMatchObject(BLOCKED);
    // not whole words: allowed
    await channel().send('forbiddenness and unspam');
    expect(fake.autoModBlocks.slice(before).map((b) => [b.kind, b.keyword])).toEqual([
      ['message', 'forbidden'],
      ['message', 'spam*'],
      ['message', 'forbidden'],
      ['message', 'forbidden'],
    ]);
    // AutoMod is not the bot's mistake: nothing is recorded as a violation
    fake.assertNoViolations();
  });

  it('blocks an edit into a keyword (the message stays) and interaction answers, except ephemeral ones', async () => {
    const msg = await channel().send('fine');
    expect(await refusal(msg.edit('forbidden now'))).toMatchObject(BLOCKED);
    expect(fake.messages.get(msg.id)?.content).toBe('fine');

    const outcome: Record<string, unknown> = {};
    t.handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      outcome['reply'] = await i.reply({ content: 'forbidden' }).catch((e: DiscordAPIError) => e.code);
      await i.reply({ content: 'only you: forbidden', flags: MessageFlags.Ephemeral });
      outcome['ephemeral'] = 'ok';
    };
    const cmd = fake.sendCommand({ name: 'x' });
    await fake.waitFor(() => outcome['ephemeral'], { description: 'the ephemeral reply' });
    expect(outcome['reply']).toBe(200000);
    expect(cmd.originalMessage?.ephemeral).toBe(true);
  });

  it('blocks thread names and forum post titles with 200001, post bodies with 200000; nothing is created', async () => {
    const starter = await channel().send('start here');
    expect(await refusal(starter.startThread({ name: 'forbidden talk' }))).toMatchObject(TITLE_BLOCKED);
    const forum = t.client.channels.cache.get(forumId) as ForumChannel;
    expect(
      await refusal(forum.threads.create({ name: 'spamfest', message: { content: 'hello' } })),
    ).toMatchObject(TITLE_BLOCKED);
    expect(
      await refusal(forum.threads.create({ name: 'hello', message: { content: 'forbidden' } })),
    ).toMatchObject(BLOCKED);
    expect(fake.forumPosts(forumId)).toEqual([]);
    expect(fake.channelList().some((c) => c.parentId === fake.defaultChannelId)).toBe(false);
    expect(fake.autoModBlocks.at(-3)).toMatchObject({
      kind: 'title',
      keyword: 'forbidden',
      guildId: fake.guildId,
    });
  });

  it('is per guild, and [] turns it off', async () => {
    await channel(fake.defaultChannelOf(otherGuild)).send('forbidden elsewhere');
    fake.setAutoModKeywords(fake.guildId, []);
    await channel().send('forbidden is fine now');
    fake.assertNoViolations();
  });
});
