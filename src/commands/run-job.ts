import {
  DiscordAPIError,
  MessageFlags,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type ModalSubmitInteraction,
  type APIActionRowComponent,
  type APIComponentInMessageActionRow,
} from 'discord.js';
import type { Submitted } from '../services/media/client.js';
import type { Operation, TaskResult, WebhookTarget } from '../services/media/types.js';
import {
  jobMessageLink,
  renderJob,
  renderThreadLine,
  threadName,
  type MessagePayload,
} from '../services/discord/render.js';
import { jobError } from '../services/jobs/job-errors.js';
import { checkParams, operationOf } from '../services/operations/index.js';
import type { ParamsOf } from '../services/operations/types.js';
import type { Admission } from '../services/community/community.js';
import type { JobRecord } from '../services/store/types.js';
import { UserError, unlessStoreDown, type BotContext } from './types.js';

type JobInteraction = ChatInputCommandInteraction | ButtonInteraction | ModalSubmitInteraction;

export interface JobRequest {
  operation: Operation;
  /** As stored on the job (the operation's `toStored`). */
  params: JobRecord['params'];
  /** The job this one continues (a next step or a retry): shown as "Extended from" with a jump link. */
  parent?: JobRecord;
  /** The one service call; `job` is the stored job (training photos record it with their consent). */
  submit: (webhook: WebhookTarget | undefined, job: JobRecord) => Promise<Submitted | TaskResult>;
}

/**
 * Starts a job of `op` with these parameters (from slash options, a next step or a
 * Retry): checked against the operation's schema first, so a bad value is a clear
 * ephemeral answer and nothing is reserved, stored or sent.
 */
export async function startOperation<K extends Operation>(
  interaction: JobInteraction,
  ctx: BotContext,
  op: K,
  params: ParamsOf<K>,
  parent?: JobRecord,
): Promise<void> {
  const checked = checkParams(op, params);
  if (!checked.ok) throw new UserError('invalid_options', checked.problems.join('\n'));
  await runJob(interaction, ctx, {
    ...(parent ? { parent } : {}),
    operation: op,
    params: operationOf(op).toStored(checked.params),
    submit: (webhook) => ctx.media.submit(op, checked.params, webhook),
  });
}

/** discord.js reply options from a rendered payload (raw API JSON is accepted as is). */
export function toReplyOptions(
  p: Pick<MessagePayload, 'content' | 'embeds'> & {
    components: APIActionRowComponent<APIComponentInMessageActionRow>[];
  },
) {
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
  // Admission and the job record wait on the store, and the guild's fair-use lock is shared
  // with every other command and final of the guild: when that is slow, Discord still gets
  // an answer within its 3 s (a deferred reply, which the job message then fills).
  const ack = deferIfSlow(interaction, DEFER_AFTER_MS, ctx);
  // Fair use and credits: checked and reserved before anything is stored or sent.
  let admission: Admission;
  try {
    admission = await unlessStoreDown(() => ctx.community.admit({ ...member, operation: req.operation }));
  } catch (err) {
    await ack.abandon();
    throw err;
  }
  if (!admission.ok) {
    await ack.abandon();
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
    job = await unlessStoreDown(() =>
      ctx.jobs.create({
        id: admission.jobId,
        cost: admission.cost,
        operation: req.operation,
        userId: interaction.user.id,
        params: req.parent
          ? { ...req.params, extended_from: jobMessageLink(req.parent) ?? req.parent.id }
          : req.params,
        message: {
          channelId: interaction.channelId ?? '',
          ...(interaction.guildId ? { guildId: interaction.guildId } : {}),
          interaction: {
            applicationId: interaction.applicationId,
            token: interaction.token,
            createdAt: interaction.createdTimestamp,
          },
        },
      }),
    );
  } catch (err) {
    await giveBack();
    await ack.abandon();
    throw err;
  }
  await ack.settle();

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
    // forever (and failed as "restarted while submitting" at the next start). There is
    // no job message to edit.
    const failed = jobError(
      'internal',
      'Discord did not accept the reply, so nothing was sent to the service.',
    );
    await ctx.jobs
      .abandon(job.id, failed)
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
    // Before the service call, so no webhook can race the move into the thread.
    if (guildId !== undefined && !(interaction.channel?.isThread() ?? false)) {
      const threads = await ctx.settings
        .get(guildId)
        .then((s) => s.threads)
        .catch(() => false);
      if (threads) job = await moveIntoThread(interaction, ctx, job, messageId);
    }
  }
  const stored = job;
  await ctx.jobs.submit(job, (webhook) => req.submit(webhook, stored));
}

