/**
 * Cleans a training photo before it leaves the bot: auto-oriented from its EXIF
 * orientation, scaled down to 2048 px on the long edge (never up), and
 * re-encoded in its own format with no metadata at all (no EXIF, GPS, XMP, ICC
 * profile, comments or PNG text chunks: sharp writes none unless asked to).
 *
 * sharp (libvips) because it is the well-kept Node image library whose
 * prebuilt binaries come inside its npm package (no download, no compiler),
 * it runs each image on libuv's thread pool (the event loop only schedules),
 * and it decodes demand-driven with shrink-on-load, so a 24 MP JPEG never
 * sits in memory as a 24 MP bitmap.
 *
 * Per format:
 * - JPEG → JPEG, quality 92 (the contract asks ≥ 90).
 * - PNG → PNG, lossless: the same pixels (16-bit stays 16-bit; a palette PNG
 *   becomes truecolour, bigger but exact). An embedded colour profile is
 *   applied (converted to sRGB) and dropped, like every other profile: sRGB and
 *   untagged images keep their pixel values exactly; a wide-gamut one keeps its
 *   look rather than numbers that no longer mean the same colours without it.
 * - WebP → WebP: lossless if the original was (its `VP8L` bitstream), else
 *   quality 92.
 * - GIF → GIF, first frame only. The contract says "in its own format", and a
 *   GIF is already at most 256 colours, so a PNG would not bring back what the
 *   GIF lost; an unscaled GIF keeps its palette (`reuse`) and so its exact
 *   pixels. Only the first frame: a training photo is one still of the subject
 *   (an animation would be many near-copies, or other people), and it keeps the
 *   upload small.
 *
 * Bounded across the whole process: at most `slots` photos are read and
 * cleaned at once (default 1; every submission of every member queues on the
 * same cleaner), each with libvips using `threads` threads, and sharp's
 * operation cache is off, so memory stays at about `slots` × (one original +
 * its working set) whatever the number of photos, and the thread pool keeps
 * threads free for file and DNS work. A pixel limit refuses decompression
 * bombs before they are decoded. What stays on the event loop (hashing the
 * output) yields every MiB.
 */
import type SharpFn from 'sharp';
import type { Metadata, OutputInfo, Sharp } from 'sharp';
import { sha256Hex } from '../shared/hash.js';
import type { ImageFormat } from './image-sniff.js';

export const MAX_LONG_EDGE = 2048;
export const JPEG_QUALITY = 92;
export const WEBP_QUALITY = 92;
/** 100 megapixels: far over any photo that fits the upload size limit, far under a bomb. */
export const DEFAULT_MAX_PIXELS = 100_000_000;

export interface CleanedPhoto {
  bytes: Buffer;
  format: ImageFormat;
  contentType: string;
  width: number;
  height: number;
  /** SHA-256 (hex) of `bytes`: what is sent, what the consent record keeps. */
  sha256: string;
}

/** The photo could not be decoded (corrupt, not what its first bytes said, or over the pixel limit). */
export class PhotoCleanError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PhotoCleanError';
  }
}

export interface PhotoCleanerOptions {
  /** Photos cleaned at once in this process (default 1). */
  slots?: number;
  /** libvips threads per photo (sharp.concurrency, process-wide; default 1). */
  threads?: number;
  /** Refuse inputs with more pixels than this (default DEFAULT_MAX_PIXELS). */
  maxPixels?: number;
  /** Long-edge cap (default MAX_LONG_EDGE). */
  maxLongEdge?: number;
}

const CONTENT_TYPE: Record<ImageFormat, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};

/** Cleans photos one slot at a time; create one per process and share it. */
type SharpModule = typeof SharpFn;

export class PhotoCleaner {
  private readonly slots: number;
  private readonly threads: number;
  private readonly maxPixels: number;
  private readonly maxLongEdge: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private loaded: Promise<SharpModule> | undefined;

  constructor(opts: PhotoCleanerOptions = {}) {
    this.slots = Math.max(1, opts.slots ?? 1);
    this.threads = Math.max(1, opts.threads ?? 1);
    this.maxPixels = opts.maxPixels ?? DEFAULT_MAX_PIXELS;
    this.maxLongEdge = opts.maxLongEdge ?? MAX_LONG_EDGE;
  }

