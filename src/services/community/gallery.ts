import { randomUUID } from 'node:crypto';
import { operations, resultFiles } from '../operations/index.js';
import { formatBytes, type Translator } from '../../i18n/index.js';
import { DiscordAPIError, type RawFile, type REST } from '@discordjs/rest';
import { discordCode, isAutoModRefusal, isGoneOnDiscord } from '../discord/discord-transport.js';
import { Routes } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { z } from 'zod';
import { oncePerJob } from '../discord/message-nonce.js';
import type { JobRenderer } from '../discord/render/job-render.js';
import type { AllowList } from '../net/address-policy.js';
import { ByteBudgetError, type ByteBudget, type Reservation } from '../net/byte-budget.js';
import { SafeDownloadError, readAll, type SafeDownloader, type SafeResponse } from '../net/safe-download.js';
import type { AtomicKeyValueStore, GalleryPostRef, JobRecord, KvDecision } from '../store/types.js';
import type { GuildSettingsStore } from './settings.js';
import type { ChannelBudget } from '../discord/edits/channel-budget.js';
import { sniffMedia, type MediaKind, type MediaType } from './media-sniff.js';

/**
 * The gallery: every finished upscale, song and video job posted once to the
 * server's gallery channel, its result files re-hosted as Discord attachments so
 * they outlive the service's links. A text or announcement channel gets a message; a
 * forum or media channel a post of its own (a thread named after the job, tagged with
 * its operation). Files come through the SSRF-safe downloader (public addresses or
 * OUTBOUND_ALLOW), each cut at the guild's upload limit, and are held within one memory
 * budget shared by every post of the process; a file that does not fit or fails is
 * linked instead, with why. Nothing here ever fails the job: errors are recorded for
 * /settings show.
 */

const MAX_FILES = 10;
const MIB = 1024 * 1024;
/** Memory all gallery posts of a process may hold in downloaded files at once. */
export const GALLERY_MEMORY_BYTES = 256 * MIB;
/** Discord's per-file upload limit by boost tier. */
export const uploadLimitForTier = (tier: number): number =>
  tier >= 3 ? 100 * MIB : tier === 2 ? 50 * MIB : 10 * MIB;
/** Posted-marks live as long as a job record can. */
const POSTED_TTL_MS = 45 * 86_400_000;
/** Longest wait for room in the memory budget before a post's files are linked instead. */
const MEMORY_WAIT_MS = 2 * 60_000;
/**
 * How long a claim to post lasts while the files download: longer than the wait for
 * memory plus ten downloads of at most 30 s each. An instance that died holding it leaves
 * a claim that lapses, and the job's next owner posts.
 */
const POSTING_LEASE_MS = 8 * 60_000;
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
/** A channel's type and tags change rarely: read again after this long. */
const CHANNEL_CACHE_MS = 10 * 60_000;

/** Discord's forum (15) and media (16) channels: each job is a post (a thread) of its own. */
const POST_CHANNEL_TYPES = new Set([15, 16]);

/**
 * A re-hosted file's name: the URL's file name without its extension (sanitised), then the
 * extension of what its bytes are, never the one the URL claims.
 */
function fileName(url: string, index: number, type: MediaType): string {
  let stem = '';
  try {
    const last = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
    stem = last
      .replace(/\.[^.]*$/, '')
      .replace(/[^\w-]+/g, '_')
      .slice(-60);
  } catch {
    // An undecodable or unparseable URL: the neutral name.
  }
  return `${stem === '' || stem === '_' ? `result-${index + 1}` : stem}.${type.ext}`;
}

/** A post title without the job's text: the command and the job id's first characters. */
export function neutralPostName(job: Pick<JobRecord, 'id' | 'operation'>): string {
  return `${operations[job.operation].command} · ${job.id.slice(0, 8)}`;
}

/** A forum post's title: like the job's thread, or neutral when AutoMod refused the job's text. */
export function galleryPostName(
  job: Pick<JobRecord, 'id' | 'operation' | 'params' | 'textWithheld'>,
  render: Pick<JobRenderer, 'threadName'>,
): string {
  return job.textWithheld === true ? neutralPostName(job) : render.threadName(job);
}

