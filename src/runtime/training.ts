import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Stores } from '../services/store/index.js';
import { createSafePhotoDownloader } from '../services/training/download.js';
import { createTrainingServices, type TrainingServices } from '../services/training/index.js';
import type { DiscordRest } from './discord-rest.js';
import type { Disposers } from './disposers.js';
import type { Outbound } from './outbound.js';

/** The training-photo services on the store, Discord's attachment links and the safe downloader. */
export function createTraining(deps: {
  config: Config;
  stores: Stores;
  rest: DiscordRest;
  outbound: Outbound;
  disposers: Disposers;
  logger: Logger;
  now: () => number;
}): TrainingServices {
  const { config, stores, rest, outbound } = deps;
  const training = createTrainingServices({
    config,
    kv: stores.kv,
    jobState: async (jobId) => (await stores.jobs.get(jobId))?.state,
    refreshUrls: async (urls) =>
      (await rest.botRest.post('/attachments/refresh-urls', { body: { attachment_urls: urls } })) as unknown,
    download: createSafePhotoDownloader({ ...outbound, maxBytes: config.photos.maxBytes }),
    logger: deps.logger.child({ component: 'training' }),
    now: deps.now,
  });
  deps.disposers.add({ name: 'training', close: () => training.stop(), inline: true });
  return training;
}
