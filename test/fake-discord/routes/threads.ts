import { checkAutoModTitle } from '../automod.js';
import { Permission } from '../constants.js';
import { DiscordHttpError, err, fieldError, recordSemanticViolation } from '../errors.js';
import { isObj, type JsonObject } from '../json.js';
import { applyMessageBody, emitMessage } from '../message-ops.js';
import { checkMessageRules } from '../message-rules.js';
import { FakeMessage, MessageFlag } from '../messages.js';
import { bodyObject, type HandlerContext, type HandlerResult, type Router } from '../router.js';
import { ChannelFlag, channelDefaults, type ChannelState, type FakeState } from '../state.js';
import { botMay, isForum, isThread } from '../thread-state.js';
import { baseMessage, channelJson } from '../wire.js';
import { channelFor, channelMessage } from './messages.js';

/**
 * Threads (the channels-and-threads family): a thread started from a message, a thread
 * without a message, and a post in a forum (type 15) or media (type 16) channel: a public
 * thread whose id is its starter message's id, with the post's tags. Then PATCH (archive,
 * lock, rename, retag) and DELETE of a channel, with Discord's permission rules.
 */

/** Refuses with a Discord error, recorded as a semantic violation like the message rules. */
function refuse(s: FakeState, ctx: HandlerContext, error: DiscordHttpError): never {
  recordSemanticViolation(s, ctx, error);
  throw error;
}

function newThread(s: FakeState, parent: ChannelState, id: string, name: string, type: number): ChannelState {
  return {
    ...channelDefaults(s),
    id,
    name,
    type,
    parentId: parent.id,
    botCanSend: parent.botCanSend,
    guildId: parent.guildId,
    ownerId: s.applicationId,
  };
}

function announce(s: FakeState, thread: ChannelState): JsonObject {
  s.channels.set(thread.id, thread);
  const json = channelJson(s, thread, true);
  if (s.gateway.currentSession) s.gateway.dispatch('THREAD_CREATE', { ...json, newly_created: true });
  return json;
}

/** POST /channels/{forum}/threads: the post (thread) and its starter message, in one request. */
function createForumPost(
  s: FakeState,
  ctx: HandlerContext,
  forum: ChannelState,
  body: JsonObject,
): HandlerResult {
  const message = body['message'];
  if (!isObj(message))
    refuse(s, ctx, err.invalidForm(fieldError(['message'], 'BASE_TYPE_REQUIRED', 'This field is required')));
  const name = typeof body['name'] === 'string' ? body['name'] : '';
  const tags = Array.isArray(body['applied_tags']) ? body['applied_tags'].map(String) : [];
  const unknown = tags.findIndex((id) => !forum.availableTags.some((t) => t.id === id));
  if (unknown >= 0)
    refuse(
      s,
      ctx,
      err.invalidForm(
        fieldError(
          ['applied_tags', String(unknown)],
          'FORUM_TAG_UNKNOWN',
          'The tag is not one of this channel.',
        ),
      ),
    );
  if ((forum.flags & ChannelFlag.RequireTag) !== 0 && tags.length === 0)
    refuse(
      s,
      ctx,
      new DiscordHttpError(400, 40067, 'A tag is required to create a forum post in this channel'),
    );
  checkAutoModTitle(s, forum.guildId, forum.id, name);

  const id = s.snowflakes.next();
  const thread = newThread(s, forum, id, name, 11);
  thread.appliedTags = [...new Set(tags)];
  if (typeof body['auto_archive_duration'] === 'number')
    thread.autoArchiveDuration = body['auto_archive_duration'];
  if (typeof message['flags'] === 'number') message['flags'] = message['flags'] & ~MessageFlag.Ephemeral;
  const data = applyMessageBody(
    s,
    baseMessage(s, id, id, s.botUser, 0, 0),
    message,
    ctx.files,
    'create',
    id,
    false,
  );
  checkMessageRules(s, data, ctx, { body: message, prefix: ['message'], guildId: forum.guildId });
  const json = announce(s, thread);
  const msg = new FakeMessage({
    id,
    channelId: id,
    data,
    ephemeral: false,
    createdAt: s.clock.now(),
    interactionId: null,
    source: 'channel',
  });
  s.messages.set(id, msg);
  emitMessage(s, 'MESSAGE_CREATE', msg);
  return { status: 201, body: { ...json, message: data } };
}

export function registerThreadRoutes(r: Router, s: FakeState): void {
  // Start a public thread from a message (Discord: the thread's id is the message's id; one thread per
  // message, 160004; text or announcement channels only, 50024; Create Public Threads, else 50013).
  r.add('POST', '/channels/{channel_id}/messages/{message_id}/threads', 'bot', (ctx) => {
    const channel = channelFor(s, ctx, true);
    if (channel.type !== 0 && channel.type !== 5) {
      throw new DiscordHttpError(400, 50024, 'Cannot execute action on this channel type');
    }
    const msg = channelMessage(s, ctx);
    if (s.channels.has(msg.id)) {
      throw new DiscordHttpError(400, 160004, 'A thread has already been created for this message');
    }
    const body = bodyObject(ctx);
    const name = typeof body['name'] === 'string' ? body['name'] : '';
    checkAutoModTitle(s, channel.guildId, channel.id, name);
    const json = announce(s, newThread(s, channel, msg.id, name, channel.type === 5 ? 10 : 11));
    msg.data['thread'] = json;
    return { status: 201, body: json };
  });

  // A forum/media post, or a thread without a message in a text channel (private by default, like Discord).
  r.add('POST', '/channels/{channel_id}/threads', 'bot', (ctx) => {
    const channel = channelFor(s, ctx, true);
    const body = bodyObject(ctx);
    if (isForum(channel)) return createForumPost(s, ctx, channel, body);
    if (channel.type !== 0 && channel.type !== 5)
      throw new DiscordHttpError(400, 50024, 'Cannot execute action on this channel type');
    const name = typeof body['name'] === 'string' ? body['name'] : '';
    checkAutoModTitle(s, channel.guildId, channel.id, name);
    const type = typeof body['type'] === 'number' ? body['type'] : 12;
    return { status: 201, body: announce(s, newThread(s, channel, s.snowflakes.next(), name, type)) };
  });
}

