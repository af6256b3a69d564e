/** sniffMedia: what a result file is from its first bytes, whatever its name says. */
import { describe, expect, it } from 'vitest';
import { sniffMedia } from '../src/services/community/media-sniff.js';

const bytes = (...parts: (string | number[])[]): Uint8Array =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? [...p].map((c) => c.charCodeAt(0)) : p)));
const box = (brand: string) => bytes([0, 0, 0, 0x20], 'ftyp', brand, [0, 0, 0, 0]);

describe('sniffMedia', () => {
  it.each([
    ['png', bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), 'image', 'png'],
    ['jpeg', bytes([0xff, 0xd8, 0xff, 0xe0]), 'image', 'jpg'],
    ['gif', bytes('GIF89a', [1, 0]), 'image', 'gif'],
    ['webp', bytes('RIFF', [0, 0, 0, 0], 'WEBPVP8 '), 'image', 'webp'],
    ['mp3 with ID3', bytes('ID3', [4, 0, 0]), 'audio', 'mp3'],
    ['mp3 frame', bytes([0xff, 0xfb, 0x90, 0x64]), 'audio', 'mp3'],
    ['wav', bytes('RIFF', [0, 0, 0, 0], 'WAVEfmt '), 'audio', 'wav'],
    ['ogg', bytes('OggS', [0, 2]), 'audio', 'ogg'],
    ['flac', bytes('fLaC', [0]), 'audio', 'flac'],
    ['m4a', box('M4A '), 'audio', 'm4a'],
    ['mp4', box('isom'), 'video', 'mp4'],
    ['mov', box('qt  '), 'video', 'mov'],
    ['webm', bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f]), 'video', 'webm'],
  ])('%s', (_name, head, kind, ext) => {
    expect(sniffMedia(head)).toMatchObject({ kind, ext });
  });

  it.each([
    ['an HTML page', bytes('<!doctype html><html>')],
    ['a PDF', bytes('%PDF-1.7\n')],
    ['a ZIP', bytes('PK', [3, 4, 0, 0])],
    ['an AVI (RIFF but neither WebP nor WAVE)', bytes('RIFF', [0, 0, 0, 0], 'AVI LIST')],
    ['sync bits of no MPEG audio frame (reserved version)', bytes([0xff, 0xeb, 0x90, 0x64])],
    ['nothing', bytes()],
  ])('%s is no media', (_name, head) => {
    expect(sniffMedia(head)).toBeUndefined();
  });
});
