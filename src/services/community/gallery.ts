import { operations, resultFiles } from '../operations/index.js';
import { formatBytes } from '../shared/format.js';
import { DiscordAPIError, Routes, type REST } from 'discord.js';
import type { Logger } from 'pino';
import { request } from 'undici';
import { z } from 'zod';
import { renderGalleryPost } from '../discord/render.js';
import type { JobRecord, LockingKeyValueStore } from '../store/types.js';
import type { GuildSettingsStore } from './settings.js';
import type { ChannelBudget } from '../discord/channel-budget.js';

/**
 * The gallery: every finished upscale, song and video job posted once to the
 * server's gallery channel, its result files re-hosted as Discord attachments so
 * they outlive the service's links. Downloads are streamed with a timeout and cut
 * at the guild's upload limit; a file that does not fit or fails is linked
 * instead. Nothing here ever fails the job: errors are recorded for /settings show.
 */

const MAX_FILES = 10;
const MIB = 1024 * 1024;
/** Discord's per-file upload limit by boost tier. */
export const uploadLimitForTier = (tier: number): number =>
  tier >= 3 ? 100 * MIB : tier === 2 ? 50 * MIB : 10 * MIB;
/** Posted-marks live as long as a job record can. */
const POSTED_TTL_MS = 45 * 86_400_000;
const TIER_CACHE_MS = 3_600_000;

export type Download = { ok: true; bytes: Buffer; contentType?: string } | { ok: false; reason: string };

/** GET `url` streamed, abandoned past `maxBytes` or `timeoutMs`; never buffers more than `maxBytes`. */
async function downloadCapped(url: string, maxBytes: number, timeoutMs: number): Promise<Download> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await request(url, { method: 'GET', signal });
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined);
      return { ok: false, reason: `download failed (HTTP ${res.statusCode})` };
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.body.dump().catch(() => undefined);
      return { ok: false, reason: `over the ${formatBytes(maxBytes)} upload limit` };
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > maxBytes) {
        res.body.destroy();
        return { ok: false, reason: `over the ${formatBytes(maxBytes)} upload limit` };
      }
      chunks.push(buf);
    }
    const type = res.headers['content-type'];
    return {
      ok: true,
      bytes: Buffer.concat(chunks, size),
      ...(typeof type === 'string' ? { contentType: type } : {}),
    };
  } catch (err) {
    const reason = signal.aborted
      ? `download timed out after ${Math.round(timeoutMs / 1000)} s`
      : 'download failed';
    return {
      ok: false,
      reason: err instanceof Error && !signal.aborted ? `${reason} (${err.message})` : reason,
    };
  }
}

function fileName(url: string, index: number): string {
  try {
    const last = new URL(url).pathname.split('/').pop() ?? '';
    const clean = decodeURIComponent(last)
      .replace(/[^\w.-]+/g, '_')
      .slice(-80);
    return clean.includes('.') ? clean : `result-${index + 1}${clean ? `-${clean}` : ''}`;
  } catch {
    return `result-${index + 1}`;
  }
}

const guildSchema = z.object({ premium_tier: z.number().int().min(0).max(3) });

export class GalleryPoster {
  readonly #tiers = new Map<string, { tier: number; at: number }>();

  constructor(
    private readonly deps: {
      rest: Pick<REST, 'get' | 'post'>;
      settings: GuildSettingsStore;
      kv: LockingKeyValueStore;
      logger: Logger;
      now: () => number;
      downloadTimeoutMs?: number;
      /**
       * Several instances: the channel budget they share (a gallery post uses the same
       * per-channel bucket as message edits), so posts from several instances cause no 429.
       */
      budget?: ChannelBudget;
    },
  ) {}

  /** Waits for a slot of the channel's shared budget (when there is one), then runs `fn`. */
  private async withBudget<T>(channelId: string, fn: () => Promise<T>): Promise<T> {
    const budget = this.deps.budget;
    if (!budget) return fn();
    const deadline = this.deps.now() + 60_000;
    for (;;) {
      const wait = await budget.acquire(channelId, 'final', this.deps.now());
      if (wait === 0) break;
      // Never stuck behind a budget: past a minute, discord.js's own limiter takes over.
      if (this.deps.now() + wait > deadline) return fn();
      await new Promise((r) => setTimeout(r, wait));
    }
    try {
      const out = await fn();
      budget.settled(channelId, this.deps.now());
      return out;
    } catch (err) {
      budget.settled(channelId, this.deps.now());
      throw err;
    }
  }