/**
 * Threads on: a public thread from the reply, the live message inside it, the reply
 * cut to one line linking it. Any failure (missing permission, Discord error) leaves
 * the job in the channel as with threads off; the member is told once, ephemerally.
 */
async function moveIntoThread(
  interaction: JobInteraction,
  ctx: BotContext,
  job: JobRecord,
  replyId: string,
): Promise<JobRecord> {
  const channelId = job.message.channelId;
  try {
    const thread = await ctx.threads.startThread(channelId, replyId, threadName(job));
    const live = await ctx.threads.postMessage(thread.id, job.id, renderJob(job, ctx.now()));
    const moved = await ctx.jobs.moveToThread(
      job.id,
      {
        channelId: thread.id,
        ...(job.message.guildId ? { guildId: job.message.guildId } : {}),
        messageId: live.id,
      },
      { ...job.message, messageId: replyId },
    );
    if (!moved) return job;
    await interaction.editReply(toReplyOptions(renderThreadLine(moved)));
    return moved;
  } catch (err) {
    const why =
      err instanceof DiscordAPIError && (err.code === 50013 || err.code === 50001)
        ? 'I am missing the **Create Public Threads** / **Send Messages in Threads** permission here'
        : 'Discord did not let me start a thread';
    ctx.logger.warn(
      { err, jobId: job.id, channelId },
      'could not move the job into a thread; it stays in the channel',
    );
    await interaction
      .followUp({
        content: `${why}, so this job runs here in the channel instead.`,
        flags: MessageFlags.Ephemeral,
        allowedMentions: { parse: [] },
      })
      .catch((e: unknown) =>
        ctx.logger.warn({ err: e, jobId: job.id }, 'could not tell the member about the thread'),
      );
    return job;
  }
}

/** How long a job command may go unanswered before it is deferred: Discord allows 3 s in all. */
export const DEFER_AFTER_MS = 1500;

/**
 * Defers the reply (publicly: it becomes the job message) if the interaction is still
 * unanswered after `afterMs`. `settle()` stops the timer and waits for a deferral in
 * flight, so the caller then sees `interaction.deferred` as it is and edits the reply;
 * `abandon()` also deletes that placeholder when there will be no job message (a
 * refusal or an error follows, ephemerally).
 */
function deferIfSlow(
  interaction: JobInteraction,
  afterMs: number,
  ctx: Pick<BotContext, 'logger'>,
): { settle(): Promise<void>; abandon(): Promise<void> } {
  let deferring: Promise<void> | undefined;
  let ours = false;
  const timer = setTimeout(() => {
    if (interaction.deferred || interaction.replied) return;
    ctx.logger.info({ interactionId: interaction.id, afterMs }, 'job command slow to admit: reply deferred');
    deferring = interaction.deferReply().then(
      () => void (ours = true),
      (err: unknown) => ctx.logger.warn({ err, interactionId: interaction.id }, 'could not defer the reply'),
    );
  }, afterMs);
  const settle = async () => {
    clearTimeout(timer);
    await deferring;
  };
  return {
    settle,
    async abandon() {
      await settle();
      if (!ours) return;
      await interaction
        .deleteReply()
        .catch((err: unknown) =>
          ctx.logger.warn({ err, interactionId: interaction.id }, 'could not remove the deferred reply'),
        );
    },
  };
}

/** Ephemeral text reply, whether or not the interaction was already answered. */
export async function replyEphemeral(interaction: JobInteraction, content: string): Promise<void> {
  if (interaction.deferred || interaction.replied) {
    await interaction.followUp({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
  } else {
    await interaction.reply({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
  }
}
