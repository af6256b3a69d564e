/**
 * What a job's Discord message looks like in each state. Pure functions, no I/O:
 * the edit queue sends whatever `renderJob` returns as the full new state of the
 * message (every key present, so an edit replaces the previous state entirely).
 *
 * Everything from the media service (URLs, lyrics, status and error texts) and
 * from users (prompts) is untrusted: URLs pass through `safeHttpUrl`, text through
 * `escapeMarkdown`, and `fitToDiscordLimits` is the last step of every render.
 */
import { publicTranslator } from '../../i18n/index.js';
import { ButtonStyle, type APIEmbed } from 'discord-api-types/v10';
import { operations, renderResult } from '../operations/index.js';
import { discordTimestamp } from '../shared/format.js';
import type { JobRecord } from '../store/types.js';
import { nextStepId } from './custom-ids.js';
import {
  COLORS,
  STATE_EMOJI,
  actionButton,
  finishedHeader,
  footer,
  formatDuration,
  lines,
  mention,
  paramFields,
  payload,
  rows,
  taskField,
  withTimestamp,
  finishedEmbed,
} from './render-kit.js';
import {
  escapeMarkdown,
  inlineCode,
  isSnowflake,
  maskedLink,
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
export { COLORS, formatDuration } from './render-kit.js';

/** `███░░░░░░░ 30%`: 10 cells, floor(pct/10) filled; pct clamped to 0..100, shown floored. */
export function progressBar(pct: number): string {
  const p = Number.isFinite(pct) ? Math.min(100, Math.max(0, pct)) : 0;
  const filled = Math.floor(p / 10);
  return `${'█'.repeat(filled)}${'░'.repeat(10 - filled)} ${Math.floor(p)}%`;
}

function title(job: JobRecord): string {
  return operations[job.operation].title;
}

// ---------------------------------------------------------------- states

/** What a job not yet running is doing, in a few words. */
function pendingStatus(job: JobRecord): string {
  if (job.state === 'unconfirmed') return 'Not confirmed yet…';
  if (job.state === 'queued') return 'Queued…';
  if (job.waitingUntil !== undefined)
    return `Waiting for the service (busy), trying again ${discordTimestamp(job.waitingUntil, 'R', true)}…`;
  return 'Submitting…';
}

function renderPending(job: JobRecord, now: number): MessagePayload {
  const status = pendingStatus(job);
  const elapsed = `elapsed ${formatDuration(now - job.createdAt)}`;
  const embed: APIEmbed = withTimestamp(
    {
      title: title(job),
      description: lines(
        mention(job.userId),
        `${STATE_EMOJI[job.state]} ${status}`,
        job.state === 'unconfirmed' &&
          'The service did not answer the submission. It may have received it, so it is not sent again: the bot waits for the service to report this job, and returns your credits if it never does.',
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

function renderFinished(job: JobRecord): MessagePayload {
  if (job.result) return renderResult(job, job.result);
  const embed = finishedEmbed(job, title(job), 'Finished, but the service sent no result.');
  return payload(finishedHeader(title(job)), [embed]);
}

/** Whether a failed job offers Retry (a new job with the same parameters). */
export function retryable(job: JobRecord): boolean {
  return job.state === 'failed' && operations[job.operation].retryable;
}

/** What the user can do about a failure, by JobError code. */
function failureAdvice(code: string | undefined): string {
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
    case 'service_busy':
      return 'The media service is having trouble: try again later. Your credits were returned.';
    case 'service_out_of_credits':
      return 'The media service is unavailable for now (the operator has been told). Your credits were returned.';
    case 'not_confirmed':
      return 'The service never confirmed this job, so it is treated as not received: your credits were returned.';
    case 'timed_out':
      return 'No result arrived in time. Check `/tasks` to see whether it finished before retrying.';
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
  const retry = !retryable(job)
    ? []
    : rows([], [actionButton('Retry', nextStepId({ kind: 'retry', jobId: job.id }), ButtonStyle.Secondary)]);
  return payload(`${STATE_EMOJI.failed} **${title(job)}** failed`, [embed], retry);
}

/** The full message for a job in its current state (always within Discord's limits). */
export function renderJob(job: JobRecord, now: number): MessagePayload {
  switch (job.state) {
    case 'submitting':
    case 'unconfirmed':
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
    case 'unconfirmed':
      state = 'not confirmed by the service yet';
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

/**
 * A job's thread: the command and the first words of its prompt (or the task it extends),
 * ≤ 100 chars; with the member's text withheld (AutoMod), the command and the job's short id.
 */
export function threadName(job: Pick<JobRecord, 'id' | 'operation' | 'params' | 'textWithheld'>): string {
  const command = operations[job.operation].command;
  if (job.textWithheld === true) return `${command} · ${job.id.slice(0, 8)}`;
  const p = job.params;
  const subject = [p['prompt'], p['task_id']].find(
    (v): v is string => typeof v === 'string' && v.trim() !== '',
  );
  const words = subject === undefined ? '' : subject.trim().replace(/\s+/g, ' ');
  const name = words === '' ? command : `${command} · ${words}`;
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

/** A result a moderator took down (Remove result): only that it was removed, in the server's language. */
export function renderRemoved(job?: Pick<JobRecord, 'locale'>): MessagePayload {
  return payload(publicTranslator(job?.locale).t('moderation.removed'), []);
}