const guildSchema = z.object({ premium_tier: z.number().int().min(0).max(3) });
const bits = z.string().regex(/^\d{1,20}$/);
const userSchema = z.object({ id: z.string() });
const overwritesSchema = z.object({
  permission_overwrites: z
    .array(z.object({ id: z.string(), type: z.number().int(), allow: bits, deny: bits }))
    .nullish(),
});
const rolesSchema = z.object({ roles: z.array(z.object({ id: z.string(), permissions: bits })) });
const memberRolesSchema = z.object({ roles: z.array(z.string()) });
const ADMINISTRATOR = 1n << 3n;
/** View Channel, Send Messages (in a forum or media channel: Create Posts), Attach Files. */
const GALLERY_NEEDS = (1n << 10n) | (1n << 11n) | (1n << 15n);
const postedSchema = z.object({ id: z.string(), channel_id: z.string() });
const threadPostedSchema = z.object({ id: z.string(), message: z.object({ id: z.string() }).nullish() });
const channelSchema = z.object({
  type: z.number().int(),
  available_tags: z.array(z.object({ id: z.string(), name: z.string() })).nullish(),
});

type ChannelKind = { kind: 'posts'; tags: { id: string; name: string }[] } | { kind: 'messages' };

/** The tag of a forum or media channel named after the job's operation (or its command), any case. */
export function tagFor(
  tags: readonly { id: string; name: string }[],
  operation: JobRecord['operation'],
): string | undefined {
  const names = [operation, operations[operation].command].map((n) => n.toLowerCase());
  for (const name of names) {
    const tag = tags.find((t) => t.name.trim().toLowerCase() === name);
    if (tag) return tag.id;
  }
  return undefined;
}

/** Why a file was linked instead of attached, in the post's language (the server's). */
type Reason = (tr: Translator) => string;
/** A result file the post links to instead of attaching, and why. */
type Linked = { url: string; reason: Reason };

type Gathered = {
  files: RawFile[];
  linked: Linked[];
  /** Gives the files' memory back. */
  release: () => void;
};

/**
 * Why a file was linked instead of attached, short and fit for the post (never its URL).
 * A refusal's own words (the address, the scheme) and rarer transport failures stay the
 * downloader's English text.
 */
function downloadReason(err: unknown, uploadLimit: number, cap: number, timeoutMs: number): Reason {
  if (err instanceof SafeDownloadError) {
    switch (err.kind) {
      case 'too_large':
        return cap >= uploadLimit
          ? (tr) => tr.t('gallery.reason.over_limit', { limit: formatBytes(tr, uploadLimit) })
          : (tr) => tr.t('gallery.reason.over_memory', { limit: formatBytes(tr, cap) });
      case 'http': {
        const status = err.detail.status ?? '?';
        return (tr) => tr.t('gallery.reason.http', { status });
      }
      case 'timeout':
        return (tr) => tr.t('gallery.reason.timeout', { seconds: Math.ceil(timeoutMs / 1000) });
      case 'blocked_address':
      case 'scheme':
      case 'credentials':
      case 'invalid_url': {
        const detail = err.message;
        return (tr) => tr.t('gallery.reason.refused', { detail });
      }
      default: {
        const message = err.message;
        return () => message;
      }
    }
  }
  return (tr) => tr.t('gallery.reason.failed');
}

