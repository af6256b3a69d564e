import { generateKeyPairSync, sign } from 'node:crypto';
import Fastify from 'fastify';
import { Client, DiscordAPIError, Events, MessageFlags, REST, type Interaction } from 'discord.js';
import type { InternalRequest } from '@discordjs/rest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import { HttpInteractions } from '../src/services/discord/http-interactions.js';
import { interactionRoutes } from '../src/webhooks/interactions.js';

const APP = '111111111111111111';
const GUILD = '222222222222222222';
const CHANNEL = '333333333333333333';
const USER = '444444444444444444';
let seq = 500000000000000000n;
const nextId = () => String(++seq);

function base(type: number, data: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const id = nextId();
  return {
    id,
    application_id: APP,
    type,
    token: `tok-${id}`,
    version: 1,
    guild_id: GUILD,
    channel_id: CHANNEL,
    channel: { id: CHANNEL, type: 0, name: 'general', guild_id: GUILD, permissions: '0' },
    member: {
      user: { id: USER, username: 'ada', discriminator: '0', global_name: null, avatar: null },
      roles: [],
      permissions: '32',
      joined_at: '2024-01-01T00:00:00.000Z',
      deaf: false,
      mute: false,
      flags: 0,
    },
    app_permissions: '0',
    locale: 'en-US',
    entitlements: [],
    authorizing_integration_owners: { '0': GUILD },
    context: 0,
    attachment_size_limit: 10485760,
    data,
    ...extra,
  };
}
const command = (name = 'tasks') => base(2, { id: nextId(), name, type: 1 });
const autocomplete = () =>
  base(4, {
    id: nextId(),
    name: 'extend-song',
    type: 1,
    options: [{ name: 'task_id', type: 3, value: 'x', focused: true }],
  });
const button = (sourceFlags = 0) => {
  const msgId = nextId();
  const raw = base(
    3,
    { custom_id: 'b:1', component_type: 2 },
    {
      message: {
        id: msgId,
        channel_id: CHANNEL,
        type: 0,
        content: 'hi',
        flags: sourceFlags,
        author: { id: APP, username: 'bot', discriminator: '0', global_name: null, avatar: null, bot: true },
        attachments: [],
        embeds: [],
        mentions: [],
        mention_roles: [],
        pinned: false,
        mention_everyone: false,
        tts: false,
        timestamp: '2024-01-01T00:00:00.000Z',
        edited_timestamp: null,
        components: [],
      },
    },
  );
  return raw as typeof raw & { message: { id: string } };
};

interface Sent {
  method: string;
  route: string;
  body: unknown;
  auth: boolean | undefined;
  query: string;
}

