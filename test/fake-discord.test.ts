import {
  ActionRowBuilder,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  AttachmentBuilder,
  ButtonBuilder,
  ButtonStyle,
  ChannelType,
  Client,
  ContainerBuilder,
  ContextMenuCommandBuilder,
  DiscordAPIError,
  EmbedBuilder,
  Events,
  FileUploadBuilder,
  GatewayIntentBits,
  InteractionContextType,
  LabelBuilder,
  MediaGalleryBuilder,
  MessageFlags,
  ModalBuilder,
  PermissionFlagsBits,
  RESTEvents,
  Routes,
  SectionBuilder,
  SeparatorBuilder,
  SlashCommandBuilder,
  StringSelectMenuBuilder,
  TextDisplayBuilder,
  TextInputBuilder,
  TextInputStyle,
  ThumbnailBuilder,
  type Interaction,
  type TextChannel,
} from 'discord.js';
import { constants as zlibConstants, createInflate, inflateSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  DiscordErrors,
  MessageFlag,
  NONCE_WINDOW_MS,
  startFakeDiscord,
  type FakeDiscord,
} from './fake-discord/index.js';

type Handler = (interaction: Interaction) => Promise<void>;

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000020000000308060000009d74cbb60000001049444154789c6360606060000000050001a5f645400000000049454e44ae426082',
  'hex',
);