  /** sharp and libvips, loaded at the first photo (a bot that never cleans one never pays for them). */
  private sharp(): Promise<SharpModule> {
    this.loaded ??= import('sharp').then(({ default: sharp }) => {
      // Process-wide libvips settings: no cache of decoded images between calls (each photo is
      // seen once), and few threads per image (the slots bound how many run).
      sharp.cache(false);
      sharp.concurrency(this.threads);
      return sharp;
    });
    return this.loaded;
  }

  /** Photos being cleaned now, and waiting for a slot (metrics, tests). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /**
   * Takes a slot, then reads the original with `read` (so originals waiting
   * for their turn are not held in memory) and cleans it.
   */
  async cleanFrom(read: () => Promise<Buffer>): Promise<CleanedPhoto> {
    await this.acquire();
    try {
      return await this.cleanNow(await read());
    } finally {
      this.release();
    }
  }

  /** Cleans bytes already in memory (taking a slot like cleanFrom). */
  clean(input: Buffer): Promise<CleanedPhoto> {
    return this.cleanFrom(() => Promise.resolve(input));
  }

  private async cleanNow(input: Buffer): Promise<CleanedPhoto> {
    const sharp = await this.sharp();
    let meta: Metadata;
    try {
      // The header only: the size is checked below, with a clear reason, before anything is decoded.
      meta = await sharp(input, { limitInputPixels: false }).metadata();
    } catch (err) {
      throw new PhotoCleanError(`it could not be read as an image (${errorText(err)})`, { cause: err });
    }
    const format = formatOf(meta.format);
    if (!format) throw new PhotoCleanError(`its format (${meta.format}) is not PNG, JPEG, GIF or WebP`);
    if ((meta.width ?? 0) * (meta.height ?? 0) > this.maxPixels) {
      throw new PhotoCleanError(
        `it is ${meta.width}×${meta.height} pixels, over the ${Math.round(this.maxPixels / 1e6)} megapixel limit`,
      );
    }
    // `failOn: 'error'`: a harmless decoder warning (common in phone JPEGs) does not refuse a photo.
    let img: Sharp = sharp(input, { limitInputPixels: this.maxPixels, failOn: 'error', pages: 1 })
      .autoOrient()
      .resize({
        width: this.maxLongEdge,
        height: this.maxLongEdge,
        fit: 'inside',
        withoutEnlargement: true,
      });
    switch (format) {
      case 'jpeg':
        img = img.jpeg({ quality: JPEG_QUALITY });
        break;
      case 'png':
        if (meta.depth === 'ushort') img = img.toColourspace(isGrey(meta) ? 'grey16' : 'rgb16');
        img = img.png();
        break;
      case 'webp':
        img = isLosslessWebp(input) ? img.webp({ lossless: true }) : img.webp({ quality: WEBP_QUALITY });
        break;
      case 'gif':
        img = img.gif({ reuse: true });
        break;
    }
    let out: { data: Buffer; info: OutputInfo };
    try {
      out = await img.toBuffer({ resolveWithObject: true });
    } catch (err) {
      throw new PhotoCleanError(`it could not be read as an image (${errorText(err)})`, { cause: err });
    }
    const sha256 = await sha256Hex(out.data);
    return {
      bytes: out.data,
      format,
      contentType: CONTENT_TYPE[format],
      width: out.info.width,
      height: out.info.height,
      sha256,
    };
  }

  private async acquire(): Promise<void> {
    if (this.running < this.slots) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next)
      next(); // the slot passes straight to the next waiter
    else this.running--;
  }
}

function formatOf(f: string | undefined): ImageFormat | undefined {
  return f === 'png' || f === 'jpeg' || f === 'gif' || f === 'webp' ? f : undefined;
}

function isGrey(meta: Metadata): boolean {
  return meta.space === 'b-w' || meta.space === 'grey16';
}

/**
 * Whether a WebP file holds a lossless (`VP8L`) bitstream: the RIFF chunks are
 * walked (an extended `VP8X` file, an animation's first `ANMF` frame).
 */
export function isLosslessWebp(b: Buffer): boolean {
  const walk = (from: number, to: number): boolean | undefined => {
    let at = from;
    while (at + 8 <= to) {
      const fourcc = b.toString('latin1', at, at + 4);
      const size = b.readUInt32LE(at + 4);
      if (fourcc === 'VP8L') return true;
      if (fourcc === 'VP8 ') return false;
      if (fourcc === 'ANMF') return walk(at + 8 + 16, Math.min(to, at + 8 + size));
      at += 8 + size + (size % 2);
    }
    return undefined;
  };
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP')
    return false;
  return walk(12, b.length) ?? false;
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}
