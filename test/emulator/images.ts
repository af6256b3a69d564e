import { createHash } from 'node:crypto';
import type { ImageFormat, UploadedImage } from './types.js';

export function detectImageFormat(bytes: Buffer): ImageFormat | undefined {
  const starts = (...signature: number[]): boolean => signature.every((byte, i) => bytes[i] === byte);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'png';
  if (starts(0xff, 0xd8, 0xff)) return 'jpeg';
  const ascii = bytes.subarray(0, 12).toString('latin1');
  if (ascii.startsWith('GIF87a') || ascii.startsWith('GIF89a')) return 'gif';
  if (ascii.startsWith('RIFF') && ascii.slice(8, 12) === 'WEBP') return 'webp';
  return undefined;
}

/**
 * Strict standard base64 (RFC 4648 alphabet, padded). Node's decoder silently
 * skips junk, which would hide real client bugs such as `=` padding in the
 * middle from encoding a stream chunk by chunk, or the URL-safe alphabet.
 */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value)) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

/** Checks one `images[]` element; returns the record to keep, or the problem message. */
export function readUploadImage(
  value: unknown,
  index: number,
  keepBytes: boolean,
): { image: UploadedImage } | { error: string } {
  const field = `images[${index}]`;
  if (typeof value !== 'string' || value.length === 0) {
    return { error: `${field} must be a non-empty string (base64 image or http(s) URL)` };
  }
  if (/^https?:/i.test(value)) {
    return isHttpUrl(value)
      ? { image: { index, kind: 'url', url: value } }
      : { error: `${field} is not a valid URL` };
  }
  if (value.startsWith('data:')) return { error: `${field} must be bare base64, not a data: URI` };
  if (value.length % 4 !== 0 || !BASE64.test(value)) return { error: `${field} is not valid base64` };
  const bytes = Buffer.from(value, 'base64');
  const format = detectImageFormat(bytes);
  if (!format) return { error: `${field} is not a PNG, JPEG, GIF or WebP image` };
  return {
    image: {
      index,
      kind: 'base64',
      format,
      byteLength: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      ...(keepBytes ? { bytes } : {}),
    },
  };
}
