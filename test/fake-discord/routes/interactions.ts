import { CallbackType, InteractionType } from '../constants.js';
import { err, fieldError } from '../errors.js';
import { isRecord, type JsonObject } from '../json.js';
import { applyMessageBody, deleteMessage, editMessage, emitMessage } from '../message-ops.js';
import { checkMessageRules } from '../message-rules.js';
import { FakeMessage, MessageFlag, fileSummary } from '../messages.js';
import { bodyObject, type HandlerContext, type HandlerResult, type Router } from '../router.js';
import type { FakeState, InteractionState } from '../state.js';
import type { InteractionCallbackRecord } from '../types.js';
import { baseMessage } from '../wire.js';
import { messageReference } from './messages.js';

/**
 * Interactions family (bot -> Discord): the interaction callback, and the interaction
 * webhook (`@original`, `/messages/{id}`, follow-ups) with the 3 s acknowledgement
 * deadline, double acknowledgement (40060) and the 15 min token lifetime (50027).
 */

const WEBHOOK_BASE = '/webhooks/{webhook_id}/{webhook_token}';

function interactionMetadata(
  s: FakeState,
  state: InteractionState,
  originalResponseId: string | null,
): JsonObject {
  const user = s.user(state.userId).user;
  const meta: JsonObject = {
    id: state.id,
    type: state.type,
    user,
    authorizing_integration_owners: isRecord(state.payload['authorizing_integration_owners'])
      ? (state.payload['authorizing_integration_owners'] as JsonObject)
      : { '0': s.guildOf(state.channelId) ?? '0' },
  };
  if (state.type === InteractionType.ApplicationCommand) {
    const d = state.payload['data'] as JsonObject;
    meta['name'] = String(d['name']);
    meta['command_type'] = typeof d['type'] === 'number' ? d['type'] : 1;
  }
  if (state.sourceMessageId) meta['interacted_message_id'] = state.sourceMessageId;
  if (originalResponseId) meta['original_response_message_id'] = originalResponseId;
  return meta;
}

/** An ephemeral message carries the EPHEMERAL flag, also when Discord (not the body) made it so. */
function withEphemeralFlag(data: JsonObject, ephemeral: boolean): JsonObject {
  if (!ephemeral) return data;
  const flags = typeof data['flags'] === 'number' ? data['flags'] : 0;
  return { ...data, flags: flags | MessageFlag.Ephemeral };
}

/** Resolves the interaction behind a webhook route, enforcing the 15-minute token lifetime. */
function webhookInteraction(s: FakeState, ctx: HandlerContext): InteractionState {
  if (ctx.params['webhook_id'] !== s.applicationId) throw err.unknownWebhook();
  const token = ctx.params['webhook_token'] ?? '';
  const state = [...s.interactions.values()].find((i) => i.token === token);
  if (!state) throw err.invalidWebhookToken();
  if (s.clock.now() - state.createdAt > (s.options.interactionTokenTtlMs ?? 15 * 60_000)) {
    throw err.invalidWebhookToken();
  }
  return state;
}

/** The message a PATCH edits (channel route or interaction webhook), without any rule checks. */
export function editedMessageId(
  s: FakeState,
  template: string,
  params: Record<string, string>,
): string | undefined {
  if (template === '/channels/{channel_id}/messages/{message_id}') return params['message_id'];
  if (!template.startsWith(`${WEBHOOK_BASE}/messages/`)) return undefined;
  if (!template.endsWith('@original')) return params['message_id'];
  const token = params['webhook_token'];
  const state = [...s.interactions.values()].find((i) => i.token === token);
  return state?.originalMessageId ?? undefined;
}

function webhookMessage(s: FakeState, ctx: HandlerContext): FakeMessage {
  const state = webhookInteraction(s, ctx);
  const id = ctx.template.endsWith('@original') ? state.originalMessageId : (ctx.params['message_id'] ?? '');
  if (!id) {
    if (state.callbacks.length === 0) throw err.unknownWebhook();
    throw err.unknownMessage();
  }
  const msg = s.messages.get(id);
  const belongs = id === state.originalMessageId || state.followUpIds.includes(id);
  if (!msg || msg.deleted || !belongs) throw err.unknownMessage();
  return msg;
}

/** Discord's cap on follow-ups of an interaction a user install brought where the server has no install. */
const MAX_USER_INSTALL_FOLLOW_UPS = 5;

