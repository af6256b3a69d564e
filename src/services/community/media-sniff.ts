/**
 * What a result file really is, from its first bytes (magic numbers), whatever its URL's
 * extension or its server's Content-Type say. The gallery re-hosts only files whose bytes
 * are a media type its job's operation produces, and names them after that type.
 */

export type MediaKind = 'image' | 'audio' | 'video';

export interface MediaType {
  kind: MediaKind;
  /** File extension the re-hosted copy is named with. */
  ext: string;
  contentType: string;
}

const T = {
  png: { kind: 'image', ext: 'png', contentType: 'image/png' },
  jpeg: { kind: 'image', ext: 'jpg', contentType: 'image/jpeg' },
  gif: { kind: 'image', ext: 'gif', contentType: 'image/gif' },
  webp: { kind: 'image', ext: 'webp', contentType: 'image/webp' },
  mp3: { kind: 'audio', ext: 'mp3', contentType: 'audio/mpeg' },
  m4a: { kind: 'audio', ext: 'm4a', contentType: 'audio/mp4' },
  wav: { kind: 'audio', ext: 'wav', contentType: 'audio/wav' },
  ogg: { kind: 'audio', ext: 'ogg', contentType: 'audio/ogg' },
  flac: { kind: 'audio', ext: 'flac', contentType: 'audio/flac' },
  mp4: { kind: 'video', ext: 'mp4', contentType: 'video/mp4' },
  mov: { kind: 'video', ext: 'mov', contentType: 'video/quicktime' },
  webm: { kind: 'video', ext: 'webm', contentType: 'video/webm' },
} as const satisfies Record<string, MediaType>;

const ascii = (b: Uint8Array, at: number, len: number): string =>
  b.length >= at + len ? String.fromCharCode(...b.subarray(at, at + len)) : '';
const startsWith = (b: Uint8Array, sig: readonly number[], at = 0): boolean =>
  b.length >= at + sig.length && sig.every((v, i) => b[at + i] === v);

/** ISO base media (MP4 family): `....ftyp<brand>`; the major brand tells audio and QuickTime apart. */
function isoMedia(b: Uint8Array): MediaType | undefined {
  if (ascii(b, 4, 4) !== 'ftyp') return undefined;
  const brand = ascii(b, 8, 4);
  if (brand === 'M4A ' || brand === 'M4B ' || brand === 'M4P ') return T.m4a;
  if (brand === 'qt  ') return T.mov;
  return T.mp4;
}

/** An MPEG audio frame header: 11 sync bits, a valid version, layer III, a valid bitrate and sample rate. */
function mpegAudioFrame(b: Uint8Array): boolean {
  if (b.length < 4 || b[0] !== 0xff || ((b[1] ?? 0) & 0xe0) !== 0xe0) return false;
  const version = ((b[1] ?? 0) >> 3) & 0b11;
  const layer = ((b[1] ?? 0) >> 1) & 0b11;
  const bitrate = ((b[2] ?? 0) >> 4) & 0xf;
  const rate = ((b[2] ?? 0) >> 2) & 0b11;
  return version !== 0b01 && layer === 0b01 && bitrate !== 0 && bitrate !== 0xf && rate !== 0b11;
}

/** The media type the first bytes announce (give the whole file or at least its first 16 bytes). */
export function sniffMedia(b: Uint8Array): MediaType | undefined {
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return T.png;
  if (startsWith(b, [0xff, 0xd8, 0xff])) return T.jpeg;
  if (ascii(b, 0, 6) === 'GIF87a' || ascii(b, 0, 6) === 'GIF89a') return T.gif;
  if (ascii(b, 0, 4) === 'RIFF') {
    if (ascii(b, 8, 4) === 'WEBP') return T.webp;
    if (ascii(b, 8, 4) === 'WAVE') return T.wav;
    return undefined;
  }
  if (ascii(b, 0, 3) === 'ID3' || mpegAudioFrame(b)) return T.mp3;
  if (ascii(b, 0, 4) === 'OggS') return T.ogg;
  if (ascii(b, 0, 4) === 'fLaC') return T.flac;
  if (startsWith(b, [0x1a, 0x45, 0xdf, 0xa3])) return T.webm;
  return isoMedia(b);
}
