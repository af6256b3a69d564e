/**
 * Durations, sizes and "how long ago" in a member's language: the localized
 * forms of formatDuration (discord/render/kit), formatBytes (shared/format) and the
 * autocomplete's age of a task.
 */
import type { Translator } from './translate.js';

const pad = (n: number): string => String(n).padStart(2, '0');

/** `42s`, `1m 05s`, `2h 03m 04s` (`2時間03分04秒`, …); negative and non-finite count as 0. */
export function formatDuration(tr: Translator, ms: number): string {
  const total = Number.isFinite(ms) && ms > 0 ? Math.floor(ms / 1000) : 0;
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return tr.t('units.duration.hours', { h, m: pad(m), s: pad(s) });
  if (m > 0) return tr.t('units.duration.minutes', { m, s: pad(s) });
  return tr.t('units.duration.seconds', { s });
}

/** `512 B`, `12 KiB`, `10 MiB`, `7.5 MiB` (`7,5 MiB` in German, …). */
export function formatBytes(tr: Translator, n: number): string {
  const MiB = 1024 * 1024;
  if (n >= MiB) return tr.t('units.bytes.mib', { n: Number((n / MiB).toFixed(n % MiB === 0 ? 0 : 1)) });
  if (n >= 1024) return tr.t('units.bytes.kib', { n: Math.round(n / 1024) });
  return tr.t('units.bytes.b', { n });
}

/** `5 min ago`, `3 h ago`, `4 days ago` for an age in milliseconds. */
export function formatAgo(tr: Translator, ms: number): string {
  const m = Math.round(Math.max(0, ms) / 60_000);
  if (m < 60) return tr.t('units.ago.minutes', { m });
  const h = Math.round(m / 60);
  return h < 48 ? tr.t('units.ago.hours', { h }) : tr.t('units.ago.days', { d: Math.round(h / 24) });
}
