import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  ContainerBuilder,
  DiscordAPIError,
  MessageFlags,
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

  it('leaves no unexpected violations', () => {
    fake.assertNoViolations();
    expect(fake.responseViolations).toEqual([]);
  });
});
