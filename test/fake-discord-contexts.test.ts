import {
  ApplicationIntegrationType,
  ButtonBuilder,
  ButtonStyle,
  ActionRowBuilder,
  ChannelType,
  Events,
  InteractionContextType,
  MessageFlags,
  PermissionFlagsBits,
  type Guild,
} from 'discord.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeWithClient, type FakeWithClient } from './helpers/fake-discord-client.js';
import type { FakeDiscord, JsonObject } from './fake-discord/index.js';

/** Interactions from a DM with the bot, from a second guild, with user and guild locales. */
describe('fake Discord: interaction contexts (DM, second guild, locales)', () => {
  let t: FakeWithClient;
  let fake: FakeDiscord;
  let secondGuildId: string;
  let alice: string;
  let secondGuild: Guild | undefined;

  beforeAll(async () => {
    t = await fakeWithClient({ guild: { name: 'Main', locale: 'en-GB' } });
    fake = t.fake;
    alice = fake.addUser({ username: 'alice' });
    const joined = new Promise<Guild>((resolve) => t.client.once(Events.GuildCreate, resolve));
    secondGuildId = fake.addGuild({ name: 'Second', locale: 'de', channels: [{ name: 'lobby' }] });
    // Manage Server in the second guild only
    fake.addMember(secondGuildId, alice, {
      permissions: String(PermissionFlagsBits.ManageGuild | PermissionFlagsBits.SendMessages),
    });
    secondGuild = await joined;
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(() => {
    t.handler = async () => undefined;
    t.errors.length = 0;
  });

  it('a connected bot gets the new guild (GUILD_CREATE) with its own channels', () => {
    expect(secondGuild?.id).toBe(secondGuildId);
    expect(secondGuild?.name).toBe('Second');
    expect(secondGuild?.preferredLocale).toBe('de');
    expect(secondGuild?.channels.cache.map((c) => c.name)).toEqual(['lobby']);
    expect(t.client.guilds.cache.size).toBe(2);
    expect(fake.defaultChannelOf(secondGuildId)).toBe(secondGuild?.channels.cache.first()?.id);
  });

  it('a DM interaction: no guild, `user` not `member`, context 1, the DM channel, DM app permissions', async () => {
    let seen:
      { inGuild: boolean; context: number | null; locale: string; guildLocale: string | null } | undefined;
    t.handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      seen = { inGuild: i.inGuild(), context: i.context, locale: i.locale, guildLocale: i.guildLocale };
      await i.reply({ content: 'hi in DM' });
    };
    const cmd = fake.sendCommand({ name: 'status', dm: true, locale: 'fr' });
    const reply = await cmd.message();
    expect(t.errors).toEqual([]);
    expect(seen).toEqual({
      inGuild: false,
      context: InteractionContextType.BotDM,
      locale: 'fr',
      guildLocale: null,
    });
    const p = cmd.payload;
    expect(p['guild_id']).toBeUndefined();
    expect(p['guild']).toBeUndefined();
    expect(p['guild_locale']).toBeUndefined();
    expect(p['member']).toBeUndefined();
    expect((p['user'] as JsonObject)['id']).toBe(fake.defaultUserId);
    expect(p['context']).toBe(1);
    expect(p['authorizing_integration_owners']).toEqual({ '0': '0' });
    expect(p['channel_id']).toBe(fake.dmChannelId());
    expect(p['channel']).toMatchObject({ id: fake.dmChannelId(), type: ChannelType.DM });
    expect((p['channel'] as { recipients: JsonObject[] }).recipients.map((u) => u['id'])).toEqual([
      fake.defaultUserId,
    ]);
    // ATTACH_FILES | EMBED_LINKS | MENTION_EVERYONE | USE_EXTERNAL_EMOJIS
    expect(BigInt(String(p['app_permissions']))).toBe(
      PermissionFlagsBits.AttachFiles |
        PermissionFlagsBits.EmbedLinks |
        PermissionFlagsBits.MentionEveryone |
        PermissionFlagsBits.UseExternalEmojis,
    );
    expect(reply.channelId).toBe(fake.dmChannelId());
    expect(reply.data['message_reference']).toBeUndefined();
  });

  it('a button on a DM message is a DM interaction too', async () => {
    t.handler = async (i) => {
      if (i.isChatInputCommand()) {
        await i.reply({
          content: 'pick',
          components: [
            new ActionRowBuilder<ButtonBuilder>().addComponents(
              new ButtonBuilder().setCustomId('dm-ok').setLabel('OK').setStyle(ButtonStyle.Primary),
            ),
          ],
        });
      } else if (i.isButton()) {
        await i.update({ content: `clicked in ${i.inGuild() ? 'guild' : 'DM'}`, components: [] });
      }
    };
    const cmd = fake.sendCommand({ name: 'status', dm: true });
    const msg = await cmd.message();
    const click = fake.sendButton({ customId: 'dm-ok', messageId: msg.id });
    await click.waitForMessage((m) => m.content === 'clicked in DM');
    expect(t.errors).toEqual([]);
    expect(click.payload['context']).toBe(1);
    expect(click.payload['guild_id']).toBeUndefined();
    expect(click.payload['locale']).toBe('en-US');
  });

  it('an interaction from the second guild carries its member, permissions and guild_locale', async () => {
    const perms: Record<string, boolean | undefined> = {};
    t.handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      perms[i.guildId ?? 'dm'] = i.memberPermissions?.has(PermissionFlagsBits.ManageGuild);
      await i.reply({ content: `hello ${i.guildLocale}`, flags: MessageFlags.Ephemeral });
    };
    const there = fake.sendCommand({ name: 'status', guildId: secondGuildId, userId: alice });
    await there.message();
    const here = fake.sendCommand({ name: 'status', userId: alice });
    await here.message();
    expect(t.errors).toEqual([]);
    expect(there.payload).toMatchObject({
      guild_id: secondGuildId,
      channel_id: fake.defaultChannelOf(secondGuildId),
      guild_locale: 'de',
      locale: 'en-US',
      context: 0,
      authorizing_integration_owners: { '0': secondGuildId },
    });
    expect(here.payload).toMatchObject({ guild_id: fake.guildId, guild_locale: 'en-GB' });
    expect(perms).toEqual({ [secondGuildId]: true, [fake.guildId]: false });
    expect(there.originalMessage?.content).toBe('hello de');
  });

  it('setGuildLocale changes guild_locale; every kind of interaction carries locale', async () => {
    fake.setGuildLocale(fake.guildId, 'pt-BR');
    expect(fake.guildLocale).toBe('pt-BR');
    t.handler = async (i) => {
      if (i.isChatInputCommand()) {
        await i.reply({
          content: 'x',
          components: [
            new ActionRowBuilder<ButtonBuilder>().addComponents(
              new ButtonBuilder().setCustomId('loc').setLabel('L').setStyle(ButtonStyle.Secondary),
            ),
          ],
        });
      } else if (i.isButton()) await i.deferUpdate();
      else if (i.isAutocomplete()) await i.respond([]);
      else if (i.isModalSubmit()) await i.reply({ content: 'ok' });
    };
    const cmd = fake.sendCommand({ name: 'status', locale: 'ja' });
    const msg = await cmd.message();
    const button = fake.sendButton({ customId: 'loc', messageId: msg.id, locale: 'ko' });
    const auto = fake.sendAutocomplete({ name: 'status', options: { q: 'a' } });
    const modal = fake.sendModalSubmit({ customId: 'm', components: [{ customId: 'f', value: 'v' }] });
    await Promise.all([button.response(), auto.response(), modal.response()]);
    expect(t.errors).toEqual([]);
    for (const [h, locale] of [
      [cmd, 'ja'],
      [button, 'ko'],
      [auto, 'en-US'],
      [modal, 'en-US'],
    ] as const) {
      expect(h.payload['locale']).toBe(locale);
      expect(h.payload['guild_locale']).toBe('pt-BR');
    }
    fake.setGuildLocale(fake.guildId, 'en-GB');
  });

  it('a user who is not in the second guild cannot act there', () => {
    expect(() => fake.sendCommand({ name: 'status', guildId: secondGuildId })).toThrow(/not a member/);
  });

  it('refuses a registered command where Discord would not offer it (contexts, dm_permission, integration types, guild scope)', async () => {
    await t.client.application!.commands.set([
      { name: 'guild-only', description: 'g', contexts: [InteractionContextType.Guild] },
      {
        name: 'anywhere',
        description: 'a',
        contexts: [InteractionContextType.Guild, InteractionContextType.BotDM],
      },
      { name: 'no-dm', description: 'n', dmPermission: false },
      { name: 'legacy', description: 'l' },
      {
        name: 'user-app',
        description: 'u',
        integrationTypes: [ApplicationIntegrationType.UserInstall],
      },
    ]);
    await t.client.application!.commands.set([{ name: 'local', description: 'l' }], fake.guildId);

    expect(() => fake.sendCommand({ name: 'guild-only', dm: true })).toThrow(/contexts are \[0\]/);
    expect(() => fake.sendCommand({ name: 'no-dm', dm: true })).toThrow(/dm_permission is false/);
    expect(() => fake.sendCommand({ name: 'user-app' })).toThrow(/integration_types/);
    expect(() => fake.sendCommand({ name: 'local', dm: true })).toThrow(/registered only in guild/);
    expect(() => fake.sendCommand({ name: 'local', guildId: secondGuildId, userId: alice })).toThrow(
      /registered only in guild/,
    );
    expect(() => fake.sendAutocomplete({ name: 'guild-only', dm: true, options: { q: 'x' } })).toThrow(
      /does not offer/,
    );

    // offered: the command's data names the registered command (guild ones carry guild_id)
    const offered = [
      fake.sendCommand({ name: 'guild-only' }),
      fake.sendCommand({ name: 'anywhere', dm: true }),
      fake.sendCommand({ name: 'legacy', dm: true }), // no contexts, dm_permission true: DMs too
      fake.sendCommand({ name: 'no-dm', guildId: secondGuildId, userId: alice }),
      fake.sendCommand({ name: 'local' }),
    ];
    const ids = new Map([...fake.globalCommands, ...fake.guildCommands()].map((c) => [c['name'], c['id']]));
    for (const h of offered) {
      const data = h.payload['data'] as JsonObject;
      expect(data['id']).toBe(ids.get(String(data['name'])));
    }
    expect((offered[4]?.payload['data'] as JsonObject)['guild_id']).toBe(fake.guildId);
    // a name the fake never saw registered is delivered as before (tests that skip registration)
    expect(() => fake.sendCommand({ name: 'never-registered', dm: true })).not.toThrow();
  });

  it('GET /guilds/{id} and its channels and members answer for the second guild, 10004 for others', async () => {
    const g = await t.client.guilds.fetch({ guild: secondGuildId, force: true });
    expect(g.name).toBe('Second');
    const channels = await g.channels.fetch();
    expect([...channels.values()].map((c) => c?.name)).toEqual(['lobby']);
    const member = await g.members.fetch({ user: alice, force: true });
    expect(member.id).toBe(alice);
    await expect(g.members.fetch({ user: fake.defaultUserId, force: true })).rejects.toMatchObject({
      code: 10007,
    });
    await expect(t.client.guilds.fetch({ guild: '1234567890123456789', force: true })).rejects.toMatchObject({
      code: 10004,
    });
  });

  it('leaves no violations and answers consistently with the spec', () => {
    fake.assertNoViolations();
    expect(fake.responseViolations).toEqual([]);
  });
});

