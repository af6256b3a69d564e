import type { Config } from '../config.js';
import { compileAllowList, type AllowList } from '../services/net/address-policy.js';
import { createSafeDownloader, type SafeDownloader } from '../services/net/safe-download.js';
import type { Disposers } from './disposers.js';

/** What the bot fetches from the internet (photos, result files): one SSRF-safe downloader and its allow list. */
export interface Outbound {
  downloader: SafeDownloader;
  allow: AllowList;
}

export function createOutbound(config: Config, disposers: Disposers): Outbound {
  const allow = compileAllowList(config.outbound.allow);
  const downloader = createSafeDownloader();
  disposers.add({ name: 'downloader', close: () => downloader.close() });
  return { downloader, allow };
}
