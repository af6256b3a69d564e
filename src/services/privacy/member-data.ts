import type { Logger } from 'pino';
import { operations } from '../operations/index.js';
import { isTerminalState } from '../store/merge.js';
import type { JobRecord, JobStore } from '../store/types.js';
import type { TrainingSession, TrainingSessions } from '../training/sessions.js';
import type { ConsentRecord, ConsentStore } from './consent-store.js';
import type { TakeDown } from '../community/gallery.js';
import type { FairUseLedger } from '../community/fair-use.js';
import { fairUseScope } from '../community/community.js';

/**
 * What the bot keeps about one member, in every server: their job records, open
 * training-photo sessions and consent records (/privacy show, export, delete).
 * Gallery posts live in the servers' channels; the job records say where.
 */

export interface MemberDataDeps {
  jobs: Pick<JobStore, 'listByUser' | 'userPages' | 'delete' | 'clearUserIndex'>;
  sessions: Pick<TrainingSessions, 'listByMember' | 'deleteForMember'>;
  consents: Pick<ConsentStore, 'listByMember' | 'minimizeForMember'>;
  /** Takes a job's gallery post down (absent: no gallery in this deployment). */
  gallery?: { takeDown(job: Pick<JobRecord, 'id' | 'galleryPost'>): Promise<TakeDown> };
  /** A running job's fair-use slot is freed when its record goes (its credits are spent: no refund). */
  ledger: Pick<FairUseLedger, 'release'>;
  retention: { jobDays: number; consentDays: number; sessionHours: number };
  logger: Logger;
  now: () => number;
}

export interface MemberSummary {
  jobs: number;
  sessions: number;
  consents: number;
}

export interface DeletionReport {
  jobs: number;
  running: number;
  sessions: number;
  posts: number;
  /** Gallery posts Discord would not delete (no permission, channel gone): a moderator's job. */
  postsLeft: number;
  /** Consent records kept, minimal, as proof. */
  consentsKept: number;
}

/** Jobs deleted per round: a page read, its posts taken down, its records deleted. */
const DELETE_PAGE = 100;

export class MemberData {
  constructor(private readonly deps: MemberDataDeps) {}

  async summary(userId: string): Promise<MemberSummary> {
    let jobs = 0;
    for await (const page of this.deps.jobs.userPages(userId)) jobs += page.length;
    const [sessions, consents] = await Promise.all([
      this.deps.sessions.listByMember(userId),
      this.deps.consents.listByMember(userId),
    ]);
    return { jobs, sessions: sessions.length, consents: consents.length };
  }

  /**
   * Everything kept about the member, as plain JSON: no job secrets, interaction
   * tokens or signed photo links (credentials, not data about the member).
   */
  async export(userId: string): Promise<MemberExport> {
    const jobs: ExportedJob[] = [];
    for await (const page of this.deps.jobs.userPages(userId)) jobs.push(...page.map(exportJob));
    const [sessions, consents] = await Promise.all([
      this.deps.sessions.listByMember(userId),
      this.deps.consents.listByMember(userId),
    ]);
    const { retention } = this.deps;
    return {
      format: 'media-bot/member-data@1',
      member: userId,
      generatedAt: new Date(this.deps.now()).toISOString(),
      retention: {
        jobs: `${retention.jobDays} days after the job ended`,
        photoSessions: `until submitted or cancelled, at most ${retention.sessionHours} hours after the last change`,
        consentRecords: `${retention.consentDays} days after consent was given`,
      },
      jobs,
      photoSessions: sessions.map(exportSession),
      consentRecords: consents.map(exportConsent),
    };
  }

  /**
   * Deletes the member's job records (their running jobs stop being tracked: the
   * keeper, polls and edits find no record), gallery posts and photo sessions in every
   * server; consent records are reduced to what proves consent and kept.
   */
  async delete(userId: string): Promise<DeletionReport> {
    const report: DeletionReport = {
      jobs: 0,
      running: 0,
      sessions: 0,
      posts: 0,
      postsLeft: 0,
      consentsKept: 0,
    };
    for (;;) {
      // Always the first page: what was deleted leaves the index.
      const page = await this.deps.jobs.listByUser(userId, DELETE_PAGE);
      if (page.length === 0) break;
      for (const job of page) await this.deleteJob(job, report);
    }
    await this.deps.jobs.clearUserIndex(userId);
    report.sessions = await this.deps.sessions.deleteForMember(userId);
    report.consentsKept = await this.deps.consents.minimizeForMember(userId);
    this.deps.logger.info(
      { userId, jobs: report.jobs, running: report.running, sessions: report.sessions, posts: report.posts },
      'privacy: member data deleted at their request',
    );
    return report;
  }

  private async deleteJob(job: JobRecord, report: DeletionReport): Promise<void> {
    if (job.galleryPost !== undefined && this.deps.gallery) {
      const down = await this.deps.gallery.takeDown(job);
      if (down.kind === 'deleted') report.posts++;
      else if (down.kind === 'failed') report.postsLeft++;
    }
    // A personal job's slot is the member's own (fairUseScope), not a server's.
    const scope = fairUseScope(job);
    if (job.settledAt === undefined && scope !== undefined) {
      await this.deps.ledger.release({ guildId: scope, userId: job.userId, jobId: job.id, refund: false });
    }
    if (!isTerminalState(job.state)) report.running++;
    await this.deps.jobs.delete(job.id);
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

export interface MemberExport {
  format: 'media-bot/member-data@1';
  member: string;
  generatedAt: string;
  retention: { jobs: string; photoSessions: string; consentRecords: string };
  jobs: ExportedJob[];
  photoSessions: ReturnType<typeof exportSession>[];
  consentRecords: ReturnType<typeof exportConsent>[];
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
