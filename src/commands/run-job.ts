import {
  MessageFlags,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type ModalSubmitInteraction,
} from 'discord.js';
import type { Submitted } from '../services/media/client.js';
import type { Operation, TaskResult, WebhookTarget } from '../services/media/types.js';
import { renderJob, type MessagePayload } from '../services/discord/render.js';
import { jobError } from '../services/jobs/job-errors.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import type { JobRecord } from '../services/store/types.js';
import { UserError, type BotContext } from './types.js';

type JobInteraction = ChatInputCommandInteraction | ButtonInteraction | ModalSubmitInteraction;

export interface JobRequest {
  operation: Operation;
  params: JobRecord['params'];
  submit: (webhook: WebhookTarget | undefined) => Promise<Submitted | TaskResult>;
}

/** discord.js reply options from a rendered payload (raw API JSON is accepted as is). */
export function toReplyOptions(p: MessagePayload) {
  return { content: p.content, embeds: p.embeds, components: p.components, allowedMentions: { parse: [] } };
}

/**
 * The common path of every job command: store the job, reply publicly (that
 * reply becomes the live message), record its id, then call the service once.
 * The job exists with its message before the service can send a webhook.
 */
export async function runJob(interaction: JobInteraction, ctx: BotContext, req: JobRequest): Promise<void> {
  const guildId = interaction.guildId ?? undefined;
  const member = { ...(guildId !== undefined ? { guildId } : {}), userId: interaction.user.id };
  // Fair use and credits: checked and reserved before anything is stored or sent.
  const admission = await storeOrUserError(() =>
    ctx.community.admit({ ...member, operation: req.operation }),
  );
  if (!admission.ok) {
    await replyEphemeral(interaction, admission.message);
    return;
  }
  const giveBack = () =>
    ctx.community
      .cancel({ ...member, jobId: admission.jobId })
      .catch((e: unknown) =>
        ctx.logger.warn({ err: e, jobId: admission.jobId }, 'could not give the reservation back'),
      );

  let job: JobRecord;
  try {
    job = await ctx.jobs.create({
      id: admission.jobId,
      cost: admission.cost,
      operation: req.operation,
      userId: interaction.user.id,
      params: req.params,
      message: {
        channelId: interaction.channelId ?? '',
        ...(interaction.guildId ? { guildId: interaction.guildId } : {}),
        interaction: {
          applicationId: interaction.applicationId,
          token: interaction.token,
          createdAt: interaction.createdTimestamp,
        },
      },
    });
  } catch (err) {
    await giveBack();
    if (err instanceof StoreUnavailableError) throw storeUserError();
    throw err;
  }

  const payload = toReplyOptions(renderJob(job, ctx.now()));
  let messageId: string | undefined;
  try {
    if (interaction.deferred || interaction.replied) {
      const msg = await interaction.editReply(payload);
      messageId = msg.id;
    } else {
      const res = await interaction.reply({ ...payload, withResponse: true });
      messageId = res.resource?.message?.id;
    }
  } catch (err) {
    // Nothing was sent to the service: end the job instead of leaving it `submitting`
    // forever (and failed as "restarted while submitting" at the next start). Straight
    // to the store, not through JobService: there is no job message to edit.
    const failed = jobError(
      'internal',
      'Discord did not accept the reply, so nothing was sent to the service.',
    );
    await ctx.store
      .apply(job.id, { state: 'failed', error: failed, at: ctx.now() })
      .catch((e: unknown) => ctx.logger.warn({ err: e, jobId: job.id }, 'could not end the unanswered job'));
    await giveBack();
    throw err;
  }
  if (messageId) {
    try {
      job = (await ctx.jobs.attachMessage(job.id, messageId)) ?? job;
    } catch (err) {
      // The interaction webhook still reaches the message for ~15 min.
      ctx.logger.warn({ err, jobId: job.id }, 'could not record the message id');
    }
  }
  await ctx.jobs.submit(job, req.submit);
}

const storeUserError = () =>
  new UserError(
    'store_unavailable',
    'The bot is temporarily unavailable (storage is down). Please try again in a minute.',
  );

async function storeOrUserError<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw storeUserError();
    throw err;
  }
}

/** Ephemeral text reply, whether or not the interaction was already answered. */
export async function replyEphemeral(interaction: JobInteraction, content: string): Promise<void> {
  if (interaction.deferred || interaction.replied) {
    await interaction.followUp({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
  } else {
    await interaction.reply({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
  }
}
