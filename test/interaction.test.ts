/**
 * The interaction layer (BotInteraction, HttpInteractionEndpoint, the router's
 * "too late" answer, the POST /interactions route) against a real
 * `@discordjs/rest` REST whose requests land on a recording local server
 * (test/helpers/recording-discord.ts): what each answer sends, the automatic
 * acknowledgement and the translations after it, a lost answer, and the HTTP
 * side of the exchange. Timers are fake (setTimeout and Date only: requests are
 * real I/O); the acknowledgement fires only when a test advances time.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import Fastify from 'fastify';
import { API } from '@discordjs/core/http-only';
import { DiscordAPIError } from '@discordjs/rest';
import {
  ComponentType,
  MessageFlags,
  type APIInteraction,
  type APIInteractionResponse,
  type APIMessage,
} from 'discord-api-types/v10';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createInteractionRouter } from '../src/commands/router.js';
import { isPersonalPlace } from '../src/commands/preconditions.js';
import type { BotContext, ComponentHandler } from '../src/commands/types.js';
import {
  BotInteraction,
  FollowUpLimitError,
  TooLateError,
  type AckTransport,
  type MessageBody,
} from '../src/services/discord/interactions/interaction.js';
import {
  HttpInteractionEndpoint,
  type HttpReply,
} from '../src/services/discord/interactions/http-endpoint.js';
import { STORE_DOWN_TEXT } from '../src/services/store/errors.js';
import { trackCallbackRetries } from '../src/services/discord/interactions/callback-retries.js';
import { FirstAnswers } from '../src/services/discord/interactions/first-answers.js';
import { t } from '../src/i18n/index.js';

/** The payloads below come from a German member (`locale: 'de'`) of an English server: apologies speak German. */
const STORE_DOWN_MESSAGE = t('de', STORE_DOWN_TEXT);
import { interactionRoutes } from '../src/webhooks/interactions.js';
import {
  ALREADY_ACKNOWLEDGED,
  RecordingDiscord,
  UNKNOWN_MESSAGE,
  UNKNOWN_WEBHOOK,
  type Recorded,
} from './helpers/recording-discord.js';

const logger = pino({ level: 'silent' });
const APP = '111111111111111111';
const GUILD = '222222222222222222';
const CHANNEL = '333333333333333333';
const USER = '444444444444444444';
const ACK_AFTER = 1500;
const EPHEMERAL = MessageFlags.Ephemeral;

// ------------------------------------------------------------------ payloads

let seq = 1_300_000_000_000_000_000n;
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
    guild_locale: 'en-US',
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
    locale: 'de',
    entitlements: [],
    authorizing_integration_owners: { '0': GUILD },
    context: 0,
    attachment_size_limit: 10485760,
    data,
    ...extra,
  } as unknown as APIInteraction;
}

function botMessage(flags = 0) {
  return {
    id: nextId(),
    channel_id: CHANNEL,
    type: 0,
    content: 'a result',
    flags,
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
  };
}

const command = (name = 'extend-song') => base(2, { id: nextId(), name, type: 1, options: [] });
const autocomplete = () =>
  base(4, {
    id: nextId(),
    name: 'extend-song',
    type: 1,
    options: [{ name: 'task_id', type: 3, value: 'ab', focused: true }],
  });
const button = (flags = 0) =>
  base(3, { custom_id: 'b:1', component_type: 2 }, { message: botMessage(flags) });
const select = () =>
  base(3, { custom_id: 's:1', component_type: 3, values: ['2'] }, { message: botMessage() });
const modalSubmit = (fromMessage = true) =>
  base(
    5,
    {
      custom_id: 'm:1',
      components: [{ type: 1, components: [{ type: 4, custom_id: 'prompt', value: 'the sea' }] }],
    },
    fromMessage ? { message: botMessage() } : {},
  );

const MODAL = {
  custom_id: 'm:1',
  title: 'Extend',
  components: [
    {
      type: 1 as const,
      components: [{ type: 4 as const, custom_id: 'prompt', label: 'Prompt', style: 1 as const }],
    },
  ],
};

// ------------------------------------------------------------------ bench

type Mode = 'gateway' | 'http';
type Handler = (i: BotInteraction) => Promise<unknown>;

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Started {
  /** The interaction as the handler got it (http: once claimed). */
  interaction: Promise<BotInteraction>;
  /** The handler's outcome: what it returned, or what it threw. */
  outcome: Promise<Outcome>;
  /** http mode: the endpoint's answer to the HTTP request. */
  http: Promise<HttpReply> | undefined;
}

interface StartOptions {
  ackAfterMs?: number;
  ephemeralByDefault?: boolean;
}

/**
 * The wiring of app.ts's `run`: one BotInteraction per interaction on the REST
 * above, gateway mode without a transport, http mode through the endpoint's exchange
 * (its 200 answers count as written at once unless `holdWrites`).
 */
class Bench {
  readonly discord: RecordingDiscord;
  readonly api: API;
  readonly mode: Mode;
  readonly endpoint: HttpInteractionEndpoint;
  readonly claimed = new Set<string>();
  /** http: `sent` of 200 answers not yet marked written. */
  readonly unwritten: (() => void)[] = [];
  holdWrites = false;
  claim: (id: string) => Promise<boolean> = async (id) =>
    this.claimed.has(id) ? false : (this.claimed.add(id), true);
  readonly #pending = new Map<
    string,
    { handler: Handler; opts: StartOptions; created: (i: BotInteraction) => void; done: (o: Outcome) => void }
  >();
  runs = 0;
  readonly callbackRetried: (interactionId: string) => boolean;
  /** As app.ts: owed from arrival until Discord takes a first answer or the handler is done. */
  readonly answers = new FirstAnswers();

  constructor(discord: RecordingDiscord, mode: Mode) {
    this.discord = discord;
    this.api = new API(discord.rest);
    this.callbackRetried = trackCallbackRetries(discord.rest);
    this.mode = mode;
    this.endpoint = new HttpInteractionEndpoint({
      logger,
      claim: (id) => this.claim(id),
      run: (raw, exchange, receivedAt) => this.#run(raw, exchange, receivedAt),
    });
  }

