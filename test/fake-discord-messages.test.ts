import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  ContainerBuilder,
  AttachmentBuilder,
  DiscordAPIError,
  EmbedBuilder,
  FileBuilder,
  MessageFlags,
  Routes,
  SectionBuilder,
  TextDisplayBuilder,
  type TextChannel,
} from 'discord.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeWithClient, type FakeWithClient } from './helpers/fake-discord-client.js';
import type { FakeDiscord } from './fake-discord/index.js';

const button = (id: string): ButtonBuilder =>
  new ButtonBuilder().setCustomId(id).setLabel(id).setStyle(ButtonStyle.Secondary);
const row = (...ids: string[]): ActionRowBuilder<ButtonBuilder> =>
  new ActionRowBuilder<ButtonBuilder>().addComponents(...ids.map(button));

/** What a rejected request threw, as discord.js reports it. */
async function refusal(p: Promise<unknown>): Promise<DiscordAPIError> {
  const e = await p.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(DiscordAPIError);
  return e as DiscordAPIError;
}

describe('fake Discord: message rules', () => {
  let t: FakeWithClient;
  let fake: FakeDiscord;
  const channel = (): TextChannel => t.client.channels.cache.get(fake.defaultChannelId) as TextChannel;

  beforeAll(async () => {
    t = await fakeWithClient();
    fake = t.fake;
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    t.handler = async () => undefined;
    t.errors.length = 0;
    fake.takeViolations();
  });

  describe('a custom_id used twice in one message is refused (400 50035), wherever it is', () => {
    it('channel messages: in one row, across rows, and in an edit', async () => {
      const same = await refusal(channel().send({ content: 'x', components: [row('a', 'a')] }));
      expect(same).toMatchObject({ status: 400, code: 50035 });
      expect(same.message).toContain('components[0].components[1].custom_id[COMPONENT_CUSTOM_ID_DUPLICATED]');
      const across = await refusal(
        channel().send({ content: 'x', components: [row('a', 'b'), row('c', 'a')] }),
      );
      expect(across.message).toContain(
        'components[1].components[1].custom_id[COMPONENT_CUSTOM_ID_DUPLICATED]',
      );

      const ok = await channel().send({ content: 'x', components: [row('a', 'b'), row('c')] });
      const edit = await refusal(ok.edit({ components: [row('a'), row('b', 'b')] }));
      expect(edit.code).toBe(50035);
      expect(fake.messages.get(ok.id)?.components).toHaveLength(2); // unchanged
      const violations = fake.takeViolations();
      expect(violations.map((v) => v.source)).toEqual(['semantic', 'semantic', 'semantic']);
      expect(violations[0]?.errors[0]?.message).toContain('50035');
    });

    it('nested in Components V2: a section accessory and a row inside a container', async () => {
      const container = new ContainerBuilder()
        .addSectionComponents(
          new SectionBuilder()
            .addTextDisplayComponents(new TextDisplayBuilder().setContent('job'))
            .setButtonAccessory(button('retry')),
        )
        .addActionRowComponents(row('cancel', 'retry'));
      const e = await refusal(
        channel().send({ flags: MessageFlags.IsComponentsV2, components: [container] }),
      );
      expect(e.message).toContain(
        'components[0].components[1].components[1].custom_id[COMPONENT_CUSTOM_ID_DUPLICATED]',
      );
    });

    it('interaction callbacks, follow-ups and webhook edits', async () => {
      const codes: Record<string, unknown> = {};
      t.handler = async (i) => {
        if (!i.isChatInputCommand()) return;
        codes['reply'] = await i
          .reply({ content: 'x', components: [row('z', 'z')] })
          .catch((e: DiscordAPIError) => e.message);
        await i.reply({ content: 'fine', components: [row('z')] });
        codes['followUp'] = await i
          .followUp({ content: 'y', components: [row('q'), row('q')] })
          .catch((e: DiscordAPIError) => e.message);
        codes['editReply'] = await i
          .editReply({ components: [row('z', 'y', 'z')] })
          .catch((e: DiscordAPIError) => e.message);
      };
      const cmd = fake.sendCommand({ name: 'dup' });
      await fake.waitFor(() => Object.keys(codes).length === 3, { description: 'three answers' });
      expect(t.errors).toEqual([]);
      expect(codes['reply']).toContain(
        'data.components[0].components[1].custom_id[COMPONENT_CUSTOM_ID_DUPLICATED]',
      );
      expect(codes['followUp']).toContain(
        'components[1].components[0].custom_id[COMPONENT_CUSTOM_ID_DUPLICATED]',
      );
      expect(codes['editReply']).toContain(
        'components[0].components[2].custom_id[COMPONENT_CUSTOM_ID_DUPLICATED]',
      );
      expect(cmd.originalMessage?.content).toBe('fine');
      expect(cmd.followUps).toEqual([]);
      expect(fake.takeViolations()).toHaveLength(3);
    });
  });

  describe('Components V2 (flag 1 << 15)', () => {
    const V2 = MessageFlags.IsComponentsV2;
    const texts = (n: number, each = 1): ContainerBuilder =>
      new ContainerBuilder().addTextDisplayComponents(
        ...Array.from({ length: n }, (_, i) =>
          new TextDisplayBuilder().setContent(String(i % 10).repeat(each)),
        ),
      );
    const raw = (body: Record<string, unknown>): Promise<unknown> =>
      t.client.rest.post(Routes.channelMessages(fake.defaultChannelId), { body });

    it('content, embeds, poll and stickers cannot be used with the flag', async () => {
      const content = await refusal(channel().send({ content: 'x', flags: V2, components: [texts(1)] }));
      expect(content.message).toContain('content[MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2]');
      const embeds = await refusal(
        channel().send({ embeds: [new EmbedBuilder().setTitle('t')], flags: V2, components: [texts(1)] }),
      );
      expect(embeds.message).toContain('embeds[MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2]');
      const v2Body = { flags: V2, components: [texts(1).toJSON()] };
      const poll = await refusal(
        raw({ ...v2Body, poll: { question: { text: 'q' }, answers: [{ poll_media: { text: 'a' } }] } }),
      );
      expect(poll.message).toContain('poll[MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2]');
      const stickers = await refusal(raw({ ...v2Body, sticker_ids: ['1234567890123456789'] }));
      expect(stickers.message).toContain('sticker_ids[MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2]');
      expect(fake.takeViolations()).toHaveLength(4);
    });

    it('at most 40 components, nested ones counted; at most 4000 characters of Text Display in all', async () => {
      const forty = await channel().send({ flags: V2, components: [texts(39)] }); // container + 39
      expect(fake.messages.get(forty.id)?.flags).toBe(V2);
      const e41 = await refusal(channel().send({ flags: V2, components: [texts(40)] }));
      expect(e41).toMatchObject({ status: 400, code: 50035 });
      expect(e41.message).toContain('components[MESSAGE_COMPONENTS_TOO_MANY]');
      await channel().send({ flags: V2, components: [texts(2, 2000)] });
      const long = await refusal(
        channel().send({ flags: V2, components: [texts(2, 2000), new TextDisplayBuilder().setContent('!')] }),
      );
      expect(long.message).toContain('components[MESSAGE_TEXT_DISPLAY_TOO_LONG]');
      fake.takeViolations();
    });

    it('a V2 message keeps the flag; a message gains it only with content and embeds cleared', async () => {
      const v2 = await channel().send({ flags: V2, components: [texts(1)] });
      const drop = await refusal(v2.edit({ flags: [], components: [row('a')] })); // flags: 0
      expect(drop.message).toContain('flags[MESSAGE_CANNOT_REMOVE_COMPONENTS_V2_FLAG]');
      const text = await refusal(v2.edit({ content: 'now text' }));
      expect(text.message).toContain('content[MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2]');
      await v2.edit({ components: [texts(2)] }); // no flags in the body: it stays V2
      expect(fake.messages.get(v2.id)?.flags).toBe(V2);

      const legacy = await channel().send({ content: 'old', embeds: [new EmbedBuilder().setTitle('t')] });
      const keep = await refusal(legacy.edit({ flags: V2, components: [texts(1)] }));
      expect(keep.message).toContain('content[MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2]');
      await legacy.edit({ content: null, embeds: [], flags: V2, components: [texts(1)] });
      expect(fake.messages.get(legacy.id)).toMatchObject({ flags: V2, content: '', embeds: [] });
      fake.takeViolations();
    });

    it('without the flag only action rows (at most 5) may be sent', async () => {
      const e = await refusal(raw({ components: [texts(1).toJSON()] }));
      expect(e.message).toContain('components[0].type[UNION_TYPE_CHOICES]');
      const six = await refusal(
        channel().send({ content: 'x', components: ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => row(id)) }),
      );
      expect(six.message).toContain('components[BASE_TYPE_MAX_LENGTH]');
      fake.takeViolations();
    });

    it('a File component names an attached file (attachment://name)', async () => {
      const file = (url: string): FileBuilder => new FileBuilder().setURL(url);
      const sent = await channel().send({
        flags: V2,
        components: [file('attachment://notes.txt')],
        files: [new AttachmentBuilder(Buffer.from('hello'), { name: 'notes.txt' })],
      });
      const stored = fake.messages.get(sent.id)?.components[0];
      expect(stored).toMatchObject({ type: 13, name: 'notes.txt', size: 5, spoiler: false });
      expect(String((stored?.['file'] as { url: string }).url)).toContain(`${fake.cdnUrl}/attachments/`);
      const missing = await refusal(
        channel().send({
          flags: V2,
          components: [file('attachment://other.txt')],
          files: [new AttachmentBuilder(Buffer.from('hello'), { name: 'notes.txt' })],
        }),
      );
      expect(missing.message).toContain('components[0].file.url[COMPONENT_FILE_ATTACHMENT_NOT_FOUND]');
      const external = await refusal(
        raw({ flags: V2, components: [{ type: 13, file: { url: 'https://example.com/a.txt' } }] }),
      );
      expect(external.message).toContain('COMPONENT_FILE_ATTACHMENT_NOT_FOUND');
      fake.takeViolations();
    });

    it('component shapes are checked against the OpenAPI spec (a Section needs an accessory)', async () => {
      const e = await refusal(
        raw({ flags: V2, components: [{ type: 9, components: [{ type: 10, content: 'x' }] }] }),
      );
      expect(e.code).toBe(50035);
      expect(fake.takeViolations().map((v) => v.source)).toEqual(['openapi']);
    });
  });

  it('leaves no unexpected violations', () => {
    fake.assertNoViolations();
    expect(fake.responseViolations).toEqual([]);
  });
});
