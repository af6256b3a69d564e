import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { operations } from '../operations/index.js';
import { discordTimestamp } from '../shared/format.js';
import type { Operation } from '../media/types.js';
import type { JobRecord } from '../store/types.js';
import { NOT_STARTED_CODES } from '../jobs/job-errors.js';
import { isFinal } from '../store/merge.js';
import type { Metrics } from '../../metrics.js';
import { personalScope, type FairUseLedger, type Refusal } from './fair-use.js';
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
    case 'operator':
      return (tr) => tr.t('refusal.operator_credits', { resetAt: ts(r.resetAt) });
    case 'not_allowed':
      return (tr) => tr.t('refusal.server_not_allowed');
  }
}

/**
 * The scope a job's reservation counts against (see FairUseLedger): its server, or for a
 * personal job its member's own (`personal:<user>`, shared by all their personal jobs).
 */
export const scopeOf = (job: Pick<JobRecord, 'message' | 'personal' | 'userId'>): string | undefined =>
  job.personal ? personalScope(job.userId) : job.message.guildId;

/**
 * The server side of every submission: the operator's limits, fair use and credits
 * before the job exists, and what follows a job's end (slot freed, credits back for a
 * job that never started). Every way a job starts (slash commands, buttons, Retry,
 * modals) comes through `admit` (src/commands/run-job.ts). A personal job (a user install,
 * a DM) counts against its member's own limits instead of a server's settings.
 */
export class CommunityService {
  private readonly allowed: ReadonlySet<string> | undefined;

  constructor(
    private readonly deps: {
      settings: GuildSettingsStore;
      ledger: FairUseLedger;
      costs: Config['community']['costs'];
      /** ALLOWED_GUILD_IDS (OPERATOR_DAILY_CREDITS is the ledger's). */
      operator: Pick<Config['operator'], 'allowedGuildIds'>;
      /** The job's maximum duration: a deleted running job's slot is held until then. */
      jobMaxDurationMs: number;
      /** A member's own limits for personal jobs (USER_MAX_ACTIVE_JOBS, USER_DAILY_CREDITS). */
      personal: Pick<Config['userInstall'], 'maxActiveJobs' | 'dailyCredits'>;
      logger: Logger;
      gallery?: GalleryPoster;
      metrics?: Pick<Metrics, 'operatorCreditsSpent' | 'operatorCreditsRefunded'>;
    },
  ) {
    const ids = deps.operator.allowedGuildIds;
    this.allowed = ids === undefined ? undefined : new Set(ids);
  }

  /**
   * May jobs start here? ALLOWED_GUILD_IDS set: only in its servers (a DM is in no server;
   * whether jobs run there is the job path's own rule). Checked before any store or service call.
   */
  allowsJobsIn(guildId: string | null): boolean {
    return guildId === null || this.allowed === undefined || this.allowed.has(guildId);
  }

  costOf(operation: Operation): number {
    // The config has every registered command's cost; the module's own is its default.
    const { command, cost } = operations[operation];
    return this.deps.costs[command] ?? cost;
  }

  /**
   * Checks and reserves before any service call: the operator's allow-list, then (atomically)
   * the member's slots and cooldown, the scope's credits and the operator's daily ceiling.
   * The scope is the server's, or the member's own for a personal job (its limits
   * USER_MAX_ACTIVE_JOBS and USER_DAILY_CREDITS, no server's settings).
   * Throws StoreUnavailableError when the store is down.
   */
  async admit(input: {
    guildId?: string;
    /** A personal job: the member's own limits, not the server's settings. */
    personal?: boolean;
    userId: string;
    operation: Operation;
  }): Promise<Admission> {
    const jobId = randomUUID();
    const cost = this.costOf(input.operation);
    if (!this.allowsJobsIn(input.guildId ?? null)) return refused({ kind: 'not_allowed' });
    const scope = input.personal ? personalScope(input.userId) : input.guildId;
    if (scope === undefined) return refused({ kind: 'not_allowed' });
    const limits = input.personal
      ? { ...this.deps.personal, cooldownSeconds: 0 }
      : await this.deps.settings.get(scope);
    const r = await this.deps.ledger.reserve({
      scope,
      userId: input.userId,
      jobId,
      cost,
      limits,
    });
    if (!r.ok) return refused(r.refusal, input.personal === true);
    this.deps.metrics?.operatorCreditsSpent.inc(r.operatorCredits);
    return { ok: true, jobId, cost };
  }

  /** The reserved job never came to be (store down, Discord refused the reply): slot and credits back. */
  async cancel(input: {
    guildId?: string;
    personal?: boolean;
    userId: string;
    jobId: string;
  }): Promise<void> {
    const scope = input.personal ? personalScope(input.userId) : input.guildId;
    if (scope === undefined) return;
    await this.release(scope, input.userId, input.jobId, true);
  }

  /** After-final work (AfterFinalWork): frees the member's slot; a job that failed before the service took it is refunded. */
  async jobEnded(job: JobRecord): Promise<void> {
    const scope = scopeOf(job);
    if (scope === undefined) return;
    await this.release(scope, job.userId, job.id, startedNothing(job));
    // A personal job has no gallery: the server's settings do not apply to it.
    if (job.state === 'finished' && !job.personal && this.deps.gallery) await this.deps.gallery.post(job);
  }

  /**
   * The job's record is deleted at its member's request (/privacy delete). A deletion never
   * frees a running job's slot or credits: an ended job's are settled as its end would; a
   * running one keeps them until it would have ended (its maximum duration).
   */
  async jobDeleted(job: JobRecord): Promise<void> {
    const scope = scopeOf(job);
    if (scope === undefined || job.settledAt !== undefined) return;
    if (isFinal(job.state)) {
      await this.release(scope, job.userId, job.id, startedNothing(job));
      return;
    }
    await this.deps.ledger.holdUntil({
      scope,
      userId: job.userId,
      jobId: job.id,
      until: job.createdAt + this.deps.jobMaxDurationMs,
    });
  }

  private async release(scope: string, userId: string, jobId: string, refund: boolean): Promise<void> {
    const back = await this.deps.ledger.release({ scope, userId, jobId, refund });
    if (back > 0) this.deps.metrics?.operatorCreditsRefunded.inc(back);
  }

  /** Whether the bot may post in a channel chosen as the gallery (undefined: could not tell). */
  botMayPostInGallery(guildId: string, channelId: string): Promise<boolean | undefined> {
    return this.deps.gallery ? this.deps.gallery.botMayPost(guildId, channelId) : Promise.resolve(undefined);
  }
}

function refused(refusal: Refusal, personal = false): Admission {
  return { ok: false, refusal, message: refusalMessage(refusal, personal) };
}

/** The job failed before the service took it: its credits come back. */
function startedNothing(job: JobRecord): boolean {
  return job.state === 'failed' && job.taskId === undefined && NOT_STARTED_CODES.has(job.error?.code ?? '');
}
