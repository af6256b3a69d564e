import { once } from 'node:events';
import { setImmediate } from 'node:timers/promises';
import { createGzip } from 'node:zlib';
import type { Logger } from 'pino';
import { z } from 'zod';
import { operations } from '../operations/index.js';
import { isFinal } from '../store/merge.js';
import type { AtomicKeyValueStore, JobRecord, JobStore } from '../store/types.js';
import type { TrainingSession, TrainingSessions } from '../training/sessions.js';
import type { ConsentRecord, ConsentStore } from '../training/consent-store.js';
import type { CommunityService } from '../community/community.js';
import { mergeTraces, traceOfJob, type PostTrace, type PublicPosts } from './public-posts.js';
import { emptyTally, type CleanupFailure, type KeptByDiscord, type PublicCleanup } from './public-cleanup.js';

/**
 * What the bot keeps about one member, in every server: their job records, open
 * training-photo sessions and consent records (/privacy show, export, delete).
 * Their public messages live in the servers' channels; the job records, and past their
 * retention the member's public-post traces (./public-posts.ts), say where.
 */

export interface MemberDataDeps {
  jobs: Pick<JobStore, 'listByUser' | 'userPages' | 'delete' | 'clearUserIndex'>;
  sessions: Pick<TrainingSessions, 'listByMember' | 'deleteForMember'>;
  consents: Pick<ConsentStore, 'listByMember' | 'minimizeForMember'>;
  /** Where each job of the member was posted in public, also past the job records' retention. */
  posts: Pick<PublicPosts, 'get' | 'jobIds' | 'settle'>;
  /** Takes those messages down (gallery posts, Re-posts) or replaces them (job messages, thread names). */
  cleanup: Pick<PublicCleanup, 'clean'>;
  /** A deleted job's fair-use slot and credits: never freed early (held until the job would have ended). */
  community: Pick<CommunityService, 'jobDeleted'>;
  /**
   * Drops the job's edits still queued in this process, so none lands on the neutral
   * replacement (BullMQ's edit jobs render the stored record, which is gone by then).
   */
  stopEdits?: (jobId: string) => void;
  retention: { jobDays: number; consentDays: number; sessionHours: number };
  /** Where the per-member export limit is kept (shared by every instance). */
  kv: AtomicKeyValueStore;
  /** One export per member per this long (default EXPORT_INTERVAL_MS). */
  exportIntervalMs?: number;
  logger: Logger;
  now: () => number;
}

export interface MemberSummary {
  jobs: number;
  sessions: number;
  consents: number;
  /** Jobs whose public messages the bot knows the place of (also past their records' retention). */
  posts: number;
}

export interface DeletionReport {
  jobs: number;
  running: number;
  sessions: number;
  /** Gallery posts deleted. */
  posts: number;
  /** Re-posts deleted. */
  reposts: number;
  /** The bot's public job messages (live message, channel line) replaced by a neutral one. */
  messages: number;
  /** Job threads named after a prompt, renamed. */
  threads: number;
  /** What Discord refused (no permission, …): kept in the trace, so a later deletion retries. */
  failures: CleanupFailure[];
  /** Messages in places the bot is not in (personal jobs) that it can no longer change: Discord keeps them. */
  keptByDiscord: KeptByDiscord[];
  /** Consent records kept, minimal, as proof. */
  consentsKept: number;
}

/** Jobs deleted per round: a page read, its posts taken down, its records deleted. */
const DELETE_PAGE = 100;
/** One export per member per 10 minutes: building one reads every record of theirs. */
export const EXPORT_INTERVAL_MS = 10 * 60_000;
const exportMarkKey = (userId: string): string => `privacy-export:${userId}`;
const exportMarkSchema = z.object({ at: z.number() });

export class MemberData {
  constructor(private readonly deps: MemberDataDeps) {}

