import type { REST } from '@discordjs/rest';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import { CommunityService } from '../services/community/community.js';
import { FairUseLedger } from '../services/community/fair-use.js';
import { GALLERY_MEMORY_BYTES, GalleryPoster } from '../services/community/gallery.js';
import { GuildSettingsStore } from '../services/community/settings.js';
import type { ChannelBudget } from '../services/discord/edits/channel-budget.js';
import type { JobRenderer } from '../services/discord/render/job-render.js';
import { ByteBudget } from '../services/net/byte-budget.js';
import type { AllowList } from '../services/net/address-policy.js';
import type { SafeDownloader } from '../services/net/safe-download.js';
import { jobOperations } from '../services/operations/index.js';
import { PublicPosts } from '../services/privacy/public-posts.js';
import type { Stores } from '../services/store/index.js';

/** Community: guild settings, fair use and credits, the gallery, where jobs were posted in public. */
export interface Community {
  settings: GuildSettingsStore;
  ledger: FairUseLedger;
  publicPosts: PublicPosts;
  gallery: GalleryPoster;
  community: CommunityService;
}

export function createCommunity(deps: {
  config: Config;
  stores: Stores;
  botRest: REST;
  render: JobRenderer;
  downloader: SafeDownloader;
  allow: AllowList;
  channelBudget: ChannelBudget | undefined;
  logger: Logger;
  metrics: Metrics;
  now: () => number;
}): Community {
  const { config, stores, logger, metrics, now } = deps;
  const settings = new GuildSettingsStore({ kv: stores.kv, defaults: config.community.defaults });
  // A slot is held at most as long as a job can run (then it times out and frees it anyway).
  const ledger = new FairUseLedger({
    kv: stores.kv,
    slotTtlMs: config.jobs.maxDurationMs + 3_600_000,
    operatorDailyCredits: config.operator.dailyCredits,
    now,
    onCountError: (err, key, credits) =>
      logger.warn({ err, key, credits }, 'could not count today’s credits (lost)'),
  });
  metrics.operatorDailyCredits.set(config.operator.dailyCredits);
  // Where each job was posted in public, kept past the job records' retention.
  const publicPosts = new PublicPosts({
    kv: stores.kv,
    indexes: stores.indexes,
    operations: jobOperations.names,
  });
  const gallery = new GalleryPoster({
    rest: deps.botRest,
    settings,
    recordPost: async (jobId, galleryPost) => {
      const r = await stores.jobs.apply(jobId, { galleryPost, at: now() });
      if (r) await publicPosts.recordJob(r.job);
    },
    kv: stores.kv,
    logger: logger.child({ component: 'gallery' }),
    now,
    downloader: deps.downloader,
    allow: deps.allow,
    // One budget for the process: concurrent posts wait for memory rather than exceed it.
    memory: new ByteBudget(GALLERY_MEMORY_BYTES),
    render: deps.render,
    ...(deps.channelBudget ? { budget: deps.channelBudget } : {}),
  });
  const community = new CommunityService({
    settings,
    ledger,
    costs: config.community.costs,
    personal: config.userInstall,
    operator: config.operator,
    jobMaxDurationMs: config.jobs.maxDurationMs,
    logger: logger.child({ component: 'community' }),
    gallery,
    metrics,
  });
  return { settings, ledger, publicPosts, gallery, community };
}
