// Dates as the Discord client writes them: message times ("Today at 6:41 PM") and the
// `<t:unix:style>` timestamp styles, in the member's Discord language (i18n.js).

import { t, uiLocale } from './i18n.js';

const formatters = new Map();
/** An Intl formatter for the member's language (made once per language). */
const fmt = (key, make) => {
  const id = `${uiLocale()}:${key}`;
  if (!formatters.has(id)) formatters.set(id, make(uiLocale()));
  return formatters.get(id);
};
const dateFmt = (key, opts) => ({
  format: (d) => fmt(key, (l) => new Intl.DateTimeFormat(l, opts)).format(d),
});
const SHORT_TIME = dateFmt('t', { hour: 'numeric', minute: '2-digit' });
const LONG_TIME = dateFmt('T', { hour: 'numeric', minute: '2-digit', second: '2-digit' });
const SHORT_DATE = dateFmt('d', { day: '2-digit', month: '2-digit', year: 'numeric' });
const LONG_DATE = dateFmt('D', { day: 'numeric', month: 'long', year: 'numeric' });
const WEEKDAY = dateFmt('w', { weekday: 'long' });
const RELATIVE = {
  format: (n, unit) => fmt('R', (l) => new Intl.RelativeTimeFormat(l, { numeric: 'auto' })).format(n, unit),
};

const UNITS = [
  ['year', 365 * 86400e3],
  ['month', 30 * 86400e3],
  ['day', 86400e3],
  ['hour', 3600e3],
  ['minute', 60e3],
  ['second', 1e3],
];

/** "in 5 minutes", "3 hours ago". */
export function relativeTime(ms, now = Date.now()) {
  const diff = ms - now;
  for (const [unit, size] of UNITS) {
    if (Math.abs(diff) >= size || unit === 'second') return RELATIVE.format(Math.round(diff / size), unit);
  }
  return '';
}

/** `<t:unix:style>`: t 4:20 PM · T 4:20:30 PM · d 11/28/2018 · D November 28, 2018 · f (default) · F · R. */
export function formatTimestamp(unix, style = 'f', now = Date.now()) {
  const d = new Date(unix * 1000);
  if (Number.isNaN(d.getTime())) return 'Invalid Date';
  switch (style) {
    case 't':
      return SHORT_TIME.format(d);
    case 'T':
      return LONG_TIME.format(d);
    case 'd':
      return SHORT_DATE.format(d);
    case 'D':
      return LONG_DATE.format(d);
    case 'F':
      return `${WEEKDAY.format(d)}, ${LONG_DATE.format(d)} ${SHORT_TIME.format(d)}`;
    case 'R':
      return relativeTime(d.getTime(), now);
    default:
      return `${LONG_DATE.format(d)} ${SHORT_TIME.format(d)}`;
  }
}

/** The full date a timestamp shows on hover. */
export const fullDate = (ms) => formatTimestamp(Math.floor(ms / 1000), 'F');

const sameDay = (a, b) =>
  a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();

/** A message's time: "Today at 6:41 PM", "Yesterday at …", else the short date and time. */
export function messageTime(iso, now = new Date()) {
  const d = new Date(iso);
  const yesterday = new Date(now);
  yesterday.setDate(now.getDate() - 1);
  if (sameDay(d, now)) return t('todayAt', { time: SHORT_TIME.format(d) });
  if (sameDay(d, yesterday)) return t('yesterdayAt', { time: SHORT_TIME.format(d) });
  return `${SHORT_DATE.format(d)} ${SHORT_TIME.format(d)}`;
}

export const shortTime = (iso) => SHORT_TIME.format(new Date(iso));
