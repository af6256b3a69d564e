import { SlashCommandBuilder } from 'discord.js';
import type { APIEmbed } from 'discord-api-types/v10';
import { z } from 'zod';
import { nextStepId } from '../discord/custom-ids.js';
import {
  COLORS,
  MAX_CONTENT_URL,
  actionButton,
  finishedHeader,
  lines,
  linkButton,
  payload,
  rows,
  finishedEmbed,
} from '../discord/render-kit.js';
import {
  LIMITS,
  escapeMarkdown,
  inlineCode,
  maskedLink,
  safeHttpUrl,
  truncate,
} from '../discord/render-limits.js';
import type { TaskResultBody } from '../media/schemas.js';
import { problem, taskId } from './fields.js';
import type { Song } from '../media/types.js';
import { compact, num, str, webhookFields } from './input.js';
import type { OperationModule } from './types.js';

/** Characters of lyrics shown per song. */
const LYRICS_EXCERPT = 1000;

const data = new SlashCommandBuilder()
  .setName('extend-song')
  .setDescription('Extend a song you generated')
  .addStringOption((o) =>
    o
      .setName('task_id')
      .setDescription('The song task to extend')
      .setRequired(true)
      .setAutocomplete(true)
      .setMaxLength(200),
  )
  .addStringOption((o) =>
    o
      .setName('song_id')
      .setDescription('Which of its two songs')
      .setRequired(true)
      .setAutocomplete(true)
      .setMaxLength(200),
  )
  .addNumberOption((o) =>
    o
      .setName('continue_at')
      .setDescription('Extend from this point, in seconds')
      .setMinValue(0)
      .setMaxValue(86400),
  )
  .toJSON();

const songExtendParamsSchema = z.object({
  parentTaskId: taskId('task_id'),
  songId: taskId('song_id'),
  continueAt: z
    .number({ error: problem('input.seconds', { field: 'continue_at' }) })
    .min(0, problem('input.seconds_min', { field: 'continue_at', min: 0 }))
    .max(24 * 3600, problem('input.seconds_max', { field: 'continue_at', max: 24 * 3600 }))
    .optional(),
});

type SongBody = NonNullable<TaskResultBody['songs']>[number];

function songOf(s: SongBody): Song {
  const song: Song = { songId: s.song_id };
  if (s.audio_url) song.audioUrl = s.audio_url;
  if (s.image_url) song.imageUrl = s.image_url;
  if (s.video_url) song.videoUrl = s.video_url;
  if (s.lyrics) song.lyrics = s.lyrics;
  return song;
}

function songEmbed(song: Song, index: number): APIEmbed {
  const audio = safeHttpUrl(song.audioUrl);
  const video = safeHttpUrl(song.videoUrl);
  const image = safeHttpUrl(song.imageUrl);
  const links = [
    audio !== undefined ? `🎧 ${maskedLink('Audio', audio)}` : undefined,
    video !== undefined ? `🎬 ${maskedLink('Video', video)}` : undefined,
    image !== undefined ? `🖼️ ${maskedLink('Cover', image)}` : undefined,
  ].filter((x): x is string => x !== undefined);
  const lyrics = song.lyrics?.trim();
  const embed: APIEmbed = {
    title: `Song ${index + 1}`,
    description: lines(
      links.join(' · '),
      lyrics !== undefined && lyrics !== ''
        ? `\n**Lyrics**\n${truncate(escapeMarkdown(lyrics), LYRICS_EXCERPT)}`
        : undefined,
    ),
    color: COLORS.finished,
    fields: [{ name: 'Song ID', value: inlineCode(song.songId, 200), inline: true }],
  };
  if (audio !== undefined && audio.length <= LIMITS.embedUrl) embed.url = audio;
  if (image !== undefined && image.length <= LIMITS.embedUrl) embed.thumbnail = { url: image };
  return embed;
}

const TITLE = 'Song extension';

export const songOperation: OperationModule<'song'> = {
  operation: 'song',
  command: 'extend-song',
  title: TITLE,
  label: 'Song',
  path: 'songExtend',
  mode: 'async',
  schema: songExtendParamsSchema,
  input: {
    kind: 'slash',
    data,
    fromOptions(o) {
      const continueAt = o.getNumber('continue_at');
      return {
        parentTaskId: o.getString('task_id', true).trim(),
        songId: o.getString('song_id', true).trim(),
        ...(continueAt !== null ? { continueAt } : {}),
      };
    },
  },
  retryable: true,
  toStored: (p) => ({
    task_id: p.parentTaskId,
    song_id: p.songId,
    ...(p.continueAt !== undefined ? { continue_at: p.continueAt } : {}),
  }),
  fromStored(p) {
    const parentTaskId = str(p['task_id']);
    const songId = str(p['song_id']);
    if (!parentTaskId || !songId) return { cannot: (tr) => tr.t('jobs.cannot.params') };
    const continueAt = num(p['continue_at']);
    return { parentTaskId, songId, ...(continueAt !== undefined ? { continueAt } : {}) };
  },
  body: (p, { webhook }) =>
    JSON.stringify(
      compact({
        parent_task_id: p.parentTaskId,
        song_id: p.songId,
        continue_at: p.continueAt,
        ...webhookFields(webhook),
      }),
    ),
  outputs: (b) =>
    b.songs && b.songs.length > 0
      ? { kind: 'song', songs: b.songs.map(songOf), ...(b.video_url ? { videoUrl: b.video_url } : {}) }
      : undefined,
  inGallery: true,
  // Every file of the result (the service's links expire): the audio files, the covers, each
  // song's video, the top-level video; a link given twice is kept once.
  files: (out) => [
    ...new Set(
      [
        ...out.songs.map((s) => s.audioUrl),
        ...out.songs.map((s) => s.imageUrl),
        ...out.songs.map((s) => s.videoUrl),
        out.videoUrl,
      ].filter((u): u is string => u !== undefined && u !== ''),
    ),
  ],
  // "Extend song N": the parent task and its N-th song (a new song: its own length, so no continue_at).
  continueFrom(parent, input) {
    const song =
      parent.result?.kind === 'song' && input.songIndex !== undefined
        ? parent.result.songs[input.songIndex]
        : undefined;
    if (!song) return { cannot: (tr) => tr.t('jobs.cannot.song_missing') };
    return { parentTaskId: parent.taskId, songId: song.songId };
  },
  render(job, out) {
    const video = safeHttpUrl(out.videoUrl);
    const header = finishedEmbed(job, TITLE, video !== undefined && `🎬 ${maskedLink('Video', video)}`);
    const songs = out.songs.slice(0, LIMITS.embeds - 1);
    const embeds = [header, ...songs.map((s, i) => songEmbed(s, i))];
    const links = [
      ...songs.map((s, i) => linkButton(`Audio ${i + 1}`, s.audioUrl)),
      linkButton('Video', video),
    ];
    // custom-ids only carry song 1 and 2 (indexes 0 and 1), which is what a song task yields.
    const actions = songs
      .slice(0, 2)
      .map((_s, i) =>
        actionButton(
          `Extend song ${i + 1}`,
          nextStepId({ kind: 'extend-song', jobId: job.id, songIndex: i }),
        ),
      );
    const content = lines(
      finishedHeader(TITLE),
      video !== undefined && video.length <= MAX_CONTENT_URL ? video : undefined,
    );
    return payload(content, embeds, rows(links, actions));
  },
};
