/**
 * Training-photo sessions: one per user per channel, gathering 10 to 30 photos
 * over several interactions until the user submits them to `/ai-photo-upload`.
 *
 * DECISION — photos are downloaded at ADD time, metadata only is kept.
 * Each photo is downloaded once when it is added, as a stream: the first bytes
 * are checked against the PNG/JPEG/GIF/WebP magic numbers (the declared
 * content type alone is not trusted), the size cap is enforced while reading
 * (after a first check of the declared size), and the SHA-256 is computed on
 * the fly to refuse duplicates. No file is ever held in memory as a whole. The
 * session (in the TTL'd key/value store, so it survives a restart) keeps only
 * metadata: attachment id, file name, URL, size, content type, format, sha256.
 * At submit time the bot downloads the photos again, one after the other,
 * streaming them into the upload body (base64) — or passes their URLs with
 * MEDIA_PHOTO_FORMAT=url. Discord CDN links are signed and expire (~24 h,
 * `ex`/`is`/`hm` query params), so links that expire soon are first renewed
 * through Discord's `POST /attachments/refresh-urls` (a function passed in, on
 * the bot's REST). The re-downloaded bytes are hashed while streaming and must
 * match the stored sha256, else that photo fails the submission with a clear
 * error and the session is kept. Trade-off: two downloads per photo instead of
 * keeping up to 300 MiB of images per session in the store or on disk.
 *
 * Concurrency: adds to one session are serialised in-process (keyed mutex) for
 * the read-modify-write of the stored session; downloads run outside the lock.
 * Several bot processes sharing one Redis are not serialised against each other.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { MAX_PHOTOS, MIN_PHOTOS } from '../operations/fields.js';
import { ETHNICITIES, GENDERS, type Ethnicity, type Gender, type PhotoSource } from '../media/types.js';
import { KeyedMutex } from '../store/mutex.js';
import type { KeyValueStore } from '../store/types.js';
import {
  DEFAULT_DOWNLOAD_LIMITS,
  DownloadError,
  createHttpDownloader,
  inspectImage,
  parseHttpUrl,
  tooLargeMessage,
  verifiedImageStream,
  type DownloadLimits,
  type Downloader,
  type InspectedImage,
} from './download.js';
import {
  IMAGE_FORMATS,
  SUPPORTED_FORMATS_TEXT,
  baseContentType,
  formatOfContentType,
} from './image-sniff.js';
import { needsRefresh, refreshExpiring, type RefreshUrls } from './refresh-urls.js';

export { MAX_PHOTOS, MIN_PHOTOS };

/** Links expiring within this margin are renewed before a submission. */
const REFRESH_MARGIN_MS = 60 * 60_000;
const LOCK_WAIT_MS = 60_000;

const photoSchema = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  size: z.number().int().nonnegative(),
  contentType: z.string(),
  format: z.enum(IMAGE_FORMATS),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  addedAt: z.number(),
});
export type TrainingPhoto = z.output<typeof photoSchema>;

const messageRefSchema = z.object({
  id: z.string(),
  channelId: z.string(),
  /** The interaction that posted it: its webhook can edit it for ~15 min. */
  applicationId: z.string(),
  token: z.string(),
  createdAt: z.number(),
});
export type SessionMessageRef = z.output<typeof messageRefSchema>;

const sessionSchema = z.object({
  v: z.literal(1),
  key: z.string(),
  userId: z.string(),
  channelId: z.string(),
  guildId: z.string().optional(),
  ethnicity: z.enum(ETHNICITIES),
  gender: z.enum(GENDERS),
  age: z.number().int().optional(),
  photos: z.array(photoSchema).max(MAX_PHOTOS),
  createdAt: z.number(),
  updatedAt: z.number(),
  expiresAt: z.number(),
  message: messageRefSchema.optional(),
});
export type TrainingSession = z.output<typeof sessionSchema>;

/** What the bot knows of an uploaded file before downloading it (a discord.js Attachment fits). */
export interface PhotoInput {
  id: string;
  name: string;
  url: string;
  size: number;
  contentType?: string | null;
}

export interface Refusal {
  name: string;
  reason: string;
}

export interface AddResult {
  added: TrainingPhoto[];
  refused: Refusal[];
  session: TrainingSession;
}

