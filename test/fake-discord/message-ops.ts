import { attachmentJson, guessContentType } from './attachments.js';
import { HOUR } from './constants.js';
import { err } from './errors.js';
import { GatewayIntent } from './gateway.js';
import { isObj, type JsonObject } from './json.js';
import {
  CREATE_SETTABLE_FLAGS,
  EDIT_SETTABLE_FLAGS,
  MessageFlag,
  normalizeComponents,
  normalizeEmbed,
  type FakeMessage,
} from './messages.js';
import { checkMessageRules } from './message-rules.js';
import type { HandlerContext } from './router.js';
import type { FakeState } from './state.js';
import { memberJson } from './wire.js';
import type { MessageVia, StoredAttachment, UploadedFile } from './types.js';

/**
 * What every route that creates or edits a message shares (channel messages, interaction
 * callbacks, webhooks): applying a body the way Discord does, edit history (after the rules
 * of message-rules.ts), deletion and the gateway events.
 */

export function emitMessage(
  s: FakeState,
  t: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE' | 'MESSAGE_DELETE',
  msg: FakeMessage,
): void {
  const guildId = s.guildOf(msg.channelId);
  // Guild messages need GUILD_MESSAGES, DMs DIRECT_MESSAGES (and no guild_id or member).
  const intent = guildId === null ? GatewayIntent.DirectMessages : GatewayIntent.GuildMessages;
  if (msg.ephemeral || !s.gateway.currentSession || !s.gateway.hasIntent(intent)) return;
  // The bot sees nothing of a server that never installed it, nor of a group DM.
  if (
    (guildId !== null && s.outsiderGuildOf(guildId) !== undefined) ||
    s.channels.get(msg.channelId)?.type === 3
  )
    return;
  if (t === 'MESSAGE_DELETE') {
    const d: JsonObject = { id: msg.id, channel_id: msg.channelId };
    if (guildId !== null) d['guild_id'] = guildId;
    s.gateway.dispatch(t, d);
    return;
  }
  const authorId = msg.authorId;
  const d: JsonObject = { ...msg.data };
  if (guildId !== null) {
    d['guild_id'] = guildId;
    if (authorId && s.member(guildId, authorId)) {
      const m = memberJson(s, guildId, authorId, false);
      delete m['user'];
      d['member'] = m;
    }
  }
  s.gateway.dispatch(t, d);
}

function pollJson(s: FakeState, poll: JsonObject): JsonObject {
  const question = isObj(poll['question']) ? poll['question'] : {};
  const answers = Array.isArray(poll['answers']) ? poll['answers'].filter(isObj) : [];
  const hours = typeof poll['duration'] === 'number' ? poll['duration'] : 24;
  return {
    question: { text: typeof question['text'] === 'string' ? question['text'] : '' },
    answers: answers.map((a, i) => {
      const media = isObj(a['poll_media']) ? a['poll_media'] : {};
      const out: JsonObject = { text: typeof media['text'] === 'string' ? media['text'] : '' };
      if (isObj(media['emoji'])) {
        out['emoji'] = {
          id: typeof media['emoji']['id'] === 'string' ? media['emoji']['id'] : null,
          name: media['emoji']['name'] ?? null,
        };
      }
      return { answer_id: i + 1, poll_media: out };
    }),
    expiry: new Date(s.clock.now() + hours * HOUR).toISOString(),
    allow_multiselect: poll['allow_multiselect'] === true,
    layout_type: typeof poll['layout_type'] === 'number' ? poll['layout_type'] : 1,
    results: { is_finalized: false, answer_counts: [] },
  };
}