  async summary(userId: string): Promise<MemberSummary> {
    let jobs = 0;
    for await (const page of this.deps.jobs.userPages(userId)) jobs += page.length;
    const [sessions, consents, posts] = await Promise.all([
      this.deps.sessions.listByMember(userId),
      this.deps.consents.listByMember(userId),
      this.deps.posts.jobIds(userId),
    ]);
    return { jobs, sessions: sessions.length, consents: consents.length, posts: posts.length };
  }

  /**
   * Takes the member's export for now: `undefined` when they may export, else when they
   * may again. A claim on the member's mark (first caller wins, across instances), kept
   * for the interval; a lost claim answers from the mark that holds it.
   */
  async claimExport(userId: string): Promise<number | undefined> {
    const { kv, now } = this.deps;
    const interval = this.deps.exportIntervalMs ?? EXPORT_INTERVAL_MS;
    const at = now();
    const got = await kv.claim(exportMarkKey(userId), { at }, interval);
    if (got.won) return undefined;
    const mark = exportMarkSchema.safeParse(got.holder);
    // A mark unreadable (or gone this instant) still holds the slot: the member waits one interval.
    return (mark.success ? mark.data.at : at) + interval;
  }

  /** An export that could not be made does not count against the member. */
  async releaseExport(userId: string): Promise<void> {
    await this.deps.kv.delete(exportMarkKey(userId));
  }

  /**
   * Everything kept about the member, as a gzipped JSON file: no job secrets, interaction
   * tokens or signed links (credentials, not data about the member). Built a page of jobs
   * at a time through an asynchronous gzip, yielding to the event loop between pages, so
   * a member with thousands of jobs holds no one else up.
   */
  async exportFile(userId: string): Promise<{ name: string; data: Buffer }> {
    const generatedAt = new Date(this.deps.now()).toISOString();
    const gzip = createGzip();
    const chunks: Buffer[] = [];
    gzip.on('data', (c: Buffer) => chunks.push(c));
    const ended = new Promise<void>((resolve, reject) => {
      gzip.once('end', resolve);
      gzip.once('error', reject);
    });
    // An error while writing rejects `ended` before it is awaited: seen below, not unhandled.
    ended.catch(() => undefined);
    try {
      for await (const text of this.exportText(userId, generatedAt)) {
        if (!gzip.write(text)) await once(gzip, 'drain');
        // Between pages: whatever else waits (heartbeats, interactions) runs first.
        await setImmediate();
      }
      gzip.end();
      await ended;
    } catch (err) {
      gzip.destroy();
      throw err;
    }
    return { name: `media-bot-data-${generatedAt.slice(0, 10)}.json.gz`, data: Buffer.concat(chunks) };
  }

  /** The export's JSON text, a piece at a time (one page of jobs per piece). */
  private async *exportText(userId: string, generatedAt: string): AsyncGenerator<string> {
    const { retention } = this.deps;
    const head = {
      format: 'media-bot/member-data@1',
      member: userId,
      generatedAt,
      retention: {
        jobs: `${retention.jobDays} days after the job ended`,
        photoSessions: `until submitted or cancelled, at most ${retention.sessionHours} hours after the last change`,
        consentRecords: `${retention.consentDays} days after consent was given`,
        publicPosts: 'until you delete your data, so that those messages can be deleted at any age',
      },
    };
    const open = JSON.stringify(head, null, 2);
    yield `${open.slice(0, -2)},\n  "jobs": [`;
    let first = true;
    // One array item per line, comma-separated across pages.
    const items = (values: unknown[]): string =>
      values
        .map((v) => {
          const sep = first ? '' : ',';
          first = false;
          return `${sep}\n    ${JSON.stringify(withoutSignedLinks(v))}`;
        })
        .join('');
    for await (const page of this.deps.jobs.userPages(userId)) {
      if (page.length > 0) yield items(page.map(exportJob));
    }
    yield `${first ? '' : '\n  '}],\n  "publicPosts": [`;
    first = true;
    const ids = await this.deps.posts.jobIds(userId);
    for (let i = 0; i < ids.length; i += DELETE_PAGE) {
      const traces = await Promise.all(ids.slice(i, i + DELETE_PAGE).map((id) => this.deps.posts.get(id)));
      const mine = traces.filter((t): t is PostTrace => t?.userId === userId).map(exportTrace);
      if (mine.length > 0) yield items(mine);
    }
    const [sessions, consents] = await Promise.all([
      this.deps.sessions.listByMember(userId),
      this.deps.consents.listByMember(userId),
    ]);
    const tail = JSON.stringify(
      withoutSignedLinks({
        photoSessions: sessions.map(exportSession),
        consentRecords: consents.map(exportConsent),
      }),
      null,
      2,
    );
    yield `${first ? '' : '\n  '}],\n${tail.slice(2)}\n`;
  }