describe('fake Discord driven by a real discord.js client', () => {
  let fake: FakeDiscord;
  let client: Client;
  let handler: Handler = async () => undefined;
  const handlerErrors: unknown[] = [];
  const restDebug: string[] = [];
  /** The client's gateway debug lines, with when they came (its heartbeat schedule is in them). */
  const gatewayDebug: { at: number; line: string }[] = [];

  /**
   * When the client's own next heartbeat falls due (epoch ms): @discordjs/ws sends the first
   * after a random part of the interval, then one per interval, and says so in its debug lines.
   */
  const ownHeartbeatDue = (): number => {
    const first = gatewayDebug.findLast((d) => d.line.includes('Preparing first heartbeat'));
    const started = gatewayDebug.findLast((d) => d.line.includes('First heartbeat sent'));
    if (!first) throw new Error('no heartbeat schedule in the client debug lines');
    if (!started || started.at < first.at)
      return first.at + Number(/waiting (\d+)ms/.exec(first.line)?.[1] ?? 0);
    const every = Number(/beat every (\d+)ms/.exec(started.line)?.[1] ?? 0);
    let due = started.at + every;
    while (due < Date.now()) due += every;
    return due;
  };

  const channel = (): TextChannel => {
    const c = client.channels.cache.get(fake.defaultChannelId);
    if (!c || !c.isTextBased() || c.isDMBased() || c.isThread() || c.isVoiceBased())
      throw new Error('no text channel');
    return c as TextChannel;
  };

  beforeAll(async () => {
    fake = await startFakeDiscord({
      selfCheckResponses: true,
      guild: { name: 'Test Guild', channels: [{ name: 'general' }, { name: 'jobs' }] },
    });
    client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl } });
    client.on(Events.Debug, (line) => gatewayDebug.push({ at: Date.now(), line }));
    client.on(Events.InteractionCreate, (interaction) => {
      handler(interaction).catch((error: unknown) => handlerErrors.push(error));
    });
    client.rest.on(RESTEvents.Debug, (line) => restDebug.push(line));
    const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
    await client.login(fake.token);
    await ready;
  });

  afterAll(async () => {
    await client?.destroy();
    await fake?.close();
  });

  beforeEach(() => {
    handler = async () => undefined;
    handlerErrors.length = 0;
  });

  it('logs in through GET /gateway/bot, gets READY + GUILD_CREATE and heartbeats', async () => {
    expect(client.isReady()).toBe(true);
    expect(client.user?.id).toBe(fake.applicationId);
    expect(client.application?.id).toBe(fake.applicationId);
    const guild = client.guilds.cache.get(fake.guildId);
    expect(guild?.name).toBe('Test Guild');
    expect(guild?.channels.cache.map((c) => c.name).sort()).toEqual(['general', 'jobs']);

    expect(fake.requests[0]).toMatchObject({
      method: 'GET',
      route: '/gateway/bot',
      status: 200,
      auth: 'bot',
    });
    const conn = fake.gateway.connections[0];
    expect(conn?.query).toEqual({ v: '10', encoding: 'json' }); // no ?compress=: zlib-sync is not installed
    expect(conn?.compression).toBe('none');
    expect(fake.gateway.identifies).toBe(1);
    const identify = fake.gateway.currentSession?.identify;
    expect(identify).toMatchObject({
      token: fake.token,
      intents: GatewayIntentBits.Guilds,
      compress: false,
      shard: [0, 1],
    });

    const beats = conn?.heartbeats ?? 0;
    fake.requestGatewayHeartbeat(); // op 1: answered at once, not after the 41.25 s interval
    await fake.waitFor(() => (conn?.heartbeats ?? 0) > beats, { description: 'requested heartbeat' });
    await fake.waitFor(() => client.ws.ping >= 0, { description: 'heartbeat ACK' });
  });

  it('a long event-loop stall right after a heartbeat costs no reconnect (the interval outlasts it)', async () => {
    const conn = fake.gateway.connections.at(-1);
    const connections = fake.gateway.connections.length;
    let beats = conn?.heartbeats ?? 0;
    // ACKs the client read, counted from its debug line (its ping may read the same before and after).
    let acks = 0;
    const onDebug = (line: string) => {
      if (line.includes('Heartbeat acknowledged')) acks++;
    };
    client.on('debug', onDebug);
    try {
      // The client's own heartbeat must not fall due in the stall: it would find the requested
      // one's ACK still unread and take the connection for a zombie (as it would on Discord),
      // which is not what this case is about. If it is near, it goes (and is answered) first.
      const due = ownHeartbeatDue();
      if (due - Date.now() < 5_000) {
        await fake.waitFor(() => Date.now() > due + 500 && acks > 0, {
          description: 'the client’s own heartbeat answered',
          timeoutMs: 15_000,
        });
        acks = 0;
        beats = conn?.heartbeats ?? 0;
      }
      fake.requestGatewayHeartbeat();
      // Resolves in the turn the fake read the heartbeat and wrote its ACK, before the client reads it.
      await fake.waitFor(() => (conn?.heartbeats ?? 0) > beats, { description: 'requested heartbeat' });
      const until = Date.now() + 1_500;
      while (Date.now() < until); // a stall as a loaded CI host gives; with a 1 s interval: a zombie reconnect
      await fake.waitFor(() => acks > 0, { description: 'the ACK read after the stall' });
    } finally {
      client.off('debug', onDebug);
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(fake.gateway.connections).toHaveLength(connections);
    expect(fake.gateway.resumes).toBe(0);
  });

  it('delivers a slash command with an attachment; deferReply + editReply(embed, link button) is stored with history', async () => {
    let seen:
      { url: string; name: string; size: number; contentType: string | null; bytes: Buffer } | undefined;
    handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      const attachment = i.options.getAttachment('image', true);
      await i.deferReply();
      const res = await fetch(attachment.url);
      seen = {
        url: attachment.url,
        name: attachment.name,
        size: attachment.size,
        contentType: attachment.contentType,
        bytes: Buffer.from(await res.arrayBuffer()),
      };
      await i.editReply({
        embeds: [
          new EmbedBuilder().setTitle('Upscaled').setDescription(`${attachment.name} ×4`).setColor(0x5865f2),
        ],
        components: [
          new ActionRowBuilder<ButtonBuilder>().addComponents(
            new ButtonBuilder()
              .setStyle(ButtonStyle.Link)
              .setLabel('Open')
              .setURL('https://example.com/result.png'),
          ),
        ],
      });
    };

    const cmd = fake.sendCommand({
      name: 'upscale',
      options: { scale: 4 },
      attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: PNG } },
    });
    const msg = await cmd.waitForMessage((m) => m.embeds.length === 1);
    expect(handlerErrors).toEqual([]);

    expect(seen?.url.startsWith(`${fake.cdnUrl}/attachments/`)).toBe(true);
    expect(seen).toMatchObject({ name: 'cat.png', size: PNG.length, contentType: 'image/png' });
    expect(seen?.bytes.equals(PNG)).toBe(true);

    expect(cmd.callback).toMatchObject({ type: 5, withResponse: false, status: 204 });
    expect(msg.interactionId).toBe(cmd.id);
    expect(msg.ephemeral).toBe(false);
    expect(msg.loading).toBe(false);
    expect(msg.data['type']).toBe(20);
    expect(msg.embeds[0]).toMatchObject({ type: 'rich', title: 'Upscaled', color: 0x5865f2 });
    expect(msg.components[0]).toMatchObject({
      type: 1,
      components: [{ type: 2, style: 5, url: 'https://example.com/result.png', label: 'Open' }],
    });
    expect(msg.edits).toHaveLength(1);
    expect(msg.edits[0]).toMatchObject({
      method: 'PATCH',
      route: '/webhooks/{webhook_id}/{webhook_token}/messages/@original',
      via: 'webhook',
    });
    expect(Number(msg.edits[0]?.before['flags']) & MessageFlag.Loading).toBe(MessageFlag.Loading);
    // the message is also visible through the channel API
    const fetched = await channel().messages.fetch(msg.id);
    expect(fetched.embeds[0]?.title).toBe('Upscaled');
  });

  it('supports reply({ withResponse: true }), follow-ups and ephemeral messages', async () => {
    let responseMessageId: string | undefined;
    handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      const response = await i.reply({ content: 'pong', withResponse: true });
      responseMessageId = response.resource?.message?.id;
      await i.followUp({ content: 'only you', flags: MessageFlags.Ephemeral });
    };
    const cmd = fake.sendCommand({ name: 'ping' });
    const original = await cmd.message();
    await fake.waitFor(() => cmd.followUps.length === 1, { description: 'follow-up' });
    expect(handlerErrors).toEqual([]);
    expect(responseMessageId).toBe(original.id);
    expect(cmd.callback).toMatchObject({ type: 4, withResponse: true, status: 200 });
    expect(original.content).toBe('pong');
    const followUp = cmd.followUps[0];
    expect(followUp?.ephemeral).toBe(true);
    expect(followUp?.flags).toBe(MessageFlags.Ephemeral);
    // ephemeral messages are not reachable through the channel API, like on Discord
    await expect(
      channel().messages.fetch({ message: followUp?.id ?? '', force: true }),
    ).rejects.toMatchObject({
      code: 10008,
    });
  });

  it('handles autocomplete and a button that updates its message', async () => {
    handler = async (i) => {
      if (i.isAutocomplete()) {
        const focused = i.options.getFocused(true);
        await i.respond([{ name: `${focused.value}x`, value: focused.value }]);
      } else if (i.isButton() && i.customId === 'retry') {
        await i.update({ content: 'retrying…', components: [] });
      }
    };
    const auto = fake.sendAutocomplete({ name: 'upscale', options: { scale: '4' }, focused: 'scale' });
    expect((await auto.response()).type).toBe(8);
    expect(auto.choices).toEqual([{ name: '4x', value: '4' }]);

    const sent = await channel().send({
      content: 'failed',
      components: [
        new ActionRowBuilder<ButtonBuilder>().addComponents(
          new ButtonBuilder().setCustomId('retry').setLabel('Retry').setStyle(ButtonStyle.Primary),
        ),
      ],
    });
    const click = fake.sendButton({ customId: 'retry', messageId: sent.id });
    const updated = await click.waitForMessage((m) => m.content === 'retrying…');
    expect(handlerErrors).toEqual([]);
    expect(click.callback?.type).toBe(7);
    expect(updated.id).toBe(sent.id);
    expect(updated.components).toEqual([]);
    expect(updated.edits.at(-1)).toMatchObject({
      via: 'interaction-callback',
      route: expect.stringContaining('/callback'),
    });
  });

  it('records a body that violates the OpenAPI spec and answers 400 50035 like Discord', async () => {
    const sent = await channel().send('hello');
    const error = await client.rest
      .patch(Routes.channelMessage(sent.channelId, sent.id), {
        body: { embeds: [{ title: 'x'.repeat(300) }] },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect(error).toMatchObject({ code: 50035, status: 400 });
    expect(String((error as DiscordAPIError).message)).toContain('embeds[0].title[BASE_TYPE_MAX_LENGTH]');
    const violations = fake.takeViolations();
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatchObject({
      source: 'openapi',
      method: 'PATCH',
      route: '/channels/{channel_id}/messages/{message_id}',
      operationId: 'update_message',
      errors: [{ path: '/embeds/0/title', keyword: 'maxLength' }],
    });
    expect(fake.messages.get(sent.id)?.edits).toHaveLength(0);

    // Discord rules the spec cannot express are enforced too (bots: 2000 chars, not the spec's 4000)
    await expect(channel().send('y'.repeat(2500))).rejects.toMatchObject({ code: 50035 });
    expect(fake.takeViolations()[0]).toMatchObject({ source: 'semantic' });
  });

  it('parses multipart uploads, serves them on the CDN and refreshes expired links', async () => {
    const sent = await channel().send({
      content: 'result',
      files: [{ attachment: PNG, name: 'result.png' }],
    });
    const stored = fake.messages.get(sent.id);
    expect(stored?.attachments).toHaveLength(1);
    expect(stored?.attachments[0]).toMatchObject({
      filename: 'result.png',
      size: PNG.length,
      width: 2,
      height: 3,
    });
    const request = fake.requests.find((r) => r.method === 'POST' && r.files.length === 1);
    expect(request?.files[0]).toMatchObject({ field: 'files[0]', filename: 'result.png', size: PNG.length });

    const url = sent.attachments.first()?.url ?? '';
    expect(Buffer.from(await (await fetch(url)).arrayBuffer()).equals(PNG)).toBe(true);

    fake.advanceTime(25 * 3_600_000); // CDN links are signed for 24 h
    expect((await fetch(url)).status).toBe(404);
    const refreshed = (await client.rest.post('/attachments/refresh-urls', {
      body: { attachment_urls: [url] },
    })) as {
      refreshed_urls: Array<{ original: string; refreshed: string }>;
    };
    expect(refreshed.refreshed_urls[0]?.original).toBe(url);
    const again = await fetch(refreshed.refreshed_urls[0]?.refreshed ?? '');
    expect(again.status).toBe(200);
    expect(fake.unspecifiedRequests.map((r) => r.path)).toContain('/attachments/refresh-urls');
  });

  it('enforces rate limits with Discord headers; @discordjs/rest waits out the 429s', async () => {
    fake.setRateLimits(true, { channelMessages: { limit: 2, windowMs: 1_000 } });
    try {
      const target = await channel().send('counter 0');
      const before = fake.count429;
      const started = Date.now();
      // POST and PATCH share one bucket per channel; discord.js only learns that from X-RateLimit-Bucket.
      const results = await Promise.all([
        ...[1, 2, 3].map((n) => channel().send(`parallel ${n}`)),
        ...[1, 2, 3].map((n) => target.edit(`counter ${n}`)),
      ]);
      expect(results).toHaveLength(6);
      expect(fake.count429).toBeGreaterThan(before);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      const hit = fake.rateLimitHits.at(-1);
      expect(hit).toMatchObject({
        source: 'limiter',
        global: false,
        route: expect.stringContaining('/channels/'),
      });
      const limited = fake.requests.find((r) => r.status === 429);
      expect(limited?.response).toMatchObject({ message: 'You are being rate limited.', global: false });
      expect(restDebug.some((l) => l.includes('429'))).toBe(true);
      expect(fake.messages.get(target.id)?.edits).toHaveLength(3);
    } finally {
      fake.setRateLimits(false);
    }

    // an injected 429 is retried after Retry-After as well
    const fault = fake.injectFault({
      route: '/channels/{channel_id}/messages',
      method: 'POST',
      ...DiscordErrors.rateLimited(0.2),
    });
    const after429 = await channel().send('after 429');
    expect(fault.hits).toBe(1);
    expect(fake.messages.get(after429.id)?.content).toBe('after 429');
  });

  it('applies the global limit to bot-token routes only, never to interaction routes', async () => {
    fake.setRateLimits(true, { globalPerSecond: 3 });
    try {
      handler = async (i) => {
        if (i.isChatInputCommand()) await i.reply('not throttled');
      };
      const before = fake.rateLimitHits.filter((h) => h.global).length;
      for (let n = 0; n < 3; n++) await client.rest.get(Routes.channel(fake.defaultChannelId));
      // the global bucket is now empty, but interaction callbacks are exempt
      const cmd = fake.sendCommand({ name: 'ping' });
      await cmd.message();
      expect(cmd.callback?.status).toBe(204);
      // the 4th bot request in the same second gets a global 429, which @discordjs/rest waits out
      await client.rest.get(Routes.channel(fake.defaultChannelId));
      const globalHits = fake.rateLimitHits.filter((h) => h.global);
      expect(globalHits.length).toBeGreaterThan(before);
      const limited = fake.requests.filter(
        (r) => r.status === 429 && r.responseHeaders['X-RateLimit-Global'] === 'true',
      );
      expect(limited.at(-1)?.responseHeaders['X-RateLimit-Scope']).toBe('global');
      expect(limited.at(-1)?.response).toMatchObject({ global: true });
    } finally {
      fake.setRateLimits(false);
    }
  });

  it('limits interaction webhook edits per token; discord.js follows the bucket headers', async () => {
    fake.setRateLimits(true, { webhookMessageEdits: { limit: 2, windowMs: 1_000 } });
    try {
      handler = async (i) => {
        if (!i.isChatInputCommand()) return;
        await i.deferReply();
        for (let n = 1; n <= 4; n++) await i.editReply(`progress ${n * 25}%`);
      };
      const started = Date.now();
      const cmd = fake.sendCommand({ name: 'upscale' });
      const msg = await cmd.waitForMessage((m) => m.content === 'progress 100%');
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(msg.edits.map((e) => e.after['content'])).toEqual([
        'progress 25%',
        'progress 50%',
        'progress 75%',
        'progress 100%',
      ]);
      const patch = fake.requests
        .filter((r) => r.method === 'PATCH' && r.route?.endsWith('@original') && r.status === 200)
        .at(-1);
      expect(patch?.responseHeaders).toMatchObject({
        'X-RateLimit-Limit': '2',
        'X-RateLimit-Bucket': expect.any(String),
      });
    } finally {
      fake.setRateLimits(false);
    }
  });

  it('injects faults: 10008 surfaces as DiscordAPIError, a single 500 is retried', async () => {
    const sent = await channel().send('to be lost');
    fake.injectFault({
      method: 'GET',
      route: '/channels/{channel_id}/messages/{message_id}',
      ...DiscordErrors.unknownMessage,
    });
    const error = await channel()
      .messages.fetch({ message: sent.id, force: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect((error as DiscordAPIError).code).toBe(10008);

    const five = fake.injectFault({
      method: 'POST',
      route: /\/channels\/\d+\/messages$/,
      ...DiscordErrors.internalServerError,
    });
    const ok = await channel().send('survives a 500');
    expect(five.hits).toBe(1);
    expect(fake.messages.get(ok.id)?.content).toBe('survives a 500');

    // afterHandler: Discord did the work but the answer was lost -> the retry duplicates the message
    const before = fake.channelMessages().length;
    fake.injectFault({
      method: 'POST',
      route: '/channels/{channel_id}/messages',
      ...DiscordErrors.answerLost,
    });
    await channel().send('maybe twice');
    expect(fake.channelMessages().length - before).toBe(2);
  });

  it('enforce_nonce: a repeat within the window answers the first message; a nonce alone, or a later repeat, posts', async () => {
    const start = fake.channelMessages().length;
    // Discord took the post, its answer was lost, REST retried: one message, the retry answered with it.
    const lost = fake.injectFault({
      method: 'POST',
      route: '/channels/{channel_id}/messages',
      ...DiscordErrors.answerLost,
    });
    const first = await channel().send({ content: 'once', nonce: 'gallery-1', enforceNonce: true });
    expect(lost.hits).toBe(1);
    expect(fake.channelMessages().length - start).toBe(1);
    const again = await channel().send({ content: 'once', nonce: 'gallery-1', enforceNonce: true });
    expect(again.id).toBe(first.id);
    expect(fake.channelMessages().length - start).toBe(1);
    // Without enforce_nonce the same nonce is just echoed: a second message.
    await channel().send({ content: 'twice', nonce: 'gallery-1' });
    expect(fake.channelMessages().length - start).toBe(2);
    // Past the window the nonce is forgotten.
    fake.advanceTime(NONCE_WINDOW_MS);
    const later = await channel().send({ content: 'once', nonce: 'gallery-1', enforceNonce: true });
    expect(later.id).not.toBe(first.id);
    expect(fake.channelMessages().length - start).toBe(3);
  });

  it('stores a bulk command overwrite and returns it from GET with Discord defaults', async () => {
    const callsBefore = { ...fake.commandCalls };
    const set = await client.application!.commands.set([
      {
        name: 'upscale',
        description: 'Upscale an image',
        defaultMemberPermissions: PermissionFlagsBits.SendMessages,
        options: [
          {
            type: ApplicationCommandOptionType.Attachment,
            name: 'image',
            description: 'Image',
            required: true,
          },
          {
            type: ApplicationCommandOptionType.Integer,
            name: 'scale',
            description: 'Factor',
            autocomplete: true,
          },
        ],
      },
      { name: 'ping', description: 'Ping' },
    ]);
    expect(set.size).toBe(2);
    expect(fake.globalCommands.map((c) => c['name'])).toEqual(['upscale', 'ping']);
    expect(fake.globalCommands[0]).toMatchObject({
      type: 1,
      application_id: fake.applicationId,
      default_member_permissions: String(PermissionFlagsBits.SendMessages),
      dm_permission: true,
      contexts: null,
      integration_types: [0],
      nsfw: false,
    });
    // discord.js sends default_member_permissions as a string; the spec says integer -> documented quirk, not a violation
    expect(fake.specQuirks.map((q) => q.id)).toContain('default_member_permissions-string');

    const fetched = await client.application!.commands.fetch();
    expect(fetched.map((c) => c.name).sort()).toEqual(['ping', 'upscale']);
    expect((fake.commandCalls['GET'] ?? 0) - (callsBefore['GET'] ?? 0)).toBe(1);
    expect((fake.commandCalls['PUT'] ?? 0) - (callsBefore['PUT'] ?? 0)).toBe(1);

    // same definitions again: ids and versions are stable
    const versions = fake.globalCommands.map((c) => c['version']);
    await client.application!.commands.set([...set.values()].map((c) => c.toJSON() as never));
    expect(fake.globalCommands.map((c) => c['version'])).toEqual(versions);

    // registered commands give the option types to sendCommand
    let scale: number | null = null;
    handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      scale = i.options.getInteger('scale');
      await i.reply({ content: 'ok', flags: MessageFlags.Ephemeral });
    };
    const cmd = fake.sendCommand({ name: 'upscale', options: { scale: 2 } });
    expect((cmd.payload['data'] as { id: string }).id).toBe(set.find((c) => c.name === 'upscale')?.id);
    await cmd.message();
    expect(scale).toBe(2);
  });

  it('opens a modal with a file upload and receives the uploaded files on submit', async () => {
    let files: Array<{ name: string; url: string; size: number }> = [];
    let note = '';
    handler = async (i) => {
      if (i.isChatInputCommand()) {
        await i.showModal(
          new ModalBuilder()
            .setCustomId('train')
            .setTitle('Training photos')
            .addLabelComponents(
              new LabelBuilder()
                .setLabel('Photos')
                .setFileUploadComponent(
                  new FileUploadBuilder().setCustomId('photos').setMinValues(1).setMaxValues(10),
                ),
              new LabelBuilder()
                .setLabel('Note')
                .setTextInputComponent(
                  new TextInputBuilder().setCustomId('note').setStyle(TextInputStyle.Short),
                ),
            ),
        );
      } else if (i.isModalSubmit()) {
        const uploaded = i.fields.getUploadedFiles('photos', true);
        files = [...uploaded.values()].map((a) => ({ name: a.name, url: a.url, size: a.size }));
        note = i.fields.getTextInputValue('note');
        await i.reply({ content: `got ${uploaded.size} photos`, flags: MessageFlags.Ephemeral });
      }
    };
    const cmd = fake.sendCommand({ name: 'train' });
    expect((await cmd.response()).type).toBe(9);
    expect(cmd.modal).toMatchObject({
      custom_id: 'train',
      components: [{ type: 18, component: { type: 19, custom_id: 'photos' } }, { type: 18 }],
    });

    const submit = fake.sendModalSubmit({
      customId: 'train',
      components: [
        {
          customId: 'photos',
          files: [
            { filename: 'a.png', bytes: PNG },
            { filename: 'b.png', bytes: PNG },
          ],
        },
        { customId: 'note', value: 'studio light' },
      ],
    });
    const reply = await submit.message();
    expect(handlerErrors).toEqual([]);
    expect(reply.content).toBe('got 2 photos');
    expect(reply.ephemeral).toBe(true);
    expect(note).toBe('studio light');
    expect(files.map((f) => f.name)).toEqual(['a.png', 'b.png']);
    const body = Buffer.from(await (await fetch(files[0]?.url ?? '')).arrayBuffer());
    expect(body.equals(PNG)).toBe(true);
  });

  it('enforces the 3 s acknowledgement deadline, the 15 min token lifetime and the 1 h edit rule', async () => {
    const errors: unknown[] = [];
    handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      if (i.commandName === 'slow') {
        fake.advanceTime(3_500);
        await i.deferReply().catch((e: unknown) => errors.push(e));
        return;
      }
      await i.deferReply();
      fake.advanceTime(16 * 60_000);
      await i.editReply('too late').catch((e: unknown) => errors.push(e));
    };
    fake.sendCommand({ name: 'slow' });
    await fake.waitFor(() => errors.length === 1, { description: '10062' });
    expect(errors[0]).toMatchObject({ code: 10062, status: 404 });

    fake.sendCommand({ name: 'late' });
    await fake.waitFor(() => errors.length === 2, { description: '50027' });
    expect(errors[1]).toBeInstanceOf(DiscordAPIError);
    expect(errors[1]).toMatchObject({ code: 50027, status: 401 });
    expect(client.token).toBe(fake.token); // auth:false routes must not drop the bot token

    const old = await channel().send('old news');
    fake.advanceTime(2 * 3_600_000);
    await expect(old.edit('new news')).rejects.toMatchObject({ code: 30046, status: 400 });
  });

  it('resumes after a gateway disconnect and replays events missed meanwhile', async () => {
    const resumed = new Promise<number>((resolve) =>
      client.once(Events.ShardResume, (_id, replayed) => resolve(replayed)),
    );
    let received = 0;
    handler = async (i) => {
      if (!i.isChatInputCommand()) return;
      received += 1;
      await i.reply('back');
    };
    fake.disconnectGateway(4000);
    const cmd = fake.sendCommand({ name: 'ping' }); // buffered while the socket is down, replayed on RESUME
    await expect(resumed).resolves.toBeGreaterThanOrEqual(1);
    await fake.waitForResume(1);
    expect(fake.gateway.identifies).toBe(1);
    expect(fake.gateway.connections).toHaveLength(2);
    expect(fake.gateway.connections[1]?.received[0]?.op).toBe(6);
    await cmd.message();
    expect(received).toBe(1);
  });

  it('accepts a broad set of real discord.js payloads without spec violations', async () => {
    const violationsBefore = fake.violations.length;
    const ch = channel();
    // channel messages
    await ch.send({
      content: 'rich',
      allowedMentions: { parse: [] },
      embeds: [
        new EmbedBuilder()
          .setTitle('t')
          .setURL('https://example.com')
          .setDescription('d')
          .setTimestamp()
          .setAuthor({ name: 'a', iconURL: 'https://example.com/a.png' })
          .setFooter({ text: 'f' })
          .addFields({ name: 'n', value: 'v', inline: true })
          .setImage('attachment://result.png'),
      ],
      files: [new AttachmentBuilder(PNG, { name: 'result.png', description: 'alt text' })],
    });
    const base = await ch.send({
      content: 'pick',
      components: [
        new ActionRowBuilder<StringSelectMenuBuilder>().addComponents(
          new StringSelectMenuBuilder()
            .setCustomId('sel')
            .addOptions({ label: 'A', value: 'a' }, { label: 'B', value: 'b' }),
        ),
        new ActionRowBuilder<ButtonBuilder>().addComponents(
          new ButtonBuilder().setCustomId('b').setLabel('B').setStyle(ButtonStyle.Secondary),
        ),
      ],
    });
    await ch.send({ content: 'reply', reply: { messageReference: base.id } });
    const v2 = await ch.send({
      flags: MessageFlags.IsComponentsV2,
      files: [new AttachmentBuilder(PNG, { name: 'g.png' })],
      components: [
        new ContainerBuilder()
          .setAccentColor(0xff0000)
          .addTextDisplayComponents(new TextDisplayBuilder().setContent('hi'))
          .addSeparatorComponents(new SeparatorBuilder())
          .addSectionComponents(
            new SectionBuilder()
              .addTextDisplayComponents(new TextDisplayBuilder().setContent('s'))
              .setThumbnailAccessory(new ThumbnailBuilder().setURL('attachment://g.png')),
          )
          .addMediaGalleryComponents(
            new MediaGalleryBuilder().addItems({ media: { url: 'attachment://g.png' } }),
          ),
      ],
    });
    const container = fake.messages.get(v2.id)?.components[0];
    expect(container).toMatchObject({
      type: 17,
      id: 1,
      spoiler: false,
      components: [{ type: 10 }, { type: 14, divider: true }, {}, {}],
    });
    await ch.send({
      poll: {
        question: { text: 'q?' },
        answers: [{ text: 'a' }, { text: 'b', emoji: '👍' }],
        duration: 1,
        allowMultiselect: false,
      },
    });
    await base.edit({ content: 'edited', embeds: [], attachments: [] });
    await ch.sendTyping();
    // the channel holds a Container: listing it answers 500 like Discord (discord-api-docs #8611)
    await expect(ch.messages.fetch({ limit: 5 })).rejects.toMatchObject({ status: 500 });
    fake.setContainerListBug(false);
    await ch.messages.fetch({ limit: 5 });
    fake.setContainerListBug(true);
    await (await ch.send('bye')).delete();
    // guild commands built with the builders, context menu, create/edit/delete
    await client.application!.commands.set(
      [
        new SlashCommandBuilder()
          .setName('admin')
          .setDescription('d')
          .setContexts(InteractionContextType.Guild)
          .setNameLocalizations({ de: 'verwaltung' })
          .addSubcommand((sc) =>
            sc
              .setName('x')
              .setDescription('x')
              .addStringOption((o) =>
                o.setName('s').setDescription('s').setRequired(true).addChoices({ name: 'c', value: 'c' }),
              )
              .addChannelOption((o) =>
                o.setName('c').setDescription('c').addChannelTypes(ChannelType.GuildText),
              )
              .addNumberOption((o) => o.setName('n').setDescription('n').setMinValue(0).setMaxValue(5)),
          )
          .addSubcommandGroup((g) =>
            g
              .setName('g')
              .setDescription('g')
              .addSubcommand((sc) =>
                sc
                  .setName('y')
                  .setDescription('y')
                  .addAttachmentOption((o) => o.setName('f').setDescription('f')),
              ),
          ),
        new ContextMenuCommandBuilder().setName('Upscale this').setType(ApplicationCommandType.Message),
      ],
      fake.guildId,
    );
    expect(fake.guildCommands().map((c) => c['name'])).toEqual(['admin', 'Upscale this']);
    expect(fake.guildCommands()[0]).not.toHaveProperty('dm_permission'); // guild commands have none
    const created = await client.application!.commands.create(
      { name: 'tmp', description: 'tmp' },
      fake.guildId,
    );
    await created.edit({ description: 'tmp 2' });
    await created.delete();
    await client.application!.fetch();
    await client.users.fetch(fake.defaultUserId, { force: true });
    await client.channels.fetch(fake.defaultChannelId, { force: true });
    await client.guilds.fetch({ guild: fake.guildId, force: true });

    // interaction flows
    const flows: Record<string, Handler> = {
      files: async (i) => {
        if (!i.isChatInputCommand()) return;
        await i.reply({
          content: 'c',
          files: [{ attachment: PNG, name: 'x.png' }],
          flags: MessageFlags.Ephemeral,
        });
        await i.editReply({ content: 'c2', attachments: [] });
        await i.followUp({ content: 'f', files: [{ attachment: PNG, name: 'y.png' }] });
        await i.fetchReply();
        await i.deleteReply();
      },
      v2: async (i) => {
        if (!i.isChatInputCommand()) return;
        await i.deferReply({ flags: MessageFlags.Ephemeral });
        await i.editReply({
          flags: MessageFlags.IsComponentsV2,
          components: [new TextDisplayBuilder().setContent('v2')],
        });
      },
      followups: async (i) => {
        if (!i.isChatInputCommand()) return;
        await i.deferReply();
        await i.followUp('first'); // fills the deferred "thinking…" message, like Discord
        await i.followUp('second');
      },
      modal: async (i) => {
        if (!i.isChatInputCommand()) return;
        await i.showModal(
          new ModalBuilder()
            .setCustomId('legacy')
            .setTitle('T')
            .addComponents(
              new ActionRowBuilder<TextInputBuilder>().addComponents(
                new TextInputBuilder()
                  .setCustomId('t')
                  .setLabel('L')
                  .setStyle(TextInputStyle.Paragraph)
                  .setRequired(false),
              ),
            ),
        );
      },
    };
    handler = async (i) => {
      if (i.isChatInputCommand()) await flows[i.commandName]?.(i);
      else if (i.isStringSelectMenu()) await i.update({ content: `picked ${i.values.join()}` });
      else if (i.isButton()) {
        await i.deferUpdate();
        await i.editReply({ content: 'edited via @original' });
      } else if (i.isModalSubmit() && i.isFromMessage()) await i.update({ content: 'from modal' });
    };
    const files = fake.sendCommand({ name: 'files' });
    await fake.waitFor(() => files.originalMessage?.deleted && files.followUps.length === 1, {
      description: 'files flow',
    });
    expect(files.originalMessage?.edits[0]?.after['attachments']).toEqual([]);
    const v2reply = await fake.sendCommand({ name: 'v2' }).waitForMessage((m) => !m.loading);
    expect(v2reply.ephemeral).toBe(true);
    expect(v2reply.flags).toBe(MessageFlags.Ephemeral | MessageFlags.IsComponentsV2);
    const fu = fake.sendCommand({ name: 'followups' });
    await fake.waitFor(() => fu.followUps.length === 1, { description: 'second follow-up' });
    expect(fu.originalMessage?.content).toBe('first');
    expect(fu.followUps[0]?.content).toBe('second');
    expect((await fake.sendCommand({ name: 'modal' }).response()).type).toBe(9);
    await fake
      .sendComponent({ customId: 'sel', componentType: 3, values: ['a'], messageId: base.id })
      .waitForMessage((m) => m.content === 'picked a');
    await fake
      .sendButton({ customId: 'b', messageId: base.id })
      .waitForMessage((m) => m.content === 'edited via @original');
    await fake
      .sendModalSubmit({
        customId: 'legacy',
        messageId: base.id,
        components: [{ customId: 't', value: 'v' }],
      })
      .waitForMessage((m) => m.content === 'from modal');

    expect(handlerErrors).toEqual([]);
    expect(fake.violations.slice(violationsBefore)).toEqual([]);
  });

  it('leaves no unexpected violations and answers consistently with the spec', () => {
    fake.assertNoViolations();
    expect(fake.responseViolations).toEqual([]);
    expect(fake.unspecifiedRequests.map((r) => r.path)).toEqual(['/attachments/refresh-urls']);
  });
});