/** PATCH /channels/{thread}: name, archived, locked, applied_tags, auto_archive_duration, with Discord's permission rules. */
function patchThread(s: FakeState, ctx: HandlerContext, thread: ChannelState, body: JsonObject): JsonObject {
  const manage = botMay(s, thread, Permission.ManageThreads);
  const owner = thread.ownerId === s.applicationId;
  const keys = Object.keys(body).filter((k) => body[k] !== null && body[k] !== undefined);
  // An archived thread only accepts being unarchived (and locked/unlocked) until then.
  if (thread.archived && body['archived'] !== false && keys.some((k) => k !== 'archived' && k !== 'locked'))
    throw new DiscordHttpError(400, 50083, 'Operation cannot be performed on an archived thread');
  if ('locked' in body && body['locked'] !== null && !manage) throw err.missingPermissions();
  // Unarchiving a locked thread, or changing someone else's, takes Manage Threads.
  if (!manage && (thread.locked || !owner) && keys.length > 0) throw err.missingPermissions();
  if (typeof body['name'] === 'string') {
    checkAutoModTitle(s, thread.guildId, thread.id, body['name']);
    thread.name = body['name'];
  }
  if (Array.isArray(body['applied_tags'])) {
    const parent = thread.parentId ? s.channels.get(thread.parentId) : undefined;
    const tags = body['applied_tags'].map(String);
    const unknown = tags.findIndex((id) => !parent?.availableTags.some((t) => t.id === id));
    if (!parent || !isForum(parent) || unknown >= 0)
      refuse(
        s,
        ctx,
        err.invalidForm(
          fieldError(
            ['applied_tags', String(Math.max(0, unknown))],
            'FORUM_TAG_UNKNOWN',
            'The tag is not one of this channel.',
          ),
        ),
      );
    if ((parent.flags & ChannelFlag.RequireTag) !== 0 && tags.length === 0)
      throw new DiscordHttpError(400, 40067, 'A tag is required to create a forum post in this channel');
    if (!manage && tags.some((id) => parent.availableTags.find((t) => t.id === id)?.moderated))
      throw err.missingPermissions();
    thread.appliedTags = [...new Set(tags)];
  }
  if (typeof body['auto_archive_duration'] === 'number')
    thread.autoArchiveDuration = body['auto_archive_duration'];
  if (typeof body['locked'] === 'boolean') thread.locked = body['locked'];
  if (typeof body['archived'] === 'boolean' && body['archived'] !== thread.archived) {
    thread.archived = body['archived'];
    thread.archiveTimestamp = s.clock.now();
  }
  thread.updates.push({ at: s.clock.now(), changes: body });
  const json = channelJson(s, thread, true);
  if (s.gateway.currentSession) s.gateway.dispatch('THREAD_UPDATE', json);
  return json;
}

/** DELETE /channels/{id}: a thread (a forum post and its messages) needs Manage Threads, another channel Manage Channels. */
function deleteChannel(s: FakeState, channel: ChannelState): JsonObject {
  const thread = isThread(channel);
  if (!botMay(s, channel, thread ? Permission.ManageThreads : Permission.ManageChannels))
    throw err.missingPermissions();
  const json = channelJson(s, channel, true);
  channel.deletedAt = s.clock.now();
  s.channels.delete(channel.id);
  s.deletedChannels.set(channel.id, channel);
  for (const m of s.messages.values())
    if (m.channelId === channel.id && !m.deleted) {
      m.deleted = true;
      m.deletedAt = s.clock.now();
    }
  if (s.gateway.currentSession) {
    if (thread)
      s.gateway.dispatch('THREAD_DELETE', {
        id: channel.id,
        guild_id: channel.guildId,
        parent_id: channel.parentId,
        type: channel.type,
      });
    else s.gateway.dispatch('CHANNEL_DELETE', json);
  }
  return json;
}

export function registerThreadEditRoutes(r: Router, s: FakeState): void {
  r.add('PATCH', '/channels/{channel_id}', 'bot', (ctx) => {
    const channel = channelFor(s, ctx, false);
    const body = bodyObject(ctx);
    if (isThread(channel)) return { status: 200, body: patchThread(s, ctx, channel, body) };
    if (!botMay(s, channel, Permission.ManageChannels)) throw err.missingPermissions();
    if (typeof body['name'] === 'string') channel.name = body['name'];
    if (typeof body['topic'] === 'string' || body['topic'] === null) channel.topic = body['topic'];
    channel.updates.push({ at: s.clock.now(), changes: body });
    const json = channelJson(s, channel, true);
    if (s.gateway.currentSession) s.gateway.dispatch('CHANNEL_UPDATE', json);
    return { status: 200, body: json };
  });
  r.add('DELETE', '/channels/{channel_id}', 'bot', (ctx) => ({
    status: 200,
    body: deleteChannel(s, channelFor(s, ctx, false)),
  }));
}
