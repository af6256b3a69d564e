import { MediaRequestInvalidError } from './errors.js';
import type { PhotoSource } from './types.js';

/** A photo could not be read while the upload body was being streamed. */
export class PhotoSourceError extends MediaRequestInvalidError {
  constructor(
    readonly index: number,
    cause: unknown,
  ) {
    super([
      `photo ${index + 1} could not be read: ${cause instanceof Error ? cause.message : String(cause)}`,
    ]);
  }
}

/**
 * The `/ai-photo-upload` JSON body as a stream: `{…meta,"images":["<b64>",…]}`.
 * Each photo is opened only when its turn comes and encoded chunk by chunk, so
 * memory stays at a few chunks whatever the number and size of the photos.
 */
export async function* photoUploadBody(
  meta: Record<string, unknown>,
  photos: readonly PhotoSource[],
  format: 'base64' | 'url',
): AsyncGenerator<string> {
  const head = JSON.stringify(meta).slice(0, -1);
  yield `${head}${head.length > 1 ? ',' : ''}"images":[`;
  for (const [i, photo] of photos.entries()) {
    if (i > 0) yield ',';
    if (format === 'url') {
      yield JSON.stringify(photo.url);
      continue;
    }
    if (!photo.open) throw new PhotoSourceError(i, new Error('no byte source'));
    yield '"';
    try {
      yield* base64Chunks(await photo.open());
    } catch (err) {
      throw new PhotoSourceError(i, err);
    }
    yield '"';
  }
  yield ']}';
}

/** Base64 of a byte stream, carrying the 0-2 bytes that do not fill a 3-byte group to the next chunk. */
export async function* base64Chunks(source: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let carry: Buffer = Buffer.alloc(0);
  for await (const chunk of source) {
    const buf =
      carry.length > 0
        ? Buffer.concat([carry, chunk])
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const usable = buf.length - (buf.length % 3);
    if (usable > 0) yield buf.subarray(0, usable).toString('base64');
    carry = Buffer.from(buf.subarray(usable));
  }
  if (carry.length > 0) yield carry.toString('base64');
}