  #run(raw: APIInteraction, transport?: AckTransport, receivedAt?: number): void {
    this.runs += 1;
    const p = this.#pending.get(raw.id);
    if (!p) return;
    this.#pending.delete(raw.id);
    const answered = this.answers.owe();
    const i = new BotInteraction(raw, {
      api: this.api.interactions,
      callbackRetried: this.callbackRetried,
      onFirstAnswer: answered,
      logger,
      ackAfterMs: p.opts.ackAfterMs ?? ACK_AFTER,
      ...(p.opts.ephemeralByDefault ? { ephemeralByDefault: true } : {}),
      ...(transport ? { transport } : {}),
      ...(receivedAt !== undefined ? { receivedAt } : {}),
    });
    p.created(i);
    void p
      .handler(i)
      .then(
        (value) => p.done({ ok: true, value }),
        (error: unknown) => p.done({ ok: false, error }),
      )
      .finally(() => {
        i.dispose();
        answered();
      });
  }

  start(raw: APIInteraction, handler: Handler, opts: StartOptions = {}): Started {
    let created!: (i: BotInteraction) => void;
    let done!: (o: Outcome) => void;
    const interaction = new Promise<BotInteraction>((r) => (created = r));
    const outcome = new Promise<Outcome>((r) => (done = r));
    this.#pending.set(raw.id, { handler, opts, created, done });
    if (this.mode === 'gateway') {
      this.#run(raw);
      return { interaction, outcome, http: undefined };
    }
    const http = this.endpoint.handle(raw).then((r) => {
      if (r.status === 200 && r.sent) {
        if (this.holdWrites) this.unwritten.push(r.sent);
        else r.sent();
      }
      return r;
    });
    return { interaction, outcome, http };
  }
}

/** Resolves with the handler's value, or throws what it threw. */
async function result(s: Started): Promise<unknown> {
  const o = await s.outcome;
  if (!o.ok) throw o.error;
  return o.value;
}

/** Whether a promise has settled (after letting pending callbacks run). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let n = 0; n < 20; n++) await Promise.resolve();
  return done;
}

/** A real pause (setInterval is not faked) for I/O in flight. */
const realPause = (ms: number) =>
  new Promise<void>((resolve) => {
    const t = setInterval(() => {
      clearInterval(t);
      resolve();
    }, ms);
  });

/**
 * Moves fake time on in small steps, letting real I/O run between them, until
 * `check` holds: for retries whose timers are set only once an answer came back.
 */
async function drive(check: () => boolean, what: string, stepMs = 50): Promise<void> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > 5000) throw new Error(`timed out driving time until ${what}`);
    await vi.advanceTimersByTimeAsync(stepMs);
    await realPause(5);
  }
}

const callbackOf = (raw: APIInteraction) => `POST /interactions/${raw.id}/${raw.token}/callback`;
const hook = (raw: APIInteraction) => `/webhooks/${APP}/${raw.token}`;

let discord: RecordingDiscord;
beforeEach(async () => {
  // Only setTimeout and Date: REST and the recording server do real I/O meanwhile.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  discord = await RecordingDiscord.start();
});
afterEach(async () => {
  vi.useRealTimers();
  await discord.close();
});

// ================================================================== answers in time