  /**
   * Deletes the member's job records (their running jobs stop being tracked: the
   * keeper, polls and edits find no record) and photo sessions in every server; takes
   * their gallery posts and Re-posts down and replaces their public job messages and
   * thread names, also for jobs whose records retention already deleted; consent records
   * are reduced to what proves consent and kept.
   */
  async delete(userId: string): Promise<DeletionReport> {
    const tally = emptyTally();
    const counts = { jobs: 0, running: 0 };
    const done = new Set<string>();
    for (;;) {
      // Always the first page: what was deleted leaves the index.
      const page = await this.deps.jobs.listByUser(userId, DELETE_PAGE);
      if (page.length === 0) break;
      for (const job of page) {
        await this.deleteJob(job, counts);
        done.add(job.id);
        // Once the record is gone nothing renders the job again: now its messages.
        const trace = mergeTraces(await this.deps.posts.get(job.id), traceOfJob(job));
        // A personal job's message can change only through its interaction, which only the record knows.
        const live = job.personal
          ? { interaction: job.message.interaction, tokenRefused: job.tokenRefusedAt !== undefined }
          : undefined;
        await this.deps.posts.settle(trace, await this.deps.cleanup.clean(trace, tally, live));
      }
    }
    await this.deps.jobs.clearUserIndex(userId);
    // Jobs whose records are gone (RETENTION_DAYS): only their traces say where they were posted.
    for (const jobId of await this.deps.posts.jobIds(userId)) {
      if (done.has(jobId)) continue;
      const trace = await this.deps.posts.get(jobId);
      if (trace?.userId !== userId) {
        await this.deps.posts.settle({ jobId, userId });
        continue;
      }
      await this.deps.posts.settle(trace, await this.deps.cleanup.clean(trace, tally));
    }
    const report: DeletionReport = {
      ...counts,
      sessions: await this.deps.sessions.deleteForMember(userId),
      posts: tally.galleryPosts,
      reposts: tally.reposts,
      messages: tally.messages,
      threads: tally.threads,
      failures: tally.failures,
      keptByDiscord: tally.keptByDiscord,
      consentsKept: await this.deps.consents.minimizeForMember(userId),
    };
    this.deps.logger.info(
      {
        userId,
        jobs: report.jobs,
        running: report.running,
        sessions: report.sessions,
        posts: report.posts,
        reposts: report.reposts,
        messages: report.messages,
        threads: report.threads,
        failures: report.failures.length,
        keptByDiscord: report.keptByDiscord.length,
      },
      'privacy: member data deleted at their request',
    );
    return report;
  }

  private async deleteJob(job: JobRecord, report: { jobs: number; running: number }): Promise<void> {
    await this.deps.community.jobDeleted(job);
    if (!isFinal(job.state)) report.running++;
    await this.deps.jobs.delete(job.id);
    this.deps.stopEdits?.(job.id);
    report.jobs++;
  }
}

