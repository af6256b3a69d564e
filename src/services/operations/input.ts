import type { APIAttachment } from 'discord-api-types/v10';
import { formatBytes } from '../shared/format.js';

/**
 * An error meant for the user (Sapphire style): `id` identifies the kind for logs
 * and tests, `message` is what the user reads, shown ephemerally.
 */
export class UserError extends Error {
  constructor(
    readonly id: string,
    message: string,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'image/gif']);

/** Why an attachment cannot be used as an input image, or undefined when it can. */
function imageAttachmentProblem(
  a: Pick<APIAttachment, 'filename' | 'content_type' | 'size'>,
  maxBytes: number,
): string | undefined {
  const type = a.content_type?.split(';')[0]?.trim().toLowerCase();
  if (!type || !IMAGE_TYPES.has(type)) {
    return `${a.filename} is not an image (${type ?? 'unknown type'}); send a PNG, JPEG, WebP or GIF`;
  }
  if (a.size > maxBytes)
    return `${a.filename} is ${formatBytes(a.size)}, over the ${formatBytes(maxBytes)} limit`;
  return undefined;
}

/** The attachment's URL; a UserError naming the option when it is not a usable image. */
export function requireImage(option: string, a: APIAttachment, maxBytes: number): string {
  const problem = imageAttachmentProblem(a, maxBytes);
  if (problem) throw new UserError('invalid_attachment', `\`${option}\`: ${problem}.`);
  return a.url;
}

/** Stored parameter readers: a value of the expected type, else undefined. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
export const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;
export const bool = (v: unknown): boolean | undefined => (typeof v === 'boolean' ? v : undefined);
export function oneOf<T extends string>(values: readonly T[], v: unknown): T | undefined {
  return typeof v === 'string' && (values as readonly string[]).includes(v) ? (v as T) : undefined;
}

/** Drops undefined fields: the service should see only what the member set. */
export function compact<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function webhookFields(w: { url: string; secret: string } | undefined): Record<string, string> {
  return w ? { webhook_url: w.url, webhook_secret: w.secret } : {};
}
