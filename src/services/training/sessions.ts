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
 * The URL is kept WITHOUT its signature (Discord CDN links carry `ex`/`is`/`hm`
 * query params and open for ~24 h): a stored session holds no working link to
 * the un-cleaned originals (EXIF, GPS). At submit time the links are signed
 * again through Discord's `POST /attachments/refresh-urls` (a function passed
 * in, on the bot's REST: only the bot can), held in memory for the submission
 * only, and the bot downloads the photos again, one after the other
 * (./upload.ts: each is cleaned of its metadata before it is sent, never the
 * original).
 * The re-downloaded bytes are hashed and must match the stored sha256, else
 * that photo fails the submission with a clear error and the session is kept.
 * Trade-off: two downloads per photo instead of keeping up to 300 MiB of images
 * per session in the store or on disk.
 *
 * Concurrency: every read-modify-write of a stored session is a compare-and-set
 * (the store's `update`: atomic across every instance sharing Redis, and on
 * SQLite), so two adds at once both land: the later one decides again on the
 * first one's session. Nothing is held while photos download (they are checked
 * before the write), and no lock is waited for.
 *
 * Submission: claimed once in the store (`claim`): a second Submit/Confirm, on
 * this or another instance, finds the claim and is refused, and adds or cancels
 * are refused while the photos are being sent. The claim then records the job
 * (`attachJob`) before anything is sent, and follows it: refused or failed,
 * the session is open again with the same photos (Retry); accepted, it waits
 * for the job's end (`jobEnded`, or read lazily from the job on the next
 * access): finished deletes it, failed reopens it. A claim whose instance died
 * before making its job lapses after CLAIM_STALE_MS.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { MAX_PHOTOS, MIN_PHOTOS } from '../operations/fields.js';
import { createHash } from 'node:crypto';
import { ETHNICITIES, GENDERS, type Ethnicity, type Gender } from '../media/types.js';
import type { AtomicKeyValueStore, JobState, KvDecision, KvWrite } from '../store/types.js';
import { isFinal } from '../store/merge.js';
import { interactionRefSchema, messageRefSchema } from '../shared/message-ref.js';
import {
  DEFAULT_DOWNLOAD_LIMITS,
  DownloadError,
  createHttpDownloader,
  inspectImage,
  parseHttpUrl,
  tooLargeMessage,
  downloadVerified,
  type DownloadLimits,
  type Downloader,
  type InspectedImage,
} from './download.js';
import { IMAGE_FORMATS, baseContentType, formatOfContentType } from './image-sniff.js';
import {
  needsRefresh,
  refreshExpiring,
  refreshLinks,
  unsignedLink,
  type RefreshUrls,
} from './refresh-urls.js';
import { inEnglish } from '../operations/fields.js';
import type { MemberText } from '../operations/input.js';

export { MAX_PHOTOS, MIN_PHOTOS };

/** Links expiring within this margin are renewed before a submission. */
const REFRESH_MARGIN_MS = 60 * 60_000;
/** A claim that has no job after this long was left by an instance that died before making it. */
export const CLAIM_STALE_MS = 10 * 60_000;

const photoSchema = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  size: z.number().int().nonnegative(),
  contentType: z.string(),
  format: z.enum(IMAGE_FORMATS),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  addedAt: z.number(),
  /** `url` is a Discord link kept without its signature: signed again (refresh-urls) at submit. */
  stripped: z.literal(true).optional(),
});
export type TrainingPhoto = z.output<typeof photoSchema>;

/**
 * The session's public message: a MessageRef posted by an interaction, whose webhook can
 * edit it for ~15 min; `interaction.messageId` is the message's id. Posted where the bot
 * is not in (a user install's DM, group DM or server without the bot), it has no top-level
 * `messageId`: only the token can edit it, and once that is too old a fresh message comes
 * from the member's next interaction.
 */
const sessionMessageSchema = messageRefSchema.extend({
  interaction: interactionRefSchema.extend({ messageId: z.string() }),
});
export type SessionMessageRef = z.output<typeof sessionMessageSchema>;

