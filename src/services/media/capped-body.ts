import { MediaResponseTooLargeError } from './errors.js';

/** What undici hands us as a response body: bytes, destroyable. */
export interface ResponseBody extends AsyncIterable<Uint8Array | Buffer | string> {
  destroy(error?: Error): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** Drops the rest of a body: undici reports the abort as an 'error' nobody else listens to. */
function discard(body: ResponseBody): void {
  body.on('error', () => undefined);
  body.destroy();
}

/**
 * Reads a response body as UTF-8 text, at most `limitBytes`. A larger body (announced by
 * Content-Length or found while reading) is destroyed unread, so the rest never sits in
 * memory, and MediaResponseTooLargeError is thrown (it carries no byte of the body).
 */
export async function readCappedText(
  body: ResponseBody,
  limitBytes: number,
  contentLength: string | string[] | undefined,
  status: number,
): Promise<string> {
  const announced = Number(Array.isArray(contentLength) ? contentLength[0] : contentLength);
  if (Number.isFinite(announced) && announced > limitBytes) {
    discard(body);
    throw new MediaResponseTooLargeError(limitBytes, status);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    size += buf.length;
    if (size > limitBytes) {
      discard(body);
      throw new MediaResponseTooLargeError(limitBytes, status);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}