export interface StartInput {
  userId: string;
  channelId: string;
  guildId?: string;
  ethnicity: Ethnicity;
  gender: Gender;
  age?: number;
}

export type TrainingSessionErrorCode = 'no_session' | 'submitting' | 'busy' | 'refresh_failed';

/** A session operation that cannot proceed; `message` is meant for the user. */
export class TrainingSessionError extends Error {
  constructor(
    readonly code: TrainingSessionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'TrainingSessionError';
  }
}

export interface TrainingSessionsOptions {
  kv: KeyValueStore;
  logger: Logger;
  /** Largest accepted photo (config.photos.maxBytes). */
  maxBytes: number;
  /** Session lifetime, renewed by every add (config.photos.sessionTtlMs). */
  ttlMs: number;
  /** Renews expiring Discord CDN links (see refresh-urls.ts, `restRefreshUrls(client.rest)`). */
  refreshUrls: RefreshUrls;
  /** Default: undici `request` with redirects (http(s) only). */
  download?: Downloader;
  downloadLimits?: Partial<Omit<DownloadLimits, 'maxBytes'>>;
  /** Parallel downloads while validating one batch. Default 4. */
  concurrency?: number;
  now?: () => number;
}

export const sessionKey = (userId: string, channelId: string): string => `training:${userId}:${channelId}`;

/** Per-session state: count, readiness, time left. */
export interface SessionStatus {
  session: TrainingSession;
  count: number;
  ready: boolean;
  /** Photos still needed before a submission is possible. */
  missing: number;
  /** Photos that can still be added. */
  room: number;
}

export function statusOf(session: TrainingSession): SessionStatus {
  const count = session.photos.length;
  return {
    session,
    count,
    ready: count >= MIN_PHOTOS && count <= MAX_PHOTOS,
    missing: Math.max(0, MIN_PHOTOS - count),
    room: Math.max(0, MAX_PHOTOS - count),
  };
}

type Checked = { input: PhotoInput; refusal: string } | { input: PhotoInput; image: InspectedImage };

export class TrainingSessions {
  readonly maxBytes: number;
  readonly ttlMs: number;
  private readonly kv: KeyValueStore;
  private readonly logger: Logger;
  private readonly download: Downloader;
  private readonly limits: DownloadLimits;
  private readonly refreshUrls: RefreshUrls;
  private readonly concurrency: number;
  private readonly now: () => number;
  private readonly mutex = new KeyedMutex();
  private readonly submitting = new Set<string>();

  constructor(opts: TrainingSessionsOptions) {
    this.kv = opts.kv;
    this.logger = opts.logger;
    this.maxBytes = opts.maxBytes;
    this.ttlMs = opts.ttlMs;
    this.refreshUrls = opts.refreshUrls;
    this.download = opts.download ?? createHttpDownloader();
    this.limits = { ...DEFAULT_DOWNLOAD_LIMITS, ...opts.downloadLimits, maxBytes: opts.maxBytes };
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.now = opts.now ?? Date.now;
  }

  static key(userId: string, channelId: string): string {
    return sessionKey(userId, channelId);
  }

  /** The live session under `key`, or undefined (absent, expired, or unreadable). */
  async get(key: string): Promise<TrainingSession | undefined> {
    const raw = await this.kv.get<unknown>(key);
    if (raw === undefined || raw === null) return undefined;
    const parsed = sessionSchema.safeParse(raw);
    if (!parsed.success) {
      this.logger.warn(
        { key, issues: parsed.error.issues.slice(0, 3) },
        'unreadable training session dropped',
      );
      await this.kv.delete(key).catch(() => undefined);
      return undefined;
    }
    if (parsed.data.expiresAt <= this.now()) return undefined;
    return parsed.data;
  }

  /**
   * The session once in-flight changes are written (taken under the session
   * lock). Used for the submission snapshot: with `whileSubmitting` active, no
   * later add can slip in between this read and the deletion after success.
   */
  async getSettled(key: string): Promise<TrainingSession | undefined> {
    return this.locked(key, () => this.get(key));
  }

  async status(key: string): Promise<SessionStatus | undefined> {
    const s = await this.get(key);
    return s ? statusOf(s) : undefined;
  }

