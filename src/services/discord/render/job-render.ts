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
  publicTranslator,
  type Translator,
} from '../../../i18n/index.js';
import { discordTimestamp } from '../../shared/format.js';
import type { Operation, TaskOutputs } from '../../media/types.js';
import type { JobRecord } from '../../store/types.js';
import { nextStepId } from '../interactions/custom-ids.js';
import { cardPayload, type CardSpec, type ResultParts } from './card.js';
import {
  COLORS,
  STATE_EMOJI,
  actionButton,
  footer,
  lines,
  mention,
  paramFields,
  paramLabel,
  payload,
  shownParams,
  taskField,
  withTimestamp,
} from './kit.js';
import {
  LIMITS,
  escapeMarkdown,
  inlineCode,
  isSnowflake,
  maskedLink,
  safeHttpUrl,
  truncate,
  type CardEdit,
  type CardPayload,
  type ClassicPayload,
  type MessagePayload,
} from './limits.js';
import { withoutFreeText } from './withheld.js';

export {
  LIMITS,
  embedCharacters,
  escapeMarkdown,
  fitToDiscordLimits,
  isHttpUrl,
  safeHttpUrl,
  truncate,
} from './limits.js';
export { IS_COMPONENTS_V2, editBody, isCard } from './limits.js';
export type { CardEdit, CardPayload, ClassicPayload, MessagePayload } from './limits.js';
export { cardPayload, type CardSpec } from './card.js';
export { COLORS, formatDuration } from './kit.js';

/**
 * What rendering a job needs to know of its operation. The operations registry
 * (src/services/operations/) implements it and the app passes it in
 * (createJobRenderer), so rendering never imports the registry (no import cycle).
 */
export interface RenderOperations {
  /** What a finished result adds to its job's card (each operation shows its own result). */
  resultParts(job: JobRecord, out: TaskOutputs, tr: Translator): ResultParts;
  /** A finished result without any free text (each operation knows which of its fields are). */
  resultWithoutText(out: TaskOutputs): TaskOutputs;
  /** Whether a failed job of `op` offers Retry (training photos are not kept, so they are gathered again). */
  retryable(op: Operation): boolean;
  /** The slash command of `op` (names the job's thread). */
  command(op: Operation): string;
}

/** `███░░░░░░░ 30%`: 10 cells, floor(pct/10) filled; pct clamped to 0..100, shown floored. */
export function progressBar(pct: number): string {
  const p = Number.isFinite(pct) ? Math.min(100, Math.max(0, pct)) : 0;
  const filled = Math.floor(p / 10);
  return `${'█'.repeat(filled)}${'░'.repeat(10 - filled)} ${Math.floor(p)}%`;
}

// ---------------------------------------------------------------- states

/** The job's progress, a whole number 0..100. */
const percentOf = (job: JobRecord): number => Math.floor(Math.min(100, Math.max(0, job.percentage || 0)));

/** What a job not yet running is doing, in a few words. */
function pendingStatus(job: JobRecord, tr: Translator): string {
  if (job.state === 'unconfirmed') return tr.t('job.status.not_confirmed');
  if (job.state === 'queued') return tr.t('job.status.queued');
  if (job.waitingUntil !== undefined)
    return tr.t('job.status.service_busy', { retryAt: discordTimestamp(job.waitingUntil, 'R', true) });
  return tr.t('job.status.submitting');
}

/** "elapsed 1m 05s" since the job was created. */
const elapsedLine = (job: JobRecord, now: number, tr: Translator): string =>
  tr.t('job.elapsed', { duration: formatLocalDuration(tr, now - job.createdAt) });

function renderPending(job: JobRecord, now: number, tr: Translator): MessagePayload {
  const status = pendingStatus(job, tr);
  const title = opTitle(job, tr);
  const embed: APIEmbed = withTimestamp(
    {
      title,
      description: lines(
        mention(job.userId),
        `${STATE_EMOJI[job.state]} ${status}`,
        job.state === 'unconfirmed' && tr.t('job.status.not_confirmed_explain'),
        job.dmNoticeAt !== undefined && tr.t('job.status.result_by_dm'),
        elapsedLine(job, now, tr),
        job.cost !== undefined && tr.t('job.cost', { cost: job.cost }),
      ),
      color: COLORS.queued,
      fields: [...taskField(job, tr), ...paramFields(job, tr)],
      footer: footer(job, tr),
    },
    job.createdAt,
  );
  return payload(`${STATE_EMOJI[job.state]} **${title}** · ${status}`, [embed]);
}

