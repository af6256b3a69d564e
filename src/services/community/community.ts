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
export function refusalMessage(r: Refusal): MemberText {
  switch (r.kind) {
    case 'active':
      return (tr) => tr.t('refusal.active_jobs', { count: r.count, max: r.max });
    case 'cooldown':
      return (tr) => tr.t('refusal.cooldown', { retryAt: ts(r.retryAt) });
    case 'credits':
      return (tr) =>
        tr.t('refusal.credits', { left: r.left, budget: r.budget, cost: r.cost, resetAt: ts(r.resetAt) });
  }
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
      logger: Logger;
      gallery?: GalleryPoster;
    },
  ) {}

  costOf(operation: Operation): number {
    return this.deps.costs[operations[operation].command];
  }

  /** Checks and reserves before any service call. Throws StoreUnavailableError when the store is down. */
  async admit(input: { guildId?: string; userId: string; operation: Operation }): Promise<Admission> {
    const jobId = randomUUID();
    const cost = this.costOf(input.operation);
    if (input.guildId === undefined) return { ok: true, jobId, cost };
    const settings = await this.deps.settings.get(input.guildId);
    const r = await this.deps.ledger.reserve({
      guildId: input.guildId,
      userId: input.userId,
      jobId,
      cost,
      settings,
    });
    if (!r.ok) return { ok: false, refusal: r.refusal, message: refusalMessage(r.refusal) };
    return { ok: true, jobId, cost };
  }

  /** The reserved job never came to be (store down, Discord refused the reply): slot and credits back. */
  async cancel(input: { guildId?: string; userId: string; jobId: string }): Promise<void> {
    if (input.guildId === undefined) return;
    await this.deps.ledger.release({
      guildId: input.guildId,
      userId: input.userId,
      jobId: input.jobId,
      refund: true,
    });
  }

  /** JobService `onFinal`: frees the member's slot; a job that failed before the service took it is refunded. */
  async jobEnded(job: JobRecord): Promise<void> {
    const guildId = job.message.guildId;
    if (guildId === undefined) return;
    const refund =
      job.state === 'failed' && job.taskId === undefined && NOT_STARTED_CODES.has(job.error?.code ?? '');
    await this.deps.ledger.release({ guildId, userId: job.userId, jobId: job.id, refund });
    if (job.state === 'finished' && this.deps.gallery) await this.deps.gallery.post(job);
  }

  /** Whether the bot may post in a channel chosen as the gallery (undefined: could not tell). */
  botMayPostInGallery(guildId: string, channelId: string): Promise<boolean | undefined> {
    return this.deps.gallery ? this.deps.gallery.botMayPost(guildId, channelId) : Promise.resolve(undefined);
  }
}
