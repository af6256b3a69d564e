import { randomBytes } from 'node:crypto';
import { resolveAttachment } from './attachments.js';
import { InteractionContext, offeredCommand } from './command-access.js';
import {
  DEFAULT_BOT_PERMISSIONS,
  DEFAULT_MEMBER_PERMISSIONS,
  DM_APP_PERMISSIONS,
  InteractionType,
  uploadLimitForTier,
} from './constants.js';
import { deliverOverHttp } from './http-interactions.js';
import { isObj, toJson, type Json, type JsonObject } from './json.js';
import type { FakeMessage } from './messages.js';
import type { ChannelState, FakeState, InteractionState } from './state.js';
import type {
  AttachmentRef,
  AutocompleteInput,
  CommandInput,
  CommandOptionValue,
  ComponentInput,
  InteractionCallbackRecord,
  InteractionCommonInput,
  MessageCommandInput,
  ModalSubmitInput,
  RawCommandOption,
} from './types.js';
import { channelJson, memberJson } from './wire.js';

/**
 * Interactions family (Discord -> bot): what a member does (a slash command, autocomplete,
 * a button or select, a modal submit) as the INTERACTION_CREATE payload Discord sends, over
 * the gateway or POSTed to the bot's interactions URL.
 */

/** What `sendCommand` & co. return: the interaction plus accessors for the bot's answer. */
export interface InteractionHandle {
  readonly id: string;
  readonly token: string;
  readonly type: number;
  /** The INTERACTION_CREATE `d` that was dispatched. */
  readonly payload: JsonObject;
  /** The first callback, once the bot acknowledged. */
  readonly callback: InteractionCallbackRecord | undefined;
  /** Resolves with the first callback (POST /interactions/{id}/{token}/callback). */
  response(timeoutMs?: number): Promise<InteractionCallbackRecord>;
  /** The original response message (callback 4/5, or the component's message after 6/7), once it exists. */
  readonly originalMessage: FakeMessage | undefined;
  /** Resolves when the original response message exists. */
  message(timeoutMs?: number): Promise<FakeMessage>;
  /** Resolves when the original response message satisfies `predicate` (e.g. the deferred reply got its embed). */
  waitForMessage(predicate: (m: FakeMessage) => boolean, timeoutMs?: number): Promise<FakeMessage>;
  readonly followUps: FakeMessage[];
  /** The modal the bot opened (callback 9 data). */
  readonly modal: JsonObject | undefined;
  /** The autocomplete choices the bot answered with (callback 8). */
  readonly choices: Json[] | undefined;
}

interface Resolved {
  attachments: JsonObject;
  users: JsonObject;
  members: JsonObject;
  channels: JsonObject;
  roles: JsonObject;
}

/**
 * Where an interaction happens: a guild channel (the user's membership there), the user's DM
 * with the bot or a group DM, and which installs authorize the app there (0 the server's, 1
 * the user's own).
 */
interface Location {
  guildId: string | null;
  channel: ChannelState;
  context: number;
  userId: string;
  installs: number[];
}

function locate(s: FakeState, input: InteractionCommonInput, channelId?: string): Location {
  const userId = input.userId ?? s.defaultUserId;
  s.user(userId);
  const user = input.userInstall === true;
  if (input.dm || input.groupDm) {
    if (input.guildId !== undefined)
      throw new Error('fake-discord: an interaction is in a DM or a guild, not both');
    if (input.groupDm) {
      // The bot is in no group DM: only the member's own install reaches it there.
      if (!user) throw new Error('fake-discord: an app is used in a group DM through a user install only');
      const given = input.channelId ?? channelId;
      const channel = given !== undefined ? s.channels.get(given) : s.groupDmChannel([userId]);
      if (!channel || channel.type !== 3) throw new Error(`fake-discord: ${given ?? ''} is not a group DM`);
      return { guildId: null, channel, context: InteractionContext.PrivateChannel, userId, installs: [1] };
    }
    const channel = s.dmChannel(userId);
    return { guildId: null, channel, context: InteractionContext.BotDm, userId, installs: user ? [1] : [0] };
  }
  const id = input.channelId ?? channelId ?? s.defaultChannelOf(input.guildId ?? s.guildId);
  const channel = s.channels.get(id);
  if (!channel) throw new Error(`fake-discord: unknown channel ${id}`);
  if (channel.guildId === null) {
    if (channel.type === 3) return locate(s, { ...input, groupDm: true, channelId: channel.id }, channel.id);
    return { guildId: null, channel, context: InteractionContext.BotDm, userId, installs: user ? [1] : [0] };
  }
  if (input.guildId !== undefined && input.guildId !== channel.guildId)
    throw new Error(`fake-discord: channel ${id} is not in guild ${input.guildId}`);
  if (!s.member(channel.guildId, userId))
    throw new Error(
      `fake-discord: user ${userId} is not a member of guild ${channel.guildId} (addMember first)`,
    );
  const installed = s.guild(channel.guildId).botInstalled;
  if (!installed && !user)
    throw new Error(
      `fake-discord: guild ${channel.guildId} never installed the app: only a user install (userInstall: true) reaches it there`,
    );
  const installs = [...(installed ? [0] : []), ...(user ? [1] : [])];
  return { guildId: channel.guildId, channel, context: InteractionContext.Guild, userId, installs };
}