  /** The guild's per-file upload limit (its boost tier, cached for an hour; 10 MiB if unknown). */
  async uploadLimit(guildId: string): Promise<number> {
    const cached = this.#tiers.get(guildId);
    const now = this.deps.now();
    if (cached && now - cached.at < TIER_CACHE_MS) return uploadLimitForTier(cached.tier);
    try {
      const tier = guildSchema.parse(await this.deps.rest.get(Routes.guild(guildId))).premium_tier;
      this.#tiers.set(guildId, { tier, at: now });
      return uploadLimitForTier(tier);
    } catch (err) {
      this.deps.logger.debug({ err, guildId }, 'guild upload limit unknown; using 10 MiB');
      return uploadLimitForTier(0);
    }
  }

  /** Posts a finished job once (claimed in the store first, so a retry or another process never posts twice). */
  async post(job: JobRecord): Promise<'posted' | 'skipped' | 'failed'> {
    const guildId = job.message.guildId;
    if (job.state !== 'finished' || guildId === undefined || !operations[job.operation].inGallery)
      return 'skipped';
    const gallery = (await this.deps.settings.get(guildId)).gallery;
    if (gallery === undefined) return 'skipped';
    const claimed = await this.deps.kv.withLock(`gallery:${job.id}`, async () => {
      if ((await this.deps.kv.get(`gallery-posted:${job.id}`)) !== undefined) return false;
      await this.deps.kv.set(`gallery-posted:${job.id}`, { at: this.deps.now() }, POSTED_TTL_MS);
      return true;
    });
    if (!claimed) return 'skipped';

    const limit = await this.uploadLimit(guildId);
    const urls = resultFiles(job.result);
    const files: { name: string; data: Buffer; contentType?: string }[] = [];
    const linked: { url: string; reason: string }[] = [];
    // One at a time: at most one file (≤ the upload limit) is being read at once.
    for (const [i, url] of urls.entries()) {
      if (files.length >= MAX_FILES) {
        linked.push({ url, reason: `Discord takes ${MAX_FILES} files a message` });
        continue;
      }
      const d = await downloadCapped(url, limit, this.deps.downloadTimeoutMs ?? 30_000);
      if (d.ok)
        files.push({
          name: fileName(url, i),
          data: d.bytes,
          ...(d.contentType ? { contentType: d.contentType } : {}),
        });
      else linked.push({ url, reason: d.reason });
    }
    const send = (attach: typeof files, links: typeof linked) =>
      this.withBudget(gallery, () =>
        this.deps.rest.post(Routes.channelMessages(gallery), {
          body: renderGalleryPost(
            job,
            attach.map((f) => ({ filename: f.name })),
            links,
          ),
          files: attach,
        }),
      );
    try {
      try {
        await send(files, linked);
      } catch (err) {
        // Too large for Discord after all (its limit changed, or a total cap): link everything instead.
        if (!(err instanceof DiscordAPIError && err.code === 40005) || files.length === 0) throw err;
        await send([], [...urls.map((url) => ({ url, reason: 'too large for this server' }))]);
      }
      await this.deps.settings.clearGalleryError(guildId);
      this.deps.logger.info(
        { jobId: job.id, guildId, files: files.length, linked: linked.length },
        'posted to the gallery',
      );
      return 'posted';
    } catch (err) {
      const what =
        err instanceof DiscordAPIError
          ? `${err.message} (${err.code}) in <#${gallery}>`
          : `could not post in <#${gallery}> (${err instanceof Error ? err.message : String(err)})`;
      this.deps.logger.warn({ err, jobId: job.id, guildId, gallery }, 'gallery post failed');
      await this.deps.settings
        .recordGalleryError(guildId, what, this.deps.now())
        .catch((e: unknown) => this.deps.logger.warn({ err: e }, 'could not record the gallery error'));
      return 'failed';
    }
  }
}
