import type { APIApplicationCommandOptionChoice } from 'discord-api-types/v10';
import type { Operation } from '../services/media/types.js';
import type { Song } from '../services/operations/extend-song.js';
import type { JobRecord } from '../services/store/types.js';
import { formatAgo, translatorFor } from '../i18n/index.js';
import type { BotInteraction } from '../services/discord/interactions/interaction.js';
import type { ChoiceSource } from '../services/operations/types.js';
import { mayActOnJob } from './preconditions.js';
import type { BotContext } from './types.js';

const MAX_CHOICES = 25;

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** The choices of an option whose module declares `source` (the member typed `query`). */
export function choicesFrom(
  ctx: BotContext,
  i: BotInteraction,
  source: ChoiceSource,
  query: string,
): Promise<APIApplicationCommandOptionChoice<string>[]> {
  return source.from === 'tasks'
    ? taskChoices(ctx, i, source.of, query)
    : songChoices(ctx, i, i.options.getString(source.taskOption) ?? '', query);
}

/** The user's finished tasks of one operation, newest first, filtered by what they typed. */
export async function taskChoices(
  ctx: BotContext,
  i: BotInteraction,
  op: Operation,
  query: string,
): Promise<APIApplicationCommandOptionChoice<string>[]> {
  // Choice names are what the member reads: in their language.
  const tr = translatorFor(i);
  let jobs: JobRecord[];
  try {
    jobs = await ctx.records.listByUser(i.user.id, 50);
  } catch {
    return [];
  }
  const q = query.trim().toLowerCase();
  const now = ctx.now();
  const own = jobs
    .filter((j) => j.operation === op && j.state === 'finished' && j.taskId)
    .filter(
      (j) =>
        q === '' ||
        (j.taskId ?? '').toLowerCase().includes(q) ||
        JSON.stringify(j.params).toLowerCase().includes(q),
    )
    .slice(0, MAX_CHOICES)
    .map((j) => {
      const hint = typeof j.params.prompt === 'string' ? ` · ${j.params.prompt}` : '';
      return {
        name: clip(
          `${tr.t(`operations.${op}.label`)} · ${formatAgo(tr, now - (j.finishedAt ?? j.createdAt))}${hint} · ${j.taskId}`,
          100,
        ),
        value: j.taskId ?? '',
      };
    });
  // A task id typed or pasted that is none of the member's jobs (a task made outside the bot, e.g.
  // the service's own song the README starts from): offered once the service says it is a finished
  // task of this operation, so the member sees it is the right one before sending.
  const typed = query.trim();
  if (typed === '' || own.some((c) => c.value === typed)) return own;
  // Another member's job is theirs (as the song_id autocomplete keeps it): not offered.
  const job = await ctx.records.getByTaskId(typed).catch(() => undefined);
  if (job && !mayActOnJob(i, job)) return own;
  const outside = await ctx.taskLookup.lookup(i.user.id, op, typed).catch(() => undefined);
  // Read as this operation: only a result of that kind (a song's songs, a video's video) is one.
  if (outside?.state !== 'finished' || outside.outputs?.kind !== op) return own;
  return [
    { name: clip(`${tr.t(`operations.${op}.label`)} · ${typed}`, 100), value: typed },
    ...own.slice(0, MAX_CHOICES - 1),
  ];
}

/**
 * The two songs of a song task: from the bot's own jobs (only the member's own, or any
 * job of this server for a manager here: anyone else is a stranger to it), else read
 * from the service (a task made outside the bot).
 */
export async function songChoices(
  ctx: BotContext,
  i: BotInteraction,
  taskId: string,
  query: string,
): Promise<APIApplicationCommandOptionChoice<string>[]> {
  const id = taskId.trim();
  if (!id) return [];
  let songs: Song[] | undefined;
  try {
    const job = await ctx.records.getByTaskId(id);
    if (job && !mayActOnJob(i, job)) return [];
    if (job?.result?.kind === 'song') songs = job.result.songs;
  } catch {
    // Store down: the service may still know the task.
  }
  if (!songs) {
    // A task made outside the bot: read from the service (throttled per member, cached).
    const result = await ctx.taskLookup.lookup(i.user.id, 'song', id);
    if (result?.outputs?.kind === 'song') songs = result.outputs.songs;
  }
  const q = query.trim().toLowerCase();
  const tr = translatorFor(i);
  return (songs ?? [])
    .map((s, n) => ({
      name: clip(
        `${tr.t('result.song.title', { n: n + 1 })} · ${s.lyrics ? `${s.lyrics.split('\n')[0]} · ` : ''}${s.songId}`,
        100,
      ),
      value: s.songId,
    }))
    .filter((c) => q === '' || c.name.toLowerCase().includes(q))
    .slice(0, MAX_CHOICES);
}