/** The shape sessions stored their message in before MessageRef: read (and written back as one), never written. */
const flatSessionMessageSchema = z
  .object({
    id: z.string(),
    channelId: z.string(),
    applicationId: z.string(),
    token: z.string(),
    createdAt: z.number(),
    personal: z.literal(true).optional(),
  })
  .transform((m): SessionMessageRef => ({
    channelId: m.channelId,
    ...(m.personal === true ? {} : { messageId: m.id }),
    interaction: { applicationId: m.applicationId, token: m.token, createdAt: m.createdAt, messageId: m.id },
  }));

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
  message: z.union([sessionMessageSchema, flatSessionMessageSchema]).optional(),
  /** Set while the photos are being submitted, and until the job they went to ends. */
  submission: z
    .object({
      claimId: z.string(),
      at: z.number(),
      /** The upload job, recorded before anything is sent. */
      jobId: z.string().optional(),
      /** The service took the upload: the session waits for the job's end. */
      accepted: z.boolean().optional(),
    })
    .optional(),
  /** The last upload job of these photos that failed: its Retry sends them again. */
  failedJobId: z.string().optional(),
});
export type TrainingSession = z.output<typeof sessionSchema>;
export type Submission = NonNullable<TrainingSession['submission']>;

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
  /** Why, in the member's language when shown (inEnglish for logs). */
  reason: MemberText;
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

export type TrainingSessionErrorCode =
  'no_session' | 'submitting' | 'submitted' | 'not_ready' | 'changed' | 'refresh_failed';

/** A session operation that cannot proceed; `message` is meant for the user. */
export class TrainingSessionError extends Error {
  /** What the member reads, in their language; `message` is the English text (logs). */
  readonly text: MemberText;
  constructor(
    readonly code: TrainingSessionErrorCode,
    text: MemberText,
  ) {
    super(inEnglish(text));
    this.name = 'TrainingSessionError';
    this.text = text;
  }
}

/** What the session needs to know of an upload job: its state (undefined: no longer stored). */
export type ReadJobState = (jobId: string) => Promise<JobState | undefined>;

export interface TrainingSessionsOptions {
  kv: AtomicKeyValueStore;
  /** Reads an upload job's state, to settle a submission whose end was not reported (`jobEnded`). */
  jobState?: ReadJobState;
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

type Checked = { input: PhotoInput; refusal: MemberText } | { input: PhotoInput; image: InspectedImage };

export class TrainingSessions {
  readonly maxBytes: number;
  readonly ttlMs: number;
  private readonly kv: AtomicKeyValueStore;
  private readonly jobState: ReadJobState | undefined;
  private readonly logger: Logger;
  private readonly download: Downloader;
  private readonly limits: DownloadLimits;
  private readonly refreshUrls: RefreshUrls;
  private readonly concurrency: number;
  private readonly now: () => number;

  constructor(opts: TrainingSessionsOptions) {
    this.kv = opts.kv;
    this.jobState = opts.jobState;
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
    const parsed = sessionSchema.safeParse(raw);
    if (raw !== undefined && raw !== null && !parsed.success) {
      this.logger.warn(
        { key, issues: parsed.error.issues.slice(0, 3) },
        'unreadable training session dropped',
      );
      await this.kv.delete(key).catch(() => undefined);
    }
    return this.live(raw);
  }

  /** The stored value as a live session (undefined: absent, expired or unreadable). */
  private live(raw: unknown): TrainingSession | undefined {
    const parsed = sessionSchema.safeParse(raw);
    return parsed.success && parsed.data.expiresAt > this.now() ? parsed.data : undefined;
  }

  /**
   * The session with its submission settled from its job (finished: the session
   * is gone; failed or forgotten: open again), written back when that changed.
   */
  async current(key: string): Promise<TrainingSession | undefined> {
    const s = await this.get(key);
    if (!s?.submission || !this.settleable(s.submission)) return s;
    return this.modify(key, (settled) => ({ session: settled, result: settled }));
  }

  async status(key: string): Promise<SessionStatus | undefined> {
    const s = await this.current(key);
    return s ? statusOf(s) : undefined;
  }

  /** Opens a session, or returns the one already open (`created: false`), untouched. */
  async start(input: StartInput): Promise<{ created: boolean; session: TrainingSession }> {
    const key = sessionKey(input.userId, input.channelId);
    const started = await this.modify(key, (existing) => {
      if (existing) return { session: existing, result: { created: false, session: existing } };
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
      return { session, result: { created: true, session } };
    });
    if (started.created) await this.indexFor(input.userId, key, started.session.expiresAt);
    return started;
  }