describe.each<Mode>(['gateway', 'http'])('answers in time (%s)', (mode) => {
  let bench: Bench;
  beforeEach(() => {
    bench = new Bench(discord, mode);
  });

  it('reply: a type 4 callback asking for the message, mentions off; resolves with the message', async () => {
    const raw = command();
    const s = bench.start(raw, (i) => i.reply({ content: 'hello <@1>' }));
    const msg = (await result(s)) as APIMessage;
    expect(discord.lines()).toEqual([`${callbackOf(raw)}`]);
    const [req] = discord.requests as [Recorded];
    expect(req.query).toEqual({ with_response: 'true' });
    expect(req.body).toEqual({
      type: 4,
      data: { content: 'hello <@1>', allowed_mentions: { parse: [] } },
    });
    expect(msg.id).toMatch(/^\d+$/);
    expect((await s.interaction).replied).toBe(true);
    if (mode === 'http') expect(await s.http).toEqual({ status: 202 });
  });

  it('reply ephemeral: flag 64 on the callback; a body of its own allowed_mentions is kept', async () => {
    const raw = command();
    const mentions = { parse: [], users: [USER] };
    const s = bench.start(raw, (i) =>
      i.reply({ content: 'only you', allowed_mentions: mentions }, { ephemeral: true }),
    );
    await result(s);
    expect(discord.requests[0]?.body).toEqual({
      type: 4,
      data: { content: 'only you', flags: EPHEMERAL, allowed_mentions: mentions },
    });
  });

  it('a user install the server lacks: at most 5 follow-ups, the 6th refused here without a request', async () => {
    // Discord caps follow-ups at 5 when only the member's own install brought the interaction.
    const raw = base(
      2,
      { id: nextId(), name: 'tasks', type: 1, options: [] },
      {
        authorizing_integration_owners: { '1': USER },
      },
    );
    const s = bench.start(raw, async (i) => {
      await i.reply({ content: 'first' });
      for (let n = 0; n < 5; n++) await i.followUp({ content: `more ${n}` }, { ephemeral: true });
      return i.followUp({ content: 'one too many' }).then(
        () => 'sent',
        (e: unknown) => (e instanceof FollowUpLimitError ? e.code : 'other'),
      );
    });
    expect(await result(s)).toBe(40094);
    expect(discord.lines().filter((l) => l === `POST ${hook(raw)}`)).toHaveLength(5);
  });

  it('a payload whose install map is null is answered as a server install (it threw before anything ran)', async () => {
    const raw = base(
      2,
      { id: nextId(), name: 'tasks', type: 1, options: [] },
      { authorizing_integration_owners: null },
    );
    const s = bench.start(raw, async (i) => {
      await i.reply({ content: 'ok' });
      return isPersonalPlace(i);
    });
    expect(await result(s)).toBe(false);
    expect(bench.answers.owed).toBe(0);
  });

  it('the server’s own install: follow-ups are not capped by the bot', async () => {
    const raw = command('tasks');
    const s = bench.start(raw, async (i) => {
      await i.reply({ content: 'first' });
      for (let n = 0; n < 6; n++) await i.followUp({ content: `more ${n}` }, { ephemeral: true });
    });
    await result(s);
    expect(discord.lines().filter((l) => l === `POST ${hook(raw)}`)).toHaveLength(6);
  });

  it('a reply with a file goes as multipart (payload_json + files[0])', async () => {
    const raw = command();
    const s = bench.start(raw, (i) =>
      i.reply({ content: 'a file', files: [{ name: 'a.txt', data: Buffer.from('hi') }] }),
    );
    await result(s);
    expect(discord.requests[0]).toMatchObject({ files: 1, body: { type: 4, data: { content: 'a file' } } });
  });

  it('deferReply, then editReply and followUp and deleteReply on the interaction webhook', async () => {
    const raw = command();
    const s = bench.start(raw, async (i) => {
      await i.deferReply({ ephemeral: true });
      expect(i.deferred).toBe(true);
      await i.editReply({ content: 'done' });
      const f = await i.followUp({ content: 'and more' }, { ephemeral: true });
      await i.editReply({ content: 'more, edited' }, f.id);
      await i.deleteReply(f.id);
      await i.deleteReply();
      return f.id;
    });
    const followUpId = (await result(s)) as string;
    const h = hook(raw);
    expect(discord.lines()).toEqual([
      callbackOf(raw),
      `PATCH ${h}/messages/@original`,
      `POST ${h}`,
      `PATCH ${h}/messages/${followUpId}`,
      `DELETE ${h}/messages/${followUpId}`,
      `DELETE ${h}/messages/@original`,
    ]);
    const [defer, edit, follow, edit2] = discord.requests;
    expect(defer?.body).toEqual({ type: 5, data: { flags: EPHEMERAL } });
    expect(edit?.body).toEqual({ content: 'done', allowed_mentions: { parse: [] } });
    expect(follow?.query).toEqual({ wait: 'true' });
    expect(follow?.body).toEqual({ content: 'and more', flags: EPHEMERAL, allowed_mentions: { parse: [] } });
    expect(edit2?.body).toEqual({ content: 'more, edited', allowed_mentions: { parse: [] } });
    if (mode === 'http') expect(await s.http).toEqual({ status: 202 });
  });

  it('a card (IS_COMPONENTS_V2) as an edit clears content and embeds (null); as a new message it carries neither', async () => {
    const card: MessageBody = {
      flags: MessageFlags.IsComponentsV2,
      components: [
        {
          type: ComponentType.Container,
          components: [{ type: ComponentType.TextDisplay, content: 'done' }],
        },
      ],
    };
    const raw = command();
    const s = bench.start(raw, async (i) => {
      await i.deferReply();
      await i.reply(card);
      await i.editReply(card);
      await i.followUp(card, { ephemeral: true });
    });
    await result(s);
    const [, fill, edit, follow] = discord.requests;
    for (const r of [fill, edit]) {
      expect(r?.body).toEqual({ ...card, content: null, embeds: null, allowed_mentions: { parse: [] } });
    }
    expect(follow?.body).toEqual({
      ...card,
      flags: MessageFlags.IsComponentsV2 | EPHEMERAL,
      allowed_mentions: { parse: [] },
    });
  });

  it('a public deferReply has no flags', async () => {
    const raw = command();
    await result(bench.start(raw, (i) => i.deferReply()));
    expect(discord.requests[0]?.body).toEqual({ type: 5, data: {} });
  });

  it('button: deferUpdate (type 6), then editReply edits the button’s message (@original)', async () => {
    const raw = button();
    const s = bench.start(raw, async (i) => {
      expect(i.isButton()).toBe(true);
      await i.deferUpdate();
      await i.editReply({ content: 'page 2' });
    });
    await result(s);
    expect(discord.lines()).toEqual([callbackOf(raw), `PATCH ${hook(raw)}/messages/@original`]);
    expect(discord.requests[0]?.body).toEqual({ type: 6 });
    if (mode === 'http') expect(await s.http).toEqual({ status: 202 });
  });

  it('button: update is a type 7 callback with the new message; resolves with it', async () => {
    const raw = button();
    const s = bench.start(raw, (i) => i.update({ content: 'page 2' }));
    const msg = (await result(s)) as APIMessage;
    expect(discord.requests[0]?.body).toEqual({
      type: 7,
      data: { content: 'page 2', allowed_mentions: { parse: [] } },
    });
    expect(discord.requests[0]?.query).toEqual({ with_response: 'true' });
    expect(msg.content).toBe('page 2');
  });

  it('select: its values are read, and update replaces its message', async () => {
    const raw = select();
    const s = bench.start(raw, async (i) => {
      expect(i.isStringSelectMenu()).toBe(true);
      expect(i.values).toEqual(['2']);
      await i.update({ content: 'page 2' });
    });
    await result(s);
    expect(discord.requests[0]?.body).toMatchObject({ type: 7, data: { content: 'page 2' } });
  });

  it('button: a form (showModal) — a type 9 callback, or in the HTTP response', async () => {
    const raw = button();
    const s = bench.start(raw, (i) => i.showModal(MODAL));
    await result(s);
    if (mode === 'gateway') {
      expect(discord.lines()).toEqual([callbackOf(raw)]);
      expect(discord.requests[0]?.body).toEqual({ type: 9, data: MODAL });
    } else {
      expect(await s.http).toEqual({ status: 200, body: { type: 9, data: MODAL } });
      expect(discord.requests).toHaveLength(0);
    }
  });

  it('modal submit: its fields are read, and a reply is a type 4 callback', async () => {
    const raw = modalSubmit();
    const s = bench.start(raw, async (i) => {
      expect(i.isModalSubmit()).toBe(true);
      expect(i.fields.getTextInputValue('prompt')).toBe('the sea');
      await i.reply({ content: 'started' });
    });
    await result(s);
    expect(discord.requests[0]?.body).toMatchObject({ type: 4, data: { content: 'started' } });
    if (mode === 'http') expect(await s.http).toEqual({ status: 202 });
  });

  it('modal submit from a message: deferUpdate is type 6', async () => {
    const raw = modalSubmit(true);
    await result(bench.start(raw, (i) => i.deferUpdate()));
    expect(discord.requests[0]?.body).toEqual({ type: 6 });
  });

  it('autocomplete: respond — a type 8 callback, or in the HTTP response', async () => {
    const raw = autocomplete();
    const choices = [{ name: 'Song 1', value: 'x' }];
    const s = bench.start(raw, async (i) => {
      expect(i.options.getFocused()).toEqual({ name: 'task_id', value: 'ab' });
      await i.respond(choices);
    });
    await result(s);
    if (mode === 'gateway') expect(discord.requests[0]?.body).toEqual({ type: 8, data: { choices } });
    else {
      expect(await s.http).toEqual({ status: 200, body: { type: 8, data: { choices } } });
      expect(discord.requests).toHaveLength(0);
    }
  });

  it('reads who, where and in which language from the payload', async () => {
    const raw = command('tasks');
    const i = await bench.start(raw, async () => undefined).interaction;
    expect(i).toMatchObject({
      id: raw.id,
      token: raw.token,
      applicationId: APP,
      guildId: GUILD,
      channelId: CHANNEL,
      locale: 'de',
      guildLocale: 'en-US',
      commandName: 'tasks',
      memberPermissions: 32n,
    });
    expect(i.user.id).toBe(USER);
    expect(i.isChatInputCommand()).toBe(true);
    expect(i.inGuild()).toBe(true);
    expect(i.inThread()).toBe(false);
  });
});