  /** Opens a session, or returns the one already open (`created: false`), untouched. */
  async start(input: StartInput): Promise<{ created: boolean; session: TrainingSession }> {
    const key = sessionKey(input.userId, input.channelId);
    return this.locked(key, async () => {
      const existing = await this.get(key);
      if (existing) return { created: false, session: existing };
      const now = this.now();
      const session: TrainingSession = {
        v: 1,
        key,
        userId: input.userId,
        channelId: input.channelId,
        ...(input.guildId !== undefined ? { guildId: input.guildId } : {}),
        ethnicity: input.ethnicity,
        gender: input.gender,
        ...(input.age !== undefined ? { age: input.age } : {}),
        photos: [],
        createdAt: now,
        updatedAt: now,
        expiresAt: now + this.ttlMs,
      };
      await this.kv.set(key, session, this.ttlMs);
      return { created: true, session };
    });
  }

  /** Records the public message that shows the session (undefined: it no longer does). */
  async setMessage(key: string, ref: SessionMessageRef | undefined): Promise<TrainingSession | undefined> {
    return this.locked(key, async () => {
      const s = await this.get(key);
      if (!s) return undefined;
      const { message: _old, ...rest } = s;
      const next: TrainingSession = ref ? { ...rest, message: ref } : rest;
      await this.save(next);
      return next;
    });
  }

  /**
   * Validates and adds photos. Every refused photo comes back with its reason;
   * the others are kept (up to MAX_PHOTOS in total). Order is kept.
   */
  async add(key: string, inputs: readonly PhotoInput[]): Promise<AddResult> {
    this.assertNotSubmitting(key);
    const before = await this.get(key);
    if (!before) throw noSession();
    const full = before.photos.length >= MAX_PHOTOS;
    const checked = await mapLimit(inputs, this.concurrency, (input) => this.check(input, full));

    return this.locked(key, async () => {
      this.assertNotSubmitting(key);
      const session = await this.get(key);
      if (!session) throw noSession();
      const photos = [...session.photos];
      const added: TrainingPhoto[] = [];
      const refused: Refusal[] = [];
      const now = this.now();
      for (const c of checked) {
        if ('refusal' in c) {
          refused.push({ name: c.input.name, reason: c.refusal });
          continue;
        }
        const dup = photos.find((p) => p.sha256 === c.image.sha256);
        if (dup) {
          refused.push({
            name: c.input.name,
            reason: `it is the same picture as ${quote(dup.name)}, already in the session`,
          });
          continue;
        }
        if (photos.length >= MAX_PHOTOS) {
          refused.push({ name: c.input.name, reason: fullReason() });
          continue;
        }
        const photo: TrainingPhoto = {
          id: c.input.id,
          name: c.input.name,
          url: c.input.url,
          size: c.image.size,
          contentType: baseContentType(c.input.contentType) ?? `image/${c.image.format}`,
          format: c.image.format,
          sha256: c.image.sha256,
          addedAt: now,
        };
        photos.push(photo);
        added.push(photo);
      }
      let next = session;
      if (added.length > 0) {
        next = { ...session, photos, updatedAt: now, expiresAt: now + this.ttlMs };
        await this.save(next);
      }
      this.logger.info(
        { key, added: added.length, refused: refused.length, total: next.photos.length },
        'training photos added',
      );
      return { added, refused, session: next };
    });
  }

  /** Discards the session; returns what it held, or undefined when there was none. */
  async cancel(key: string): Promise<TrainingSession | undefined> {
    this.assertNotSubmitting(key);
    return this.locked(key, async () => {
      const s = await this.get(key);
      await this.kv.delete(key);
      return s;
    });
  }

  /** Removes the session after a successful submission. */
  async delete(key: string): Promise<void> {
    await this.locked(key, () => this.kv.delete(key));
  }

  isSubmitting(key: string): boolean {
    return this.submitting.has(key);
  }

  /**
   * Runs a submission of `key` with adds, cancels and other submissions of the
   * same session refused meanwhile (a double click must not upload twice).
   */
  async whileSubmitting<T>(key: string, fn: () => Promise<T>): Promise<T> {
    this.assertNotSubmitting(key);
    this.submitting.add(key);
    try {
      return await fn();
    } finally {
      this.submitting.delete(key);
    }
  }

