/**
 * What a job's Discord message looks like in each state. Pure functions, no I/O:
 * the edit queue sends whatever `renderJob` returns as the full new state of the
 * message (every key present, so an edit replaces the previous state entirely).
 *
 * Everything from the media service (URLs, lyrics, status and error texts) and
 * from users (prompts) is untrusted: URLs pass through `safeHttpUrl`, text through
 * `escapeMarkdown`, and `fitToDiscordLimits` is the last step of every render.
 */
import {
  ButtonStyle,
  ComponentType,
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIEmbed,
  type APIEmbedField,
} from 'discord-api-types/v10';
import type { Operation, Song, TaskOutputs } from '../media/types.js';
import type { JobRecord, JobState } from '../store/types.js';
import { nextStepId } from './custom-ids.js';
import {
  LIMITS,
  escapeMarkdown,
  fitToDiscordLimits,
  inlineCode,
  isSnowflake,
  maskedLink,
  safeHttpUrl,
  truncate,
  type MessagePayload,
} from './render-limits.js';

export {
  LIMITS,
  embedCharacters,
  escapeMarkdown,
  fitToDiscordLimits,
  isHttpUrl,
  safeHttpUrl,
  truncate,
} from './render-limits.js';
export type { MessagePayload } from './render-limits.js';

// ---------------------------------------------------------------- constants

export const COLORS = {
  queued: 0x95a5a6,
  processing: 0x5865f2,
  finished: 0x57f287,
  failed: 0xed4245,
} as const;

export const OPERATION_TITLES: Record<Operation, string> = {
  upscale: 'Upscale',
  song: 'Song extension',
  video: 'Video extension',
  upload: 'Training photos',
};

const STATE_EMOJI: Record<JobState, string> = {
  submitting: '📤',
  queued: '⏳',
  processing: '⚙️',
  finished: '✅',
  failed: '❌',
};

/** Images shown as embeds (Discord merges up to 4 embeds sharing a `url` into one gallery). */
const GALLERY_SIZE = 4;
/** Characters of lyrics shown per song. */
const LYRICS_EXCERPT = 1000;
/** Link buttons leave the last row for next steps. */
const MAX_LINK_BUTTONS = (LIMITS.actionRows - 1) * LIMITS.buttonsPerRow;
/** A URL goes in the content (for Discord's own player embed) only when it leaves room for the rest. */
const MAX_CONTENT_URL = 1800;

// ---------------------------------------------------------------- small helpers

/** `███░░░░░░░ 30%`: 10 cells, floor(pct/10) filled; pct clamped to 0..100, shown floored. */
export function progressBar(pct: number): string {
  const p = Number.isFinite(pct) ? Math.min(100, Math.max(0, pct)) : 0;
  const filled = Math.floor(p / 10);
  return `${'█'.repeat(filled)}${'░'.repeat(10 - filled)} ${Math.floor(p)}%`;
}

/** `42s`, `1m 05s`, `2h 03m 04s` (negative and non-finite count as 0). */
export function formatDuration(ms: number): string {
  const total = Number.isFinite(ms) && ms > 0 ? Math.floor(ms / 1000) : 0;
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (h > 0) return `${h}h ${pad(m)}m ${pad(s)}s`;
  if (m > 0) return `${m}m ${pad(s)}s`;
  return `${s}s`;
}

/** Discord timestamp markup, `style` R (relative), F (full date) etc. */
export function discordTimestamp(ms: number, style: 'R' | 'F' | 'f' | 'D' | 'T' = 'R'): string {
  return `<t:${Math.floor(ms / 1000)}:${style}>`;
}

function mention(userId: string): string {
  return isSnowflake(userId) ? `<@${userId}>` : '';
}

function title(job: JobRecord): string {
  return OPERATION_TITLES[job.operation] ?? 'Job';
}

/** Labels that would otherwise read ambiguously next to the job's own fields. */
const PARAM_LABELS: Record<string, string> = {
  task_id: 'Source task',
  taskId: 'Source task',
  parentTaskId: 'Source task',
};