/** Applies a create/edit body to a message object the way Discord does. */
export function applyMessageBody(
  s: FakeState,
  target: JsonObject,
  body: JsonObject,
  files: UploadedFile[],
  mode: 'create' | 'edit',
  channelId: string,
  ephemeral: boolean,
): JsonObject {
  const next = structuredClone(target);
  if ('content' in body) next['content'] = typeof body['content'] === 'string' ? body['content'] : '';
  if (typeof body['flags'] === 'number') {
    const current = typeof next['flags'] === 'number' ? next['flags'] : 0;
    const settable = mode === 'create' ? CREATE_SETTABLE_FLAGS : EDIT_SETTABLE_FLAGS;
    next['flags'] = (current & ~settable) | (body['flags'] & settable);
  }
  if (mode === 'create' && typeof body['tts'] === 'boolean') next['tts'] = body['tts'];
  if (mode === 'create' && isObj(body['poll'])) next['poll'] = pollJson(s, body['poll']);
  const stickers = body['sticker_ids'];
  if (mode === 'create' && Array.isArray(stickers) && stickers.length > 0)
    next['sticker_items'] = stickers.map((id) => ({ id: String(id), name: 'sticker', format_type: 1 }));

  // attachments: `attachments` lists the ones to keep (existing ids) + metadata for new uploads (id = file index)
  const existing = Array.isArray(next['attachments']) ? next['attachments'].filter(isObj) : [];
  const meta = Array.isArray(body['attachments']) ? body['attachments'].filter(isObj) : null;
  const kept = meta
    ? existing.filter((a) => meta.some((m) => String(m['id']) === String(a['id'])))
    : existing;
  const added: JsonObject[] = [];
  files.forEach((file, index) => {
    const indexKey = /^files\[(\d+)\]$/.exec(file.field)?.[1] ?? String(index);
    const m = meta?.find((x) => String(x['id']) === indexKey);
    const stored: StoredAttachment = {
      id: s.snowflakes.next(),
      filename: typeof m?.['filename'] === 'string' ? m['filename'] : file.filename,
      contentType: file.contentType || guessContentType(file.filename),
      bytes: file.bytes,
      channelId,
      ephemeral,
    };
    s.attachments.set(stored.id, stored);
    const extra: { description?: string } = {};
    if (typeof m?.['description'] === 'string') extra.description = m['description'];
    added.push(attachmentJson(s, stored, extra));
  });
  const attachments = [...kept, ...added];
  next['attachments'] = attachments;

  const resolveMedia = (url: string): JsonObject => {
    if (url.startsWith('attachment://')) {
      const name = url.slice('attachment://'.length);
      const a = attachments.find((x) => x['filename'] === name);
      if (a) {
        const out: JsonObject = {
          id: String(a['id']),
          url: String(a['url']),
          proxy_url: String(a['proxy_url']),
          width: typeof a['width'] === 'number' ? a['width'] : null,
          height: typeof a['height'] === 'number' ? a['height'] : null,
          content_type: typeof a['content_type'] === 'string' ? a['content_type'] : null,
          attachment_id: String(a['id']),
          filename: String(a['filename']),
          size: typeof a['size'] === 'number' ? a['size'] : 0,
        };
        return out;
      }
    }
    return {
      id: s.snowflakes.next(),
      url,
      proxy_url: url,
      width: null,
      height: null,
      content_type: null,
    };
  };
  if ('embeds' in body) {
    const embeds = body['embeds'];
    next['embeds'] = Array.isArray(embeds)
      ? embeds.filter(isObj).map((e) => normalizeEmbed(e, resolveMedia))
      : [];
  }
  if ('components' in body) {
    const components = body['components'];
    next['components'] = Array.isArray(components) ? normalizeComponents(components, resolveMedia) : [];
  }
  return next;
}

function recordEdit(
  s: FakeState,
  msg: FakeMessage,
  ctx: HandlerContext,
  via: MessageVia,
  body: JsonObject,
  after: JsonObject,
): void {
  msg.edits.push({
    at: Date.now(),
    clockAt: s.clock.now(),
    method: ctx.method,
    route: ctx.template,
    via,
    body,
    before: msg.data,
    after,
  });
  msg.data = after;
}

/** Discord allows only a few edits of messages older than an hour per channel (30046). */
export function checkOldMessageEdit(s: FakeState, msg: FakeMessage): void {
  if (s.clock.now() - msg.createdAt <= HOUR) return;
  const used = s.oldMessageEdits.get(msg.channelId) ?? 0;
  if (used >= (s.options.oldMessageEditLimit ?? 0)) throw err.oldMessageEdits();
  s.oldMessageEdits.set(msg.channelId, used + 1);
}

/** Edits a message as Discord does; `prefix` is where the message sits in the request body (`data` in a callback). */
export function editMessage(
  s: FakeState,
  msg: FakeMessage,
  ctx: HandlerContext,
  body: JsonObject,
  via: MessageVia,
  prefix: string[] = [],
): JsonObject {
  const wasLoading = msg.loading;
  const after = applyMessageBody(s, msg.data, body, ctx.files, 'edit', msg.channelId, msg.ephemeral);
  if (wasLoading)
    after['flags'] = (typeof after['flags'] === 'number' ? after['flags'] : 0) & ~MessageFlag.Loading;
  // Discord does not mark the first edit of a deferred ("thinking…") response as an edit.
  after['edited_timestamp'] = wasLoading ? null : new Date(s.clock.now()).toISOString();
  checkMessageRules(s, after, ctx, { body, before: msg.data, prefix });
  recordEdit(s, msg, ctx, via, body, after);
  emitMessage(s, 'MESSAGE_UPDATE', msg);
  return after;
}

export function deleteMessage(s: FakeState, msg: FakeMessage): void {
  msg.deleted = true;
  msg.deletedAt = s.clock.now();
  emitMessage(s, 'MESSAGE_DELETE', msg);
}
