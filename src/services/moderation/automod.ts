import type { REST } from '@discordjs/rest';
import { MessageFlags, Routes } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { publicTranslator } from '../../i18n/index.js';
import type { JobLifecycle } from '../jobs/lifecycle.js';
import type { JobRecord } from '../store/types.js';

/** Interaction tokens last 15 minutes; a note is only tried well inside that. */
const NOTE_TOKEN_MS = 14 * 60_000;

export type WithheldWhere = 'message' | 'thread_name';

/**
 * What happens when AutoMod refuses a job's text: the job never fails for it. The
 * record is marked `textWithheld` once (every instance then renders it without the
 * member's text and its message is edited again), and the member is told why, once,
 * ephemerally, while the command's interaction token still works.
 */
export class AutoModWithholding {
  constructor(
    private readonly deps: {
      lifecycle: Pick<JobLifecycle, 'withholdText'>;
      rest: Pick<REST, 'post'>;
      logger: Logger;
      now: () => number;
    },
  ) {}

  async refused(jobId: string, where: WithheldWhere): Promise<void> {
    let job: JobRecord | undefined;
    try {
      job = await this.deps.lifecycle.withholdText(jobId);
    } catch (err) {
      this.deps.logger.warn({ err, jobId }, 'could not mark the job’s text withheld');
      return;
    }
    if (!job) return;
    this.deps.logger.info(
      { jobId, guildId: job.message.guildId, where },
      'AutoMod refused the job’s text; shown without it',
    );
    await this.note(job, where);
  }

  /** The one ephemeral note, through the command's interaction webhook while it is fresh. */
  private async note(job: JobRecord, where: WithheldWhere): Promise<void> {
    const interaction = (job.reply ?? job.message).interaction;
    if (!interaction || this.deps.now() - interaction.createdAt > NOTE_TOKEN_MS) return;
    const tr = publicTranslator(job.locale);
    const content = tr.t(
      where === 'thread_name' ? 'moderation.automod.thread_name' : 'moderation.automod.message',
    );
    try {
      await this.deps.rest.post(Routes.webhook(interaction.applicationId, interaction.token), {
        body: { content, flags: MessageFlags.Ephemeral, allowed_mentions: { parse: [] } },
        auth: false,
      });
    } catch (err) {
      this.deps.logger.warn({ err, jobId: job.id }, 'could not tell the member about AutoMod');
    }
  }
}
