import { DiscordHttpError } from './errors.js';
import { isObj, type Json, type JsonObject } from './json.js';
import { MessageFlag } from './messages.js';
import type { FakeState } from './state.js';

/**
 * AutoMod's keyword filter with the "block message" action (`setAutoModKeywords`): a message
 * whose text has a keyword is refused with 200000, a thread name (a forum post's title) with
 * 200001, Discord's codes and messages. Keywords match whole words, case-insensitively;
 * `*` at either end matches the rest of a word (`cat*`, `*cat`, `*cat*`), as in Discord.
 */

export interface AutoModBlock {
  guildId: string;
  channelId: string;
  kind: 'message' | 'title';
  keyword: string;
  at: number;
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function matcher(keyword: string): RegExp {
  const prefix = keyword.startsWith('*');
  const suffix = keyword.endsWith('*');
  const core = escape(keyword.replace(/^\*|\*$/g, ''));
  const word = '[\\p{L}\\p{N}_]';
  return new RegExp(
    `${prefix ? `${word}*` : `(?<!${word})`}${core}${suffix ? `${word}*` : `(?!${word})`}`,
    'iu',
  );
}

function firstKeyword(words: string[], text: string): string | undefined {
  return words.find((w) => w.replace(/\*/g, '') !== '' && matcher(w).test(text));
}

/** The text AutoMod reads in a message: content, embeds and Text Display components. */
function messageText(msg: JsonObject): string {
  const parts: string[] = [];
  const add = (v: Json | undefined): void => {
    if (typeof v === 'string') parts.push(v);
  };
  add(msg['content']);
  for (const e of Array.isArray(msg['embeds']) ? msg['embeds'].filter(isObj) : []) {
    add(e['title']);
    add(e['description']);
    if (isObj(e['footer'])) add(e['footer']['text']);
    if (isObj(e['author'])) add(e['author']['name']);
    for (const f of Array.isArray(e['fields']) ? e['fields'].filter(isObj) : []) {
      add(f['name']);
      add(f['value']);
    }
  }
  const walk = (list: Json | undefined): void => {
    if (!Array.isArray(list)) return;
    for (const c of list.filter(isObj)) {
      if (c['type'] === 10) add(c['content']);
      walk(c['components']);
      if (isObj(c['accessory'])) walk([c['accessory']]);
      if (isObj(c['component'])) walk([c['component']]);
    }
  };
  walk(msg['components']);
  return parts.join('\n');
}

function block(
  s: FakeState,
  guildId: string,
  channelId: string,
  kind: AutoModBlock['kind'],
  keyword: string,
): never {
  s.autoModBlocks.push({ guildId, channelId, kind, keyword, at: s.clock.now() });
  throw kind === 'message'
    ? new DiscordHttpError(400, 200000, 'Message was blocked by automatic moderation')
    : new DiscordHttpError(400, 200001, 'Title was blocked by automatic moderation');
}

/** Refuses a (non-ephemeral) guild message whose text has a keyword of its guild. */
export function checkAutoModMessage(s: FakeState, msg: JsonObject, guild?: string | null): void {
  const channelId = typeof msg['channel_id'] === 'string' ? msg['channel_id'] : '';
  const guildId = guild === undefined ? s.guildOf(channelId) : guild;
  const flags = typeof msg['flags'] === 'number' ? msg['flags'] : 0;
  if (guildId === null || (flags & MessageFlag.Ephemeral) !== 0) return;
  const words = s.guild(guildId).autoModKeywords;
  const hit = words.length > 0 ? firstKeyword(words, messageText(msg)) : undefined;
  if (hit !== undefined) block(s, guildId, channelId, 'message', hit);
}

/** Refuses a thread name (forum post title) with a keyword of the guild. */
export function checkAutoModTitle(
  s: FakeState,
  guildId: string | null,
  channelId: string,
  name: string,
): void {
  if (guildId === null) return;
  const hit = firstKeyword(s.guild(guildId).autoModKeywords, name);
  if (hit !== undefined) block(s, guildId, channelId, 'title', hit);
}
