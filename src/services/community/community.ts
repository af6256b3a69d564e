import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { operations } from '../operations/index.js';
import { discordTimestamp } from '../shared/format.js';
import type { Operation } from '../media/types.js';
import type { JobRecord } from '../store/types.js';
import { NOT_STARTED_CODES } from '../jobs/job-errors.js';
import type { FairUseLedger, Refusal } from './fair-use.js';
import type { GuildSettingsStore } from './settings.js';
import type { GalleryPoster } from './gallery.js';
import type { MemberText } from '../operations/input.js';

export type Admission =
  { ok: true; jobId: string; cost: number } | { ok: false; refusal: Refusal; message: MemberText };

/** "Try again at": rounded up, never before the real time. */
const ts = (ms: number) => discordTimestamp(ms, 'R', true);

/** What the member reads when a submission is refused (ephemeral), in their language. */
export function refusalMessage(r: Refusal, personal = false): MemberText {
  switch (r.kind) {
    case 'active':
      return (tr) =>
        tr.t(personal ? 'refusal.personal_active_jobs' : 'refusal.active_jobs', {
          count: r.count,
          max: r.max,
        });
    case 'cooldown':
      return (tr) => tr.t('refusal.cooldown', { retryAt: ts(r.retryAt) });
    case 'credits':
      return (tr) =>
        tr.t(personal ? 'refusal.personal_credits' : 'refusal.credits', {
          left: r.left,
          budget: r.budget,
          cost: r.cost,
          resetAt: ts(r.resetAt),
        });
  }
}

/**
 * The fair-use and credits scope of a personal job (a user install where the server never
 * installed the bot, a DM): the member's own, shared by all their personal jobs wherever
 * they run, in place of a server's.
 */
export const personalScope = (userId: string): string => `personal:${userId}`;

/** Where a job's fair-use slot and credits live: its member's personal scope, or its server. */
export const fairUseScope = (job: Pick<JobRecord, 'personal' | 'userId' | 'message'>): string | undefined =>
  scopeOf({ guildId: job.message.guildId, personal: job.personal, userId: job.userId });

/** Where a member's reservation lives: their personal scope, or the job's server. */
function scopeOf(input: { guildId?: string | undefined; personal?: boolean | undefined; userId: string }) {
  return input.personal ? personalScope(input.userId) : input.guildId;
}

/**
 * The server side of every submission: fair use and credits before the job
 * exists, and what follows a job's end (slot freed, credits back for a job that
 * never started). Jobs outside a guild (DMs) have no server limits.
 */
export class CommunityService {
  constructor(
    private readonly deps: {
      settings: GuildSettingsStore;
      ledger: FairUseLedger;
      costs: Config['community']['costs'];
      /** A member's own limits for personal jobs (USER_MAX_ACTIVE_JOBS, USER_DAILY_CREDITS). */
      personal: Pick<Config['userInstall'], 'maxActiveJobs' | 'dailyCredits'>;
      logger: Logger;
      gallery?: GalleryPoster;
    },
  ) {}

  costOf(operation: Operation): number {
    return this.deps.costs[operations[operation].command];
  }

  /** Checks and reserves before any service call. Throws StoreUnavailableError when the store is down. */
  async admit(input: {
    guildId?: string;
    /** A personal job: the member's own limits, not the server's settings. */
    personal?: boolean;
    userId: string;
    operation: Operation;
  }): Promise<Admission> {
    const jobId = randomUUID();
    const cost = this.costOf(input.operation);
    const scope = scopeOf(input);
    if (scope === undefined) return { ok: true, jobId, cost };
    const settings = input.personal
      ? { ...this.deps.personal, cooldownSeconds: 0 }
      : await this.deps.settings.get(scope);
    const r = await this.deps.ledger.reserve({
      guildId: scope,
      userId: input.userId,
      jobId,
      cost,
      settings,
    });
    if (!r.ok)
      return { ok: false, refusal: r.refusal, message: refusalMessage(r.refusal, input.personal === true) };
    return { ok: true, jobId, cost };
  }

  /** The reserved job never came to be (store down, Discord refused the reply): slot and credits back. */
  async cancel(input: {
    guildId?: string;
    personal?: boolean;
    userId: string;
    jobId: string;
  }): Promise<void> {
    const scope = scopeOf(input);
    if (scope === undefined) return;
    await this.deps.ledger.release({
      guildId: scope,
      userId: input.userId,
      jobId: input.jobId,
      refund: true,
    });
  }

  /** JobService `onFinal`: frees the member's slot; a job that failed before the service took it is refunded. */
  async jobEnded(job: JobRecord): Promise<void> {
    const scope = fairUseScope(job);
    if (scope === undefined) return;
    const refund =
      job.state === 'failed' && job.taskId === undefined && NOT_STARTED_CODES.has(job.error?.code ?? '');
    await this.deps.ledger.release({ guildId: scope, userId: job.userId, jobId: job.id, refund });
    // A personal job has no gallery: the server's settings do not apply to it.
    if (job.state === 'finished' && !job.personal && this.deps.gallery) await this.deps.gallery.post(job);
  }
}