/** A discord.js client (never logged in) whose REST records requests instead of sending them. */
function setup(
  opts: {
    deadlineMs?: number;
    claim?: (id: string) => Promise<boolean>;
    fail?: (o: InternalRequest) => unknown;
  } = {},
) {
  const client = new Client({ intents: [] });
  const sent: Sent[] = [];
  let n = 0;
  const fakeRequest = async (o: InternalRequest): Promise<unknown> => {
    sent.push({
      method: o.method,
      route: o.fullRoute,
      body: o.body,
      auth: o.auth as boolean | undefined,
      query: o.query?.toString() ?? '',
    });
    const failure = opts.fail?.(o);
    if (failure) throw failure;
    if (o.fullRoute.endsWith('/callback'))
      return o.query?.get('with_response') === 'true' ? { interaction: { id: '1', type: 2 } } : undefined;
    if (o.method === 'DELETE') return undefined;
    return {
      id: `9000000000000000${++n}`,
      channel_id: CHANNEL,
      flags: Number((o.body as { flags?: number })?.flags ?? 0),
      content: '',
    };
  };
  client.rest.request = fakeRequest;
  const editRest = new REST();
  editRest.request = fakeRequest;
  const seen = new Set<string>();
  const raw = new HttpInteractions({
    client,
    logger: pino({ level: 'silent' }),
    claim: opts.claim ?? (async (id) => (seen.has(id) ? false : (seen.add(id), true))),
    ...(opts.deadlineMs !== undefined ? { ackDeadlineMs: opts.deadlineMs } : {}),
  });
  raw.install(client.rest);
  raw.install(editRest);
  // Like the route: the acknowledgement counts as written once handle() returns it.
  const http = {
    get size() {
      return raw.size;
    },
    handle: async (i: Parameters<HttpInteractions['handle']>[0]) => {
      const r = await raw.handle(i);
      if (r.status === 200) r.sent?.();
      return r;
    },
  };
  const handlers: Array<(i: Interaction) => Promise<void>> = [];
  const done: Promise<void>[] = [];
  client.on(Events.InteractionCreate, (i: Interaction) => {
    const h = handlers.shift();
    if (h) done.push(h(i));
  });
  const on = (h: (i: Interaction) => Promise<void>) => handlers.push(h);
  const settle = async () => {
    await Promise.all(done);
  };
  return { client, http, raw, sent, on, settle, editRest };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('HttpInteractions: answers in time go through the callback endpoint', () => {
  afterEach(() => vi.useRealTimers());

  it('PING is answered PONG without touching the store', async () => {
    const claim = vi.fn(async () => true);
    const { http } = setup({ claim });
    expect(
      await http.handle({ id: '1', application_id: APP, type: 1, token: 't', version: 1 } as never),
    ).toEqual({
      status: 200,
      body: { type: 1 },
    });
    expect(claim).not.toHaveBeenCalled();
  });

  it('a reply is posted to the callback endpoint, then the HTTP request gets 202', async () => {
    const { http, on, sent, settle } = setup();
    on(async (i) => {
      if (i.isChatInputCommand()) await i.reply({ content: 'hello', withResponse: true });
    });
    const raw = command();
    expect(await http.handle(raw as never)).toEqual({ status: 202 });
    await settle();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ method: 'POST', route: `/interactions/${raw.id}/${raw.token}/callback` });
    expect(sent[0]?.body).toMatchObject({ type: 4, data: { content: 'hello' } });
    expect(http.size).toBe(0);
  });

  it('autocomplete choices and a form go in the HTTP response body (nothing follows them)', async () => {
    const { http, on, sent, settle } = setup();
    on(async (i) => {
      if (i.isAutocomplete()) await i.respond([{ name: 'a', value: 'a' }]);
    });
    expect(await http.handle(autocomplete() as never)).toEqual({
      status: 200,
      body: { type: 8, data: { choices: [{ name: 'a', value: 'a' }] } },
    });
    on(async (i) => {
      if (i.isButton())
        await i.showModal({
          customId: 'm:1',
          title: 'Form',
          components: [
            {
              type: 1,
              components: [{ type: 4, custom_id: 'prompt', label: 'Prompt', style: 1 }],
            },
          ],
        } as never);
    });
    expect(await http.handle(button() as never)).toMatchObject({ status: 200, body: { type: 9 } });
    await settle();
    expect(sent).toHaveLength(0);
    expect(http.size).toBe(0);
  });

  it('the same interaction delivered twice runs once; the second delivery is 202 with nothing sent', async () => {
    const { http, on, sent, settle } = setup();
    const runs = vi.fn();
    on(async (i) => {
      runs();
      if (i.isChatInputCommand()) await i.reply('once');
    });
    on(async () => {
      runs();
    });
    const raw = command();
    await http.handle(raw as never);
    expect(await http.handle(raw as never)).toEqual({ status: 202, duplicate: true });
    await settle();
    expect(runs).toHaveBeenCalledTimes(1);
    expect(sent).toHaveLength(1);
  });

  it('two deliveries of one interaction at the same moment: one runs, the other is the duplicate', async () => {
    const { http, on, sent, settle } = setup();
    const runs = vi.fn();
    on(async (i) => {
      runs();
      if (i.isChatInputCommand()) await i.reply('once');
    });
    const raw = command();
    const answers = await Promise.all([http.handle(raw as never), http.handle(raw as never)]);
    await settle();
    expect(answers).toEqual(expect.arrayContaining([{ status: 202 }, { status: 202, duplicate: true }]));
    expect(runs).toHaveBeenCalledTimes(1);
    expect(sent).toHaveLength(1);
  });

  it('store down: an ephemeral apology in the HTTP response (autocomplete: no choices), nothing run', async () => {
    const { http, on, sent } = setup({ claim: async () => Promise.reject(new Error('down')) });
    const runs = vi.fn(async () => undefined);
    on(runs);
    const r = await http.handle(command() as never);
    expect(r).toMatchObject({ status: 200, body: { type: 4, data: { flags: MessageFlags.Ephemeral } } });
    expect(JSON.stringify(r)).toMatch(/storage is down/);
    expect(await http.handle(autocomplete() as never)).toEqual({
      status: 200,
      body: { type: 8, data: { choices: [] } },
    });
    expect(runs).not.toHaveBeenCalled();
    expect(sent).toHaveLength(0);
  });

  it('a store too slow to claim in time: answered "unavailable" within the budget, nothing run', async () => {
    const client = new Client({ intents: [] });
    const runs = vi.fn();
    client.on(Events.InteractionCreate, runs);
    const http = new HttpInteractions({
      client,
      logger: pino({ level: 'silent' }),
      claim: () => new Promise<boolean>(() => undefined),
      claimTimeoutMs: 50,
    });
    expect(JSON.stringify(await http.handle(command() as never))).toMatch(/storage is down/);
    expect(runs).not.toHaveBeenCalled();
  });

  it('closing answers an interaction still waiting with an apology, and later ones at once', async () => {
    const { http, raw: inner, on } = setup();
    on(() => new Promise<void>(() => undefined)); // never answers
    const pending = http.handle(command() as never);
    await sleep(20);
    inner.close();
    expect(JSON.stringify(await pending)).toMatch(/restarting/);
    expect(JSON.stringify(await http.handle(command() as never))).toMatch(/restarting/);
  });

  it('interaction.channel is known (from the payload) although no gateway filled a cache', async () => {
    const { http, on, settle } = setup();
    let isThread: boolean | undefined;
    on(async (i) => {
      isThread = i.channel?.isThread();
      if (i.isChatInputCommand()) await i.reply('x');
    });
    const raw = command();
    raw.channel = {
      id: '777777777777777777',
      type: 11,
      name: 'job thread',
      guild_id: GUILD,
      permissions: '0',
    };
    raw.channel_id = '777777777777777777';
    await http.handle(raw as never);
    await settle();
    expect(isThread).toBe(true);
  });

  it('entitlements in the payload are read although no READY set client.application', async () => {
    const { http, on, settle } = setup();
    let count: number | undefined;
    on(async (i) => {
      count = i.entitlements.size;
      if (i.isChatInputCommand()) await i.reply('x');
    });
    const raw = command();
    (raw as Record<string, unknown>)['entitlements'] = [
      {
        id: nextId(),
        sku_id: nextId(),
        application_id: APP,
        user_id: USER,
        type: 8,
        deleted: false,
        starts_at: null,
        ends_at: null,
        consumed: false,
      },
    ];
    expect(await http.handle(raw as never)).toEqual({ status: 202 });
    await settle();
    expect(count).toBe(1);
  });

  it('a payload discord.js cannot build an interaction from is answered with an apology at once', async () => {
    const { http } = setup();
    const raw = command();
    (raw as Record<string, unknown>)['entitlements'] = 'not a list';
    const r = await http.handle(raw as never);
    expect(r).toMatchObject({ status: 200, body: { type: 4, data: { flags: MessageFlags.Ephemeral } } });
    expect(http.size).toBe(0);
  });

  it('a callback Discord refuses is not the answer: the router may answer again', async () => {
    let refuse = true;
    const { http, on, sent, settle } = setup({
      fail: (o) => {
        if (o.fullRoute.endsWith('/callback') && refuse) {
          refuse = false;
          return new DiscordAPIError(
            { code: 50035, message: 'Invalid Form Body' },
            50035,
            400,
            'POST',
            o.fullRoute,
            {},
          );
        }
        return undefined;
      },
    });
    on(async (i) => {
      if (!i.isChatInputCommand()) return;
      await i.reply('bad').catch(async () => i.reply({ content: 'sorry', flags: MessageFlags.Ephemeral }));
    });
    expect(await http.handle(command() as never)).toEqual({ status: 202 });
    await settle();
    expect(sent.map((s) => (s.body as { type: number }).type)).toEqual([4, 4]);
  });

  it('a callback lost on the network: the HTTP response acknowledges at once', async () => {
    const { http, on } = setup({
      fail: (o) => (o.fullRoute.endsWith('/callback') ? new Error('socket hang up') : undefined),
    });
    on(async (i) => {
      if (i.isChatInputCommand()) await i.reply('x').catch(() => undefined);
    });
    expect(await http.handle(command() as never)).toMatchObject({ status: 200, body: { type: 5 } });
  });
});

