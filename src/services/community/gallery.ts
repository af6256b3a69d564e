import { randomUUID } from 'node:crypto';
import { operations, resultFiles } from '../operations/index.js';
import { formatBytes } from '../shared/format.js';
import { DiscordAPIError, type REST } from '@discordjs/rest';
import { Routes } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { request } from 'undici';
import { z } from 'zod';
import { oncePerJob } from '../discord/message-nonce.js';
import { renderGalleryPost } from '../discord/render.js';
import type { GalleryPostRef, JobRecord, LockingKeyValueStore } from '../store/types.js';
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
/**
 * How long a claim to post lasts while the files download: longer than ten downloads of
 * at most 30 s each. An instance that died holding it leaves a claim that lapses, and the
 * job's next owner posts.
 */
const POSTING_LEASE_MS = 6 * 60_000;
/**
 * The claim once the files are in hand, set just before the upload: longer than the
 * upload takes (a minute at most waiting for the channel's budget, then REST's 15 s
 * timeout on each of its attempts), and short enough that after a crash right after
 * Discord took the post, the next owner's post (same nonce) falls in the few minutes
 * in which Discord answers it with that first message instead of a second one.
 */
export const UPLOAD_LEASE_MS = 2 * 60_000;
/** How often a post waits out another instance's live claim before leaving it to that instance. */
const MAX_CLAIM_WAITS = 2;

/**
 * The mark of a job's gallery post: `posted` once done (or given up, the error
 * recorded); otherwise a claim by `token` until `until`. `{at}` alone: a mark from
 * before claims lapsed, read as posted.
 */
const markSchema = z.object({
  at: z.number(),
  posted: z.boolean().optional(),
  token: z.string().optional(),
  until: z.number().optional(),
});
type Mark = z.infer<typeof markSchema>;
type Claim = { kind: 'claimed'; token: string } | { kind: 'done' } | { kind: 'busy'; until: number };
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
const postedSchema = z.object({ id: z.string(), channel_id: z.string() });

/** What became of a job's gallery post when it was taken down. */
export type TakeDown = { kind: 'deleted' } | { kind: 'none' } | { kind: 'failed'; reason: string };

/** Discord answers that mean the post is already gone. */
const GONE_CODES = new Set([10003, 10008]);

export class GalleryPoster {
  readonly #tiers = new Map<string, { tier: number; at: number }>();

