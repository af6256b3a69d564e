import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { TaskReading } from '../services/media/ports.js';
import { AccountMonitor } from '../services/media/account-monitor.js';
import { MediaClient } from '../services/media/client.js';
import { SubmitLimit } from '../services/media/submit-limit.js';
import { TaskReader } from '../services/media/task-batcher.js';
import { mediaOperations } from '../services/operations/index.js';
import type { KeyValueStore } from '../services/store/types.js';
import type { Disposers } from './disposers.js';

/** How long a submission may wait out the service's 429s in all (MediaClient's bound). */
export const SUBMIT_WAIT_BOUND_MS = 5 * 60_000;
/**
 * The service account's balance is read this often for the whole deployment (a periodic
 * task, see runtime/periodic.ts); every instance serves `/settings show` and its own
 * `/metrics` from the last reading, kept in the store.
 */
export const ACCOUNT_READ_EVERY_MS = 5 * 60_000;
const ACCOUNT_READING_KEY = 'media-account:reading';
/** A reading nobody renewed for a day (no instance ran) is gone rather than shown as current. */
const ACCOUNT_READING_TTL_MS = 86_400_000;

/** The media service: its client, the one paced reader of tasks, the account's balance. */
export interface MediaSide {
  media: MediaClient;
  /** Polls and recovery. */
  reader: TaskReading;
  /** A member waits on it (Refresh, autocomplete): read ahead of polls. */
  urgentReader: TaskReading;
  account: AccountMonitor;
}

export function createMediaSide(deps: {
  config: Config;
  metrics: Metrics;
  logger: Logger;
  /** The store every instance shares: the account's last reading. */
  kv: KeyValueStore;
  disposers: Disposers;
}): MediaSide {
  const { config, metrics } = deps;
  const mediaLog = deps.logger.child({ component: 'media' });
  const media = new MediaClient({
    baseUrl: config.media.baseUrl,
    apiKey: config.media.apiKey,
    paths: config.media.paths,
    photoFormat: config.media.photoFormat,
    timeoutMs: config.media.timeoutMs,
    upscaleTimeoutMs: config.media.upscaleTimeoutMs,
    logger: mediaLog,
    submitLimit: new SubmitLimit({
      initial: config.media.submitConcurrency,
      onChange: (n) => metrics.mediaSubmitConcurrency.set(n),
    }),
    busy: { maxTotalWaitMs: SUBMIT_WAIT_BOUND_MS },
    operations: mediaOperations,
  });
  deps.disposers.add({ name: 'media client', close: () => media.close() });
  // Every read of a task (polls, recovery, Refresh, autocomplete) goes through one batched, paced reader.
  const taskReader = new TaskReader({
    media,
    requestsPerSecond: config.media.readsPerSecond,
    logger: mediaLog,
  });
  deps.disposers.add({ name: 'task reader', close: () => taskReader.close(), inline: true });
  const { kv } = deps;
  const account = new AccountMonitor({
    media,
    readings: {
      load: () => kv.get(ACCOUNT_READING_KEY),
      save: (reading) => kv.set(ACCOUNT_READING_KEY, reading, ACCOUNT_READING_TTL_MS),
    },
    metrics,
    logger: mediaLog,
    lowCredits: config.media.lowCredits,
  });
  // Whichever instance took the reading, each instance's /metrics shows it.
  metrics.beforeScrape.accountCredits = () => account.showLatest();
  return {
    media,
    reader: { read: (op, taskId) => taskReader.read(op, taskId) },
    urgentReader: { read: (op, taskId) => taskReader.read(op, taskId, { urgent: true }) },
    account,
  };
}
