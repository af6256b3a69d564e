/**
 * Cleaned training photos between cleaning and sending, on disk under
 * `DATA_DIR/photo-spool/{token}/{n}.{ext}` (directory 0700, files 0600): the
 * consent record must name the SHA-256 of every image before any is sent, and
 * 30 cleaned photos are too many to hold in memory for that, so each is
 * written once cleaned and read back, verified, when its turn in the upload
 * body comes. Never in the store, never in a log.
 *
 * With MEDIA_PHOTO_FORMAT=url the service fetches the images itself: it gets
 * `{PUBLIC_URL}/photos/{token}/{n}.{ext}` links to these copies (see
 * src/webhooks/photo-files.ts), never the Discord CDN links of the originals,
 * which still carry their metadata. The token is 256 random bits, so a link
 * cannot be guessed; a batch lives until the upload is over (base64: the
 * request was sent; url: the job ended) and at most `ttlMs` (1 h) from its
 * last write, swept on start and every few minutes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CleanedPhoto } from './clean-photo.js';
import type { ImageFormat } from './image-sniff.js';

export const SPOOL_TTL_MS = 60 * 60_000;
const SWEEP_EVERY_MS = 5 * 60_000;
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const FILE = /^(\d{1,2})\.(png|jpg|gif|webp)$/;
const EXT: Record<ImageFormat, string> = { png: 'png', jpeg: 'jpg', gif: 'gif', webp: 'webp' };
const TYPE_OF_EXT: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};

export interface SpooledPhoto {
  /** `{n}.{ext}`: the name under the batch's token. */
  file: string;
  sha256: string;
  format: ImageFormat;
  contentType: string;
  width: number;
  height: number;
  bytes: number;
}

export interface PhotoSpoolOptions {
  /** The spool directory (created): `${DATA_DIR}/photo-spool`. */
  dir: string;
  /** Longest life of a batch after its last write (default SPOOL_TTL_MS). */
  ttlMs?: number;
  logger: Logger;
}

export class PhotoSpool {
  readonly ttlMs: number;
  private readonly dir: string;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;

  constructor(opts: PhotoSpoolOptions) {
    this.dir = opts.dir;
    this.ttlMs = opts.ttlMs ?? SPOOL_TTL_MS;
    this.logger = opts.logger;
  }

  /** A new, empty batch; returns its token. */
  async open(): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    await mkdir(join(this.dir, token), { recursive: true, mode: 0o700 });
    return token;
  }

  /** Writes cleaned photo number `n` (0-based) of batch `token`. */
  async put(token: string, n: number, photo: CleanedPhoto): Promise<SpooledPhoto> {
    const file = `${n}.${EXT[photo.format]}`;
    await writeFile(this.path(token, file), photo.bytes, { mode: 0o600, flag: 'wx' });
    return {
      file,
      sha256: photo.sha256,
      format: photo.format,
      contentType: photo.contentType,
      width: photo.width,
      height: photo.height,
      bytes: photo.bytes.length,
    };
  }

  /**
   * The bytes of a spooled photo, streamed in 64 KiB chunks and hashed on the
   * way; the last chunk is held back until the SHA-256 is checked, so a file
   * that is not what was recorded never reaches the service whole.
   */
  async *read(token: string, file: string, sha256: string): AsyncGenerator<Uint8Array> {
    const hash = createHash('sha256');
    let held: Buffer | undefined;
    for await (const chunk of createReadStream(this.path(token, file), { highWaterMark: 64 * 1024 })) {
      const buf = chunk as Buffer;
      hash.update(buf);
      if (held) yield held;
      held = buf;
    }
    if (hash.digest('hex') !== sha256) throw new Error(`cleaned photo ${file} changed on disk`);
    if (held) yield held;
  }

  /** A photo to serve (GET /photos/…): its path, size and type; undefined when unknown or expired. */
  async find(
    token: string,
    file: string,
  ): Promise<{ path: string; size: number; contentType: string } | undefined> {
    const m = FILE.exec(file);
    if (!TOKEN.test(token) || !m?.[2]) return undefined;
    const batch = await stat(join(this.dir, token)).catch(() => undefined);
    if (!batch?.isDirectory()) return undefined;
    if (batch.mtimeMs + this.ttlMs <= Date.now()) {
      await this.release(token);
      return undefined;
    }
    const path = this.path(token, file);
    const st = await stat(path).catch(() => undefined);
    if (!st?.isFile()) return undefined;
    return { path, size: st.size, contentType: TYPE_OF_EXT[m[2]] ?? 'application/octet-stream' };
  }

  /** Deletes a batch (idempotent). */
  async release(token: string): Promise<void> {
    if (!TOKEN.test(token)) return;
    await rm(join(this.dir, token), { recursive: true, force: true }).catch((err: unknown) =>
      this.logger.warn({ err }, 'could not delete cleaned training photos'),
    );
  }

  /** Deletes every batch older than the TTL; returns how many. */
  async sweep(): Promise<number> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    let n = 0;
    for (const name of names) {
      const st = await stat(join(this.dir, name)).catch(() => undefined);
      if (!st || st.mtimeMs + this.ttlMs > Date.now()) continue;
      await rm(join(this.dir, name), { recursive: true, force: true }).catch(() => undefined);
      n++;
    }
    if (n > 0) this.logger.info({ batches: n }, 'expired cleaned training photos deleted');
    return n;
  }

  /** Creates the directory, sweeps what a previous run left, then sweeps every few minutes. */
  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await this.sweep();
    this.timer ??= setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private path(token: string, file: string): string {
    if (!TOKEN.test(token) || !FILE.test(file)) throw new Error('invalid spool path');
    return join(this.dir, token, file);
  }
}