function renderProcessing(job: JobRecord, now: number, tr: Translator): MessagePayload {
  const bar = progressBar(job.percentage);
  const elapsed = elapsedLine(job, now, tr);
  const title = opTitle(job, tr);
  const status =
    job.statusText !== undefined && job.statusText.trim() !== ''
      ? truncate(escapeMarkdown(job.statusText.trim()), 1000)
      : undefined;
  const embed: APIEmbed = withTimestamp(
    {
      title,
      description: lines(
        mention(job.userId),
        `${STATE_EMOJI.processing} ${tr.t('job.status.processing', { percent: percentOf(job) })}`,
        elapsed,
        status,
        job.dmNoticeAt !== undefined && tr.t('job.status.result_by_dm'),
      ),
      color: COLORS.processing,
      fields: [...taskField(job, tr), ...paramFields(job, tr)],
      footer: footer(job, tr),
    },
    job.createdAt,
  );
  return payload(`${STATE_EMOJI.processing} **${title}** · ${bar} · ${elapsed}`, [embed]);
}

// ---------------------------------------------------------------- cards

/** "…and 3 more", in the card's language. */
const moreLine = (tr: Translator) => (count: number) => tr.t('result.more', { count });

/** The operation's name in the card's language. */
function opTitle(job: JobRecord, tr: Translator): string {
  return tr.t(`operations.${job.operation}.title`);
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

function finishedSpec(ops: RenderOperations, job: JobRecord, tr: Translator): CardSpec {
  const parts: ResultParts = job.result
    ? ops.resultParts(job, job.result, tr)
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

function failedSpec(ops: RenderOperations, job: JobRecord, tr: Translator): CardSpec {
  const err = job.error;
  const details = (err?.details ?? []).map((d) => d.trim()).filter((d) => d !== '');
  const text =
    details.length > 1
      ? details.map((d) => `• ${truncate(escapeMarkdown(d), 1000)}`).join('\n')
      : escapeMarkdown(err?.message.trim() || details[0] || tr.t('job.failed.unknown_error'));
  const code = err?.code !== undefined && err.code !== '' ? err.code : undefined;
  // Retry: a new job with the same parameters (training photos are gathered again instead).
  const retry = retryable(ops, job)
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
    notes: [
      // Left out by AutoMod (withoutFreeText): the code and the advice still say what happened.
      ...(job.textWithheld === true && err?.message === '' && details.length === 0
        ? []
        : [truncate(text, 3000)]),
      `**${tr.t('job.failed.advice_heading')}**\n${failureAdvice(code, tr)}`,
    ],
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

function jobCardSpec(ops: RenderOperations, job: JobRecord, tr: Translator): CardSpec | undefined {
  if (job.removed !== undefined) return removedSpec(tr);
  if (job.state === 'finished') return finishedSpec(ops, job, tr);
  if (job.state === 'failed') return failedSpec(ops, job, tr);
  return undefined;
}

function removedSpec(
  tr: Translator,
  why: 'moderation.removed' | 'privacy.removed_public' = 'moderation.removed',
): CardSpec {
  return {
    accent: COLORS.queued,
    head: [`🚫 ${tr.t(why)}`],
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

/**
 * A job's public message once its member deleted their data (/privacy delete): only
 * that, in the server's language, ready to PATCH over a classic or a V2 message.
 */
export function renderRemovedAtRequest(locale: string | undefined): CardEdit {
  return {
    ...cardPayload(removedSpec(publicTranslator(locale), 'privacy.removed_public')),
    content: null,
    embeds: null,
  };
}

function retryable(ops: RenderOperations, job: JobRecord): boolean {
  return job.state === 'failed' && ops.retryable(job.operation);
}

function renderJob(ops: RenderOperations, job: JobRecord, now: number, tr: Translator): MessagePayload {
  if (job.removed !== undefined) return cardPayload(removedSpec(tr));
  switch (job.state) {
    case 'submitting':
    case 'unconfirmed':
    case 'queued':
      return renderPending(job, now, tr);
    case 'processing':
      return renderProcessing(job, now, tr);
    case 'finished':
      return cardPayload(finishedSpec(ops, job, tr));
    case 'failed':
      return cardPayload(failedSpec(ops, job, tr));
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
 * `⚙️ **Upscale** · 30% · running 5s · \`task-1\` · <t:1700000000:R> · [message](https://discord.com/channels/…)`,
 * in `tr`'s language (the list is a reply: the member's).
 */
export function renderJobSummaryLine(
  job: JobRecord,
  now: number,
  tr: Translator = jobTranslator(job),
): string {
  const duration = formatLocalDuration(tr, now - job.createdAt);
  let state: string;
  switch (job.state) {
    case 'submitting':
      state = tr.t('job.state.submitting');
      break;
    case 'unconfirmed':
      state = tr.t('job.summary.not_confirmed');
      break;
    case 'queued':
      state = tr.t('job.summary.queued', { duration });
      break;
    case 'processing':
      state = tr.t('job.summary.processing', { percent: percentOf(job), duration });
      break;
    case 'finished':
      state = tr.t('job.summary.finished');
      break;
    case 'failed':
      state = job.error?.code
        ? tr.t('job.summary.failed_code', { code: truncate(job.error.code.replace(/[^\w-]/g, ''), 40) })
        : tr.t('job.state.failed');
      break;
  }
  const link = jobMessageLink(job);
  return [
    `${STATE_EMOJI[job.state]} **${opTitle(job, tr)}**`,
    state,
    job.taskId !== undefined && job.taskId !== '' ? inlineCode(job.taskId, 64) : undefined,
    Number.isFinite(job.createdAt) ? discordTimestamp(job.createdAt, 'R') : undefined,
    link !== undefined ? maskedLink(tr.t('job.summary.message_link'), link) : undefined,
  ]
    .filter((p): p is string => p !== undefined)
    .join(' · ');
}

type Named = Pick<JobRecord, 'id' | 'operation' | 'params' | 'textWithheld'> &
  Partial<Pick<JobRecord, 'result'>>;

/** A task id as a title shows it: a UUID-like one by its first 8 characters, as git shows a commit. */
function shortTaskId(id: string): string {
  const t = id.trim();
  return /^[0-9a-f]{8}-?[0-9a-f-]{8,}$/i.test(t) ? t.slice(0, 8) : t;
}

/** The first sung line of a song result (section markers such as `[Verse]` left out), or ''. */
function firstLyricLine(result: TaskOutputs | undefined): string {
  if (result?.kind !== 'song') return '';
  const lyrics = result.songs.find((s) => s.lyrics?.trim())?.lyrics ?? '';
  return (
    lyrics
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '' && !/^[[(].*[\])]$/.test(l)) ?? ''
  );
}

function threadName(ops: RenderOperations, job: Named): string {
  const command = ops.command(job.operation);
  if (job.textWithheld === true) return `${command} · ${job.id.slice(0, 8)}`;
  const p = job.params;
  // The prompt's first words; without a prompt (a song extension) the first line of its lyrics
  // once it has them (a gallery post), else the task it extends, short.
  const prompt = typeof p['prompt'] === 'string' ? p['prompt'].trim() : '';
  const task = typeof p['task_id'] === 'string' ? shortTaskId(p['task_id']) : '';
  const words = (prompt || firstLyricLine(job.result) || task).replace(/\s+/g, ' ');
  const name = words === '' ? command : `${command} · ${words}`;
  return name.length <= 100 ? name : `${name.slice(0, 99).trimEnd()}…`;
}

/**
 * The channel reply of a job that lives in a thread: one short line, ending on the final
 * state, in `tr`'s language (default: the server's).
 */
export function renderThreadLine(job: JobRecord, tr: Translator = jobTranslator(job)): ClassicPayload {
  const where = `<#${job.message.channelId}>`;
  const state =
    job.state === 'finished'
      ? `${STATE_EMOJI.finished} ${tr.t('threads.line.finished')}`
      : job.state === 'failed'
        ? `${STATE_EMOJI.failed} ${tr.t('threads.line.failed')}`
        : `${STATE_EMOJI.processing} ${tr.t('threads.line.running')}`;
  return {
    content: `${mention(job.userId)} **${opTitle(job, tr)}** · ${state} · ${where}`.trim(),
    embeds: [],
    components: [],
    allowed_mentions: { parse: [] },
  };
}

/**
 * A result URL printed as it is, never as markdown: `<…>` (an autolink without a preview) of
 * its percent-encoded form, so nothing in it can close the link, mask another one or mention
 * anyone; a URL that is no http(s) one is shown as escaped text.
 */
function linkedUrl(url: string): string {
  const safe = safeHttpUrl(url);
  return safe !== undefined ? `<${safe}>` : truncate(escapeMarkdown(url), 200);
}

type GalleryPost = CardPayload & { attachments: { id: string; filename: string }[] };
/** A result file that could not ride along to the gallery, and why. */
type Linked = { url: string; reason: (tr: Translator) => string };

function renderGalleryPost(
  ops: RenderOperations,
  job: JobRecord,
  attachments: { filename: string }[],
  linked: Linked[],
  tr: Translator,
): GalleryPost {
  const spec = finishedSpec(ops, job, tr);
  const link = jobMessageLink(job);
  const card = cardPayload({
    ...spec,
    head: [...spec.head, link !== undefined ? maskedLink(tr.t('gallery.jump'), link) : ''],
    // The service's URLs expire: the attached copies replace them.
    media: [],
    files: attachments,
    links:
      linked.length > 0
        ? [
            tr.t('gallery.not_attached'),
            ...linked.map((l) => `• ${linkedUrl(l.url)} (${truncate(l.reason(tr), 80)})`),
          ]
        : [],
    rows: [],
  });
  return { ...card, attachments: attachments.map((a, id) => ({ id: String(id), filename: a.filename })) };
}

/** The renders of a job that depend on its operation (what its result shows, Retry, its command). */
export interface JobRenderer {
  /**
   * The job as a public message may still show it when AutoMod refused it even without the
   * member's text: every free text left out (./withheld.ts).
   */
  withoutFreeText(job: JobRecord): JobRecord;
  /**
   * The full message for a job in its current state (always within Discord's limits):
   * a classic message while it waits or runs, a card (Components V2) once it finished,
   * failed or was removed, in `tr`'s language (default: the server's).
   */
  renderJob(job: JobRecord, now: number, tr?: Translator): MessagePayload;
  /**
   * What a job's card shows, for a job whose message is a card (finished, failed or
   * removed); undefined while it is still a classic message (waiting, running).
   */
  jobCardSpec(job: JobRecord, tr?: Translator): CardSpec | undefined;
  /** Whether a failed job offers Retry (a new job with the same parameters). */
  retryable(job: JobRecord): boolean;
  /**
   * A job's thread (and gallery post): the command and the first words of its prompt (a song
   * extension: the first line of its lyrics once it has a result, else the task it extends, a
   * UUID by its first 8 characters), ≤ 100 chars; with the member's text withheld (AutoMod),
   * the command and the job's short id.
   */
  threadName(job: Named): string;
  /**
   * A finished job in the gallery channel: its result card (who ran it, no ping; the
   * parameters; a jump link to the job's message), in the server's language or `tr`'s.
   * The result files ride along as attachments, shown by the card's gallery (images,
   * videos) and File components (audio…): with Components V2 an attachment no
   * component names is not shown. Files that could not ride along (too large, download
   * failed) are linked with the reason. No buttons: next steps live on the job's message.
   */
  renderGalleryPost(
    job: JobRecord,
    attachments: { filename: string }[],
    linked: Linked[],
    tr?: Translator,
  ): GalleryPost;
}

/** The job renders, given what they need of the operations (the app passes the registry's). */
export function createJobRenderer(ops: RenderOperations): JobRenderer {
  return {
    withoutFreeText: (job) => withoutFreeText(ops, job),
    renderJob: (job, now, tr = jobTranslator(job)) => renderJob(ops, job, now, tr),
    jobCardSpec: (job, tr = jobTranslator(job)) => jobCardSpec(ops, job, tr),
    retryable: (job) => retryable(ops, job),
    threadName: (job) => threadName(ops, job),
    renderGalleryPost: (job, attachments, linked, tr = jobTranslator(job)) =>
      renderGalleryPost(ops, job, attachments, linked, tr),
  };
}