// ================================================================== the automatic acknowledgement

describe.each<Mode>(['gateway', 'http'])('the automatic acknowledgement (%s)', (mode) => {
  let bench: Bench;
  beforeEach(() => {
    bench = new Bench(discord, mode);
  });

  /** Holds a handler until `go()`: the "slow" part of a command. */
  function gate() {
    let go!: () => void;
    const wait = new Promise<void>((r) => (go = r));
    return { wait, go };
  }

  /**
   * Lets time reach the acknowledgement and returns what it was: the callback's body
   * (gateway) or the HTTP answer's body (http), checking nothing went before.
   */
  async function ackOf(raw: APIInteraction, s: Started): Promise<unknown> {
    const i = await s.interaction;
    await vi.advanceTimersByTimeAsync(ACK_AFTER - 1);
    expect(i.deferred || i.replied, 'nothing before the deadline').toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    if (mode === 'gateway') {
      await discord.waitForCount(1);
      expect(discord.lines()[0]).toBe(callbackOf(raw));
      // @discordjs/core sends `data: {}` with a deferral that has no flags: the same answer.
      const body = discord.requests[0]?.body;
      const data = body?.['data'];
      return data && typeof data === 'object' && Object.keys(data).length === 0
        ? { type: body['type'] }
        : body;
    }
    const r = await s.http;
    expect(discord.requests, 'no callback request in http mode').toHaveLength(0);
    expect(r).toMatchObject({ status: 200 });
    discord.acknowledge(raw.id, raw.token);
    return r?.status === 200 ? r.body : undefined;
  }

  it('a command: a public deferred reply; its reply then edits @original', async () => {
    const raw = command();
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      return i.reply({ content: 'late' });
    });
    expect(await ackOf(raw, s)).toEqual({ type: 5 });
    g.go();
    const msg = (await result(s)) as APIMessage;
    const h = hook(raw);
    expect(discord.lines().slice(-1)).toEqual([`PATCH ${h}/messages/@original`]);
    expect(discord.requests.at(-1)?.body).toEqual({ content: 'late', allowed_mentions: { parse: [] } });
    expect(msg.content).toBe('late');
  });

  it('a command marked ephemeral: an ephemeral deferred reply; its ephemeral reply edits it', async () => {
    const raw = command('tasks');
    const g = gate();
    const s = bench.start(
      raw,
      async (i) => {
        await g.wait;
        await i.reply({ content: 'your jobs' }, { ephemeral: true });
      },
      { ephemeralByDefault: true },
    );
    const ack = await ackOf(raw, s);
    expect(ack).toEqual({ type: 5, data: { flags: EPHEMERAL } });
    g.go();
    await result(s);
    expect(discord.lines().slice(-1)).toEqual([`PATCH ${hook(raw)}/messages/@original`]);
  });

  it('an ephemeral reply after a public deferral: the deferral goes, an ephemeral follow-up replaces it; editReply then edits that follow-up', async () => {
    const raw = command();
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      const m = await i.reply({ content: 'only you' }, { ephemeral: true });
      await i.editReply({ content: 'still only you' });
      await i.deleteReply();
      return m;
    });
    await ackOf(raw, s);
    g.go();
    const follow = (await result(s)) as APIMessage;
    const h = hook(raw);
    const after = discord.lines().slice(mode === 'gateway' ? 1 : 0);
    expect(after).toEqual([
      `DELETE ${h}/messages/@original`,
      `POST ${h}`,
      `PATCH ${h}/messages/${follow.id}`,
      `DELETE ${h}/messages/${follow.id}`,
    ]);
    const post = discord.requests.find((r) => r.method === 'POST' && r.path === h);
    expect(post?.body).toMatchObject({ content: 'only you', flags: EPHEMERAL });
    expect(post?.query).toEqual({ wait: 'true' });
  });

  it('a public reply after an ephemeral deferral: the deferral goes, a public follow-up replaces it', async () => {
    const raw = command('tasks');
    const g = gate();
    const s = bench.start(
      raw,
      async (i) => {
        await g.wait;
        return i.reply({ content: 'for everyone' });
      },
      { ephemeralByDefault: true },
    );
    await ackOf(raw, s);
    g.go();
    await result(s);
    const h = hook(raw);
    expect(discord.lines().slice(-2)).toEqual([`DELETE ${h}/messages/@original`, `POST ${h}`]);
    expect(discord.requests.at(-1)?.body).toEqual({
      content: 'for everyone',
      allowed_mentions: { parse: [] },
    });
  });

  it('deferReply({ephemeral}) after a public deferral: the answer that follows is private, not an edit of the public message', async () => {
    const raw = command('training-photos');
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      await i.deferReply({ ephemeral: true });
      const m = await i.editReply({ content: '3 photos added' });
      await i.editReply({ content: '4 photos added' });
      return m;
    });
    expect(await ackOf(raw, s)).toEqual({ type: 5 });
    g.go();
    const follow = (await result(s)) as APIMessage;
    const h = hook(raw);
    expect(discord.lines().slice(mode === 'gateway' ? 1 : 0)).toEqual([
      `DELETE ${h}/messages/@original`,
      `POST ${h}`,
      `PATCH ${h}/messages/${follow.id}`,
    ]);
    expect(discord.requests.find((r) => r.method === 'POST' && r.path === h)?.body).toMatchObject({
      content: '3 photos added',
      flags: EPHEMERAL,
    });
  });

  it.each([
    ['a button', button],
    ['a select', select],
  ])('%s: a deferred update (type 6); its update then edits the component’s message', async (_n, make) => {
    const raw = make();
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      return i.update({ content: 'page 2' });
    });
    expect(await ackOf(raw, s)).toEqual({ type: 6 });
    g.go();
    await result(s);
    expect(discord.lines().slice(-1)).toEqual([`PATCH ${hook(raw)}/messages/@original`]);
    expect(discord.requests.at(-1)?.body).toEqual({ content: 'page 2', allowed_mentions: { parse: [] } });
  });

  it('a button starting something new after a deferred update: a public follow-up, and its later edits reach that follow-up (not the button’s message)', async () => {
    const raw = button();
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      const m = await i.reply({ content: 'Submitting…' });
      await i.editReply({ content: 'in a thread' });
      return m;
    });
    expect(await ackOf(raw, s)).toEqual({ type: 6 });
    g.go();
    const msg = (await result(s)) as APIMessage;
    const h = hook(raw);
    expect(discord.lines().slice(-2)).toEqual([`POST ${h}`, `PATCH ${h}/messages/${msg.id}`]);
    expect(discord.requests.at(-2)?.body).toEqual({
      content: 'Submitting…',
      allowed_mentions: { parse: [] },
    });
    expect((await s.interaction).replyMessageId).toBe(msg.id);
  });

  it('a button’s private answer after a deferred update: an ephemeral follow-up; the message stays as it was', async () => {
    const raw = button();
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      await i.deferReply({ ephemeral: true });
      await i.editReply({ content: 'not your job' });
    });
    await ackOf(raw, s);
    g.go();
    await result(s);
    const h = hook(raw);
    expect(discord.lines().slice(-1)).toEqual([`POST ${h}`]);
    expect(discord.requests.at(-1)?.body).toMatchObject({ content: 'not your job', flags: EPHEMERAL });
    expect(discord.lines().some((l) => l.includes('@original'))).toBe(false);
  });

  it('a modal submitted from a message: a deferred update (type 6), so its message can still be updated', async () => {
    const raw = modalSubmit(true);
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      await i.deferUpdate();
      await i.editReply({ content: '5 photos' });
    });
    expect(await ackOf(raw, s)).toEqual({ type: 6 });
    g.go();
    await result(s);
    expect(discord.lines().slice(-1)).toEqual([`PATCH ${hook(raw)}/messages/@original`]);
  });

  it('a modal submitted from a slash command’s form: a deferred reply (type 5) its reply fills', async () => {
    const raw = modalSubmit(false);
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      await i.reply({ content: 'started' });
    });
    expect(await ackOf(raw, s)).toEqual({ type: 5 });
    g.go();
    await result(s);
    expect(discord.lines().slice(-1)).toEqual([`PATCH ${hook(raw)}/messages/@original`]);
  });

  it('autocomplete: no choices at the deadline; the late ones are dropped', async () => {
    const raw = autocomplete();
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      await i.respond([{ name: 'late', value: 'late' }]);
    });
    expect(await ackOf(raw, s)).toEqual({ type: 8, data: { choices: [] } });
    g.go();
    await result(s);
    expect(discord.requests).toHaveLength(mode === 'gateway' ? 1 : 0);
  });

  it('what an interaction owes is paid by its first answer, the automatic one too, while its handler still works', async () => {
    const raw = command();
    let finish = () => undefined as void;
    const s = bench.start(raw, async (i) => {
      await new Promise<void>((r) => (finish = r));
      return i.reply({ content: 'late' });
    });
    await s.interaction;
    expect(bench.answers.owed).toBe(1);
    await drive(() => bench.answers.owed === 0, 'the acknowledgement');
    // Acknowledged on the handler's behalf: a job's follow-up work (waiting on the owed
    // answers) does not wait for its own handler.
    expect(await settled(bench.answers.settled(60_000))).toBe(true);
    finish();
    await result(s);
    const quick = command();
    const q = bench.start(quick, (i) => i.reply({ content: 'quick' }));
    await result(q);
    expect(bench.answers.owed).toBe(0);
    if (mode === 'http') await s.http;
  });

  it('a form after the acknowledgement raises TooLateError', async () => {
    const raw = button();
    const g = gate();
    const s = bench.start(raw, async (i) => {
      await g.wait;
      await i.showModal(MODAL);
    });
    await ackOf(raw, s);
    g.go();
    await expect(result(s)).rejects.toBeInstanceOf(TooLateError);
  });

  it('the router tells the member to click again when the form came too late (ephemeral)', async () => {
    const g = gate();
    const opener: ComponentHandler = {
      prefix: 'b:',
      async button(i) {
        await g.wait;
        await i.showModal(MODAL);
      },
    };
    const route = createInteractionRouter([], [opener], { logger } as unknown as BotContext);
    const raw = button();
    const s = bench.start(raw, (i) => route(i));
    await ackOf(raw, s);
    g.go();
    await result(s);
    const last = discord.requests.at(-1);
    expect(`${last?.method} ${last?.path}`).toBe(`POST ${hook(raw)}`);
    expect(last?.body).toMatchObject({
      flags: EPHEMERAL,
      content: t('de', 'errors.http.form_too_slow'),
    });
  });

  it('an answer given before the deadline stops the acknowledgement', async () => {
    const raw = command();
    const s = bench.start(raw, (i) => i.reply({ content: 'quick' }));
    await result(s);
    await vi.advanceTimersByTimeAsync(ACK_AFTER * 2);
    expect(discord.requests).toHaveLength(1);
    if (mode === 'http') expect(await s.http).toEqual({ status: 202 });
  });
});

