/**
 * The building blocks of every job message (colours, state emoji, parameter
 * fields, buttons, rows, the final fit to Discord's limits). Pure functions.
 * Shared by ./job-render.ts (states, lists, threads, gallery) and each operation's
 * own finished render (src/services/operations/).
 */
import {
  ButtonStyle,
  ComponentType,
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIEmbed,
  type APIEmbedField,
} from 'discord-api-types/v10';
import { isMessageKey, type MessageKey, type Translator } from '../../../i18n/index.js';
import type { JobRecord, JobState } from '../../store/types.js';
import {
  LIMITS,
  escapeMarkdown,
  fitToDiscordLimits,
  inlineCode,
  isSnowflake,
  safeHttpUrl,
  truncate,
  type ClassicPayload,
} from './limits.js';

export const COLORS = {
  queued: 0x95a5a6,
  processing: 0x5865f2,
  finished: 0x57f287,
  failed: 0xed4245,
} as const;

export const STATE_EMOJI: Record<JobState, string> = {
  submitting: '📤',
  unconfirmed: '❔',
  queued: '⏳',
  processing: '⚙️',
  finished: '✅',
  failed: '❌',
};

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

/** A mention (the payload's `allowed_mentions` is empty, so it pings no one). */
export function mention(userId: string): string {
  return isSnowflake(userId) ? `<@${userId}>` : '';
}

/** Labels that would otherwise read ambiguously next to the job's own fields. */
const PARAM_LABELS: Record<string, string> = {
  task_id: 'Source task',
  taskId: 'Source task',
  parentTaskId: 'Source task',
};

/** `imageUrl` → `Image URL`, `magic_prompt` → `Magic prompt`. */
export function humanizeKey(key: string): string {
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

type ParamKey = Extract<MessageKey, `params.${string}`>;
const isParamKey = (k: string): k is ParamKey => k.startsWith('params.') && isMessageKey(k);

/** A parameter's label in `tr`'s language (a key without a catalog label reads humanized). */
export function paramLabel(key: string, tr: Translator): string {
  const k = `params.${key}`;
  return isParamKey(k) ? tr.t(k) : humanizeKey(key);
}

function paramValue(v: string | number | boolean | string[], tr: Translator): string {
  if (Array.isArray(v)) return v.length === 0 ? '—' : v.map((x) => paramValue(x, tr)).join('\n');
  if (typeof v === 'boolean') return tr.t(v ? 'params.value.yes' : 'params.value.no');
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '—';
  const url = safeHttpUrl(v);
  if (url !== undefined && url.length <= LIMITS.fieldValue) return url;
  return v.trim() === '' ? '—' : truncate(escapeMarkdown(v), LIMITS.fieldValue);
}

/** Parameters written by the member (free text), left out of public messages when AutoMod withheld them. */
export const MEMBER_TEXT_PARAMS: ReadonlySet<string> = new Set(['prompt']);

/** The job's parameters a public message may show (not the member's own text once AutoMod withheld it). */
export function shownParams(job: JobRecord): [string, JobRecord['params'][string]][] {
  return Object.entries(job.params).filter(
    ([key]) => !(job.textWithheld === true && MEMBER_TEXT_PARAMS.has(key)),
  );
}

/** job.params as embed fields in `tr`'s language (long text inline=false, short values inline). */
export function paramFields(job: JobRecord, tr: Translator, max = 15): APIEmbedField[] {
  return shownParams(job)
    .slice(0, max)
    .map(([key, value]) => {
      const text = paramValue(value, tr);
      return { name: paramLabel(key, tr), value: text, inline: text.length <= 40 && !text.includes('\n') };
    });
}

export function taskField(job: JobRecord, tr: Translator): APIEmbedField[] {
  return job.taskId !== undefined && job.taskId !== ''
    ? [{ name: tr.t('job.field.task_id'), value: inlineCode(job.taskId), inline: true }]
    : [];
}

export function footer(job: JobRecord, tr: Translator): NonNullable<APIEmbed['footer']> {
  return { text: tr.t('job.footer', { id: job.id }) };
}

export function withTimestamp(embed: APIEmbed, ms: number): APIEmbed {
  return Number.isFinite(ms) ? { ...embed, timestamp: new Date(ms).toISOString() } : embed;
}

export function actionButton(
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

/** The message as sent: no pings, fitted to Discord's limits. */
export function payload(
  content: string,
  embeds: APIEmbed[],
  components: APIActionRowComponent<APIButtonComponent>[] = [],
): ClassicPayload {
  return fitToDiscordLimits({ content, embeds, components, allowed_mentions: { parse: [] } });
}

export function lines(...parts: (string | undefined | false)[]): string {
  return parts.filter((p): p is string => typeof p === 'string' && p !== '').join('\n');
}