describe('HttpInteractions: a command slower than the deadline', () => {
  it('is acknowledged with a deferred reply; its reply then edits that message (with_response answered)', async () => {
    const { http, on, sent, settle } = setup({ deadlineMs: 20 });
    let messageId: string | undefined;
    on(async (i) => {
      await sleep(60);
      if (i.isChatInputCommand()) {
        const res = await i.reply({ content: 'late', withResponse: true });
        messageId = res.resource?.message?.id;
      }
    });
    const raw = command();
    const r = await http.handle(raw as never);
    expect(r).toMatchObject({ status: 200, body: { type: 5 } });
    await settle();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      method: 'PATCH',
      route: `/webhooks/${APP}/${raw.token}/messages/%40original`,
      auth: false,
    });
    expect(sent[0]?.body).toMatchObject({ content: 'late' });
    expect(messageId).toBeDefined();
  });

  it('an ephemeral reply replaces the public deferred message; later edits reach the follow-up, on any REST', async () => {
    const { http, on, sent, settle, editRest } = setup({ deadlineMs: 0 });
    on(async (i) => {
      if (!i.isChatInputCommand()) return;
      await i.reply({ content: 'only you', flags: MessageFlags.Ephemeral });
      await i.editReply('still only you');
    });
    const raw = command();
    await http.handle(raw as never);
    await settle();
    const hook = `/webhooks/${APP}/${raw.token}` as const;
    expect(sent.map((s) => `${s.method} ${s.route}`)).toEqual([
      `DELETE ${hook}/messages/%40original`,
      `POST ${hook}`,
      `PATCH ${hook}/messages/90000000000000001`,
    ]);
    expect(sent[1]?.body).toMatchObject({ flags: MessageFlags.Ephemeral });
    expect(sent[1]?.query).toBe('wait=true');
    // The edit queue's own REST edits `@original` too: it reaches the same follow-up.
    await editRest.patch(`${hook}/messages/%40original`, { body: { content: 'job edit' }, auth: false });
    expect(sent.at(-1)?.route).toBe(`${hook}/messages/90000000000000001`);
  });

  it('an ephemeral defer: the deferred message goes, the edit that follows becomes an ephemeral follow-up', async () => {
    const { http, on, sent, settle } = setup({ deadlineMs: 0 });
    on(async (i) => {
      if (!i.isChatInputCommand()) return;
      await i.deferReply({ flags: MessageFlags.Ephemeral });
      await i.editReply('done');
    });
    const raw = command();
    await http.handle(raw as never);
    await settle();
    const hook = `/webhooks/${APP}/${raw.token}`;
    expect(sent.map((s) => `${s.method} ${s.route}`)).toEqual([
      `DELETE ${hook}/messages/%40original`,
      `POST ${hook}`,
    ]);
    expect(sent[1]?.body).toMatchObject({ content: 'done', flags: MessageFlags.Ephemeral });
  });

  it("a component's late update edits its own public message with the bot token", async () => {
    const { http, on, sent, settle } = setup({ deadlineMs: 0 });
    on(async (i) => {
      if (i.isButton()) await i.update({ content: 'page 2' });
    });
    const raw = button();
    await http.handle(raw as never);
    await settle();
    expect(sent.map((s) => `${s.method} ${s.route}`)).toEqual([
      `DELETE /webhooks/${APP}/${raw.token}/messages/%40original`,
      `PATCH /channels/${CHANNEL}/messages/${raw.message.id}`,
    ]);
    expect(sent[1]?.auth).toBe(true);
    expect(sent[1]?.body).toMatchObject({ content: 'page 2' });
  });

  it('on an ephemeral message, a late update arrives as an ephemeral follow-up', async () => {
    const { http, on, sent, settle } = setup({ deadlineMs: 0 });
    on(async (i) => {
      if (i.isButton()) await i.update({ content: 'page 2' });
    });
    const raw = button(MessageFlags.Ephemeral);
    await http.handle(raw as never);
    await settle();
    expect(sent.map((s) => s.method)).toEqual(['DELETE', 'POST']);
    expect(sent[1]?.body).toMatchObject({ content: 'page 2', flags: MessageFlags.Ephemeral });
  });

  it('late autocomplete choices are dropped (Discord already showed none)', async () => {
    const { http, on, sent, settle } = setup({ deadlineMs: 0 });
    on(async (i) => {
      if (i.isAutocomplete()) await i.respond([{ name: 'a', value: 'a' }]);
    });
    expect(await http.handle(autocomplete() as never)).toMatchObject({
      body: { type: 8, data: { choices: [] } },
    });
    await settle();
    expect(sent).toHaveLength(0);
  });

  it('"unknown webhook" right after the acknowledgement is retried', async () => {
    let unknown = 2;
    const { http, on, sent, settle } = setup({
      deadlineMs: 0,
      fail: (o) =>
        o.method === 'PATCH' && unknown-- > 0
          ? new DiscordAPIError(
              { code: 10015, message: 'Unknown Webhook' },
              10015,
              404,
              'PATCH',
              o.fullRoute,
              {},
            )
          : undefined,
    });
    on(async (i) => {
      if (i.isChatInputCommand()) await i.reply('eventually');
    });
    await http.handle(command() as never);
    await settle();
    expect(sent.map((s) => s.method)).toEqual(['PATCH', 'PATCH', 'PATCH']);
  });
});

