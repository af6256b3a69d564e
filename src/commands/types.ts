import type { RESTPostAPIApplicationCommandsJSONBody } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { BotInteraction } from '../services/discord/interactions/interaction.js';
import type { FirstAnswers } from '../services/discord/interactions/first-answers.js';
import { UserError, type MemberText } from '../services/operations/input.js';
import type { Config } from '../config.js';
import type { EditQueue } from '../services/discord/edits/edit-queue.js';
import type { JobRenderer } from '../services/discord/render/job-render.js';
import type { JobLifecycle } from '../services/jobs/lifecycle.js';
import type { TaskReading } from '../services/media/ports.js';
import type { RetryGuard } from '../services/jobs/retry-guard.js';
import type { TaskLookup } from '../services/media/task-lookup.js';
import type { MediaClient } from '../services/media/client.js';
import type { AccountMonitor } from '../services/media/account-monitor.js';
import type { JobStore } from '../services/store/types.js';
import type { TrainingSessions } from '../services/training/sessions.js';
import type { TrainingUploader } from '../services/training/upload.js';
import type { ConsentPrompts } from '../services/training/consent.js';
import type { ConsentStore } from '../services/training/consent-store.js';
import type { MemberData } from '../services/privacy/member-data.js';
import type { PublicPosts } from '../services/privacy/public-posts.js';
import type { AutoModWithholding } from '../services/moderation/automod.js';
import type { ResultTakeDown } from '../services/moderation/take-down.js';
import type { CommunityService } from '../services/community/community.js';
import type { GuildSettingsStore } from '../services/community/settings.js';
import type { FairUseLedger } from '../services/community/fair-use.js';
import type { ThreadApi } from '../services/community/threads.js';
import type { ImageTargets } from '../services/jobs/image-targets.js';

export { UserError, type MemberText };

/** Jobs as stored, read-only: commands change a job only through the job service. */
export type JobReader = Pick<JobStore, 'get' | 'getByTaskId' | 'getByMessageId' | 'listByUser'>;

/**
 * What commands use, passed in (no singletons), so tests can swap parts. No
 * secrets (token, API key) and no raw store: each part is the narrow view used.
 */
export interface BotContext {
  logger: Logger;
  /** Interactions still owed their first answer: a job's follow-up work waits for them (bounded). */
  firstAnswers: FirstAnswers;
  /** The one writer of jobs. */
  jobs: Pick<
    JobLifecycle,
    'create' | 'attachMessage' | 'moveToThread' | 'submit' | 'applyResult' | 'abandon' | 'withholdText'
  >;
  records: JobReader;
  media: Pick<MediaClient, 'submit' | 'fetchTask'>;
  /** How a job's messages look (its operation's result, Retry, thread name). */
  render: JobRenderer;
  /** Tasks typed in an autocomplete, read from the service with a throttle and a cache. */
  taskLookup: Pick<TaskLookup, 'lookup'>;
  /** One Retry of a job at a time. */
  retries: Pick<RetryGuard, 'claim'>;
  /** Reads a task from the service now (Refresh, autocomplete), batched with the polls, first in line. */
  tasks: TaskReading;
  /** The operator's service balance (shown in /settings show when SHOW_ACCOUNT_BALANCE allows). */
  account: Pick<AccountMonitor, 'latest'>;
  showAccountBalance: boolean;
  training: TrainingSessions;
  /** Cleans training photos and sends them once consent is given. */
  photoUpload: Pick<TrainingUploader, 'send'>;
  /** Training-photo consent: prompts awaiting an answer, and the records kept as proof (/privacy). */
  consent: { prompts: ConsentPrompts; records: ConsentStore };
  /** The one path for editing messages the bot keeps up to date (session messages too). */
  edits: Pick<EditQueue, 'push' | 'editable' | 'forget'>;
  /** Fair use, credits and what follows a job's end, per server. */
  community: CommunityService;
  /** Per-server settings (/settings). */
  settings: GuildSettingsStore;
  ledger: Pick<FairUseLedger, 'creditsUsed' | 'operatorCreditsUsed' | 'operatorDailyCredits'>;
  /** Credits each command costs (CREDIT_COSTS), shown by /settings show. */
  costs: Config['community']['costs'];
  /** Starting a job's thread and posting its live message there (bot token). */
  threads: ThreadApi;
  limits: {
    /** Largest input image or training photo (bytes). */
    maxImageBytes: number;
  };
  /** AutoMod refused a job's text (a thread name): shown without it, the member told once. */
  autoMod: Pick<AutoModWithholding, 'refused'>;
  /** Remove result: a moderator takes a job's result down everywhere. */
  moderation: Pick<ResultTakeDown, 'remove' | 'editOrphan'>;
  /** What the bot keeps about a member (/privacy show, export, delete). */
  memberData: Pick<MemberData, 'summary' | 'claimExport' | 'releaseExport' | 'exportFile' | 'delete'>;
  /** Where each job was posted in public (its messages, thread, Re-posts), kept past retention. */
  publicPosts: Pick<PublicPosts, 'recordStart' | 'recordRepost' | 'jobOfRepost'>;
  /** How long each kind of member data is kept (RETENTION_DAYS, CONSENT_RETENTION_DAYS, sessions). */
  retention: { jobDays: number; consentDays: number; sessionHours: number };
  /** `Upscale image`: the image found on a message while the member writes the prompt. */
  imageTargets: Pick<ImageTargets, 'put' | 'take'>;
  /** USER_INSTALL: personal jobs (a user install, a DM) may start; else job commands stay in servers. */
  userInstall: boolean;
  now: () => number;
}

export interface Command {
  data: RESTPostAPIApplicationCommandsJSONBody;
  /**
   * With USER_INSTALL=true, also installable to a member's account (`integration_types` [0, 1]):
   * `job` commands then work in any server, DM and group DM (`contexts` [0, 1, 2]); `member`
   * ones keep their contexts. Unset: server install only (`integration_types` [0]), always.
   */
  userInstall?: 'job' | 'member';
  /** Starts paid work: refused where the operator allows no jobs (ALLOWED_GUILD_IDS), before anything runs. */
  job?: true;
  /** Answers are private: a late command is deferred ephemerally on its behalf. */
  ephemeral?: boolean;
  execute(interaction: BotInteraction, ctx: BotContext): Promise<void>;
  autocomplete?(interaction: BotInteraction, ctx: BotContext): Promise<void>;
}

/** A component or modal handler, matched by custom_id prefix. */
export interface ComponentHandler {
  prefix: string;
  /** Starts paid work (next steps, job forms): see Command.job. */
  job?: true;
  button?(interaction: BotInteraction, ctx: BotContext): Promise<void>;
  select?(interaction: BotInteraction, ctx: BotContext): Promise<void>;
  modal?(interaction: BotInteraction, ctx: BotContext): Promise<void>;
}
