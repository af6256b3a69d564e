import { createHmac } from 'node:crypto';
import type { JsonObject } from './json.js';
import { pngSize } from './messages.js';
import type { FakeState } from './state.js';
import type { AttachmentInput, AttachmentRef, FakeAttachment, StoredAttachment } from './types.js';

/** Attachments on the fake CDN: stored bytes and their signed (`ex/is/hm`) Discord links. */

export const toBuffer = (bytes: Buffer | Uint8Array | string): Buffer =>
  typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);

export const guessContentType = (filename: string): string => {
  const ext = filename.toLowerCase().split('.').pop() ?? '';
  const map: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    webp: 'image/webp',
    mp3: 'audio/mpeg',
    wav: 'audio/wav',
    ogg: 'audio/ogg',
    flac: 'audio/flac',
    mp4: 'video/mp4',
    mov: 'video/quicktime',
    webm: 'video/webm',
    txt: 'text/plain; charset=utf-8',
    json: 'application/json; charset=utf-8',
    zip: 'application/zip',
  };
  return map[ext] ?? 'application/octet-stream';
};

/** The `hm` signature of a link (HMAC of id, expiry and issue time). */
export function cdnSignature(s: FakeState, id: string, ex: string, is: string): string {
  return createHmac('sha256', s.cdnSecret).update(`${id}:${ex}:${is}`).digest('hex');
}

/** CDN and media-proxy links valid for 24 h from the fake clock's now. */
export function signCdn(
  s: FakeState,
  id: string,
  filename: string,
  channelId: string,
): { url: string; proxyUrl: string } {
  const issued = Math.floor(s.clock.now() / 1000);
  const expires = issued + 24 * 3600;
  const ex = expires.toString(16);
  const is = issued.toString(16);
  const hm = cdnSignature(s, id, ex, is);
  const tail = `attachments/${channelId}/${id}/${encodeURIComponent(filename)}?ex=${ex}&is=${is}&hm=${hm}&`;
  return { url: `${s.baseUrl}/cdn/${tail}`, proxyUrl: `${s.baseUrl}/media/${tail}` };
}

export function attachmentJson(
  s: FakeState,
  a: StoredAttachment,
  extra: { description?: string; width?: number; height?: number } = {},
): JsonObject {
  const { url, proxyUrl } = signCdn(s, a.id, a.filename, a.channelId);
  const out: JsonObject = {
    id: a.id,
    filename: a.filename,
    size: a.bytes.length,
    url,
    proxy_url: proxyUrl,
    content_type: a.contentType,
  };
  const dims =
    extra.width !== undefined && extra.height !== undefined
      ? { width: extra.width, height: extra.height }
      : pngSize(a.bytes);
  if (dims) {
    out['width'] = dims.width;
    out['height'] = dims.height;
  }
  if (extra.description !== undefined) out['description'] = extra.description;
  if (a.ephemeral) out['ephemeral'] = true;
  return out;
}

/** Registers bytes on the fake CDN and returns the Discord attachment object. */
export function addAttachment(
  s: FakeState,
  input: AttachmentInput,
  channelId?: string,
): FakeAttachment & JsonObject {
  const stored: StoredAttachment = {
    id: s.snowflakes.next(),
    filename: input.filename,
    contentType: input.contentType ?? guessContentType(input.filename),
    bytes: toBuffer(input.bytes),
    channelId: channelId ?? s.defaultChannelId,
    ephemeral: input.ephemeral ?? true,
  };
  s.attachments.set(stored.id, stored);
  const extra: { description?: string; width?: number; height?: number } = {};
  if (input.description !== undefined) extra.description = input.description;
  if (input.width !== undefined) extra.width = input.width;
  if (input.height !== undefined) extra.height = input.height;
  const json = attachmentJson(s, stored, extra);
  return {
    ...json,
    id: stored.id,
    filename: stored.filename,
    size: stored.bytes.length,
    content_type: stored.contentType,
    url: String(json['url']),
    proxy_url: String(json['proxy_url']),
  };
}

/** An attachment for an interaction: a registered id, or an inline input registered now. */
export function resolveAttachment(s: FakeState, ref: AttachmentRef, channelId: string): JsonObject {
  if (typeof ref === 'string') {
    const a = s.attachments.get(ref);
    if (!a) throw new Error(`fake-discord: unknown attachment id ${ref} (register it with addAttachment)`);
    return attachmentJson(s, a);
  }
  return addAttachment(s, ref, channelId);
}
