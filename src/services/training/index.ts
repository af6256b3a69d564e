/**
 * The training-photo services, built together from config (one place for the
 * composition root to call): sessions, the cleaner and its spool, the
 * uploader, and the consent prompts and records.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { ConsentStore } from './consent-store.js';
import type { AtomicKeyValueStore, JobRecord, JobState } from '../store/types.js';
import { PhotoCleaner } from './clean-photo.js';
import { ConsentPrompts } from './consent.js';
import { PhotoSpool } from './photo-spool.js';
import type { RefreshUrls } from './refresh-urls.js';
import type { Downloader } from './download.js';
import { TrainingSessions } from './sessions.js';
import { TrainingUploader } from './upload.js';

export interface TrainingServices {
  sessions: TrainingSessions;
  uploader: TrainingUploader;
  consent: { prompts: ConsentPrompts; records: ConsentStore };
  /** The cleaned copies; served under PUBLIC_URL with MEDIA_PHOTO_FORMAT=url (src/webhooks/photo-files.ts). */
  spool: PhotoSpool;
  /** For the job service's after-final hook (any job; upload jobs only act). Never throws. */
  jobEnded(job: Pick<JobRecord, 'id' | 'operation' | 'state'>): Promise<void>;
  /** Creates the spool directory and sweeps what a previous run left. */
  start(): Promise<void>;
  stop(): void;
}

export interface TrainingServicesOptions {
  config: Pick<Config, 'photos' | 'privacy' | 'media' | 'publicUrl' | 'store'>;
  kv: AtomicKeyValueStore;
  /** An upload job's state (the job store), to settle a submission whose end was not reported. */
  jobState: (jobId: string) => Promise<JobState | undefined>;
  refreshUrls: RefreshUrls;
  /** Fetches the photos (the SSRF-safe downloader in production). */
  download?: Downloader;
  logger: Logger;
  now?: () => number;
}

export function createTrainingServices(opts: TrainingServicesOptions): TrainingServices {
  const { config, kv, logger } = opts;
  const now = opts.now ?? Date.now;
  const sessions = new TrainingSessions({
    kv,
    jobState: opts.jobState,
    logger,
    maxBytes: config.photos.maxBytes,
    ttlMs: config.photos.sessionTtlMs,
    refreshUrls: opts.refreshUrls,
    ...(opts.download ? { download: opts.download } : {}),
    now,
  });
  const records = new ConsentStore({
    kv,
    retentionMs: config.privacy.consentRetentionDays * 86_400_000,
    now,
  });
  const spool = new PhotoSpool({ dir: join(config.store.dataDir, 'photo-spool'), logger });
  const uploader = new TrainingUploader({
    sessions,
    cleaner: new PhotoCleaner(),
    spool,
    consent: records,
    photoFormat: config.media.photoFormat,
    ...(config.publicUrl !== undefined ? { publicUrl: config.publicUrl } : {}),
    logger,
  });
  return {
    sessions,
    uploader,
    consent: { prompts: new ConsentPrompts({ kv, now }), records },
    spool,
    async jobEnded(job) {
      if (job.operation !== 'upload') return;
      await Promise.all([sessions.jobEnded(job.id, job.state), uploader.jobEnded(job.id)]).catch(
        (err: unknown) => logger.warn({ err, jobId: job.id }, 'training session not settled'),
      );
    },
    start: () => spool.start(),
    stop: () => spool.stop(),
  };
}
