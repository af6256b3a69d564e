import type { Attachment } from 'discord.js';
import { UserError } from './types.js';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'image/gif']);

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(n % (1024 * 1024) === 0 ? 0 : 1)} MiB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KiB`;
  return `${n} B`;
}

/** Why an attachment cannot be used as an input image, or undefined when it can. */
export function imageAttachmentProblem(
  a: Pick<Attachment, 'name' | 'contentType' | 'size'>,
  maxBytes: number,
): string | undefined {
  const type = a.contentType?.split(';')[0]?.trim().toLowerCase();
  if (!type || !IMAGE_TYPES.has(type)) {
    return `${a.name} is not an image (${type ?? 'unknown type'}); send a PNG, JPEG, WebP or GIF`;
  }
  if (a.size > maxBytes)
    return `${a.name} is ${formatBytes(a.size)}, over the ${formatBytes(maxBytes)} limit`;
  return undefined;
}

/** Throws a UserError naming the option when the attachment is not a usable image. */
export function requireImage(option: string, a: Attachment, maxBytes: number): string {
  const problem = imageAttachmentProblem(a, maxBytes);
  if (problem) throw new UserError('invalid_attachment', `\`${option}\`: ${problem}.`);
  return a.url;
}

export function isHttpUrlString(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