export interface ExportedJob {
  id: string;
  command: string;
  server?: string;
  channel: string;
  message?: string;
  parameters: JobRecord['params'];
  state: JobRecord['state'];
  percentage: number;
  taskId?: string;
  credits?: number;
  status?: string;
  result?: JobRecord['result'];
  error?: { code: string; message: string };
  createdAt: string;
  finishedAt?: string;
  galleryPost?: JobRecord['galleryPost'];
  removedByModerator?: string;
  /** Run through the member's own install (a DM, or a server without the bot): no server's job. */
  personal?: boolean;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function exportJob(job: JobRecord): ExportedJob {
  return {
    id: job.id,
    command: operations[job.operation].command,
    ...(job.message.guildId !== undefined ? { server: job.message.guildId } : {}),
    ...(job.personal ? { personal: true } : {}),
    channel: (job.reply ?? job.message).channelId,
    ...(job.message.messageId !== undefined ? { message: job.message.messageId } : {}),
    parameters: job.params,
    state: job.state,
    percentage: job.percentage,
    ...(job.taskId !== undefined ? { taskId: job.taskId } : {}),
    ...(job.cost !== undefined ? { credits: job.cost } : {}),
    ...(job.statusText !== undefined ? { status: job.statusText } : {}),
    ...(job.result !== undefined ? { result: job.result } : {}),
    ...(job.error !== undefined ? { error: { code: job.error.code, message: job.error.message } } : {}),
    createdAt: iso(job.createdAt),
    ...(job.finishedAt !== undefined ? { finishedAt: iso(job.finishedAt) } : {}),
    ...(job.galleryPost !== undefined ? { galleryPost: job.galleryPost } : {}),
    ...(job.removed !== undefined ? { removedByModerator: iso(job.removed.at) } : {}),
  };
}

function exportSession(s: TrainingSession) {
  return {
    server: s.guildId,
    channel: s.channelId,
    subject: { ethnicity: s.ethnicity, gender: s.gender, age: s.age },
    photos: s.photos.map((p) => ({
      name: p.name,
      bytes: p.size,
      type: p.contentType,
      sha256: p.sha256,
      addedAt: iso(p.addedAt),
    })),
    createdAt: iso(s.createdAt),
    expiresAt: iso(s.expiresAt),
    ...(s.submission?.jobId !== undefined ? { submittedAsJob: s.submission.jobId } : {}),
  };
}

function exportConsent(c: ConsentRecord) {
  return {
    id: c.id,
    server: c.guildId,
    ...(c.channelId !== undefined ? { channel: c.channelId } : {}),
    ...(c.jobId !== undefined ? { job: c.jobId } : {}),
    confirmedAt: iso(c.at),
    wording: c.wording,
    ...(c.language !== undefined ? { language: c.language } : {}),
    photoCount: c.photoCount,
    sha256: c.sha256,
    keptUntil: iso(c.expiresAt),
    ...(c.minimized ? { minimized: true } : {}),
  };
}

function exportTrace(t: PostTrace) {
  return {
    job: t.jobId,
    ...(t.guildId !== undefined ? { server: t.guildId } : {}),
    ...(t.personal ? { personal: true } : {}),
    ...(t.message ? { message: t.message } : {}),
    ...(t.reply ? { channelLine: t.reply } : {}),
    ...(t.thread !== undefined ? { thread: t.thread } : {}),
    ...(t.gallery ? { galleryPost: t.gallery } : {}),
    ...(t.dm ? { directMessage: t.dm } : {}),
    ...(t.reposts.length > 0 ? { reposts: t.reposts } : {}),
  };
}

/** Query parameters that sign a Discord CDN link (expiry, issue time, signature). */
const SIGNING_PARAMS = ['ex', 'is', 'hm'];
const URL_IN_TEXT = /https?:\/\/[^\s<>"'`]+/g;

/** `url` without its signing parameters (the rest of the link is kept as it was). */
export function unsignedUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  if (!SIGNING_PARAMS.some((p) => u.searchParams.has(p))) return url;
  for (const p of SIGNING_PARAMS) u.searchParams.delete(p);
  return u.toString();
}

/** `value` with every link in every string unsigned (see unsignedUrl). */
export function withoutSignedLinks<T>(value: T): T {
  if (typeof value === 'string') return value.replace(URL_IN_TEXT, unsignedUrl) as T;
  if (Array.isArray(value)) return value.map(withoutSignedLinks) as T;
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutSignedLinks(v)])) as T;
  return value;
}
