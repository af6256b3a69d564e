import { createHash, randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  JPEG_QUALITY,
  PhotoCleanError,
  PhotoCleaner,
  isLosslessWebp,
} from '../src/services/training/clean-photo.js';
import {
  CAMERA_MAKE,
  GPS_LATITUDE,
  jpegSegments,
  metadataFound,
  phoneJpeg,
  pngChunks,
  pngWithMetadata,
} from './helpers/photos.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const raw = (b: Buffer) => sharp(b).raw().toBuffer({ resolveWithObject: true });

describe('PhotoCleaner', () => {
  const cleaner = new PhotoCleaner();

  it('a phone JPEG (orientation 6, camera, GPS, XMP) comes out turned upright, as a JPEG with no metadata at all', async () => {
    const input = await phoneJpeg(300, 200, 6);
    // The fixture carries what a phone photo does.
    const inMeta = await sharp(input).metadata();
    expect(inMeta.orientation).toBe(6);
    expect(inMeta.exif?.includes(Buffer.from(CAMERA_MAKE))).toBe(true);
    expect(inMeta.xmp).toBeDefined();
    expect(metadataFound(input)).toEqual(
      expect.arrayContaining(['Exif\0\0', 'http://ns.adobe.com/xap/1.0/', CAMERA_MAKE]),
    );
    expect(GPS_LATITUDE).toBeTruthy();

    const out = await cleaner.clean(input);
    expect(out).toMatchObject({ format: 'jpeg', contentType: 'image/jpeg', width: 200, height: 300 });
    expect(out.sha256).toBe(sha(out.bytes));
    expect(metadataFound(out.bytes)).toEqual([]);
    // Only the JFIF header and the image's own tables: no APP1 (EXIF/XMP), APP2 (ICC), COM.
    const markers = jpegSegments(out.bytes).map((s) => s.marker);
    expect(markers.filter((m) => m === 0xe1 || m === 0xe2 || m === 0xfe)).toEqual([]);
    const meta = await sharp(out.bytes).metadata();
    expect(meta.exif).toBeUndefined();
    expect(meta.xmp).toBeUndefined();
    expect(meta.icc).toBeUndefined();
    expect(meta.orientation).toBeUndefined();
    // Turned 90° clockwise: the stored left half (red) is now the top.
    const { data, info } = await raw(out.bytes);
    const at = (x: number, y: number) =>
      data.subarray((y * info.width + x) * 3, (y * info.width + x) * 3 + 3);
    expect(at(100, 20)[0]).toBeGreaterThan(180); // top: red
    expect(at(100, 280)[2]).toBeGreaterThan(180); // bottom: blue
  });

  it('JPEG quality is at least 90', () => {
    expect(JPEG_QUALITY).toBeGreaterThanOrEqual(90);
  });

  it('a PNG with tEXt, iTXt, zTXt and eXIf chunks comes out without them, with identical pixels', async () => {
    const { png, pixels } = await pngWithMetadata(64, 48);
    expect(pngChunks(png)).toEqual(expect.arrayContaining(['tEXt', 'iTXt', 'zTXt', 'eXIf']));
    const out = await cleaner.clean(png);
    expect(out.format).toBe('png');
    const chunks = pngChunks(out.bytes);
    for (const c of ['tEXt', 'iTXt', 'zTXt', 'eXIf', 'iCCP', 'tIME']) expect(chunks).not.toContain(c);
    expect(metadataFound(out.bytes)).toEqual([]);
    const { data, info } = await raw(out.bytes);
    expect([info.width, info.height, info.channels]).toEqual([64, 48, 3]);
    expect(data.equals(pixels)).toBe(true);
  });

  it('a 16-bit PNG stays 16-bit with the same samples', async () => {
    const samples = randomBytes(20 * 10 * 3 * 2);
    const png16 = await sharp(samples, { raw: { width: 20, height: 10, channels: 3 } })
      .toColourspace('rgb16')
      .png()
      .toBuffer();
    const before = await sharp(png16).raw({ depth: 'ushort' }).toBuffer();
    const out = await cleaner.clean(png16);
    expect((await sharp(out.bytes).metadata()).depth).toBe('ushort');
    expect((await sharp(out.bytes).raw({ depth: 'ushort' }).toBuffer()).equals(before)).toBe(true);
  });

  it('scales the long edge down to 2048 (3000×2000 → 2048×1365), never up', async () => {
    const big = await sharp({
      create: { width: 3000, height: 2000, channels: 3, background: { r: 10, g: 120, b: 200 } },
    })
      .jpeg()
      .toBuffer();
    const out = await cleaner.clean(big);
    expect([out.width, out.height]).toEqual([2048, 1365]);
    const m = await sharp(out.bytes).metadata();
    expect([m.width, m.height]).toEqual([2048, 1365]);

    const tall = await sharp({ create: { width: 1000, height: 4096, channels: 3, background: '#888' } })
      .png()
      .toBuffer();
    expect(await cleaner.clean(tall)).toMatchObject({ width: 500, height: 2048, format: 'png' });

    const small = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#123' } })
      .png()
      .toBuffer();
    expect(await cleaner.clean(small)).toMatchObject({ width: 640, height: 480 });
  });

  it('WebP stays WebP: lossless stays lossless (same pixels), lossy stays lossy', async () => {
    const pixels = randomBytes(40 * 30 * 3);
    const lossless = await sharp(pixels, { raw: { width: 40, height: 30, channels: 3 } })
      .webp({ lossless: true })
      .withExif({ IFD0: { Make: CAMERA_MAKE } })
      .toBuffer();
    expect(isLosslessWebp(lossless)).toBe(true);
    const a = await cleaner.clean(lossless);
    expect(a.format).toBe('webp');
    expect(isLosslessWebp(a.bytes)).toBe(true);
    expect(metadataFound(a.bytes)).toEqual([]);
    expect((await raw(a.bytes)).data.equals(pixels)).toBe(true);

    const lossy = await sharp(pixels, { raw: { width: 40, height: 30, channels: 3 } })
      .webp({ quality: 80 })
      .toBuffer();
    expect(isLosslessWebp(lossy)).toBe(false);
    const b = await cleaner.clean(lossy);
    expect(b.format).toBe('webp');
    expect(isLosslessWebp(b.bytes)).toBe(false);
  });

  it('GIF stays GIF, first frame only, with its pixels when not scaled', async () => {
    // Two 16×16 frames: red, then grey.
    const frames = Buffer.alloc(16 * 32 * 3, 200);
    for (let i = 0; i < 16 * 16 * 3; i += 3) frames.fill(0, i, i + 3).writeUInt8(255, i);
    const input = await sharp(frames, { raw: { width: 16, height: 32, channels: 3, pageHeight: 16 } })
      .gif()
      .toBuffer();
    expect((await sharp(input).metadata()).pages).toBe(2);
    const out = await cleaner.clean(input);
    expect(out).toMatchObject({ format: 'gif', contentType: 'image/gif', width: 16, height: 16 });
    expect((await sharp(out.bytes).metadata()).pages ?? 1).toBe(1);
    const first = await sharp(input).raw().toBuffer();
    expect((await sharp(out.bytes).raw().toBuffer()).equals(first)).toBe(true);
  });

  it('refuses what it cannot decode, and a decompression bomb before decoding it', async () => {
    await expect(cleaner.clean(Buffer.from('not an image at all'))).rejects.toBeInstanceOf(PhotoCleanError);
    const truncated = (await phoneJpeg()).subarray(0, 200);
    await expect(cleaner.clean(truncated)).rejects.toBeInstanceOf(PhotoCleanError);

    const strict = new PhotoCleaner({ maxPixels: 1_000_000 });
    const wide = await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    await expect(strict.clean(wide)).rejects.toThrow(/over the 1 megapixel limit/);
  });

  it('cleans one photo at a time across all callers, reading each original only when its turn comes', async () => {
    const one = new PhotoCleaner({ slots: 1 });
    const inputs = await Promise.all(
      Array.from({ length: 6 }, () =>
        sharp(randomBytes(300 * 200 * 3), { raw: { width: 300, height: 200, channels: 3 } })
          .jpeg()
          .toBuffer(),
      ),
    );
    let reading = 0;
    let maxReading = 0;
    const results = await Promise.all(
      inputs.map((b) =>
        one.cleanFrom(async () => {
          reading++;
          maxReading = Math.max(maxReading, reading, one.load.running);
          await new Promise((r) => setTimeout(r, 5));
          reading--;
          return b;
        }),
      ),
    );
    expect(results).toHaveLength(6);
    expect(maxReading).toBe(1);
    expect(one.load).toEqual({ running: 0, waiting: 0 });
  });
});
