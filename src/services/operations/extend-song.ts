import { SlashCommandBuilder } from '@discordjs/builders';
import { z } from 'zod';
import { optionalField } from '../shared/optional-field.js';
import { nextStepId } from '../discord/interactions/custom-ids.js';
import type { Translator } from '../../i18n/index.js';
import { actionButton } from '../discord/render/kit.js';
import { escapeMarkdown, inlineCode, maskedLink, safeHttpUrl, truncate } from '../discord/render/limits.js';
import type { TaskResultBody } from '../media/schemas.js';
import { problem, taskId } from './fields.js';
import type { SongExtendParams } from '../media/types.js';
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

const songSchema = z.object({
  songId: z.string(),
  audioUrl: optionalField(z.string()),
  imageUrl: optionalField(z.string()),
  videoUrl: optionalField(z.string()),
  lyrics: optionalField(z.string()),
});
export type Song = z.output<typeof songSchema>;

/** A finished song extension (its two songs), as the job keeps it. */
const songResultSchema = z.object({
  kind: z.literal('song'),
  songs: z.array(songSchema),
  videoUrl: optionalField(z.string()),
});

declare module '../media/types.js' {
  interface OperationTypes {
    song: { params: SongExtendParams; outputs: z.output<typeof songResultSchema> };
  }
}

type SongBody = NonNullable<TaskResultBody['songs']>[number];

function songOf(s: SongBody): Song {
  const song: Song = { songId: s.song_id };
  if (s.audio_url) song.audioUrl = s.audio_url;
  if (s.image_url) song.imageUrl = s.image_url;
  if (s.video_url) song.videoUrl = s.video_url;
  if (s.lyrics) song.lyrics = s.lyrics;
  return song;
}

/** `**Song 1** · 🎧 [Audio](…) · 🎬 [Video](…) · Song ID \`…\`` (the cover is in the gallery). */
function songLine(song: Song, index: number, tr: Translator): string {
  const audio = safeHttpUrl(song.audioUrl);
  const video = safeHttpUrl(song.videoUrl);
  return [
    `**${tr.t('result.song.title', { n: index + 1 })}**`,
    audio !== undefined ? `🎧 ${maskedLink(tr.t('result.song.audio'), audio)}` : undefined,
    video !== undefined ? `🎬 ${maskedLink(tr.t('result.song.video'), video)}` : undefined,
    `${tr.t('result.song.song_id')} ${inlineCode(song.songId, 200)}`,
  ]
    .filter((x): x is string => x !== undefined)
    .join(' · ');
}

export const songOperation: OperationModule<'song'> = {
  operation: 'song',
  command: 'extend-song',
  cost: 2,
  path: { variable: 'MEDIA_PATH_SONG_EXTEND', default: '/song-extend' },
  mode: 'async',
  schema: songExtendParamsSchema,
  input: {
    kind: 'slash',
    data,
    // The member's song tasks, then the two songs of the one chosen.
    autocomplete: {
      task_id: { from: 'tasks', of: 'song' },
      song_id: { from: 'songs', taskOption: 'task_id' },
    },
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
  resultSchema: songResultSchema,
  resultWithoutText: (out) => ({ ...out, songs: out.songs.map(({ lyrics: _lyrics, ...song }) => song) }),
  inGallery: true,
  // The songs, their covers and each song's video.
  fileKinds: ['audio', 'image', 'video'],
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
  card(job, out, tr) {
    const video = safeHttpUrl(out.videoUrl);
    const songs = out.songs;
    const links = songs.map((s, i) => songLine(s, i, tr));
    // The task's own video (beside each song's): labelled like the song lines above it.
    if (video !== undefined)
      links.push(
        `**${tr.t('result.song.result_video')}** · 🎬 ${maskedLink(tr.t('result.video.open'), video)}`,
      );
    return {
      title: tr.t('operations.song.title'),
      facts: [],
      media: songs.flatMap((s, i) => {
        const cover = safeHttpUrl(s.imageUrl);
        const song = tr.t('result.song.title', { n: i + 1 });
        return cover === undefined
          ? []
          : [{ url: cover, label: `${tr.t('result.song.cover')} · ${song}`, description: song }];
      }),
      links,
      notes: songs.flatMap((s, i) => {
        const lyrics = s.lyrics?.trim();
        if (lyrics === undefined || lyrics === '') return [];
        const heading = `**${tr.t('result.song.lyrics')}** · ${tr.t('result.song.title', { n: i + 1 })}`;
        return [`${heading}\n${truncate(escapeMarkdown(lyrics), LYRICS_EXCERPT)}`];
      }),
      // custom-ids only carry song 1 and 2 (indexes 0 and 1), which is what a song task yields.
      actions: songs
        .slice(0, 2)
        .map((_s, i) =>
          actionButton(
            tr.t('buttons.extend_song', { n: i + 1 }),
            nextStepId({ kind: 'extend-song', jobId: job.id, songIndex: i }),
          ),
        ),
    };
  },
};