describe('POST /interactions route', () => {
  const keys = generateKeyPairSync('ed25519');
  const der = keys.publicKey.export({ format: 'der', type: 'spki' });
  const publicKey = der.subarray(der.length - 32).toString('hex');

  async function server(handle = vi.fn(async () => ({ status: 200 as const, body: { type: 1 as const } }))) {
    const app = Fastify();
    await app.register(interactionRoutes, { publicKey, handle });
    return { app, handle };
  }
  const signed = (body: string, t = Math.floor(Date.now() / 1000)) => ({
    'content-type': 'application/json',
    'x-signature-timestamp': String(t),
    'x-signature-ed25519': sign(null, Buffer.from(String(t) + body), keys.privateKey).toString('hex'),
  });

  it('verifies before parsing: a bad signature on a non-JSON body is 401, and nothing runs', async () => {
    const { app, handle } = await server();
    const r = await app.inject({
      method: 'POST',
      url: '/interactions',
      headers: { ...signed('{"type":1}'), 'content-type': 'text/plain' },
      payload: 'not json',
    });
    expect(r.statusCode).toBe(401);
    expect(r.json()).toMatchObject({ error: { code: 'INVALID_SIGNATURE' } });
    const missing = await app.inject({ method: 'POST', url: '/interactions', payload: '{"type":1}' });
    expect(missing.statusCode).toBe(401);
    expect(handle).not.toHaveBeenCalled();
  });

  it('signed but not JSON, or not an interaction: 400', async () => {
    const { app, handle } = await server();
    for (const body of ['{"type":', '[]', '{"type":2,"id":"1","application_id":"2","token":"t","data":{}}']) {
      const r = await app.inject({
        method: 'POST',
        url: '/interactions',
        headers: signed(body),
        payload: body,
      });
      expect(r.statusCode, body).toBe(400);
    }
    expect(handle).not.toHaveBeenCalled();
  });

  it('PING → 200 {type: 1}; an answer by callback → 202 with no body; any content type is read raw', async () => {
    const ping = JSON.stringify({ id: '1', application_id: APP, type: 1, token: 't', version: 1 });
    const { app } = await server();
    const r = await app.inject({
      method: 'POST',
      url: '/interactions',
      headers: signed(ping),
      payload: ping,
    });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ type: 1 });
    const h2 = await server(vi.fn(async () => ({ status: 202 as const })) as never);
    const cmd = JSON.stringify(command());
    const r2 = await h2.app.inject({
      method: 'POST',
      url: '/interactions',
      headers: { ...signed(cmd), 'content-type': 'application/octet-stream' },
      payload: cmd,
    });
    expect(r2.statusCode).toBe(202);
    expect(r2.body).toBe('');
  });

  it('a body over 256 KiB is refused (413) before any check', async () => {
    const { app, handle } = await server();
    const big = JSON.stringify({ type: 1, pad: 'x'.repeat(300 * 1024) });
    const r = await app.inject({ method: 'POST', url: '/interactions', headers: signed(big), payload: big });
    expect(r.statusCode).toBe(413);
    expect(handle).not.toHaveBeenCalled();
  });

  it('a stale timestamp is 401 even with a valid signature', async () => {
    const { app } = await server();
    const ping = '{"id":"1","application_id":"2","type":1}';
    const r = await app.inject({
      method: 'POST',
      url: '/interactions',
      headers: signed(ping, Math.floor(Date.now() / 1000) - 600),
      payload: ping,
    });
    expect(r.statusCode).toBe(401);
    expect(r.json()).toMatchObject({ error: { message: expect.stringMatching(/stale/) } });
  });
});