/** Discord's `authorizing_integration_owners`: the server (or "0" in a bot DM) and/or the user. */
function integrationOwners(where: Location): JsonObject {
  const owners: JsonObject = {};
  if (where.installs.includes(0)) owners['0'] = where.guildId ?? '0';
  if (where.installs.includes(1)) owners['1'] = where.userId;
  return owners;
}

function interactionBase(
  s: FakeState,
  type: number,
  data: JsonObject,
  where: Location,
  input: InteractionCommonInput,
): InteractionState {
  const { guildId, channel, userId } = where;
  const userInstallOnly = !where.installs.includes(0);
  const id = s.snowflakes.next();
  const token = `aW50ZXJhY3Rpb246${Buffer.from(`${id}:`).toString('base64url')}${randomBytes(96).toString('base64url')}`;
  const common: JsonObject = {
    application_id: s.applicationId,
    channel_id: channel.id,
    data,
    entitlement_sku_ids: [],
    entitlements: [],
    id,
    locale: input.locale ?? 'en-US',
    token,
    type,
    version: 1,
  };
  let payload: JsonObject;
  if (guildId === null) {
    const appPermissions = input.appPermissions ?? DM_APP_PERMISSIONS;
    payload = {
      ...common,
      app_permissions: appPermissions,
      attachment_size_limit: uploadLimitForTier(0),
      // GUILD_INSTALL used in the bot's DMs: "0" (Discord's docs); USER_INSTALL: the user.
      authorizing_integration_owners: integrationOwners(where),
      channel: channelJson(s, channel, false),
      context: where.context,
      user: s.user(userId).user,
    };
  } else {
    const guild = s.guild(guildId);
    // A user install the server lacks acts with what any app may do in a channel (as in a DM).
    const appPermissions =
      input.appPermissions ??
      (userInstallOnly
        ? DM_APP_PERMISSIONS
        : (s.member(guildId, s.applicationId)?.permissions ?? DEFAULT_BOT_PERMISSIONS));
    payload = {
      ...common,
      app_permissions: appPermissions,
      attachment_size_limit: uploadLimitForTier(guild.premiumTier),
      authorizing_integration_owners: integrationOwners(where),
      channel: { ...channelJson(s, channel, true), permissions: appPermissions },
      context: InteractionContext.Guild,
      guild: { id: guildId, locale: guild.locale, features: [] },
      guild_id: guildId,
      guild_locale: guild.locale,
      member: memberJson(s, guildId, userId, true),
    };
  }
  return {
    id,
    token,
    type,
    payload: Object.fromEntries(Object.entries(payload).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    createdAt: s.clock.now(),
    channelId: channel.id,
    userId,
    callbacks: [],
    sourceMessageId: null,
    originalMessageId: null,
    followUpIds: [],
    followUpPosts: 0,
    userInstallOnly,
    // Discord forces the answers of an external app ephemeral where the server disallows them.
    forceEphemeral: userInstallOnly && guildId !== null && !s.guild(guildId).externalApps,
    modal: undefined,
    choices: undefined,
  };
}

function dispatchInteraction(s: FakeState, state: InteractionState): InteractionHandle {
  s.interactions.set(state.id, state);
  if (s.interactionsMode === 'http') void deliverOverHttp(s, state);
  else s.gateway.dispatch('INTERACTION_CREATE', state.payload);
  return interactionHandle(s, state);
}

export function interactionHandle(s: FakeState, state: InteractionState): InteractionHandle {
  const messages = s.messages;
  const original = (): FakeMessage | undefined =>
    state.originalMessageId ? messages.get(state.originalMessageId) : undefined;
  return {
    id: state.id,
    token: state.token,
    type: state.type,
    payload: state.payload,
    get callback() {
      return state.callbacks[0];
    },
    response: (timeoutMs) =>
      s.changes.waitFor(() => state.callbacks[0], {
        timeoutMs: timeoutMs ?? 10_000,
        description: `callback of interaction ${state.id}`,
      }),
    get originalMessage() {
      return original();
    },
    message: (timeoutMs) =>
      s.changes.waitFor(original, {
        timeoutMs: timeoutMs ?? 10_000,
        description: `original response of ${state.id}`,
      }),
    waitForMessage: (predicate, timeoutMs) =>
      s.changes.waitFor(
        () => {
          const m = original();
          return m && predicate(m) ? m : undefined;
        },
        { timeoutMs: timeoutMs ?? 10_000, description: `original response of ${state.id} to match` },
      ),
    get followUps() {
      return state.followUpIds.map((id) => messages.get(id)).filter((m): m is FakeMessage => m !== undefined);
    },
    get modal() {
      return state.modal;
    },
    get choices() {
      return state.choices;
    },
  };
}

function buildOptions(
  s: FakeState,
  defs: Json | undefined,
  options: Record<string, CommandOptionValue> | RawCommandOption[] | undefined,
  attachments: Record<string, AttachmentRef> | undefined,
  focused: string | undefined,
  resolved: Resolved,
  where: Location,
): Json[] {
  if (Array.isArray(options)) return toJson(options) as Json[];
  const defList = Array.isArray(defs) ? defs.filter(isObj) : [];
  const out: Json[] = [];
  for (const [name, value] of Object.entries(options ?? {})) {
    const def = defList.find((d) => d['name'] === name);
    let type = typeof def?.['type'] === 'number' ? def['type'] : undefined;
    type ??=
      typeof value === 'boolean' ? 5 : typeof value === 'number' ? (Number.isInteger(value) ? 4 : 10) : 3;
    const opt: JsonObject = { name, type, value };
    if (focused === name) opt['focused'] = true;
    if (type === 6 && typeof value === 'string') {
      const u = s.users.get(value);
      if (u) {
        resolved.users[value] = u.user;
        if (where.guildId !== null && s.member(where.guildId, value)) {
          const m = memberJson(s, where.guildId, value, true);
          delete m['user'];
          resolved.members[value] = m;
        }
      }
    }
    if (type === 7 && typeof value === 'string') {
      const c = s.channels.get(value);
      // The invoking member's permissions in that channel: set for it, else @everyone's base plus their own.
      const own = where.guildId !== null ? s.member(where.guildId, where.userId)?.permissions : undefined;
      const permissions =
        s.channelPermissions.get(`${value}:${where.userId}`) ??
        (BigInt(DEFAULT_MEMBER_PERMISSIONS) | BigInt(own ?? '0')).toString();
      if (c) resolved.channels[value] = { ...channelJson(s, c, true), permissions };
    }
    out.push(opt);
  }
  for (const [name, ref] of Object.entries(attachments ?? {})) {
    const a = resolveAttachment(s, ref, where.channel.id);
    const id = String(a['id']);
    resolved.attachments[id] = a;
    out.push({ name, type: 11, value: id });
  }
  return out;
}

function commandData(
  s: FakeState,
  input: CommandInput | AutocompleteInput,
  focused: string | undefined,
  where: Location,
): JsonObject {
  const commandType = 'commandType' in input && input.commandType !== undefined ? input.commandType : 1;
  const registered = offeredCommand(s, input.name, commandType, where);
  const resolved: Resolved = { attachments: {}, users: {}, members: {}, channels: {}, roles: {} };
  let defs: Json | undefined = registered?.['options'];
  const findSub = (list: Json | undefined, name: string): JsonObject | undefined =>
    Array.isArray(list) ? list.filter(isObj).find((o) => o['name'] === name) : undefined;
  const groupDef = input.subcommandGroup ? findSub(defs, input.subcommandGroup) : undefined;
  if (input.subcommandGroup) defs = groupDef?.['options'];
  const subDef = input.subcommand ? findSub(defs, input.subcommand) : undefined;
  if (input.subcommand) defs = subDef?.['options'];
  const attachments = 'attachments' in input ? input.attachments : undefined;
  let options = buildOptions(s, defs, input.options, attachments, focused, resolved, where);
  if (input.subcommand) options = [{ type: 1, name: input.subcommand, options }];
  if (input.subcommandGroup) options = [{ type: 2, name: input.subcommandGroup, options }];
  const data: JsonObject = {
    id: typeof registered?.['id'] === 'string' ? registered['id'] : s.snowflakes.next(),
    name: input.name,
    type: commandType,
  };
  if (options.length > 0) data['options'] = options;
  const compact: JsonObject = {};
  for (const [k, v] of Object.entries(resolved)) if (Object.keys(v).length > 0) compact[k] = v;
  if (Object.keys(compact).length > 0) data['resolved'] = compact;
  if (registered && typeof registered['guild_id'] === 'string') data['guild_id'] = registered['guild_id'];
  return data;
}

/** Dispatches an APPLICATION_COMMAND interaction (type 2) to the bot. */
export function sendCommand(s: FakeState, input: CommandInput): InteractionHandle {
  const where = locate(s, input);
  const data = commandData(s, input, undefined, where);
  return dispatchInteraction(s, interactionBase(s, InteractionType.ApplicationCommand, data, where, input));
}

/** Dispatches an APPLICATION_COMMAND_AUTOCOMPLETE interaction (type 4); one option is `focused`. */
export function sendAutocomplete(s: FakeState, input: AutocompleteInput): InteractionHandle {
  const where = locate(s, input);
  const focused =
    input.focused ??
    (input.options && !Array.isArray(input.options) ? Object.keys(input.options)[0] : undefined);
  const data = commandData(s, input, focused, where);
  return dispatchInteraction(s, interactionBase(s, InteractionType.Autocomplete, data, where, input));
}

/** Dispatches a message context-menu command (APPLICATION_COMMAND, `data.type` 3) on a message. */
export function sendMessageCommand(s: FakeState, input: MessageCommandInput): InteractionHandle {
  const target = s.messages.get(input.targetMessageId);
  if (!target || target.deleted) throw new Error(`fake-discord: unknown message ${input.targetMessageId}`);
  const common: InteractionCommonInput = { channelId: target.channelId };
  if (input.userId !== undefined) common.userId = input.userId;
  if (input.guildId !== undefined) common.guildId = input.guildId;
  if (input.locale !== undefined) common.locale = input.locale;
  if (input.appPermissions !== undefined) common.appPermissions = input.appPermissions;
  if (input.userInstall !== undefined) common.userInstall = input.userInstall;
  const where = locate(s, common);
  const registered = offeredCommand(s, input.name, 3, where);
  const data: JsonObject = {
    id: typeof registered?.['id'] === 'string' ? registered['id'] : s.snowflakes.next(),
    name: input.name,
    type: 3,
    target_id: target.id,
    resolved: { messages: { [target.id]: target.data } },
  };
  if (registered && typeof registered['guild_id'] === 'string') data['guild_id'] = registered['guild_id'];
  return dispatchInteraction(s, interactionBase(s, InteractionType.ApplicationCommand, data, where, common));
}

/** Dispatches a MESSAGE_COMPONENT interaction (type 3) for a component on an existing message. */
export function sendComponent(s: FakeState, input: ComponentInput): InteractionHandle {
  const msg = s.messages.get(input.messageId);
  if (!msg) throw new Error(`fake-discord: unknown message ${input.messageId}`);
  const data: JsonObject = { custom_id: input.customId, component_type: input.componentType ?? 2 };
  if (input.values) data['values'] = input.values;
  const where = locate(s, input, msg.channelId);
  const state = interactionBase(s, InteractionType.MessageComponent, data, where, input);
  state.payload['message'] = { ...msg.data };
  state.sourceMessageId = msg.id;
  return dispatchInteraction(s, state);
}

/** Dispatches a MODAL_SUBMIT interaction (type 5). Fields are wrapped in Label (18) components like Discord does. */
export function sendModalSubmit(s: FakeState, input: ModalSubmitInput): InteractionHandle {
  const source = input.messageId !== undefined ? s.messages.get(input.messageId) : undefined;
  const where = locate(s, input, source?.channelId);
  const channelId = where.channel.id;
  const resolvedAttachments: JsonObject = {};
  let nextId = 1;
  const components: Json[] = input.components.map((field): Json => {
    if ('raw' in field) return field.raw;
    const labelId = nextId++;
    const innerId = nextId++;
    let inner: JsonObject;
    if ('value' in field) {
      inner = { type: 4, id: innerId, custom_id: field.customId, value: field.value };
    } else if ('files' in field) {
      const ids = field.files.map((ref) => {
        const a = resolveAttachment(s, ref, channelId);
        resolvedAttachments[String(a['id'])] = a;
        return String(a['id']);
      });
      inner = { type: 19, id: innerId, custom_id: field.customId, values: ids };
    } else {
      inner = {
        type: field.componentType ?? 3,
        id: innerId,
        custom_id: field.customId,
        values: field.values,
      };
    }
    return { type: 18, id: labelId, component: inner };
  });
  const data: JsonObject = { custom_id: input.customId, components };
  if (Object.keys(resolvedAttachments).length > 0) data['resolved'] = { attachments: resolvedAttachments };
  const state = interactionBase(s, InteractionType.ModalSubmit, data, where, input);
  if (input.messageId) {
    const msg = s.messages.get(input.messageId);
    if (!msg) throw new Error(`fake-discord: unknown message ${input.messageId}`);
    state.payload['message'] = { ...msg.data };
    state.sourceMessageId = msg.id;
  }
  return dispatchInteraction(s, state);
}
