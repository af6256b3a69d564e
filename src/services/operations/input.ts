import type { APIAttachment } from 'discord-api-types/v10';
import { DEFAULT_LOCALE, formatBytes, translator, type Translator } from '../../i18n/index.js';

/** What a member reads, written in their language when the answer is sent. */
export type MemberText = (tr: Translator) => string;

/**
 * An error meant for the user (Sapphire style): `id` identifies the kind for logs
 * and tests, `text` is what the member reads (in their language, from the
 * interaction's locale), shown ephemerally; `message` is the English text.
 * Thrown anywhere, it is translated once, where the interaction is answered.
 */
export class UserError extends Error {
  readonly text: MemberText;
  constructor(
    readonly id: string,
    text: MemberText | string,
  ) {
    super(typeof text === 'string' ? text : text(translator(DEFAULT_LOCALE)));
    this.name = 'UserError';
    this.text = typeof text === 'string' ? () => text : text;
  }
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'image/gif']);

/** Why an attachment cannot be used as an input image, or undefined when it can. */
function imageAttachmentProblem(
  a: Pick<APIAttachment, 'filename' | 'content_type' | 'size'>,
  maxBytes: number,
): MemberText | undefined {
  const type = a.content_type?.split(';')[0]?.trim().toLowerCase();
  if (!type || !IMAGE_TYPES.has(type)) {
    return (tr) => tr.t('input.not_an_image', { name: a.filename, type: type ?? tr.t('input.unknown_type') });
  }
  if (a.size > maxBytes)
    return (tr) =>
      tr.t('input.image_too_large', {
        name: a.filename,
        size: formatBytes(tr, a.size),
        limit: formatBytes(tr, maxBytes),
      });
  return undefined;
}

/** The attachment's URL; a UserError naming the option when it is not a usable image. */
export function requireImage(option: string, a: APIAttachment, maxBytes: number): string {
  const problem = imageAttachmentProblem(a, maxBytes);
  if (problem)
    throw new UserError('invalid_attachment', (tr) =>
      tr.t('input.option_problem', { option, problem: problem(tr) }),
    );
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
