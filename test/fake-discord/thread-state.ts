import { Permission } from './constants.js';
import { DiscordHttpError } from './errors.js';
import type { JsonObject } from './json.js';
import type { FakeMessage } from './messages.js';
import type { ChannelState, FakeState } from './state.js';
import { channelJson } from './wire.js';

/** Thread state shared by the message and thread routes, and what tests see of a thread. */

export const isThread = (c: ChannelState): boolean => c.type === 10 || c.type === 11 || c.type === 12;
export const isForum = (c: ChannelState): boolean => c.type === 15 || c.type === 16;

/** Whether the bot may manage threads (or channels) where `c` is: Administrator or the permission. */
export function botMay(s: FakeState, c: ChannelState, permission: bigint): boolean {
  if (c.guildId === null) return false;
  const have = s.botPermissions(c.guildId);
  return (have & Permission.Administrator) !== 0n || (have & permission) !== 0n;
}

/**
 * Messages in an archived thread: sending unarchives it (a locked one needs Manage Threads);
 * editing or deleting answers 50083, as Discord does.
 */
export function checkThreadWritable(s: FakeState, channel: ChannelState, action: 'send' | 'edit'): void {
  if (!isThread(channel) || !channel.archived) return;
  if (action === 'edit' || (channel.locked && !botMay(s, channel, Permission.ManageThreads)))
    throw new DiscordHttpError(400, 50083, 'Operation cannot be performed on an archived thread');
  channel.archived = false;
  channel.archiveTimestamp = s.clock.now();
  if (s.gateway.currentSession) s.gateway.dispatch('THREAD_UPDATE', channelJson(s, channel, true));
}

/** A thread as tests see it (a forum post, or a thread started in a text channel). */
export interface ThreadInfo {
  /** The thread's id; a forum post's is also its starter message's id. */
  id: string;
  name: string;
  type: number;
  parentId: string | null;
  ownerId: string | null;
  appliedTags: string[];
  archived: boolean;
  locked: boolean;
  deleted: boolean;
  /** What PATCH /channels/{id} changed, in order (fake-clock time). */
  updates: Array<{ at: number; changes: JsonObject }>;
  /** A forum post's starter message (the message with the thread's id). */
  message: FakeMessage | undefined;
}

export function threadInfo(s: FakeState, c: ChannelState): ThreadInfo {
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    parentId: c.parentId,
    ownerId: c.ownerId,
    appliedTags: [...c.appliedTags],
    archived: c.archived,
    locked: c.locked,
    deleted: c.deletedAt !== null,
    updates: [...c.updates],
    message: s.messages.get(c.id),
  };
}

/** Threads (deleted ones too), oldest first; those of one parent channel when given. */
export function threads(s: FakeState, parentId?: string): ThreadInfo[] {
  return [...s.channels.values(), ...s.deletedChannels.values()]
    .filter((c) => isThread(c) && (parentId === undefined || c.parentId === parentId))
    .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
    .map((c) => threadInfo(s, c));
}