  /**
   * The session's photos for MediaClient.uploadTrainingPhotos, in order. Links
   * about to expire are renewed first; each `open()` downloads the photo again
   * (streamed, capped) and fails if its SHA-256 is not the stored one.
   */
  async photoSources(session: TrainingSession): Promise<PhotoSource[]> {
    const now = this.now();
    const urls = session.photos.map((p) => p.url);
    let renewed = new Map<string, string>();
    try {
      renewed = await refreshExpiring(urls, this.refreshUrls, now, REFRESH_MARGIN_MS);
    } catch (err) {
      const expired = session.photos.filter((p) => needsRefresh(p.url, now, 0));
      this.logger.warn(
        { err, key: session.key, expired: expired.length },
        'could not refresh Discord attachment links',
      );
      if (expired.length > 0) {
        throw new TrainingSessionError(
          'refresh_failed',
          `Discord did not renew the expired links of ${expired.length} photo(s), so they cannot be downloaded now. Please try again in a minute.`,
        );
      }
    }
    const missing = session.photos.filter((p) => needsRefresh(p.url, now, 0) && !renewed.has(p.url));
    if (missing.length > 0) {
      throw new TrainingSessionError(
        'refresh_failed',
        `The links of ${missing.map((p) => quote(p.name)).join(', ')} have expired and Discord did not renew them (was the original message deleted?). Cancel the session and start again.`,
      );
    }
    const limits: DownloadLimits = { ...this.limits };
    delete limits.totalTimeoutMs; // the upload's pace sets the download's: only idle timeouts apply
    return session.photos.map((p) => {
      const url = renewed.get(p.url) ?? p.url;
      return { url, open: () => Promise.resolve(this.photoStream(p, url, limits)) };
    });
  }

  // ------------------------------------------------------------ internals

  private async *photoStream(
    p: TrainingPhoto,
    url: string,
    limits: DownloadLimits,
  ): AsyncGenerator<Uint8Array> {
    try {
      yield* verifiedImageStream(this.download, url, limits, p.sha256);
    } catch (err) {
      const reason =
        err instanceof DownloadError ? err.message : err instanceof Error ? err.message : String(err);
      throw new Error(`${quote(p.name)}: ${reason}`, { cause: err });
    }
  }

  /** Declared type and size first (no download), then the streamed inspection. */
  private async check(input: PhotoInput, full: boolean): Promise<Checked> {
    const declared = baseContentType(input.contentType);
    if (!formatOfContentType(declared)) {
      return {
        input,
        refusal: `it is not an image (${declared ?? 'unknown type'}); send ${SUPPORTED_FORMATS_TEXT}`,
      };
    }
    if (input.size > this.maxBytes) return { input, refusal: tooLargeMessage(input.size, this.maxBytes) };
    if (full) return { input, refusal: fullReason() };
    try {
      parseHttpUrl(input.url);
      return { input, image: await inspectImage(this.download, input.url, this.limits) };
    } catch (err) {
      if (err instanceof DownloadError) return { input, refusal: err.message };
      this.logger.warn({ err, name: input.name }, 'training photo check failed');
      return { input, refusal: 'it could not be checked (unexpected error)' };
    }
  }

  private async save(s: TrainingSession): Promise<void> {
    const ttl = s.expiresAt - this.now();
    if (ttl <= 0) throw noSession();
    await this.kv.set(s.key, s, ttl);
  }

  private assertNotSubmitting(key: string): void {
    if (this.submitting.has(key)) {
      throw new TrainingSessionError(
        'submitting',
        'This session is being submitted right now; wait for the result.',
      );
    }
  }

  private locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(
      key,
      fn,
      LOCK_WAIT_MS,
      () => new TrainingSessionError('busy', 'The session is busy with another change; please try again.'),
    );
  }
}

function noSession(): TrainingSessionError {
  return new TrainingSessionError(
    'no_session',
    'You have no open training-photo session in this channel (or it expired). Start one with `/training-photos start`.',
  );
}

function fullReason(): string {
  return `the session already holds ${MAX_PHOTOS} photos, the maximum`;
}

export function quote(name: string): string {
  const short = name.length > 60 ? `${name.slice(0, 57)}…` : name;
  return `“${short.replace(/[`*_~|<>@]/g, '')}”`;
}

/** `fn` over `items` with at most `limit` running at once; results in input order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