/** A downloaded body in one buffer: its declared size allocated once, else the chunks joined. */
async function readBody(res: SafeResponse): Promise<Buffer> {
  if (res.contentLength === undefined) return readAll(res);
  const out = Buffer.allocUnsafe(res.contentLength);
  let at = 0;
  for await (const chunk of res.body) {
    // A body longer than declared: the downloader's cap (≤ what was reserved) still holds.
    if (at + chunk.byteLength > out.length) {
      res.abort();
      throw new SafeDownloadError('network', 'the download failed (longer than declared)');
    }
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out.subarray(0, at);
}

/** What became of a job's gallery post when it was taken down. */
export type TakeDown = { kind: 'deleted' } | { kind: 'none' } | { kind: 'failed'; reason: string };

export class GalleryPoster {
  readonly #tiers = new Map<string, { tier: number; at: number }>();
  readonly #channels = new Map<string, { kind: ChannelKind; at: number }>();

  constructor(
    private readonly deps: {
      rest: Pick<REST, 'get' | 'post' | 'delete'>;
      settings: GuildSettingsStore;
      /** Keeps where the post went on the job's record (Remove result and /privacy delete take it down). */
      recordPost: (jobId: string, post: GalleryPostRef) => Promise<void>;
      kv: AtomicKeyValueStore;
      logger: Logger;
      now: () => number;
      /** The SSRF-safe downloader the process shares, and what OUTBOUND_ALLOW trusts. */
      downloader: SafeDownloader;
      allow: AllowList;
      /** Memory for files waiting for their upload, one budget for every post of the process. */
      memory: ByteBudget;
      /** The job's result card (a gallery post is one) and its thread's name. */
      render: Pick<JobRenderer, 'renderGalleryPost' | 'threadName'>;
      downloadTimeoutMs?: number;
      /** Longest wait for room in `memory` (default 2 min); then the post links its files. */
      memoryWaitMs?: number;
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

  /**
   * Whether the gallery takes posts (forum, media) or messages, and its tags (cached for a
   * while). Unknown (Discord unreachable, or an answer that is not a channel): messages,
   * whose post then fails or succeeds on its own.
   */
  private async channelKind(channelId: string): Promise<ChannelKind> {
    const now = this.deps.now();
    const cached = this.#channels.get(channelId);
    if (cached && now - cached.at < CHANNEL_CACHE_MS) return cached.kind;
    try {
      const channel = channelSchema.parse(await this.deps.rest.get(Routes.channel(channelId)));
      const kind: ChannelKind = POST_CHANNEL_TYPES.has(channel.type)
        ? { kind: 'posts', tags: channel.available_tags ?? [] }
        : { kind: 'messages' };
      this.#channels.set(channelId, { kind, at: now });
      return kind;
    } catch (err) {
      this.deps.logger.debug({ err, channelId }, 'gallery channel type unknown; posting a message');
      return { kind: 'messages' };
    }
  }

  /**
   * Downloads the files, at most MAX_FILES, each within the upload limit, all of them
   * within one reservation of the shared memory budget (one per post, so two posts never
   * wait on each other while holding memory). The reservation starts at a full upload
   * limit per file (or the whole budget) and shrinks after each file to what was read
   * plus a limit per file still to come, so other posts get the rest at once.
   */
  private async gather(urls: string[], limit: number, kinds: readonly MediaKind[]): Promise<Gathered> {
    const timeoutMs = this.deps.downloadTimeoutMs ?? 30_000;
    const files: RawFile[] = [];
    const linked: Linked[] = [];
    const wanted = urls.slice(0, MAX_FILES);
    for (const url of urls.slice(MAX_FILES))
      linked.push({ url, reason: (tr) => tr.t('gallery.reason.too_many_files', { max: MAX_FILES }) });
    if (wanted.length === 0) return { files, linked, release: () => undefined };
    const memory = this.deps.memory;
    let reservation: Reservation;
    try {
      reservation = await memory.reserve(Math.min(memory.capacity, wanted.length * limit), {
        timeoutMs: this.deps.memoryWaitMs ?? MEMORY_WAIT_MS,
      });
    } catch (err) {
      const reason: Reason =
        err instanceof ByteBudgetError && err.kind === 'timeout'
          ? (tr) => tr.t('gallery.reason.memory_busy')
          : (tr) => tr.t('gallery.reason.no_memory');
      this.deps.logger.warn({ err, files: wanted.length }, 'gallery files linked: no memory free');
      return {
        files,
        linked: [...wanted.map((url) => ({ url, reason })), ...linked],
        release: () => undefined,
      };
    }
    const failed: Linked[] = [];
    let used = 0;
    try {
      for (const [i, url] of wanted.entries()) {
        const cap = Math.min(limit, reservation.bytes - used);
        if (cap <= 0) {
          failed.push({ url, reason: (tr) => tr.t('gallery.reason.no_memory_left') });
          continue;
        }
        try {
          const res = await this.deps.downloader.download(url, {
            maxBytes: cap,
            timeoutMs,
            allow: this.deps.allow,
          });
          const data = await readBody(res);
          used += data.length;
          // The bytes decide, not the URL's extension nor the server's Content-Type.
          const type = sniffMedia(data);
          if (type === undefined || !kinds.includes(type.kind)) {
            this.deps.logger.warn(
              { sniffed: type?.contentType ?? 'unknown', declared: res.contentType, allowed: kinds },
              'gallery file linked: its bytes are not a media type of this job',
            );
            failed.push({ url, reason: (tr) => tr.t('gallery.reason.unexpected_type') });
          } else files.push({ name: fileName(url, i, type), data, contentType: type.contentType });
        } catch (err) {
          failed.push({ url, reason: downloadReason(err, limit, cap, timeoutMs) });
        }
        reservation.shrink(used + (wanted.length - i - 1) * limit);
      }
    } catch (err) {
      reservation.release();
      throw err;
    }
    return { files, linked: [...failed, ...linked], release: () => reservation.release() };
  }

  private markKey(jobId: string): string {
    return `gallery-posted:${jobId}`;
  }

  private parseMark(stored: unknown): Mark | undefined {
    const parsed = markSchema.safeParse(stored);
    return parsed.success ? parsed.data : undefined;
  }

  /**
   * Takes the job's post for a while unless it is done or another claim is live: a lease
   * whose token fences the upload (see renewClaim). A compare-and-set (`update`), not a
   * lock: the downloads and Discord calls run with nothing held.
   */
  private claim(jobId: string): Promise<Claim> {
    const key = this.markKey(jobId);
    return this.deps.kv.update([key], ([stored]): KvDecision<Claim> => {
      const mark = this.parseMark(stored);
      const now = this.deps.now();
      if (mark && (mark.posted === true || mark.until === undefined)) return { result: { kind: 'done' } };
      if (mark?.until !== undefined && mark.until > now)
        return { result: { kind: 'busy', until: mark.until } };
      const token = randomUUID();
      const value: Mark = { at: now, token, until: now + POSTING_LEASE_MS };
      return { result: { kind: 'claimed', token }, writes: [{ key, value, ttlMs: POSTED_TTL_MS }] };
    });
  }

  /**
   * Just before the upload: still our claim (its token)? Then it is renewed, in the same
   * compare-and-set; else another instance took the lapsed lease and posts.
   */
  private renewClaim(jobId: string, token: string): Promise<boolean> {
    const key = this.markKey(jobId);
    return this.deps.kv.update([key], ([stored]) => {
      const mark = this.parseMark(stored);
      if (mark?.token !== token || mark.posted === true) return { result: false };
      const value: Mark = { ...mark, until: this.deps.now() + UPLOAD_LEASE_MS };
      return { result: true, writes: [{ key, value, ttlMs: POSTED_TTL_MS }] };
    });
  }

  /** Done (or given up): final, so written over whatever claim is there. */
  private async markPosted(jobId: string): Promise<void> {
    await this.deps.kv.set(this.markKey(jobId), { at: this.deps.now(), posted: true }, POSTED_TTL_MS);
  }

  /**
   * Whether the bot may post in `channelId` (View Channel, Send Messages, Attach Files), as
   * Discord computes it: @everyone and the bot's roles, then the channel's overwrites
   * (@everyone, roles, the bot itself); Administrator allows all. false when Discord refuses
   * to show the channel; undefined when Discord could not be asked.
   */
  async botMayPost(guildId: string, channelId: string): Promise<boolean | undefined> {
    try {
      const me = userSchema.parse(await this.deps.rest.get(Routes.user('@me')));
      let channel: z.infer<typeof overwritesSchema>;
      try {
        channel = overwritesSchema.parse(await this.deps.rest.get(Routes.channel(channelId)));
      } catch (err) {
        if (err instanceof DiscordAPIError && (err.status === 403 || err.status === 404)) return false;
        throw err;
      }
      const guild = rolesSchema.parse(await this.deps.rest.get(Routes.guild(guildId)));
      const member = memberRolesSchema.parse(await this.deps.rest.get(Routes.guildMember(guildId, me.id)));
      const roleBits = new Map(guild.roles.map((r) => [r.id, BigInt(r.permissions)]));
      let perms = roleBits.get(guildId) ?? 0n;
      for (const id of member.roles) perms |= roleBits.get(id) ?? 0n;
      if ((perms & ADMINISTRATOR) !== 0n) return true;
      const ows = channel.permission_overwrites ?? [];
      const apply = (list: typeof ows): void => {
        let allow = 0n;
        let deny = 0n;
        for (const o of list) {
          allow |= BigInt(o.allow);
          deny |= BigInt(o.deny);
        }
        perms = (perms & ~deny) | allow;
      };
      apply(ows.filter((o) => o.id === guildId));
      apply(ows.filter((o) => o.type === 0 && o.id !== guildId && member.roles.includes(o.id)));
      apply(ows.filter((o) => o.type === 1 && o.id === me.id));
      return (perms & GALLERY_NEEDS) === GALLERY_NEEDS;
    } catch (err) {
      this.deps.logger.warn({ err, guildId, channelId }, 'could not read the bot’s permissions in a channel');
      return undefined;
    }
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
      job.personal === true ||
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
    const where = await this.channelKind(gallery);
    const { files, linked, release } = await this.gather(urls, limit, operations[job.operation].fileKinds);
    try {
      // Downloads took a while: post only if the claim is still ours (a paused instance whose
      // claim lapsed and was taken leaves the post to the taker).
      if (!(await this.renewClaim(job.id, token))) return 'skipped';
      return await this.publish(job, guildId, gallery, where, files, linked, urls);
    } finally {
      release();
    }
  }

  /** Sends the post (a message, or a forum/media post), records it; errors are recorded, never thrown. */
  private async publish(
    job: JobRecord,
    guildId: string,
    gallery: string,
    where: ChannelKind,
    files: RawFile[],
    linked: Linked[],
    urls: string[],
  ): Promise<'posted' | 'failed'> {
    const message = (attach: RawFile[], links: typeof linked) =>
      this.deps.render.renderGalleryPost(
        job,
        attach.map((f) => ({ filename: f.name })),
        links,
      );
    const send = async (attach: RawFile[], links: typeof linked): Promise<GalleryPostRef> => {
      if (where.kind === 'messages') {
        const posted = await this.withBudget(gallery, async () =>
          postedSchema.parse(
            await this.deps.rest.post(Routes.channelMessages(gallery), {
              body: { ...message(attach, links), ...oncePerJob('gallery', job.id) },
              files: attach,
            }),
          ),
        );
        return { channelId: posted.channel_id, messageId: posted.id };
      }
      const tag = tagFor(where.tags, job.operation);
      const create = (name: string) =>
        this.withBudget(gallery, async () =>
          threadPostedSchema.parse(
            await this.deps.rest.post(Routes.threads(gallery), {
              body: {
                name,
                message: message(attach, links),
                ...(tag !== undefined ? { applied_tags: [tag] } : {}),
              },
              files: attach,
            }),
          ),
        );
      const name = galleryPostName(job, this.deps.render);
      let thread: z.infer<typeof threadPostedSchema>;
      try {
        thread = await create(name);
      } catch (err) {
        // AutoMod refused the title made from the job's words: once more with a neutral one.
        const neutral = neutralPostName(job);
        if (!isAutoModRefusal(err) || name === neutral) throw err;
        this.deps.logger.info(
          { jobId: job.id, code: discordCode(err) },
          'gallery post title refused by AutoMod',
        );
        thread = await create(neutral);
      }
      // A post's starter message has the thread's id.
      return { channelId: gallery, messageId: thread.message?.id ?? thread.id, threadId: thread.id };
    };
    try {
      let posted: GalleryPostRef;
      try {
        posted = await send(files, linked);
      } catch (err) {
        // Too large for Discord after all (its limit changed, or a total cap): link everything instead.
        if (!(err instanceof DiscordAPIError && err.code === 40005) || files.length === 0) throw err;
        const tooLarge: Reason = (tr) => tr.t('gallery.reason.too_large_for_server');
        posted = await send(
          [],
          urls.map((url) => ({ url, reason: tooLarge })),
        );
      }
      await this.markPosted(job.id);
      await this.deps
        .recordPost(job.id, posted)
        .catch((err: unknown) =>
          this.deps.logger.warn({ err, jobId: job.id }, 'could not record the gallery post'),
        );
      await this.deps.settings.clearGalleryError(guildId);
      this.deps.logger.info(
        {
          jobId: job.id,
          guildId,
          files: files.length,
          linked: linked.length,
          ...(posted.threadId !== undefined ? { threadId: posted.threadId } : {}),
        },
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
      if (isGoneOnDiscord(err)) return { kind: 'deleted' };
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