  constructor(
    private readonly deps: {
      rest: Pick<REST, 'get' | 'post' | 'delete'>;
      settings: GuildSettingsStore;
      /** Keeps where the post went on the job's record (Remove result and /privacy delete take it down). */
      recordPost: (jobId: string, post: GalleryPostRef) => Promise<void>;
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

  private markKey(jobId: string): string {
    return `gallery-posted:${jobId}`;
  }

  private async readMark(jobId: string): Promise<Mark | undefined> {
    const parsed = markSchema.safeParse(await this.deps.kv.get(this.markKey(jobId)));
    return parsed.success ? parsed.data : undefined;
  }

  /** Takes the job's post for a while unless it is done or another claim is live. */
  private claim(jobId: string): Promise<Claim> {
    return this.deps.kv.withLock(`gallery:${jobId}`, async (): Promise<Claim> => {
      const mark = await this.readMark(jobId);
      const now = this.deps.now();
      if (mark && (mark.posted === true || mark.until === undefined)) return { kind: 'done' };
      if (mark?.until !== undefined && mark.until > now) return { kind: 'busy', until: mark.until };
      const token = randomUUID();
      await this.deps.kv.set(
        this.markKey(jobId),
        { at: now, token, until: now + POSTING_LEASE_MS },
        POSTED_TTL_MS,
      );
      return { kind: 'claimed', token };
    });
  }

  /** Just before the upload: still our claim? Then it is renewed; else another instance posts. */
  private renewClaim(jobId: string, token: string): Promise<boolean> {
    return this.deps.kv.withLock(`gallery:${jobId}`, async () => {
      const mark = await this.readMark(jobId);
      if (mark?.token !== token || mark.posted === true) return false;
      const now = this.deps.now();
      await this.deps.kv.set(this.markKey(jobId), { ...mark, until: now + UPLOAD_LEASE_MS }, POSTED_TTL_MS);
      return true;
    });
  }

  private async markPosted(jobId: string): Promise<void> {
    await this.deps.kv.set(this.markKey(jobId), { at: this.deps.now(), posted: true }, POSTED_TTL_MS);
  }

  /**
   * Posts a finished job once: claimed in the store first, so a retry or another
   * process never posts twice; a claim whose instance died lapses and the next
   * caller (the job's next owner) posts. Waits out another instance's live claim
   * (at most twice) rather than leaving the post to an instance that may be gone.
   */
  async post(job: JobRecord): Promise<'posted' | 'skipped' | 'failed'> {
    const guildId = job.message.guildId;
    if (
      job.state !== 'finished' ||
      guildId === undefined ||
      job.removed !== undefined ||
      !operations[job.operation].inGallery
    )
      return 'skipped';
    const gallery = (await this.deps.settings.get(guildId)).gallery;
    if (gallery === undefined) return 'skipped';
    let claim = await this.claim(job.id);
    for (let waits = 0; claim.kind === 'busy' && waits < MAX_CLAIM_WAITS; waits++) {
      const waitMs = Math.max(0, claim.until - this.deps.now()) + 50;
      this.deps.logger.debug({ jobId: job.id, waitMs }, 'gallery post claimed elsewhere; waiting for it');
      await new Promise((r) => setTimeout(r, waitMs).unref());
      claim = await this.claim(job.id);
    }
    if (claim.kind !== 'claimed') return 'skipped';
    const token = claim.token;

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
    const once = oncePerJob('gallery', job.id);
    const send = (attach: typeof files, links: typeof linked) =>
      this.withBudget(gallery, async () =>
        postedSchema.parse(
          await this.deps.rest.post(Routes.channelMessages(gallery), {
            body: {
              ...renderGalleryPost(
                job,
                attach.map((f) => ({ filename: f.name })),
                links,
              ),
              ...once,
            },
            files: attach,
          }),
        ),
      );
    // Downloads took a while: post only if the claim is still ours (a paused instance whose
    // claim lapsed and was taken leaves the post to the taker).
    if (!(await this.renewClaim(job.id, token))) return 'skipped';
    try {
      let posted: z.infer<typeof postedSchema>;
      try {
        posted = await send(files, linked);
      } catch (err) {
        // Too large for Discord after all (its limit changed, or a total cap): link everything instead.
        if (!(err instanceof DiscordAPIError && err.code === 40005) || files.length === 0) throw err;
        posted = await send([], [...urls.map((url) => ({ url, reason: 'too large for this server' }))]);
      }
      await this.markPosted(job.id);
      await this.deps
        .recordPost(job.id, { channelId: posted.channel_id, messageId: posted.id })
        .catch((err: unknown) =>
          this.deps.logger.warn({ err, jobId: job.id }, 'could not record the gallery post'),
        );
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
      // Recorded for /settings show. REST has already retried 5xx and timeouts (the nonce keeps
      // those from posting twice); what is left is Discord's answer, or a network that is down.
      await this.markPosted(job.id).catch(() => undefined);
      await this.deps.settings
        .recordGalleryError(guildId, what, this.deps.now())
        .catch((e: unknown) => this.deps.logger.warn({ err: e }, 'could not record the gallery error'));
      return 'failed';
    }
  }

  /**
   * Takes a job's gallery post down (Remove result, /privacy delete): a forum or media
   * post's whole thread, else the message. The job's mark stays "posted", so it is never
   * posted again. A post already gone counts as deleted.
   */
  async takeDown(job: Pick<JobRecord, 'id' | 'galleryPost'>): Promise<TakeDown> {
    const post = job.galleryPost;
    if (post === undefined) return { kind: 'none' };
    try {
      await this.deps.rest.delete(
        post.threadId !== undefined
          ? Routes.channel(post.threadId)
          : Routes.channelMessage(post.channelId, post.messageId),
      );
      this.deps.logger.info({ jobId: job.id, channelId: post.channelId }, 'gallery post deleted');
      return { kind: 'deleted' };
    } catch (err) {
      if (err instanceof DiscordAPIError && typeof err.code === 'number' && GONE_CODES.has(err.code))
        return { kind: 'deleted' };
      this.deps.logger.warn(
        { err, jobId: job.id, channelId: post.channelId },
        'gallery post could not be deleted',
      );
      const reason =
        err instanceof DiscordAPIError
          ? `${err.message} (${String(err.code)})`
          : 'Discord could not be reached';
      return { kind: 'failed', reason };
    }
  }
}
