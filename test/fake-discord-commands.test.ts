import {
  ApplicationCommandType,
  AttachmentBuilder,
  ContextMenuCommandBuilder,
  DiscordAPIError,
  InteractionContextType,
  MessageFlags,
  PermissionFlagsBits,
  Routes,
  type TextChannel,
} from 'discord.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeWithClient, type FakeWithClient } from './helpers/fake-discord-client.js';
import type { FakeDiscord, JsonObject } from './fake-discord/index.js';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000020000000308060000009d74cbb60000001049444154789c6360606060000000050001a5f645400000000049454e44ae426082',
  'hex',
);

/** Message context-menu commands (type 3) and default_member_permissions, as Discord offers them. */
describe('fake Discord: message commands and default_member_permissions', () => {
  let t: FakeWithClient;
  let fake: FakeDiscord;
  let manager: string;
  let admin: string;
  let owner: string;

  const channel = (): TextChannel => t.client.channels.cache.get(fake.defaultChannelId) as TextChannel;
  const rawPost = (body: JsonObject): Promise<unknown> =>
    t.client.rest.post(Routes.applicationCommands(fake.applicationId), { body });

  beforeAll(async () => {
    t = await fakeWithClient({ users: [{ username: 'owner' }] });
    fake = t.fake;
    owner = fake.defaultUserId; // the first user owns the guild
    manager = fake.addUser({
      username: 'manager',
      permissions: String(PermissionFlagsBits.ManageGuild | PermissionFlagsBits.SendMessages),
    });
    admin = fake.addUser({ username: 'admin', permissions: String(PermissionFlagsBits.Administrator) });
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    t.handler = async () => undefined;
    t.errors.length = 0;
  });

  it('registers a message command like Discord: any case and spaces, empty description, no options', async () => {
    const [cmd] = await t.client
      .application!.commands.set([
        new ContextMenuCommandBuilder().setName('Upscale this').setType(ApplicationCommandType.Message),
        {
          name: 'admin',
          description: 'Admin only',
          defaultMemberPermissions: PermissionFlagsBits.ManageGuild,
          contexts: [InteractionContextType.Guild, InteractionContextType.BotDM],
        },
        { name: 'root', description: 'Administrators only', defaultMemberPermissions: 0n },
        new ContextMenuCommandBuilder()
          .setName('Report')
          .setType(ApplicationCommandType.Message)
          .setDefaultMemberPermissions(PermissionFlagsBits.ManageMessages),
      ])
      .then((c) => [...c.values()]);
    expect(cmd?.type).toBe(ApplicationCommandType.Message);
    expect(fake.globalCommands[0]).toMatchObject({ type: 3, name: 'Upscale this', description: '' });
    expect(fake.globalCommands[0]?.['options']).toBeUndefined();

    const described = await rawPost({ type: 3, name: 'Bad', description: 'no' }).catch((e: unknown) => e);
    expect(described).toBeInstanceOf(DiscordAPIError);
    expect(described).toMatchObject({ code: 50035 });
    expect((described as DiscordAPIError).message).toContain(
      'APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION_INVALID',
    );
    const withOptions = await rawPost({
      type: 3,
      name: 'Bad',
      options: [{ type: 3, name: 'x', description: 'x' }],
    }).catch((e: unknown) => e);
    expect((withOptions as DiscordAPIError).message).toContain(
      'APPLICATION_COMMAND_CONTEXT_MENU_OPTIONS_INVALID',
    );
  });

  it('sendMessageCommand delivers data.type 3, target_id and resolved.messages; discord.js sees the target', async () => {
    const target = await channel().send({
      content: 'a cat',
      files: [new AttachmentBuilder(PNG, { name: 'cat.png' })],
    });
    let seen: { id: string; attachment: string | undefined; name: string } | undefined;
    t.handler = async (i) => {
      if (!i.isMessageContextMenuCommand()) return;
      seen = {
        id: i.targetMessage.id,
        attachment: i.targetMessage.attachments.first()?.name,
        name: i.commandName,
      };
      await i.reply({ content: 'on it', flags: MessageFlags.Ephemeral });
    };
    const h = fake.sendMessageCommand({ name: 'Upscale this', targetMessageId: target.id, locale: 'it' });
    const reply = await h.message();
    expect(t.errors).toEqual([]);
    expect(seen).toEqual({ id: target.id, attachment: 'cat.png', name: 'Upscale this' });
    const data = h.payload['data'] as JsonObject;
    expect(data).toMatchObject({ type: 3, name: 'Upscale this', target_id: target.id });
    expect(data['id']).toBe(fake.globalCommands[0]?.['id']);
    expect(((data['resolved'] as JsonObject)['messages'] as JsonObject)[target.id]).toMatchObject({
      id: target.id,
      content: 'a cat',
    });
    expect(h.payload).toMatchObject({ type: 2, channel_id: target.channelId, locale: 'it' });
    expect(reply.data['type']).toBe(23); // CONTEXT_MENU_COMMAND reply
    expect(reply.data['interaction_metadata']).toMatchObject({ command_type: 3, name: 'Upscale this' });
  });

  it('default_member_permissions hides a command from members lacking them (owner and administrators always see it)', () => {
    expect(() => fake.sendCommand({ name: 'admin', userId: fake.addUser({ username: 'plain' }) })).toThrow(
      /lacks default_member_permissions 32/,
    );
    for (const userId of [manager, admin, owner]) {
      expect(() => fake.sendCommand({ name: 'admin', userId })).not.toThrow();
    }
    // "0": administrators (and the owner) only
    expect(() => fake.sendCommand({ name: 'root', userId: manager })).toThrow(/default_member_permissions 0/);
    expect(() => fake.sendCommand({ name: 'root', userId: admin })).not.toThrow();
    // message commands too
    const msg = fake.postUserMessage({ content: 'spam' });
    expect(() =>
      fake.sendMessageCommand({ name: 'Report', targetMessageId: msg.id, userId: manager }),
    ).toThrow(/lacks default_member_permissions/);
    expect(() =>
      fake.sendMessageCommand({ name: 'Report', targetMessageId: msg.id, userId: admin }),
    ).not.toThrow();
    // in a DM there are no member permissions
    expect(() => fake.sendCommand({ name: 'admin', dm: true, userId: manager })).not.toThrow();
  });

  it('a server admin can allow or deny a member one command (setCommandPermission)', () => {
    const plain = fake.addUser({ username: 'plain2' });
    fake.setCommandPermission(fake.guildId, 'admin', plain, true);
    expect(() => fake.sendCommand({ name: 'admin', userId: plain })).not.toThrow();
    fake.setCommandPermission(fake.guildId, 'admin', manager, false);
    expect(() => fake.sendCommand({ name: 'admin', userId: manager })).toThrow(/denied/);
    expect(() => fake.setCommandPermission(fake.guildId, 'nope', plain, true)).toThrow(/no command/);
  });

  it('leaves no violations', () => {
    fake.assertNoViolations();
    expect(fake.responseViolations).toEqual([]);
  });
});
