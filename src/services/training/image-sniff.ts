/**
 * Image type checks for training photos: the content type Discord declares for
 * an attachment, and the magic bytes at the start of the downloaded file. A
 * photo must pass both (a renamed PDF declares image/png but does not start
 * like one).
 */

export const IMAGE_FORMATS = ['png', 'jpeg', 'gif', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

/** Bytes needed to recognise every supported format (WebP: `RIFF????WEBP`). */
export const SNIFF_BYTES = 12;

const CONTENT_TYPES: ReadonlyMap<string, ImageFormat> = new Map([
  ['image/png', 'png'],
  ['image/jpeg', 'jpeg'],
  ['image/jpg', 'jpeg'],
  ['image/pjpeg', 'jpeg'],
  ['image/gif', 'gif'],
  ['image/webp', 'webp'],
]);

export const SUPPORTED_FORMATS_TEXT = 'PNG, JPEG, GIF or WebP';

/** `image/png; charset=…` → `image/png`; undefined when absent. */
export function baseContentType(contentType: string | null | undefined): string | undefined {
  const t = contentType?.split(';')[0]?.trim().toLowerCase();
  return t ? t : undefined;
}

/** The supported format a declared content type names, or undefined. */
export function formatOfContentType(contentType: string | null | undefined): ImageFormat | undefined {
  const t = baseContentType(contentType);
  return t === undefined ? undefined : CONTENT_TYPES.get(t);
}

const startsWith = (b: Uint8Array, sig: readonly number[], at = 0): boolean =>
  b.length >= at + sig.length && sig.every((v, i) => b[at + i] === v);

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];
const GIF87 = [0x47, 0x49, 0x46, 0x38, 0x37, 0x61];
const GIF89 = [0x47, 0x49, 0x46, 0x38, 0x39, 0x61];
const RIFF = [0x52, 0x49, 0x46, 0x46];
const WEBP = [0x57, 0x45, 0x42, 0x50];

/**
 * The image format the first bytes of a file announce, or undefined when they
 * are not those of a PNG, JPEG, GIF or WebP (give at least SNIFF_BYTES).
 */
export function sniffImage(head: Uint8Array): ImageFormat | undefined {
  if (startsWith(head, PNG)) return 'png';
  if (startsWith(head, JPEG)) return 'jpeg';
  if (startsWith(head, GIF87) || startsWith(head, GIF89)) return 'gif';
  if (startsWith(head, RIFF) && startsWith(head, WEBP, 8)) return 'webp';
  return undefined;
}