/** User installs: a server that never installed the app, the member's own install, group DMs. */
describe('fake Discord: user installs', () => {
  let t: FakeWithClient;
  let fake: FakeDiscord;
  let alice: string;
  let outside: string;
  let strict: string;
  const joined: string[] = [];

  beforeAll(async () => {
    t = await fakeWithClient({ guild: { name: 'Main' } });
    fake = t.fake;
    t.client.on(Events.GuildCreate, (g) => joined.push(g.id));
    alice = fake.addUser({ username: 'alice' });
    outside = fake.addGuild({ name: 'Outside', botInstalled: false, channels: [{ name: 'lounge' }] });
    strict = fake.addGuild({
      name: 'Strict',
      botInstalled: false,
      externalApps: false,
      channels: [{ name: 'quiet' }],
    });
    for (const g of [outside, strict]) fake.addMember(g, alice);
    await t.client.application!.commands.set([
      {
        name: 'anywhere',
        description: 'a',
        integrationTypes: [ApplicationIntegrationType.GuildInstall, ApplicationIntegrationType.UserInstall],
        contexts: [
          InteractionContextType.Guild,
          InteractionContextType.BotDM,
          InteractionContextType.PrivateChannel,
        ],
      },
      { name: 'server-only', description: 's', contexts: [InteractionContextType.Guild] },
    ]);
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(() => {
    t.handler = async () => undefined;
    t.errors.length = 0;
  });

  it('the bot is not in a server that never installed it: no GUILD_CREATE, 50001 for any bot-token call there', async () => {
    expect(joined).not.toContain(outside);
    expect(t.client.guilds.cache.has(outside)).toBe(false);
    const lounge = fake.defaultChannelOf(outside);
    await expect(t.client.rest.get(`/channels/${lounge}`)).rejects.toMatchObject({ code: 50001 });
    await expect(
      t.client.rest.post(`/channels/${lounge}/messages`, { body: { content: 'hi' } }),
    ).rejects.toMatchObject({ code: 50001 });
    await expect(t.client.rest.get(`/guilds/${outside}`)).rejects.toMatchObject({ code: 50001 });
    expect(fake.outsiderRequests.map((r) => r.method)).toEqual(['GET', 'POST', 'GET']);
  });

  it('there, only the member’s own install reaches the app, and only its user-installable commands', async () => {
    expect(() => fake.sendCommand({ name: 'anywhere', userId: alice, guildId: outside })).toThrow(
      /never installed the app/,
    );
    expect(() =>
      fake.sendCommand({ name: 'server-only', userId: alice, guildId: outside, userInstall: true }),
    ).toThrow(/integration_types/);
    t.handler = async (i) => {
      if (i.isChatInputCommand()) await i.reply({ content: 'hello from my own install' });
    };
    const cmd = fake.sendCommand({ name: 'anywhere', userId: alice, guildId: outside, userInstall: true });
    const reply = await cmd.message();
    expect(cmd.payload['authorizing_integration_owners']).toEqual({ '1': alice });
    expect(cmd.payload['context']).toBe(0);
    expect(cmd.payload['guild_id']).toBe(outside);
    expect(BigInt(String(cmd.payload['app_permissions'])) & PermissionFlagsBits.ManageThreads).toBe(0n);
    expect(reply.ephemeral).toBe(false);
    expect(reply.data['interaction_metadata']).toMatchObject({
      authorizing_integration_owners: { '1': alice },
    });
    // In the server that installed the app, the member's install joins the server's.
    const both = fake.sendCommand({ name: 'anywhere', userId: alice, userInstall: true });
    expect(both.payload['authorizing_integration_owners']).toEqual({ '0': fake.guildId, '1': alice });
  });

  it('where the server disallows external apps, every answer is ephemeral', async () => {
    t.handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      await i.reply({ content: 'public, I asked' });
      await i.followUp({ content: 'me too' });
    };
    const cmd = fake.sendCommand({ name: 'anywhere', userId: alice, guildId: strict, userInstall: true });
    const reply = await cmd.message();
    expect(reply.ephemeral).toBe(true);
    expect(Number(reply.data['flags']) & MessageFlags.Ephemeral).toBe(MessageFlags.Ephemeral);
    await fake.waitFor(() => cmd.followUps.length === 1);
    expect(cmd.followUps[0]?.ephemeral).toBe(true);
  });

  it('a group DM is context 2, reached through a user install only', async () => {
    expect(() => fake.sendCommand({ name: 'anywhere', userId: alice, groupDm: true })).toThrow(
      /user install/,
    );
    t.handler = async (i) => {
      if (i.isChatInputCommand()) await i.reply({ content: 'in a group DM' });
    };
    const cmd = fake.sendCommand({ name: 'anywhere', userId: alice, groupDm: true, userInstall: true });
    await cmd.message();
    expect(cmd.payload['context']).toBe(2);
    expect(cmd.payload['guild_id']).toBeUndefined();
    expect(cmd.payload['channel']).toMatchObject({ type: ChannelType.GroupDM });
    expect(cmd.payload['authorizing_integration_owners']).toEqual({ '1': alice });
    expect(() =>
      fake.sendCommand({ name: 'server-only', userId: alice, groupDm: true, userInstall: true }),
    ).toThrow();
  });

  it('leaves no violations', () => {
    expect(t.errors).toEqual([]);
    fake.assertNoViolations();
  });
});