  /** The member's open sessions, in every channel and server (for /privacy). */
  async listByMember(userId: string): Promise<TrainingSession[]> {
    const keys = await this.memberKeys(userId);
    const sessions = await Promise.all(keys.map((k) => this.current(k)));
    return sessions.filter((s): s is TrainingSession => s !== undefined && s.userId === userId);
  }

  /**
   * Deletes every session of the member (their photo references and the
   * subject's details), wherever they are; returns how many there were. A
   * submission running meanwhile finishes with what it had already read.
   */
  async deleteForMember(userId: string): Promise<number> {
    const keys = await this.memberKeys(userId);
    let n = 0;
    for (const key of keys) {
      const deleted = await this.modify(
        key,
        (s) =>
          !s || s.userId !== userId ? { session: s, result: undefined } : { session: undefined, result: s },
        { settle: false },
      );
      if (!deleted) continue;
      n++;
      if (deleted.failedJobId !== undefined) await this.kv.delete(jobLinkKey(deleted.failedJobId));
      if (deleted.submission?.jobId !== undefined) await this.kv.delete(jobLinkKey(deleted.submission.jobId));
    }
    await this.kv.delete(memberKey(userId));
    return n;
  }

  /** Records the public message that shows the session (undefined: it no longer does). */
  async setMessage(key: string, ref: SessionMessageRef | undefined): Promise<TrainingSession | undefined> {
    return this.modify(
      key,
      (s) => {
        if (!s) return { session: s, result: undefined };
        const { message: _old, ...rest } = s;
        const next: TrainingSession = ref ? { ...rest, message: ref } : rest;
        return { session: next, result: next };
      },
      { settle: false },
    );
  }