/** `imageUrl` → `Image URL`, `magic_prompt` → `Magic prompt`. */
function humanizeKey(key: string): string {
  const known = PARAM_LABELS[key];
  if (known !== undefined) return known;
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase()
    .split(/\s+/)
    .map((w) => (w === 'url' ? 'URL' : w === 'id' ? 'ID' : w));
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function paramValue(v: string | number | boolean | string[]): string {
  if (Array.isArray(v)) return v.length === 0 ? '—' : v.map((x) => paramValue(x)).join('\n');
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '—';
  const url = safeHttpUrl(v);
  if (url !== undefined && url.length <= LIMITS.fieldValue) return url;
  return v.trim() === '' ? '—' : truncate(escapeMarkdown(v), LIMITS.fieldValue);
}

/** job.params as embed fields (long text inline=false, short values inline). */
function paramFields(job: JobRecord, max = 15): APIEmbedField[] {
  return Object.entries(job.params)
    .slice(0, max)
    .map(([key, value]) => {
      const text = paramValue(value);
      return { name: humanizeKey(key), value: text, inline: text.length <= 40 && !text.includes('\n') };
    });
}

function taskField(job: JobRecord): APIEmbedField[] {
  return job.taskId !== undefined && job.taskId !== ''
    ? [{ name: 'Task ID', value: inlineCode(job.taskId), inline: true }]
    : [];
}

function footer(job: JobRecord): NonNullable<APIEmbed['footer']> {
  return { text: `Job ${job.id}` };
}

function timestampIso(ms: number): string | undefined {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

function withTimestamp(embed: APIEmbed, ms: number): APIEmbed {
  const iso = timestampIso(ms);
  return iso === undefined ? embed : { ...embed, timestamp: iso };
}

function linkButton(label: string, url: string | undefined): APIButtonComponent | undefined {
  const safe = safeHttpUrl(url);
  if (safe === undefined || safe.length > LIMITS.buttonUrl) return undefined;
  return {
    type: ComponentType.Button,
    style: ButtonStyle.Link,
    label: truncate(label, LIMITS.buttonLabel),
    url: safe,
  };
}

function actionButton(
  label: string,
  customId: string,
  style: ButtonStyle.Primary | ButtonStyle.Secondary = ButtonStyle.Primary,
): APIButtonComponent {
  return {
    type: ComponentType.Button,
    style,
    label: truncate(label, LIMITS.buttonLabel),
    custom_id: customId,
  };
}

/** Lays buttons out in rows of 5: link buttons first (capped), next-step buttons on their own row. */
function rows(
  links: (APIButtonComponent | undefined)[],
  actions: APIButtonComponent[] = [],
): APIActionRowComponent<APIButtonComponent>[] {
  const out: APIActionRowComponent<APIButtonComponent>[] = [];
  const present = links.filter((b): b is APIButtonComponent => b !== undefined).slice(0, MAX_LINK_BUTTONS);
  for (let i = 0; i < present.length; i += LIMITS.buttonsPerRow) {
    out.push({ type: ComponentType.ActionRow, components: present.slice(i, i + LIMITS.buttonsPerRow) });
  }
  if (actions.length > 0) {
    out.push({ type: ComponentType.ActionRow, components: actions.slice(0, LIMITS.buttonsPerRow) });
  }
  return out;
}

function payload(
  content: string,
  embeds: APIEmbed[],
  components: APIActionRowComponent<APIButtonComponent>[] = [],
): MessagePayload {
  return fitToDiscordLimits({ content, embeds, components, allowed_mentions: { parse: [] } });
}

function lines(...parts: (string | undefined | false)[]): string {
  return parts.filter((p): p is string => typeof p === 'string' && p !== '').join('\n');
}

// ---------------------------------------------------------------- states

function renderPending(job: JobRecord, now: number): MessagePayload {
  const status = job.state === 'submitting' ? 'Submitting…' : 'Queued…';
  const elapsed = `elapsed ${formatDuration(now - job.createdAt)}`;
  const embed: APIEmbed = withTimestamp(
    {
      title: title(job),
      description: lines(
        mention(job.userId),
        `${STATE_EMOJI[job.state]} ${status}`,
        elapsed,
        job.cost !== undefined && `Cost: ${job.cost} credit${job.cost === 1 ? '' : 's'}`,
      ),
      color: COLORS.queued,
      fields: [...taskField(job), ...paramFields(job)],
      footer: footer(job),
    },
    job.createdAt,
  );
  return payload(`${STATE_EMOJI[job.state]} **${title(job)}** · ${status}`, [embed]);
}

function renderProcessing(job: JobRecord, now: number): MessagePayload {
  const bar = progressBar(job.percentage);
  const elapsed = `elapsed ${formatDuration(now - job.createdAt)}`;
  const status =
    job.statusText !== undefined && job.statusText.trim() !== ''
      ? truncate(escapeMarkdown(job.statusText.trim()), 1000)
      : undefined;
  const embed: APIEmbed = withTimestamp(
    {
      title: title(job),
      description: lines(
        mention(job.userId),
        `${STATE_EMOJI.processing} Processing… ${Math.floor(Math.min(100, Math.max(0, job.percentage || 0)))}%`,
        elapsed,
        status,
      ),
      color: COLORS.processing,
      fields: [...taskField(job), ...paramFields(job)],
      footer: footer(job),
    },
    job.createdAt,
  );
  return payload(`${STATE_EMOJI.processing} **${title(job)}** · ${bar} · ${elapsed}`, [embed]);
}

function tookLine(job: JobRecord): string | undefined {
  return job.finishedAt !== undefined ? `took ${formatDuration(job.finishedAt - job.createdAt)}` : undefined;
}

function finishedHeader(job: JobRecord): string {
  return `${STATE_EMOJI.finished} **${title(job)}** finished`;
}

function renderUpscale(job: JobRecord, out: Extract<TaskOutputs, { kind: 'upscale' }>): MessagePayload {
  const images = out.imageUrls
    .map((raw, i) => ({ n: i + 1, url: safeHttpUrl(raw) }))
    .filter((x): x is { n: number; url: string } => x.url !== undefined);
  const shown = images.filter((x) => x.url.length <= LIMITS.embedUrl).slice(0, LIMITS.embeds);
  const notShown = images.filter((x) => !shown.includes(x));

  const first: APIEmbed = {
    title: images.length === 1 ? 'Upscaled image' : `Upscaled images (${images.length})`,
    description: lines(
      mention(job.userId),
      tookLine(job),
      images.length === 0 ? 'The service returned no image.' : undefined,
      notShown.length > 0
        ? `More images: ${notShown.map((x) => maskedLink(String(x.n), x.url)).join(' · ')}`
        : undefined,
    ),
    color: COLORS.finished,
    fields: [
      ...taskField(job),
      ...(out.seed !== undefined ? [{ name: 'Seed', value: String(out.seed), inline: true }] : []),
      ...paramFields(job, 20),
    ],
    footer: footer(job),
  };
  const embeds: APIEmbed[] = [];
  shown.forEach((img, i) => {
    // Embeds sharing a `url` are merged into one gallery (4 per gallery).
    const galleryUrl = shown[Math.floor(i / GALLERY_SIZE) * GALLERY_SIZE]?.url ?? img.url;
    const base: APIEmbed = i === 0 ? first : { color: COLORS.finished };
    embeds.push({ ...base, url: galleryUrl, image: { url: img.url } });
  });
  if (embeds.length === 0) embeds.push(first);

  const buttons = rows(
    images.map((x) => linkButton(`Image ${x.n}`, x.url)),
    [actionButton('Upscale again', nextStepId({ kind: 'upscale-again', jobId: job.id }))],
  );
  return payload(finishedHeader(job), embeds, buttons);
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

function renderSong(job: JobRecord, out: Extract<TaskOutputs, { kind: 'song' }>): MessagePayload {
  const video = safeHttpUrl(out.videoUrl);
  const header: APIEmbed = {
    title: title(job),
    description: lines(
      mention(job.userId),
      tookLine(job),
      video !== undefined ? `🎬 ${maskedLink('Video', video)}` : undefined,
    ),
    color: COLORS.finished,
    fields: [...taskField(job), ...paramFields(job)],
    footer: footer(job),
  };
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
      actionButton(`Extend song ${i + 1}`, nextStepId({ kind: 'extend-song', jobId: job.id, songIndex: i })),
    );
  const content = lines(
    finishedHeader(job),
    video !== undefined && video.length <= MAX_CONTENT_URL ? video : undefined,
  );
  return payload(content, embeds, rows(links, actions));
}

function renderVideo(job: JobRecord, out: Extract<TaskOutputs, { kind: 'video' }>): MessagePayload {
  const video = safeHttpUrl(out.videoUrl);
  const embed: APIEmbed = {
    title: title(job),
    description: lines(
      mention(job.userId),
      tookLine(job),
      video !== undefined ? `🎬 ${maskedLink('Open video', video)}` : 'The service returned no video URL.',
    ),
    color: COLORS.finished,
    fields: [...taskField(job), ...paramFields(job)],
    footer: footer(job),
  };
  if (video !== undefined && video.length <= LIMITS.embedUrl) embed.url = video;
  // A bare URL in the content is what makes Discord show its playable video embed.
  const content = lines(
    finishedHeader(job),
    video !== undefined && video.length <= MAX_CONTENT_URL ? video : undefined,
  );
  const buttons = rows(
    [linkButton('Open video', video)],
    [actionButton('Extend again', nextStepId({ kind: 'extend-video', jobId: job.id }))],
  );
  return payload(content, [embed], buttons);
}

function renderUpload(job: JobRecord, out: Extract<TaskOutputs, { kind: 'upload' }>): MessagePayload {
  const message = out.message?.trim();
  let expiry: string | undefined;
  if (out.expiresAt !== undefined && out.expiresAt.trim() !== '') {
    const ms = Date.parse(out.expiresAt);
    expiry = Number.isFinite(ms)
      ? `The prepared images expire ${discordTimestamp(ms, 'R')} (${discordTimestamp(ms, 'F')}, ${inlineCode(out.expiresAt, 64)}).`
      : `The prepared images expire at ${inlineCode(out.expiresAt, 64)}.`;
  }
  const embed: APIEmbed = {
    title: title(job),
    description: lines(
      mention(job.userId),
      tookLine(job),
      message !== undefined && message !== '' ? truncate(escapeMarkdown(message), 2000) : undefined,
      expiry,
    ),
    color: COLORS.finished,
    fields: [...taskField(job), ...paramFields(job)],
    footer: footer(job),
  };
  return payload(finishedHeader(job), [embed]);
}

function renderFinished(job: JobRecord): MessagePayload {
  const out = job.result;
  switch (out?.kind) {
    case 'upscale':
      return renderUpscale(job, out);
    case 'song':
      return renderSong(job, out);
    case 'video':
      return renderVideo(job, out);
    case 'upload':
      return renderUpload(job, out);
    case undefined: {
      const embed: APIEmbed = {
        title: title(job),
        description: lines(mention(job.userId), tookLine(job), 'Finished, but the service sent no result.'),
        color: COLORS.finished,
        fields: [...taskField(job), ...paramFields(job)],
        footer: footer(job),
      };
      return payload(finishedHeader(job), [embed]);
    }
  }
}

/** What the user can do about a failure, by JobError code. */
export function failureAdvice(code: string | undefined): string {
  switch (code) {
    case 'service_rejected':
      return 'The service rejected the request: fix the input and run the command again.';
    case 'invalid_request':
      return 'Fix the input and run the command again (nothing was sent to the service).';
    case 'service_failed':
      return 'The service could not complete the task: run the command again, perhaps with different input.';
    case 'service_auth':
      return 'The bot’s API key was rejected — ask an admin; nothing was charged.';
    case 'service_error':
    case 'service_unavailable':
      return 'The media service is having trouble: try again later.';
    case 'timed_out':
      return 'No result arrived in time. Check `/tasks` to see whether it finished before retrying.';
    case 'restart_during_submit':
      return 'The bot restarted while submitting; check `/tasks` before retrying.';
    default:
      return 'Something went wrong: try again later, and ask an admin if it keeps happening.';
  }
}

function renderFailed(job: JobRecord): MessagePayload {
  const err = job.error;
  const details = (err?.details ?? []).map((d) => d.trim()).filter((d) => d !== '');
  const text =
    details.length > 1
      ? details.map((d) => `• ${truncate(escapeMarkdown(d), 1000)}`).join('\n')
      : escapeMarkdown(err?.message.trim() || details[0] || 'Unknown error.');
  const embed: APIEmbed = withTimestamp(
    {
      title: `${title(job)} failed`,
      description: lines(mention(job.userId), truncate(text, 3500)),
      color: COLORS.failed,
      fields: [
        { name: 'What you can do', value: failureAdvice(err?.code), inline: false },
        ...taskField(job),
        ...(err?.code !== undefined && err.code !== ''
          ? [{ name: 'Error code', value: inlineCode(err.code, 100), inline: true }]
          : []),
        ...paramFields(job),
      ],
      footer: footer(job),
    },
    job.createdAt,
  );
  // Retry: a new job with the same parameters (training photos are gathered again instead).
  const retry =
    job.operation === 'upload'
      ? []
      : rows(
          [],
          [actionButton('Retry', nextStepId({ kind: 'retry', jobId: job.id }), ButtonStyle.Secondary)],
        );
  return payload(`${STATE_EMOJI.failed} **${title(job)}** failed`, [embed], retry);
}

/** The full message for a job in its current state (always within Discord's limits). */
export function renderJob(job: JobRecord, now: number): MessagePayload {
  switch (job.state) {
    case 'submitting':
    case 'queued':
      return renderPending(job, now);
    case 'processing':
      return renderProcessing(job, now);
    case 'finished':
      return renderFinished(job);
    case 'failed':
      return renderFailed(job);
  }
}

/** `https://discord.com/channels/{guild or @me}/{channel}/{message}`, when the message is known. */
export function jobMessageLink(job: JobRecord): string | undefined {
  const { guildId, channelId, messageId } = job.message;
  if (!isSnowflake(channelId) || !isSnowflake(messageId)) return undefined;
  const guild = isSnowflake(guildId) ? guildId : '@me';
  return `https://discord.com/channels/${guild}/${channelId}/${messageId}`;
}

/**
 * One line for a `/tasks` list, e.g.
 * `⚙️ **Upscale** · 30% · \`task-1\` · <t:1700000000:R> · [message](https://discord.com/channels/…)`.
 */
export function renderJobSummaryLine(job: JobRecord, now: number): string {
  let state: string;
  switch (job.state) {
    case 'submitting':
      state = 'submitting';
      break;
    case 'queued':
      state = `queued · waiting ${formatDuration(now - job.createdAt)}`;
      break;
    case 'processing':
      state = `${Math.floor(Math.min(100, Math.max(0, job.percentage || 0)))}% · running ${formatDuration(now - job.createdAt)}`;
      break;
    case 'finished':
      state = '100% · done';
      break;
    case 'failed':
      state = job.error?.code ? `failed (${truncate(job.error.code.replace(/[^\w-]/g, ''), 40)})` : 'failed';
      break;
  }
  const link = jobMessageLink(job);
  return [
    `${STATE_EMOJI[job.state]} **${title(job)}**`,
    state,
    job.taskId !== undefined && job.taskId !== '' ? inlineCode(job.taskId, 64) : undefined,
    Number.isFinite(job.createdAt) ? discordTimestamp(job.createdAt, 'R') : undefined,
    link !== undefined ? maskedLink('message', link) : undefined,
  ]
    .filter((p): p is string => p !== undefined)
    .join(' · ');
}

const COMMAND_NAMES: Record<JobRecord['operation'], string> = {
  upscale: 'upscale',
  song: 'extend-song',
  video: 'extend-video',
  upload: 'training-photos',
};

/** A job's thread: the command and the first words of its prompt (or the task it extends), ≤ 100 chars. */
export function threadName(job: Pick<JobRecord, 'operation' | 'params'>): string {
  const p = job.params;
  const subject = [p['prompt'], p['task_id']].find(
    (v): v is string => typeof v === 'string' && v.trim() !== '',
  );
  const words = subject === undefined ? '' : subject.trim().replace(/\s+/g, ' ');
  const name = words === '' ? COMMAND_NAMES[job.operation] : `${COMMAND_NAMES[job.operation]} · ${words}`;
  return name.length <= 100 ? name : `${name.slice(0, 99).trimEnd()}…`;
}

/** The channel reply of a job that lives in a thread: one short line, ending on the final state. */
export function renderThreadLine(job: JobRecord): MessagePayload {
  const where = `<#${job.message.channelId}>`;
  const state =
    job.state === 'finished'
      ? `${STATE_EMOJI.finished} finished`
      : job.state === 'failed'
        ? `${STATE_EMOJI.failed} failed`
        : `${STATE_EMOJI.processing} running`;
  return {
    content: `${mention(job.userId)} **${title(job)}** · ${state} · ${where}`.trim(),
    embeds: [],
    components: [],
    allowed_mentions: { parse: [] },
  };
}

/**
 * A finished job in the gallery channel: who ran it (no ping), the command and its
 * main parameters, a jump link to the job's message; the result files ride along as
 * attachments, and those that could not (too large, download failed) are linked here.
 */
export function renderGalleryPost(
  job: JobRecord,
  attachments: { filename: string }[],
  linked: { url: string; reason: string }[],
): MessagePayload & { attachments: { id: string; filename: string }[] } {
  const link = jobMessageLink(job);
  const embed: APIEmbed = withTimestamp(
    {
      title: `${STATE_EMOJI.finished} ${title(job)}`,
      description: lines(
        `by ${mention(job.userId)}`,
        link && `[Jump to the job](${link})`,
        linked.length > 0 &&
          `Not attached:\n${linked.map((l) => `• ${l.url} (${truncate(l.reason, 80)})`).join('\n')}`,
      ),
      color: COLORS.finished,
      fields: [...taskField(job), ...paramFields(job, 10)],
      footer: footer(job),
    },
    job.finishedAt ?? job.updatedAt,
  );
  const base = payload(`**${title(job)}** by ${mention(job.userId)}`.trim(), [embed]);
  return { ...base, attachments: attachments.map((a, id) => ({ id: String(id), filename: a.filename })) };
}