function followUp(s: FakeState, ctx: HandlerContext): HandlerResult {
  const state = webhookInteraction(s, ctx);
  if (state.callbacks.length === 0) throw err.unknownWebhook();
  if (state.userInstallOnly && state.followUpPosts >= MAX_USER_INSTALL_FOLLOW_UPS) throw err.maxFollowUps();
  state.followUpPosts++;
  const body = bodyObject(ctx);
  const original = state.originalMessageId ? s.messages.get(state.originalMessageId) : undefined;
  // Discord: after a deferred reply, the first follow-up fills in the "thinking…" message instead of creating one.
  if (original && original.loading && !original.deleted) {
    return { status: 200, body: editMessage(s, original, ctx, body, 'webhook') };
  }
  const requestedFlags = typeof body['flags'] === 'number' ? body['flags'] : 0;
  const ephemeral = state.forceEphemeral || (requestedFlags & MessageFlag.Ephemeral) !== 0;
  const id = s.snowflakes.next();
  const base = baseMessage(
    s,
    id,
    state.channelId,
    s.botUser,
    state.type === InteractionType.ApplicationCommand ? 20 : 0,
    0,
  );
  base['webhook_id'] = s.applicationId;
  base['application_id'] = s.applicationId;
  base['interaction_metadata'] = interactionMetadata(s, state, state.originalMessageId);
  if (state.originalMessageId) {
    base['message_reference'] = messageReference(s, state.channelId, state.originalMessageId);
  }
  const data = withEphemeralFlag(
    applyMessageBody(s, base, body, ctx.files, 'create', state.channelId, ephemeral),
    ephemeral,
  );
  checkMessageRules(s, data, ctx, { body });
  const msg = new FakeMessage({
    id,
    channelId: state.channelId,
    data,
    ephemeral,
    createdAt: s.clock.now(),
    interactionId: state.id,
    source: 'interaction-followup',
  });
  s.messages.set(id, msg);
  state.followUpIds.push(id);
  emitMessage(s, 'MESSAGE_CREATE', msg);
  return { status: 200, body: data };
}