  /**
   * Validates and adds photos. Every refused photo comes back with its reason;
   * the others are kept (up to MAX_PHOTOS in total). Order is kept. The
   * downloads run first, with nothing held; the write is a compare-and-set
   * read-modify-write, so a concurrent add (any instance) is never lost.
   */
  async add(key: string, inputs: readonly PhotoInput[]): Promise<AddResult> {
    const before = await this.current(key);
    if (!before) throw noSession();
    assertOpen(before);
    const full = before.photos.length >= MAX_PHOTOS;
    const checked = await mapLimit(inputs, this.concurrency, (input) => this.check(input, full));

    const result = await this.modify(key, (session) => {
      if (!session) throw noSession();
      assertOpen(session);
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
          const name = quote(dup.name);
          refused.push({
            name: c.input.name,
            reason: (tr) => tr.t('training.reason.duplicate', { name }),
          });
          continue;
        }
        if (photos.length >= MAX_PHOTOS) {
          refused.push({ name: c.input.name, reason: fullReason() });
          continue;
        }
        // No working link to the original (EXIF, GPS) is kept: the signature is dropped.
        const link = unsignedLink(c.input.url);
        const photo: TrainingPhoto = {
          id: c.input.id,
          name: c.input.name,
          url: link.url,
          ...(link.stripped ? { stripped: true as const } : {}),
          size: c.image.size,
          contentType: baseContentType(c.input.contentType) ?? `image/${c.image.format}`,
          format: c.image.format,
          sha256: c.image.sha256,
          addedAt: now,
        };
        photos.push(photo);
        added.push(photo);
      }
      const next =
        added.length > 0 ? { ...session, photos, updatedAt: now, expiresAt: now + this.ttlMs } : session;
      return { session: next, result: { added, refused, session: next } };
    });
    const { added, refused, session } = result;
    if (added.length > 0) await this.indexFor(session.userId, key, session.expiresAt);
    this.logger.info(
      { key, added: added.length, refused: refused.length, total: session.photos.length },
      'training photos added',
    );
    return result;
  }

  /**
   * Discards the session; returns what it held, or undefined when there was
   * none. Refused while its photos are being sent; once the service has them,
   * discarding only drops what the bot keeps (the job goes on).
   */
  async cancel(key: string): Promise<TrainingSession | undefined> {
    return this.modify(key, (s) => {
      if (s?.submission && !s.submission.accepted) throw submitting();
      return { session: undefined, result: s };
    });
  }

  /**
   * Claims the submission of `key` once, in the store: a second claim (a double
   * click, on this instance or another) is refused until this one ends. The
   * session must still hold exactly the photos the member consented to
   * (`photoDigest`, see photoDigest()) and be ready. Returns the session as
   * claimed: what will be sent.
   */
  async claim(key: string, claimId: string, expectedDigest?: string): Promise<TrainingSession> {
    return this.modify(key, (session) => {
      if (!session) throw noSession();
      assertOpen(session);
      const st = statusOf(session);
      if (!st.ready) {
        throw new TrainingSessionError('not_ready', (tr) =>
          tr.t('training.not_enough_photos', { count: st.count, min: MIN_PHOTOS, missing: st.missing }),
        );
      }
      if (expectedDigest !== undefined && photoDigest(session) !== expectedDigest) {
        throw new TrainingSessionError('changed', (tr) => tr.t('training.consent.changed'));
      }
      const next: TrainingSession = { ...session, submission: { claimId, at: this.now() } };
      return { session: next, result: next };
    });
  }

  /** Records the upload job of claim `claimId` (before anything is sent). */
  async attachJob(key: string, claimId: string, jobId: string): Promise<void> {
    const s = await this.modify(
      key,
      (s) => {
        if (s?.submission?.claimId !== claimId) throw submitting();
        const next: TrainingSession = { ...s, submission: { ...s.submission, jobId } };
        return { session: next, result: next };
      },
      { settle: false },
    );
    await this.kv.set(jobLinkKey(jobId), key, Math.max(1000, s.expiresAt - this.now()));
  }

  /**
   * Ends claim `claimId` as the submission went: `not_sent` (refused before any
   * service call: fair use, credits, Discord), `failed` (the service refused or
   * failed it, or it could not be prepared: the photos are kept for Retry) or
   * `accepted` (the service has them: the session waits for the job's end).
   * Returns the session as it is now.
   */
  async endClaim(
    key: string,
    claimId: string,
    outcome: 'not_sent' | 'failed' | 'accepted',
  ): Promise<TrainingSession | undefined> {
    return this.modify(
      key,
      (s) => {
        if (!s || s.submission?.claimId !== claimId) return { session: s, result: s };
        const { submission, ...rest } = s;
        let next: TrainingSession;
        if (outcome === 'accepted') next = { ...s, submission: { ...submission, accepted: true } };
        else if (outcome === 'failed' && submission.jobId) next = { ...rest, failedJobId: submission.jobId };
        else next = rest;
        return { session: next, result: next };
      },
      { settle: false },
    );
  }

  /**
   * An upload job ended (the job service's after-final hook): its session, if
   * still waiting for it, is deleted (finished) or opened again for Retry
   * (failed). Idempotent.
   */
  async jobEnded(jobId: string, state: JobState): Promise<void> {
    if (!isFinal(state)) return;
    const key = await this.kv.get<unknown>(jobLinkKey(jobId));
    if (typeof key !== 'string') return;
    await this.modify(
      key,
      (s) => ({ session: s?.submission?.jobId === jobId ? settleAs(s, state) : s, result: undefined }),
      { settle: false },
    );
  }

  /**
   * The session whose failed upload job is `jobId`, for that job's Retry: the
   * same photos, still held (until the session expires or is cancelled).
   */
  async forRetry(jobId: string): Promise<TrainingSession | undefined> {
    const key = await this.kv.get<unknown>(jobLinkKey(jobId));
    if (typeof key !== 'string') return undefined;
    const s = await this.current(key);
    return s?.failedJobId === jobId ? s : undefined;
  }

  /**
   * The session's photos, in order, each with a reader of its original bytes
   * for the cleaner (./upload.ts). Links about to expire are renewed first;
   * each read downloads the photo again (streamed, capped, at most `maxBytes`
   * in memory) and fails if its SHA-256 is not the stored one.
   */
  async originals(session: TrainingSession): Promise<OriginalPhoto[]> {
    const now = this.now();
    const stripped = session.photos.filter((p) => p.stripped === true);
    // Sessions stored before links were kept unsigned: their signed links, when they expire soon.
    const signed = session.photos.filter((p) => p.stripped !== true).map((p) => p.url);
    const lapsed = (p: TrainingPhoto): boolean => p.stripped === true || needsRefresh(p.url, now, 0);
    let renewed = new Map<string, string>();
    try {
      renewed = new Map([
        ...(await refreshLinks(
          stripped.map((p) => p.url),
          this.refreshUrls,
        )),
        ...(await refreshExpiring(signed, this.refreshUrls, now, REFRESH_MARGIN_MS)),
      ]);
    } catch (err) {
      const expired = session.photos.filter(lapsed);
      this.logger.warn(
        { err, key: session.key, expired: expired.length },
        'could not refresh Discord attachment links',
      );
      if (expired.length > 0) {
        throw new TrainingSessionError('refresh_failed', (tr) =>
          tr.t('training.refresh_failed', { count: expired.length }),
        );
      }
    }
    const missing = session.photos.filter((p) => lapsed(p) && !renewed.has(p.url));
    if (missing.length > 0) {
      throw new TrainingSessionError('refresh_failed', (tr) =>
        tr.t('training.links_expired', { names: tr.list(missing.map((p) => quote(p.name))) }),
      );
    }
    return session.photos.map((photo) => {
      const url = renewed.get(photo.url) ?? photo.url;
      return { photo, url, read: () => this.readOriginal(photo, url) };
    });
  }

  // ------------------------------------------------------------ internals

  /** The original bytes of a photo, verified against its stored size and SHA-256; errors name the photo. */
  private async readOriginal(p: TrainingPhoto, url: string): Promise<Buffer> {
    try {
      return await downloadVerified(this.download, url, this.limits, p.sha256, p.size);
    } catch (err) {
      const name = quote(p.name);
      const detail = err instanceof Error ? err.message : String(err);
      const reason: MemberText = err instanceof DownloadError ? err.text : () => detail;
      throw new DownloadError(
        err instanceof DownloadError ? err.kind : 'network',
        (tr) => `${name}: ${reason(tr)}`,
        { cause: err },
      );
    }
  }

  /** Can the submission be settled from its job (or is its claim stale)? */
  private settleable(sub: Submission): boolean {
    if (sub.jobId) return this.jobState !== undefined;
    return sub.at + CLAIM_STALE_MS <= this.now();
  }

  /**
   * `s` with its submission settled (see current()); undefined when that ended the session.
   * Reads only (the job's state): `modify` writes what it answers.
   */
  private async settled(s: TrainingSession | undefined): Promise<TrainingSession | undefined> {
    const sub = s?.submission;
    if (!s || !sub || !this.settleable(sub)) return s;
    if (!sub.jobId) {
      const { submission: _stale, ...open } = s;
      this.logger.warn({ key: s.key }, 'stale training submission claim released');
      return open;
    }
    const state = await this.jobState?.(sub.jobId);
    // A job no longer stored cannot be waited for: its photos are open again.
    if (state === undefined || isFinal(state)) return settleAs(s, state ?? 'failed');
    return s;
  }

  /**
   * A read-modify-write of session `key`, atomic across every instance sharing the store:
   * a compare-and-set (the store's `update`), so a change another instance made meanwhile
   * makes it decide again, and nothing is held while it decides. `change` sees the live
   * session (its submission settled from its job first, unless `settle` is false) and answers
   * what to store: the same object (nothing), another (written, its TTL to `expiresAt`) or
   * undefined (deleted); it may throw a refusal, and must have no other effect.
   */
  private async modify<T>(
    key: string,
    change: (s: TrainingSession | undefined) => SessionChange<T>,
    opts: { settle?: boolean } = {},
  ): Promise<T> {
    const done = await this.kv.update(
      [key],
      async ([stored]): Promise<KvDecision<{ result: T; saved?: TrainingSession }>> => {
        const read = this.live(stored);
        const current = opts.settle === false ? read : await this.settled(read);
        const { session, result } = change(current);
        if (session === undefined) {
          const drop: KvWrite[] = stored === undefined ? [] : [{ key, delete: true }];
          return { result: { result }, writes: drop };
        }
        if (session === read) return { result: { result } };
        const ttlMs = session.expiresAt - this.now();
        if (ttlMs <= 0) throw noSession();
        return { result: { result, saved: session }, writes: [{ key, value: session, ttlMs }] };
      },
    );
    // A failed job's Retry finds the session for as long as the session lives (adds renew it).
    const { saved } = done;
    if (saved?.failedJobId !== undefined)
      await this.kv.set(jobLinkKey(saved.failedJobId), key, Math.max(1000, saved.expiresAt - this.now()));
    return done.result;
  }

  /** Declared type and size first (no download), then the streamed inspection. */
  private async check(input: PhotoInput, full: boolean): Promise<Checked> {
    const declared = baseContentType(input.contentType);
    if (!formatOfContentType(declared)) {
      return {
        input,
        refusal: (tr) => tr.t('training.reason.not_image', { type: declared ?? tr.t('input.unknown_type') }),
      };
    }
    if (input.size > this.maxBytes) return { input, refusal: tooLargeMessage(input.size, this.maxBytes) };
    if (full) return { input, refusal: fullReason() };
    try {
      parseHttpUrl(input.url);
      return { input, image: await inspectImage(this.download, input.url, this.limits) };
    } catch (err) {
      if (err instanceof DownloadError) return { input, refusal: err.text };
      this.logger.warn({ err, name: input.name }, 'training photo check failed');
      return { input, refusal: (tr) => tr.t('training.reason.check_failed') };
    }
  }

  /** The keys of the member's sessions (some may be gone: readers check). */
  private async memberKeys(userId: string): Promise<string[]> {
    const raw = await this.kv.get<unknown>(memberKey(userId));
    const parsed = z.array(z.string()).safeParse(raw);
    return parsed.success ? parsed.data : [];
  }

  /**
   * Keeps `key` in the member's index, which outlives their last session by a
   * day; keys whose session is gone are dropped on the way (a compare-and-set:
   * two instances opening sessions at once both land).
   */
  private async indexFor(userId: string, key: string, expiresAt: number): Promise<void> {
    const index = memberKey(userId);
    await this.kv.update([index], async ([stored]) => {
      const parsed = z.array(z.string()).safeParse(stored);
      const live: string[] = [];
      for (const k of parsed.success ? parsed.data : [])
        if (k !== key && (await this.kv.get<unknown>(k)) !== undefined) live.push(k);
      live.push(key);
      const ttlMs = Math.max(1000, expiresAt - this.now()) + DAY_MS;
      return { result: undefined, writes: [{ key: index, value: live, ttlMs }] };
    });
  }
}