describe('the automatic acknowledgement in the HTTP response', () => {
  it('the late answer waits until the acknowledgement was written', async () => {
    const bench = new Bench(discord, 'http');
    bench.holdWrites = true;
    const raw = command();
    let go!: () => void;
    const wait = new Promise<void>((r) => (go = r));
    const s = bench.start(raw, async (i) => {
      await wait;
      return i.reply({ content: 'late' });
    });
    await s.interaction;
    await vi.advanceTimersByTimeAsync(ACK_AFTER);
    expect(await s.http).toMatchObject({ status: 200, body: { type: 5 } });
    go();
    expect(await settled(s.outcome)).toBe(false);
    expect(discord.requests).toHaveLength(0);
    bench.unwritten.forEach((sent) => sent());
    await result(s);
    expect(discord.lines()).toEqual([`PATCH ${hook(raw)}/messages/@original`]);
  });

  it('a response never marked written holds the late answer at most 3 s', async () => {
    const bench = new Bench(discord, 'http');
    bench.holdWrites = true;
    const raw = command();
    const s = bench.start(raw, (i) => i.reply({ content: 'late' }), { ackAfterMs: 0 });
    expect(await s.http).toMatchObject({ status: 200, body: { type: 5 } });
    await vi.advanceTimersByTimeAsync(2999);
    expect(discord.requests).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await result(s);
    expect(discord.lines()).toEqual([`PATCH ${hook(raw)}/messages/@original`]);
  });

  it('ackAfterMs 0: acknowledged in the response before the handler answers', async () => {
    const bench = new Bench(discord, 'http');
    const raw = button();
    const s = bench.start(raw, (i) => i.update({ content: 'x' }), { ackAfterMs: 0 });
    expect(await s.http).toEqual({ status: 200, body: { type: 6 }, sent: expect.any(Function) });
    await result(s);
    expect(discord.lines()).toEqual([`PATCH ${hook(raw)}/messages/@original`]);
  });

  it.each([
    ['Unknown Webhook', UNKNOWN_WEBHOOK],
    ['Unknown Message', UNKNOWN_MESSAGE],
  ])('right after it, the first webhook call retries "%s" briefly', async (_n, error) => {
    const bench = new Bench(discord, 'http');
    const raw = command();
    discord.fail({ method: 'PATCH', path: /@original$/, answer: error, count: 2 });
    const s = bench.start(raw, (i) => i.reply({ content: 'eventually' }), { ackAfterMs: 0 });
    await s.http;
    let done = false;
    void s.outcome.then(() => (done = true));
    await drive(() => done, 'the reply went through');
    await result(s);
    expect(discord.lines()).toEqual(Array(3).fill(`PATCH ${hook(raw)}/messages/@original`));
  });

  it('a follow-up as the first webhook call is retried the same way', async () => {
    const bench = new Bench(discord, 'http');
    const raw = button();
    discord.fail({ method: 'POST', path: hook(raw), answer: UNKNOWN_WEBHOOK, count: 1 });
    const s = bench.start(raw, (i) => i.followUp({ content: 'not yours' }, { ephemeral: true }), {
      ackAfterMs: 0,
    });
    expect(await s.http).toMatchObject({ body: { type: 6 } });
    let done = false;
    void s.outcome.then(() => (done = true));
    await drive(() => done, 'the follow-up went through');
    await result(s);
    expect(discord.lines()).toEqual([`POST ${hook(raw)}`, `POST ${hook(raw)}`]);
  });

  it('gives up after five tries, about 2.5 s', async () => {
    const bench = new Bench(discord, 'http');
    const raw = command();
    discord.fail({ method: 'PATCH', path: /@original$/, answer: UNKNOWN_WEBHOOK, count: 10 });
    const s = bench.start(raw, (i) => i.reply({ content: 'never' }), { ackAfterMs: 0 });
    await s.http;
    const t0 = Date.now();
    let done = false;
    void s.outcome.then(() => (done = true));
    await drive(() => done, 'the reply gave up');
    await expect(result(s)).rejects.toMatchObject({ code: 10015 });
    expect(discord.requests).toHaveLength(5);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2500);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('over the gateway (the acknowledgement went by callback) "unknown" is not retried', async () => {
    const bench = new Bench(discord, 'gateway');
    const raw = command();
    discord.fail({ method: 'PATCH', path: /@original$/, answer: UNKNOWN_WEBHOOK });
    let go!: () => void;
    const wait = new Promise<void>((r) => (go = r));
    const s = bench.start(raw, async (i) => {
      await wait;
      return i.reply({ content: 'x' });
    });
    await s.interaction;
    await vi.advanceTimersByTimeAsync(ACK_AFTER);
    await discord.waitForCount(1);
    go();
    await expect(result(s)).rejects.toBeInstanceOf(DiscordAPIError);
    expect(discord.requests).toHaveLength(2);
  });
});

// ================================================================== a lost answer

describe.each<Mode>(['gateway', 'http'])('a first callback whose answer was lost (%s)', (mode) => {
  it('REST retried and got 40060: answered; reply resolves with the original message; no acknowledgement later', async () => {
    const bench = new Bench(discord, mode);
    const raw = command();
    discord.fail({ method: 'POST', path: /\/callback$/, answer: { lost: true } });
    const s = bench.start(raw, (i) => i.reply({ content: 'Submitting…' }));
    const msg = (await result(s)) as APIMessage;
    expect(discord.lines()).toEqual([
      callbackOf(raw),
      callbackOf(raw),
      `GET ${hook(raw)}/messages/@original`,
    ]);
    expect(msg.id).toBe(discord.originalOf(raw.token));
    const i = await s.interaction;
    expect(i.replied).toBe(true);
    if (mode === 'http') expect(await s.http).toEqual({ status: 202 });
    await vi.advanceTimersByTimeAsync(ACK_AFTER * 2);
    expect(discord.requests).toHaveLength(3);
  });

  it('a lost deferral counts as the deferral: a public reply fills it, an ephemeral one replaces it', async () => {
    const bench = new Bench(discord, mode);
    const pub = command();
    discord.fail({ method: 'POST', path: /\/callback$/, answer: { lost: true } });
    await result(
      bench.start(pub, async (i) => {
        await i.deferReply();
        return i.reply({ content: 'done' });
      }),
    );
    expect(discord.lines().slice(-1)).toEqual([`PATCH ${hook(pub)}/messages/@original`]);

    const priv = command();
    discord.fail({ method: 'POST', path: /\/callback$/, answer: { lost: true } });
    await result(
      bench.start(priv, async (i) => {
        await i.deferReply();
        return i.reply({ content: 'only you' }, { ephemeral: true });
      }),
    );
    expect(discord.lines().slice(-2)).toEqual([
      `DELETE ${hook(priv)}/messages/@original`,
      `POST ${hook(priv)}`,
    ]);
    expect(discord.requests.at(-1)?.body).toMatchObject({ flags: EPHEMERAL });
  });

  it('a callback Discord refuses (400) is not an answer: the next reply is a callback again', async () => {
    const bench = new Bench(discord, mode);
    const raw = command();
    discord.fail({
      method: 'POST',
      path: /\/callback$/,
      answer: { status: 400, body: { code: 50035, message: 'Invalid Form Body' } },
    });
    const s = bench.start(raw, async (i) => {
      await i.reply({ content: 'bad' }).catch(() => undefined);
      return i.reply({ content: 'sorry' }, { ephemeral: true });
    });
    await result(s);
    expect(discord.requests.map((r) => r.body?.['type'])).toEqual([4, 4]);
    if (mode === 'http') expect(await s.http).toEqual({ status: 202 });
  });
});

describe.each<Mode>(['gateway', 'http'])(
  'a first callback refused 40060 that was never ours (%s)',
  (mode) => {
    // Regression: "40060 means ours" let a replayed delivery of an answered command go on as if
    // it had answered: it fetched the first run's message, took it as its own and submitted again.
    it('another run answered: the answer throws, no @original is fetched, nothing else is sent', async () => {
      const bench = new Bench(discord, mode);
      const raw = command();
      discord.fail({ method: 'POST', path: /\/callback$/, answer: ALREADY_ACKNOWLEDGED });
      const s = bench.start(raw, async (i) => {
        await i.reply({ content: 'Submitting…' });
        return 'went on';
      });
      await expect(result(s)).rejects.toMatchObject({ code: 40060 });
      const i = await s.interaction;
      expect(i.replied).toBe(false);
      // Later answers of the same run (the router's apology) are refused too, without a request.
      await expect(i.followUp({ content: 'sorry' })).rejects.toMatchObject({ code: 40060 });
      await vi.advanceTimersByTimeAsync(ACK_AFTER * 2);
      expect(discord.lines()).toEqual([callbackOf(raw)]);
    });

    // Over the gateway the acknowledgement is a callback too (over HTTP it is the HTTP response:
    // ours, so the case does not exist there and is not declared, rather than reported skipped).
    const gatewayOnly = mode === 'gateway' ? it : () => undefined;
    gatewayOnly(
      'the automatic acknowledgement refused 40060: the late reply is not sent into the other run’s message',
      async () => {
        const bench = new Bench(discord, mode);
        const raw = command();
        discord.fail({ method: 'POST', path: /\/callback$/, answer: ALREADY_ACKNOWLEDGED });
        let go!: () => void;
        const gate = new Promise<void>((r) => (go = r));
        const s = bench.start(raw, async (i) => {
          await gate;
          return i.reply({ content: 'late' });
        });
        await vi.advanceTimersByTimeAsync(ACK_AFTER);
        await discord.waitForCount(1);
        await realPause(20);
        go();
        await expect(result(s)).rejects.toMatchObject({ code: 40060 });
        expect(discord.lines()).toEqual([callbackOf(raw)]);
      },
    );

    it('after a callback cut without Discord’s answer (reset), a 40060 is ours: answered, the original fetched', async () => {
      const bench = new Bench(discord, mode);
      const raw = command();
      discord.fail({ method: 'POST', path: /\/callback$/, answer: { reset: true } });
      discord.fail({ method: 'POST', path: /\/callback$/, answer: ALREADY_ACKNOWLEDGED });
      // REST may retry the cut request itself (its retry then gets the 40060) or give up (the
      // handler's next answer then does): either way Discord may hold our first callback.
      const s = bench.start(raw, async (i) => {
        await i.reply({ content: 'first' }).catch(() => undefined);
        if (!i.replied) await i.reply({ content: 'second' });
        return i.replied;
      });
      expect(await result(s)).toBe(true);
      expect(discord.lines().slice(-2)).toEqual([callbackOf(raw), `GET ${hook(raw)}/messages/@original`]);
    });
  },
);

// ================================================================== the HTTP endpoint

describe('HttpInteractionEndpoint', () => {
  it('PING → PONG, without claiming anything', async () => {
    const bench = new Bench(discord, 'http');
    const claim = vi.fn(async () => true);
    bench.claim = claim;
    const ping = {
      id: nextId(),
      application_id: APP,
      type: 1,
      token: 't',
      version: 1,
    } as unknown as APIInteraction;
    expect(await bench.endpoint.handle(ping)).toEqual({ status: 200, body: { type: 1 } });
    expect(claim).not.toHaveBeenCalled();
  });

  it('a claim that does not answer in time: an ephemeral apology (autocomplete: no choices), nothing run', async () => {
    const bench = new Bench(discord, 'http');
    bench.claim = () => new Promise<boolean>(() => undefined);
    const cmd = bench.start(command(), async () => undefined);
    const ac = bench.start(autocomplete(), async () => undefined);
    await vi.advanceTimersByTimeAsync(1500);
    expect(await cmd.http).toEqual({
      status: 200,
      body: {
        type: 4,
        data: { content: STORE_DOWN_MESSAGE, flags: EPHEMERAL, allowed_mentions: { parse: [] } },
      },
    });
    expect(await ac.http).toEqual({ status: 200, body: { type: 8, data: { choices: [] } } });
    expect(bench.runs).toBe(0);
  });

  it('a claim that fails: the same apology at once', async () => {
    const bench = new Bench(discord, 'http');
    bench.claim = () => Promise.reject(new Error('store down'));
    const r = await bench.start(button(), async () => undefined).http;
    expect(r).toMatchObject({ status: 200, body: { type: 4, data: { content: STORE_DOWN_MESSAGE } } });
    expect(bench.runs).toBe(0);
  });

  it('a duplicate delivery: 202 without running anything', async () => {
    const bench = new Bench(discord, 'http');
    const raw = command();
    const first = bench.start(raw, (i) => i.reply({ content: 'once' }));
    expect(await first.http).toEqual({ status: 202 });
    expect(await bench.endpoint.handle(raw)).toEqual({ status: 202, duplicate: true });
    expect(bench.runs).toBe(1);
    expect(discord.requests).toHaveLength(1);
  });

  it('two deliveries at the same moment: one runs, the other is the duplicate', async () => {
    const bench = new Bench(discord, 'http');
    const raw = command();
    const first = bench.start(raw, (i) => i.reply({ content: 'once' }));
    const again = bench.endpoint.handle(raw);
    expect(await Promise.all([first.http, again])).toEqual([
      { status: 202 },
      { status: 202, duplicate: true },
    ]);
    expect(bench.runs).toBe(1);
  });

  it('the HTTP request gets its 202 only once the first callback was accepted', async () => {
    const bench = new Bench(discord, 'http');
    const raw = command();
    let release!: () => void;
    discord.fail({ path: /\/callback$/, answer: { hold: new Promise<void>((r) => (release = r)) } });
    const s = bench.start(raw, (i) => i.reply({ content: 'x' }));
    await discord.waitForCount(1);
    expect(await settled(s.http as Promise<HttpReply>)).toBe(false);
    release();
    expect(await s.http).toEqual({ status: 202 });
    expect(bench.endpoint.size).toBe(0);
  });

  it('close(): waiting requests get the restart apology in their own type; later ones at once, unclaimed', async () => {
    const bench = new Bench(discord, 'http');
    const never = () => new Promise<void>(() => undefined);
    const cmd = bench.start(command(), never);
    const ac = bench.start(autocomplete(), never);
    const btn = bench.start(button(), never);
    await Promise.all([cmd.interaction, ac.interaction, btn.interaction]);
    expect(bench.endpoint.size).toBe(3);
    bench.endpoint.close();
    const restart = t('de', 'errors.http.restarting');
    const c = await cmd.http;
    expect(c).toMatchObject({ status: 200, body: { type: 4, data: { flags: EPHEMERAL } } });
    expect(JSON.stringify(c)).toMatch(restart);
    expect(await ac.http).toEqual({ status: 200, body: { type: 8, data: { choices: [] } } });
    expect(JSON.stringify(await btn.http)).toMatch(restart);
    const claim = vi.fn(async () => true);
    bench.claim = claim;
    expect(JSON.stringify(await bench.endpoint.handle(command()))).toMatch(restart);
    expect(claim).not.toHaveBeenCalled();
    expect(bench.endpoint.size).toBe(0);
  });

  it('a callback lost on the network, the handler still at work: the acknowledgement timer answers the HTTP request', async () => {
    const bench = new Bench(discord, 'http');
    const raw = command();
    discord.fail({ path: /\/callback$/, answer: { reset: true }, count: 10 });
    let go!: () => void;
    const wait = new Promise<void>((r) => (go = r));
    let failed = false;
    const s = bench.start(raw, async (i) => {
      await i.reply({ content: 'x' }).catch(() => (failed = true));
      await wait;
    });
    await discord.waitFor(() => failed, 'the callback failed');
    expect(await settled(s.http as Promise<HttpReply>)).toBe(false);
    await vi.advanceTimersByTimeAsync(ACK_AFTER);
    expect(await s.http).toMatchObject({ status: 200, body: { type: 5 } });
    go();
    await result(s);
  });

  it('a handler that ended with no answer Discord took: the HTTP request is answered with an apology, not left open', async () => {
    const bench = new Bench(discord, 'http');
    const raw = command();
    discord.fail({ path: /\/callback$/, answer: { reset: true }, count: 10 });
    const s = bench.start(raw, async (i) => {
      await i.reply({ content: 'x' }).catch(() => undefined);
      await i.reply({ content: 'sorry' }, { ephemeral: true }).catch(() => undefined);
    });
    await result(s);
    const r = await s.http;
    expect(r).toMatchObject({ status: 200, body: { type: 4, data: { flags: EPHEMERAL } } });
    expect(JSON.stringify(r)).toContain(JSON.stringify(t('de', 'errors.http.failed')));
    expect(bench.endpoint.size).toBe(0);
  });

  it('a run that throws: an apology at once', async () => {
    const endpoint = new HttpInteractionEndpoint({
      logger,
      claim: async () => true,
      run: () => {
        throw new Error('cannot build it');
      },
    });
    const r = await endpoint.handle(command());
    expect(r).toMatchObject({ status: 200, body: { type: 4, data: { flags: EPHEMERAL } } });
    expect(endpoint.size).toBe(0);
  });
});

// ================================================================== POST /interactions

describe('POST /interactions', () => {
  const keys = generateKeyPairSync('ed25519');
  const der = keys.publicKey.export({ format: 'der', type: 'spki' });
  const publicKey = der.subarray(der.length - 32).toString('hex');
  const signed = (body: string, t = Math.floor(Date.now() / 1000)) => ({
    'content-type': 'application/json',
    'x-signature-timestamp': String(t),
    'x-signature-ed25519': sign(null, Buffer.from(String(t) + body), keys.privateKey).toString('hex'),
  });
  async function server(handle: (raw: APIInteraction) => Promise<HttpReply>) {
    const app = Fastify();
    await app.register(interactionRoutes, { publicKey, handle });
    return app;
  }
  beforeEach(() => vi.useRealTimers());

  it('verifies before parsing: a bad or missing signature is 401 and nothing runs', async () => {
    const handle = vi.fn(async (): Promise<HttpReply> => ({ status: 202 }));
    const app = await server(handle);
    const bad = await app.inject({
      method: 'POST',
      url: '/interactions',
      headers: { ...signed('{"type":1}'), 'content-type': 'text/plain' },
      payload: 'not json',
    });
    expect(bad.statusCode).toBe(401);
    const missing = await app.inject({ method: 'POST', url: '/interactions', payload: '{"type":1}' });
    expect(missing.statusCode).toBe(401);
    expect(handle).not.toHaveBeenCalled();
  });

  it('signed but not JSON, or not an interaction: 400', async () => {
    const handle = vi.fn(async (): Promise<HttpReply> => ({ status: 202 }));
    const app = await server(handle);
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

  it('the endpoint’s answers: a body with 200, a callback’s 202 with none; an acknowledgement is marked written when sent', async () => {
    const sent = vi.fn();
    const answers: HttpReply[] = [
      { status: 200, body: { type: 1 } },
      { status: 202 },
      { status: 200, body: { type: 5 } as APIInteractionResponse, sent },
    ];
    const app = await server(async () => answers.shift() as HttpReply);
    const body = JSON.stringify(command());
    const post = () =>
      app.inject({ method: 'POST', url: '/interactions', headers: signed(body), payload: body });
    const pong = await post();
    expect([pong.statusCode, pong.json()]).toEqual([200, { type: 1 }]);
    const accepted = await post();
    expect([accepted.statusCode, accepted.body]).toEqual([202, '']);
    const ack = await post();
    expect([ack.statusCode, ack.json()]).toEqual([200, { type: 5 }]);
    expect(sent).toHaveBeenCalled();
  });
});