/** POST /interactions/{id}/{token}/callback (also what an HTTP interaction's 200 body goes through). */
export function interactionCallback(s: FakeState, ctx: HandlerContext): HandlerResult {
  const state = s.interactions.get(ctx.params['interaction_id'] ?? '');
  if (!state || state.token !== ctx.params['interaction_token']) throw err.unknownInteraction();
  const deadline = s.options.interactionAckDeadlineMs ?? 3000;
  if (state.callbacks.length > 0) throw err.alreadyAcknowledged();
  if (s.clock.now() - state.createdAt > deadline) throw err.unknownInteraction();
  const body = bodyObject(ctx);
  const type = body['type'];
  const data = isRecord(body['data']) ? (body['data'] as JsonObject) : {};
  const allowed: Record<number, number[]> = {
    [InteractionType.Ping]: [1],
    [InteractionType.ApplicationCommand]: [4, 5, 9, 10, 12],
    [InteractionType.MessageComponent]: [4, 5, 6, 7, 9, 10, 12],
    [InteractionType.Autocomplete]: [8],
    [InteractionType.ModalSubmit]: state.sourceMessageId ? [4, 5, 6, 7, 10] : [4, 5, 10],
  };
  if (typeof type !== 'number' || !(allowed[state.type] ?? []).includes(type)) {
    throw err.invalidForm(
      fieldError(
        ['type'],
        'INTERACTION_RESPONSE_TYPE_INVALID',
        'Interaction response type is invalid for this interaction type',
      ),
    );
  }
  const withResponse = ctx.query.get('with_response') === 'true';
  const record: InteractionCallbackRecord = {
    interactionId: state.id,
    token: state.token,
    type,
    data: isRecord(body['data']) ? data : null,
    withResponse,
    status: 0,
    at: Date.now(),
    clockAt: s.clock.now(),
    files: fileSummary(ctx.files),
  };

  let message: FakeMessage | undefined;
  if (
    type === CallbackType.ChannelMessageWithSource ||
    type === CallbackType.DeferredChannelMessageWithSource
  ) {
    const requestedFlags = typeof data['flags'] === 'number' ? data['flags'] : 0;
    // Where the server disallows external apps, Discord turns every answer ephemeral.
    const ephemeral = state.forceEphemeral || (requestedFlags & MessageFlag.Ephemeral) !== 0;
    const id = s.snowflakes.next();
    const msgType =
      state.type === InteractionType.ApplicationCommand
        ? (state.payload['data'] as JsonObject)['type'] === 1
          ? 20
          : 23
        : 19;
    const base = baseMessage(s, id, state.channelId, s.botUser, msgType, 0);
    base['webhook_id'] = s.applicationId;
    base['application_id'] = s.applicationId;
    base['interaction_metadata'] = interactionMetadata(s, state, null);
    if (state.type === InteractionType.ApplicationCommand) {
      base['interaction'] = {
        id: state.id,
        type: state.type,
        name: String((state.payload['data'] as JsonObject)['name']),
        user: s.user(state.userId).user,
      };
    }
    if (state.sourceMessageId && msgType === 19) {
      base['message_reference'] = messageReference(s, state.channelId, state.sourceMessageId);
    }
    let dataOut: JsonObject;
    if (type === CallbackType.DeferredChannelMessageWithSource) {
      dataOut = { ...base, flags: MessageFlag.Loading | (ephemeral ? MessageFlag.Ephemeral : 0) };
    } else {
      dataOut = withEphemeralFlag(
        applyMessageBody(s, base, data, ctx.files, 'create', state.channelId, ephemeral),
        ephemeral,
      );
      checkMessageRules(s, dataOut, ctx, { body: data, prefix: ['data'] });
    }
    message = new FakeMessage({
      id,
      channelId: state.channelId,
      data: dataOut,
      ephemeral,
      createdAt: s.clock.now(),
      interactionId: state.id,
      source: 'interaction-response',
    });
    s.messages.set(id, message);
    state.originalMessageId = id;
    emitMessage(s, 'MESSAGE_CREATE', message);
  } else if (type === CallbackType.DeferredUpdateMessage || type === CallbackType.UpdateMessage) {
    const source = state.sourceMessageId ? s.messages.get(state.sourceMessageId) : undefined;
    if (!source) throw err.unknownMessage();
    state.originalMessageId = source.id;
    message = source;
    if (type === CallbackType.UpdateMessage)
      editMessage(s, source, ctx, data, 'interaction-callback', ['data']);
  } else if (type === CallbackType.Modal) {
    state.modal = data;
  } else if (type === CallbackType.ApplicationCommandAutocompleteResult) {
    const choices = data['choices'];
    state.choices = Array.isArray(choices) ? choices : [];
  }

  record.status = withResponse ? 200 : 204;
  state.callbacks.push(record);
  s.interactionResponses.push(record);
  if (!withResponse) return { status: 204 };
  const interaction: JsonObject = { id: state.id, type: state.type };
  if (message) {
    interaction['response_message_id'] = message.id;
    interaction['response_message_loading'] = message.loading;
    interaction['response_message_ephemeral'] = message.ephemeral;
  }
  // Discord docs: `resource.message` is only present for CHANNEL_MESSAGE_WITH_SOURCE (4) and UPDATE_MESSAGE (7);
  // a deferred reply (5) reports `{type: 5}` and the loading message via `interaction.response_message_*`.
  // Modals, autocomplete results and deferred updates create no resource.
  const out: JsonObject = { interaction };
  if ((type === CallbackType.ChannelMessageWithSource || type === CallbackType.UpdateMessage) && message) {
    out['resource'] = { type, message: message.data };
  } else if (type === CallbackType.DeferredChannelMessageWithSource) {
    out['resource'] = { type };
  }
  return { status: 200, body: out };
}

export function registerInteractionRoutes(r: Router, s: FakeState): void {
  r.add('POST', '/interactions/{interaction_id}/{interaction_token}/callback', 'none', (ctx) =>
    interactionCallback(s, ctx),
  );
  r.add('POST', WEBHOOK_BASE, 'none', (ctx) => followUp(s, ctx));
  for (const suffix of ['/messages/@original', '/messages/{message_id}']) {
    r.add('GET', WEBHOOK_BASE + suffix, 'none', (ctx) => ({
      status: 200,
      body: webhookMessage(s, ctx).data,
    }));
    r.add('PATCH', WEBHOOK_BASE + suffix, 'none', (ctx) => {
      const msg = webhookMessage(s, ctx);
      return { status: 200, body: editMessage(s, msg, ctx, bodyObject(ctx), 'webhook') };
    });
    r.add('DELETE', WEBHOOK_BASE + suffix, 'none', (ctx) => {
      deleteMessage(s, webhookMessage(s, ctx));
      return { status: 204 };
    });
  }
}