const DAY_MS = 86_400_000;

/** What a change of a session answers (see TrainingSessions.modify). */
interface SessionChange<T> {
  session: TrainingSession | undefined;
  result: T;
}

/** The session once its submission's job ended as `state`: gone (finished) or open again for Retry. */
function settleAs(s: TrainingSession, state: 'finished' | 'failed'): TrainingSession | undefined {
  if (state === 'finished') return undefined;
  const { submission, ...open } = s;
  return submission?.jobId ? { ...open, failedJobId: submission.jobId } : open;
}

/** The keys of a member's sessions (for /privacy: sessions are keyed by user and channel). */
const memberKey = (userId: string): string => `training-user:${userId}`;

/**
 * Where a submitted job's session is (jobEnded, Retry); kept as long as the
 * session could be (a key only: it outlives nothing it points to).
 */
const jobLinkKey = (jobId: string): string => `training-job:${jobId}`;

/** One photo of a session at submit time: where to read its original. */
export interface OriginalPhoto {
  photo: TrainingPhoto;
  /** The link to download it from (renewed when it was about to expire). */
  url: string;
  /** Downloads the original (capped, verified against its SHA-256; the error names the photo). */
  read(): Promise<Buffer>;
}

/**
 * A short fingerprint of the photos a session holds (their SHA-256s in order):
 * what the member is asked to confirm must be what is sent.
 */
export function photoDigest(s: Pick<TrainingSession, 'photos'>): string {
  const h = createHash('sha256');
  for (const p of s.photos) h.update(p.sha256);
  return h.digest('hex').slice(0, 16);
}

/** Refuses changes to a session whose photos are being, or have been, submitted. */
function assertOpen(s: TrainingSession): void {
  if (!s.submission) return;
  throw s.submission.accepted
    ? new TrainingSessionError('submitted', (tr) => tr.t('training.submitted_running'))
    : submitting();
}

function submitting(): TrainingSessionError {
  return new TrainingSessionError('submitting', (tr) => tr.t('training.submitting'));
}

function noSession(): TrainingSessionError {
  return new TrainingSessionError('no_session', (tr) => tr.t('training.no_session'));
}

function fullReason(): MemberText {
  return (tr) => tr.t('training.reason.full', { max: MAX_PHOTOS });
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
