/**
 * What leaves the bot when a member confirms a training-photo submission:
 * every photo downloaded again (verified against the hash taken when it was
 * added), cleaned (./clean-photo.ts: oriented, scaled, no metadata) and
 * spooled (./photo-spool.ts), one at a time, then the consent record written
 * with the SHA-256 of each cleaned image, and only then the upload sent, its
 * body streaming the spooled copies as base64 one after the other (memory: one
 * chunk in flight) — or, with MEDIA_PHOTO_FORMAT=url, links to the bot's own
 * short-lived copies. The originals (with their EXIF, GPS, XMP…) never leave.
 */
import type { Logger } from 'pino';
import type { ConsentStore } from './consent-store.js';
import type { Submitted } from '../media/client.js';
import { MediaRequestInvalidError } from '../media/errors.js';
import type { PhotoSource, TaskResult, WebhookTarget } from '../media/types.js';
import { checkParams } from '../operations/index.js';
import { inEnglish } from '../operations/fields.js';
import type { ParamsOf } from '../operations/types.js';
import { PhotoCleanError, type PhotoCleaner } from './clean-photo.js';
import { DownloadError } from './download.js';
import type { PhotoSpool, SpooledPhoto } from './photo-spool.js';
import { TrainingSessionError, quote, type TrainingSession, type TrainingSessions } from './sessions.js';

export interface PreparedUpload {
  /** The spool batch holding the cleaned copies. */
  token: string;
  /** What is sent, in order: each cleaned image's SHA-256, format and size. */
  images: SpooledPhoto[];
  /** For the service: base64 sources reading the cleaned copies, or links to them. */
  photos: PhotoSource[];
}

export interface TrainingUploaderOptions {
  sessions: Pick<TrainingSessions, 'originals'>;
  cleaner: PhotoCleaner;
  spool: PhotoSpool;
  consent: Pick<ConsentStore, 'record'>;
  /** MEDIA_PHOTO_FORMAT. */
  photoFormat: 'base64' | 'url';
  /** PUBLIC_URL: required with photoFormat `url` (config refuses url without it). */
  publicUrl?: string;
  logger: Logger;
}

/** Who confirmed what, for the consent record. */
export interface ConsentGiven {
  userId: string;
  guildId?: string;
  channelId?: string;
  /** When the member pressed Confirm. */
  at: number;
  /** The consent text's version (./consent.ts). */
  wording: string;
  /** The language it was shown in. */
  language?: string;
}

type Submit = (
  params: ParamsOf<'upload'>,
  webhook: WebhookTarget | undefined,
) => Promise<Submitted | TaskResult>;

export class TrainingUploader {
  private readonly opts: TrainingUploaderOptions;
  /**
   * URL mode: batches the service may still fetch, by job id, released when the
   * job ends here (else by the spool's TTL; entries older than it are dropped).
   */
  private readonly awaitingFetch = new Map<string, { token: string; at: number }>();

  constructor(opts: TrainingUploaderOptions) {
    if (opts.photoFormat === 'url' && opts.publicUrl === undefined)
      throw new Error(
        'MEDIA_PHOTO_FORMAT=url needs PUBLIC_URL (the service fetches the cleaned copies there)',
      );
    this.opts = opts;
  }

  /**
   * Cleans and spools every photo of `session`, in order, one at a time.
   * A photo that cannot be downloaded, is not what was added, or cannot be
   * decoded fails it with a MediaRequestInvalidError naming the photo (nothing
   * has been sent; the session is kept).
   */
  async prepare(session: TrainingSession): Promise<PreparedUpload> {
    const { sessions, cleaner, spool, photoFormat, publicUrl } = this.opts;
    let originals;
    try {
      originals = await sessions.originals(session);
    } catch (err) {
      if (err instanceof TrainingSessionError) throw new MediaRequestInvalidError([err.message]);
      throw err;
    }
    const token = await spool.open();
    const images: SpooledPhoto[] = [];
    try {
      for (const [n, o] of originals.entries()) {
        try {
          images.push(await spool.put(token, n, await cleaner.cleanFrom(o.read)));
        } catch (err) {
          if (err instanceof DownloadError) throw new MediaRequestInvalidError([err.message]);
          if (err instanceof PhotoCleanError)
            throw new MediaRequestInvalidError([`${quote(o.photo.name)}: ${err.message}`]);
          throw err;
        }
      }
    } catch (err) {
      await spool.release(token);
      throw err;
    }
    const photos: PhotoSource[] = images.map((img) => {
      const url = `${publicUrl ?? ''}/photos/${token}/${img.file}`;
      return photoFormat === 'url'
        ? { url }
        : { url, open: () => Promise.resolve(spool.read(token, img.file, img.sha256)) };
    });
    return { token, images, photos };
  }

  /**
   * The whole send for upload job `jobId`: prepare, record the consent (the
   * SHA-256 of each image exactly as sent), then submit once. A consent record
   * that cannot be stored stops it before anything is sent.
   */
  async send(
    session: TrainingSession,
    jobId: string,
    consent: ConsentGiven,
    submit: Submit,
    webhook: WebhookTarget | undefined,
  ): Promise<Submitted | TaskResult> {
    const prepared = await this.prepare(session);
    // Links: the service fetches them once it has the request, whatever its answer said (or
    // whether one came back): kept until the job ends, or the spool's TTL.
    const keep = this.opts.photoFormat === 'url';
    if (keep) this.awaitFetch(jobId, prepared.token);
    try {
      const params: ParamsOf<'upload'> = {
        ethnicity: session.ethnicity,
        gender: session.gender,
        ...(session.age !== undefined ? { age: session.age } : {}),
        photos: prepared.photos,
      };
      // Checked before the consent record: a request our own checks refuse is never sent.
      const checked = checkParams('upload', params);
      if (!checked.ok) throw new MediaRequestInvalidError(checked.problems.map(inEnglish));
      await this.opts.consent.record({
        ...consent,
        jobId,
        sha256: prepared.images.map((i) => i.sha256),
      });
      this.opts.logger.info(
        { jobId, photos: prepared.images.length, bytes: prepared.images.reduce((n, i) => n + i.bytes, 0) },
        'training photos cleaned; consent recorded; uploading',
      );
      return await submit(params, webhook);
    } finally {
      if (!keep) await this.opts.spool.release(prepared.token);
    }
  }

  /** The upload job ended: the cleaned copies it was served from go (url mode). */
  async jobEnded(jobId: string): Promise<void> {
    const entry = this.awaitingFetch.get(jobId);
    if (entry === undefined) return;
    this.awaitingFetch.delete(jobId);
    await this.opts.spool.release(entry.token);
  }

  private awaitFetch(jobId: string, token: string): void {
    const now = Date.now();
    for (const [id, e] of this.awaitingFetch)
      if (e.at + this.opts.spool.ttlMs <= now) this.awaitingFetch.delete(id);
    this.awaitingFetch.set(jobId, { token, at: now });
  }
}
