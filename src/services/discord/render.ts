/**
 * What a job's Discord message looks like in each state. Pure functions, no I/O:
 * the edit queue sends whatever `renderJob` returns as the full new state of the
 * message (every key present, so an edit replaces the previous state entirely).
 *
 * Everything from the media service (URLs, lyrics, status and error texts) and
 * from users (prompts) is untrusted: URLs pass through `safeHttpUrl`, text through
 * `escapeMarkdown`, and the last step of every render fits it to Discord's limits
 * (`fitToDiscordLimits` for a classic message, `cardPayload` for a card).
 */
import { ButtonStyle, type APIEmbed } from 'discord-api-types/v10';
import {
  formatDuration as formatLocalDuration,
  isMessageKey,
  publicTranslator,
  type MessageKey,
  type Translator,
} from '../../i18n/index.js';
import { operations, resultParts } from '../operations/index.js';
import { discordTimestamp } from '../shared/format.js';
import type { JobRecord } from '../store/types.js';
import { nextStepId } from './custom-ids.js';
import { cardPayload, type CardSpec, type ResultParts } from './render-card.js';
import {
  COLORS,
  STATE_EMOJI,
  actionButton,
  footer,
  formatDuration,
  humanizeKey,
  lines,
  mention,
  paramFields,
  payload,
  shownParams,
  taskField,
  withTimestamp,
} from './render-kit.js';
import {
  LIMITS,
  escapeMarkdown,
  inlineCode,
  isSnowflake,
  maskedLink,
  safeHttpUrl,
  truncate,
  type CardEdit,
  type ClassicPayload,
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
export { IS_COMPONENTS_V2, editBody, isCard } from './render-limits.js';
export type { CardEdit, CardPayload, ClassicPayload, MessagePayload } from './render-limits.js';
export { cardPayload, type CardSpec } from './render-card.js';
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

// ---------------------------------------------------------------- cards

/** "…and 3 more", in the card's language. */
const moreLine = (tr: Translator) => (count: number) => tr.t('result.more', { count });

/** The operation's name in the card's language. */
function opTitle(job: JobRecord, tr: Translator): string {
  return tr.t(`operations.${job.operation}.title`);
}

type ParamKey = Extract<MessageKey, `params.${string}`>;
const isParamKey = (k: string): k is ParamKey => k.startsWith('params.') && isMessageKey(k);

/** A parameter's label in the card's language (an unknown key reads humanized). */
function paramLabel(key: string, tr: Translator): string {
  const k = `params.${key}`;
  return isParamKey(k) ? tr.t(k) : humanizeKey(key);
}

/** The file name a URL ends in, readable (`cat.png`), or its host when it names none. */
function urlName(url: string): string {
  const u = new URL(url);
  let last = u.pathname.split('/').pop() ?? '';
  try {
    last = decodeURIComponent(last);
  } catch {
    // A percent escape that is no UTF-8 (`%C3`): the name as written.
  }
  const name = last.replace(/[^\w.-]/g, '');
  return name === '' ? u.hostname : truncate(name, 60);
}

/** A parameter's value as card text: links masked (named after their file), text escaped and capped. */
function paramText(v: string | number | boolean | string[], tr: Translator): string {
  if (Array.isArray(v)) return v.length === 0 ? '—' : v.map((x) => paramText(x, tr)).join(', ');
  if (typeof v === 'boolean') return tr.t(v ? 'params.value.yes' : 'params.value.no');
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '—';
  const url = safeHttpUrl(v);
  if (url !== undefined && url.length <= LIMITS.embedUrl) return maskedLink(urlName(url), url);
  return v.trim() === '' ? '—' : truncate(escapeMarkdown(v.trim()), 1000);
}

/** Parameters that are identifiers (copied into another command): shown as code. */
const ID_PARAMS: ReadonlySet<string> = new Set(['task_id', 'song_id']);

/** `**Prompt:** a cat` lines: the main parameters a public card may show (not the parent link: the head has it). */
function paramLines(job: JobRecord, tr: Translator): string[] {
  return shownParams(job)
    .filter(([key]) => key !== 'extended_from')
    .map(([key, value]) => {
      const text =
        ID_PARAMS.has(key) && typeof value === 'string' ? inlineCode(value, 200) : paramText(value, tr);
      return `**${paramLabel(key, tr)}:** ${text}`;
    });
}

/** "Extended from <jump link>", when the job continues another one. */
function parentLine(job: JobRecord, tr: Translator): string | undefined {
  const parent = job.params['extended_from'];
  if (typeof parent !== 'string' || parent.trim() === '') return undefined;
  const url = safeHttpUrl(parent);
  return tr.t('result.extended_from', { link: url ?? inlineCode(parent, 64) });
}

/** `Job <id> · Task ID \`<task>\`` (small print). */
function cardFooter(job: JobRecord, tr: Translator): string {
  return [
    tr.t('job.footer', { id: job.id }),
    job.taskId !== undefined && job.taskId !== ''
      ? `${tr.t('job.field.task_id')} ${inlineCode(job.taskId)}`
      : undefined,
  ]
    .filter((x): x is string => x !== undefined)
    .join(' · ');
}

/** "by @member · took 12s · AI-generated" (the mention pings no one: allowed_mentions is empty). */
function byLine(job: JobRecord, tr: Translator, ...more: (string | undefined)[]): string {
  const who = mention(job.userId);
  return [who !== '' ? tr.t('result.by', { user: who }) : undefined, ...more]
    .filter((x): x is string => x !== undefined && x !== '')
    .join(' · ');
}

function finishedSpec(job: JobRecord, tr: Translator): CardSpec {
  const parts: ResultParts = job.result
    ? resultParts(job, job.result, tr)
    : {
        title: opTitle(job, tr),
        facts: [],
        media: [],
        links: [],
        notes: [tr.t('job.finished.no_result')],
        actions: [],
      };
  const took =
    job.finishedAt !== undefined
      ? tr.t('job.took', { duration: formatLocalDuration(tr, job.finishedAt - job.createdAt) })
      : undefined;
  return {
    accent: COLORS.finished,
    head: [
      `### ${STATE_EMOJI.finished} ${parts.title}`,
      byLine(job, tr, took, tr.t('result.ai_generated')),
      parentLine(job, tr) ?? '',
    ],
    params: [...parts.facts, ...paramLines(job, tr)],
    media: parts.media,
    links: parts.links,
    notes: parts.notes,
    details: [],
    footer: cardFooter(job, tr),
    rows: parts.actions.length > 0 ? [parts.actions] : [],
    more: moreLine(tr),
  };
}

/** What the member can do about a failure, by JobError code. */
function failureAdvice(code: string | undefined, tr: Translator): string {
  switch (code) {
    case 'service_rejected':
    case 'invalid_request':
    case 'service_failed':
    case 'service_auth':
    case 'service_out_of_credits':
    case 'timed_out':
    case 'restart_during_submit':
      return tr.t(`failure.${code}`);
    case 'service_error':
    case 'service_unavailable':
    case 'service_busy':
      return tr.t('failure.service_trouble');
    case 'not_confirmed':
      return tr.t('failure.never_confirmed');
    default:
      return tr.t('failure.default');
  }
}

function failedSpec(job: JobRecord, tr: Translator): CardSpec {
  const err = job.error;
  const details = (err?.details ?? []).map((d) => d.trim()).filter((d) => d !== '');
  const text =
    details.length > 1
      ? details.map((d) => `• ${truncate(escapeMarkdown(d), 1000)}`).join('\n')
      : escapeMarkdown(err?.message.trim() || details[0] || tr.t('job.failed.unknown_error'));
  const code = err?.code !== undefined && err.code !== '' ? err.code : undefined;
  // Retry: a new job with the same parameters (training photos are gathered again instead).
  const retry = retryable(job)
    ? [
        actionButton(
          tr.t('buttons.retry'),
          nextStepId({ kind: 'retry', jobId: job.id }),
          ButtonStyle.Secondary,
        ),
      ]
    : [];
  return {
    accent: COLORS.failed,
    head: [
      `### ${STATE_EMOJI.failed} ${tr.t('job.failed.title', { title: opTitle(job, tr) })}`,
      byLine(job, tr),
      parentLine(job, tr) ?? '',
    ],
    params: [
      ...(code !== undefined ? [`**${tr.t('job.failed.error_code')}:** ${inlineCode(code, 100)}`] : []),
      ...paramLines(job, tr),
    ],
    media: [],
    links: [],
    notes: [truncate(text, 3000), `**${tr.t('job.failed.advice_heading')}**\n${failureAdvice(code, tr)}`],
    details: [],
    footer: cardFooter(job, tr),
    rows: retry.length > 0 ? [retry] : [],
    more: moreLine(tr),
  };
}

/** The translator of a job's public messages: the server's language when the job started. */
export function jobTranslator(job: Pick<JobRecord, 'locale'>): Translator {
  return publicTranslator(job.locale);
}

/**
 * What a job's card shows, for a job whose message is a card (finished, failed or
 * removed); undefined while it is still a classic message (waiting, running).
 */
export function jobCardSpec(job: JobRecord, tr: Translator = jobTranslator(job)): CardSpec | undefined {
  if (job.removed !== undefined) return removedSpec(tr);
  if (job.state === 'finished') return finishedSpec(job, tr);
  if (job.state === 'failed') return failedSpec(job, tr);
  return undefined;
}

function removedSpec(tr: Translator): CardSpec {
  return {
    accent: COLORS.queued,
    head: [`🚫 ${tr.t('moderation.removed')}`],
    params: [],
    media: [],
    links: [],
    notes: [],
    details: [],
    rows: [],
    more: moreLine(tr),
  };
}

/**
 * A job taken down by a moderator (or a message whose record is gone: no job): a card
 * saying only that, in the server's language or `tr`'s (no files, no buttons, no member
 * text). Ready to PATCH as it is: its classic fields are cleared (null), since the
 * message it replaces may still be a classic one. Every render of a removed job shows it.
 */
export function renderRemoved(
  job?: Pick<JobRecord, 'locale'>,
  tr: Translator = publicTranslator(job?.locale),
): CardEdit {
  return { ...cardPayload(removedSpec(tr)), content: null, embeds: null };
}

/** Whether a failed job offers Retry (a new job with the same parameters). */
export function retryable(job: JobRecord): boolean {
  return job.state === 'failed' && operations[job.operation].retryable;
}

/**
 * The full message for a job in its current state (always within Discord's limits):
 * a classic message while it waits or runs, a card (Components V2) once it finished,
 * failed or was removed, in `tr`'s language (default: the server's).
 */
export function renderJob(job: JobRecord, now: number, tr: Translator = jobTranslator(job)): MessagePayload {
  if (job.removed !== undefined) return cardPayload(removedSpec(tr));
  switch (job.state) {
    case 'submitting':
    case 'unconfirmed':
    case 'queued':
      return renderPending(job, now);
    case 'processing':
      return renderProcessing(job, now);
    case 'finished':
      return cardPayload(finishedSpec(job, tr));
    case 'failed':
      return cardPayload(failedSpec(job, tr));
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
export function renderThreadLine(job: JobRecord): ClassicPayload {
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
): ClassicPayload & { attachments: { id: string; filename: string }[] } {
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
