/**
 * The small helpers every layer uses, in one place: URL check, byte sizes and
 * Discord timestamps.
 */

/** True for an absolute http(s) URL with a host. */
export function isHttpUrl(s: unknown): s is string {
  if (typeof s !== 'string' || s.length === 0) return false;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
}

/** `512 B`, `12 KiB`, `10 MiB`, `7.5 MiB`. */
export function formatBytes(n: number): string {
  const MiB = 1024 * 1024;
  if (n >= MiB) return `${(n / MiB).toFixed(n % MiB === 0 ? 0 : 1)} MiB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KiB`;
  return `${n} B`;
}

/**
 * Discord timestamp markup, `style` R (relative), F (full date) etc. `roundUp` for
 * "try again at" times, so the shown time is never before the real one.
 */
export function discordTimestamp(
  ms: number,
  style: 'R' | 'F' | 'f' | 'D' | 'T' = 'R',
  roundUp = false,
): string {
  const s = roundUp ? Math.ceil(ms / 1000) : Math.floor(ms / 1000);
  return `<t:${s}:${style}>`;
}