describe('fake gateway wire details (raw WebSocket client)', () => {
  const open = (url: string): Promise<{ ws: WebSocket; frames: Array<{ data: Buffer; binary: boolean }> }> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const frames: Array<{ data: Buffer; binary: boolean }> = [];
      ws.on('message', (data: Buffer, binary: boolean) => frames.push({ data, binary }));
      ws.once('open', () => resolve({ ws, frames }));
      ws.once('error', reject);
    });

  it('speaks zlib-stream when asked, identify-compress, and refuses a bad token with 4004', async () => {
    const fake = await startFakeDiscord();
    try {
      // ?compress=zlib-stream (what @discordjs/ws requests when zlib-sync is installed)
      const a = await open(`${fake.gatewayUrl}/?v=10&encoding=json&compress=zlib-stream`);
      await fake.waitFor(() => a.frames.length >= 1, { description: 'HELLO' });
      const inflate = createInflate({ flush: zlibConstants.Z_SYNC_FLUSH });
      const texts: string[] = [];
      inflate.on('data', (chunk: Buffer) => texts.push(chunk.toString('utf8')));
      expect(a.frames[0]?.binary).toBe(true);
      inflate.write(a.frames[0]?.data);
      await fake.waitFor(() => texts.length >= 1, { description: 'inflated HELLO' });
      expect(JSON.parse(texts[0] ?? '')).toMatchObject({ op: 10, d: { heartbeat_interval: 41_250 } });
      a.ws.close();

      // IDENTIFY with compress: true -> dispatches are whole zlib payloads in binary frames
      const b = await open(`${fake.gatewayUrl}/?v=10&encoding=json`);
      b.ws.send(
        JSON.stringify({
          op: 2,
          d: { token: fake.token, intents: 1, compress: true, properties: { os: 'linux' } },
        }),
      );
      await fake.waitFor(() => b.frames.length >= 3, { description: 'READY + GUILD_CREATE' });
      expect(b.frames[0]?.binary).toBe(false); // HELLO precedes IDENTIFY
      const ready = JSON.parse(inflateSync(b.frames[1]?.data ?? Buffer.alloc(0)).toString('utf8')) as {
        t: string;
      };
      expect(ready.t).toBe('READY');
      b.ws.close();

      const c = await open(`${fake.gatewayUrl}/?v=10&encoding=json`);
      const closed = new Promise<number>((resolve) => c.ws.once('close', (code: number) => resolve(code)));
      c.ws.send(JSON.stringify({ op: 2, d: { token: 'nope', intents: 1, properties: {} } }));
      expect(await closed).toBe(4004);
    } finally {
      await fake.close();
    }

    const plain = await startFakeDiscord({ gatewayCompression: 'ignore' });
    try {
      const d = await open(`${plain.gatewayUrl}/?v=10&encoding=json&compress=zlib-stream`);
      await plain.waitFor(() => d.frames.length >= 1, { description: 'HELLO' });
      expect(d.frames[0]?.binary).toBe(false);
      expect(JSON.parse(d.frames[0]?.data.toString('utf8') ?? '')).toMatchObject({ op: 10 });
      d.ws.close();
    } finally {
      await plain.close();
    }
  });
});
