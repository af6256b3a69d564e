import { DiscordAPIError } from '@discordjs/rest';
import { MessageFlags } from 'discord-api-types/v10';
import type { BotInteraction, MessageBody } from '../services/discord/interactions/interaction.js';
import type { Submitted } from '../services/media/client.js';
import type { Operation, TaskResult, WebhookTarget } from '../services/media/types.js';
import {
  jobMessageLink,
  renderThreadLine,
  type MessagePayload,
} from '../services/discord/render/job-render.js';
import { jobError } from '../services/jobs/job-errors.js';
import { isAutoModRefusal } from '../services/discord/discord-transport.js';
import { checkParams, operationOf } from '../services/operations/index.js';
import type { ParamsOf } from '../services/operations/types.js';
import type { JobRecord } from '../services/store/types.js';
import { DEFAULT_LOCALE, t, translatorFor } from '../i18n/index.js';
import { isPersonalPlace } from './preconditions.js';
import { UserError, type BotContext } from './types.js';

export interface JobRequest {
  operation: Operation;
  /** As stored on the job (the operation's `toStored`). */
  params: JobRecord['params'];
  /** The job this one continues (a next step or a retry): shown as "Extended from" with a jump link. */
  parent?: JobRecord;
  /** The component's own message becomes the job message (the interaction was deferred as an update). */
  inPlace?: boolean;
  /** Called once the job is stored, before its reply and the service call (Retry records it). */
  onCreated?: (job: JobRecord) => Promise<void>;
  /**
   * The one service call; `job` is the stored job (training photos record it with their
   * consent); `hooks.waiting` shows a 429 being waited out on the job's message.
   */
  submit: (
    webhook: WebhookTarget | undefined,
    hooks: { waiting(untilMs: number): void },
    job: JobRecord,
  ) => Promise<Submitted | TaskResult>;
}

/**
 * Starts a job of `op` with these parameters (from slash options, a next step or a
 * Retry): checked against the operation's schema first, so a bad value is a clear
 * ephemeral answer and nothing is reserved, stored or sent.
 */
export async function startOperation<K extends Operation>(
  interaction: BotInteraction,
  ctx: BotContext,
  op: K,
  params: ParamsOf<K>,
  parent?: JobRecord,
  onCreated?: (job: JobRecord) => Promise<void>,
): Promise<void> {
  const checked = checkParams(op, params);
  if (!checked.ok)
    throw new UserError('invalid_options', (tr) => checked.problems.map((p) => p(tr)).join('\n'));
  await runJob(interaction, ctx, {
    ...(parent ? { parent } : {}),
    ...(onCreated ? { onCreated } : {}),
    operation: op,
    params: operationOf(op).toStored(checked.params),
    submit: (webhook, hooks) => ctx.media.submit(op, checked.params, webhook, { onWaiting: hooks.waiting }),
  });
}

/** A rendered payload as a message body (mentions ping no one). */
export function toReplyOptions(p: MessageBody | MessagePayload): MessageBody {
  return { ...p, allowed_mentions: { parse: [] } };
}

/** At most this long a job's follow-up work (message id, thread, submission) waits for other commands' answers. */
const FOLLOW_UP_WAIT_MS = 1000;

/**
 * The common path of every job command: store the job, reply publicly (that
 * reply becomes the live message), record its id, then call the service once.
 * The job exists with its message before the service can send a webhook.
 */
export async function runJob(interaction: BotInteraction, ctx: BotContext, req: JobRequest): Promise<void> {
  const guildId = interaction.guildId ?? undefined;
  // A personal job (a user install, a DM) counts against the member's own limits; without
  // USER_INSTALL job commands stay in servers, where the server's fair use and credits apply.
  const personal = isPersonalPlace(interaction);
  if (personal && !ctx.userInstall) {
    throw new UserError('guild_only', (tr) => tr.t('refusal.dm_job_commands'));
  }
  const member = { ...(guildId !== undefined ? { guildId } : {}), personal, userId: interaction.user.id };
  // Fair use and credits: checked and reserved before anything is stored or sent. A slow
  // store (the member's fair-use lock is shared with their other commands and finals)
  // is acknowledged on the command's behalf in time (BotInteraction), the job message then
  // fills the deferred reply.
  const admission = await ctx.community.admit({ ...member, operation: req.operation });
  if (!admission.ok) {
    await replyEphemeral(interaction, admission.message(translatorFor(interaction)));
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
      ...(interaction.guildLocale !== undefined ? { locale: interaction.guildLocale } : {}),
      operation: req.operation,
      userId: interaction.user.id,
      ...(personal ? { personal: true } : {}),
      params: req.parent
        ? { ...req.params, extended_from: jobMessageLink(req.parent) ?? req.parent.id }
        : req.params,
      message: {
        channelId: interaction.channelId ?? '',
        ...(guildId !== undefined ? { guildId } : {}),
        interaction: {
          applicationId: interaction.applicationId,
          token: interaction.token,
          createdAt: interaction.createdTimestamp,
        },
      },
    });
  } catch (err) {
    await giveBack();
    throw err;
  }
  await req
    .onCreated?.(job)
    .catch((err: unknown) =>
      ctx.logger.warn({ err, jobId: job.id }, 'could not record the new job with its parent'),
    );

  let messageId: string | undefined;
  try {
    const send = (j: JobRecord) => {
      const body = toReplyOptions(ctx.render.renderJob(j, ctx.now()));
      return req.inPlace ? interaction.editReply(body) : interaction.reply(body);
    };
    const msg = await send(job).catch(async (err: unknown) => {
      if (!isAutoModRefusal(err)) throw err;
      // AutoMod refused the member's text: the job goes on, shown without it; they are told once.
      job = (await ctx.jobs.withholdText(job.id, false)) ?? { ...job, textWithheld: true };
      const sent = await send(job);
      await interaction
        .followUp(
          { content: translatorFor(interaction).t('moderation.automod.message') },
          { ephemeral: true },
        )
        .catch((e: unknown) =>
          ctx.logger.warn({ err: e, jobId: job.id }, 'could not tell the member about AutoMod'),
        );
      return sent;
    });
    messageId = msg?.id;
  } catch (err) {
    // Nothing was sent to the service: end the job (its reservation comes back with the
    // after-final work) instead of leaving it `submitting`. There is no job message to edit.
    // Stored on the job in English, like every job error (the job's public message renders it).
    const failed = jobError('internal', t(DEFAULT_LOCALE, 'errors.job.reply_refused'));
    await ctx.jobs
      .abandon(job.id, failed)
      .catch((e: unknown) => ctx.logger.warn({ err: e, jobId: job.id }, 'could not end the unanswered job'));
    throw err;
  }
  // The member has their answer: the rest waits for the other commands' (a burst's answers
  // first, then its submissions), a second at most.
  await ctx.firstAnswers.settled(FOLLOW_UP_WAIT_MS);
  if (messageId) {
    try {
      job =
        (await ctx.jobs.attachMessage(job.id, messageId, interaction.replyMessageId !== undefined)) ?? job;
    } catch (err) {
      // The interaction webhook still reaches the message for ~15 min.
      ctx.logger.warn({ err, jobId: job.id }, 'could not record the message id');
    }
    // Before the service call, so no webhook can race the move into the thread. A personal
    // job has no thread: the bot is not in its channel, and the server's settings do not apply.
    if (!personal && guildId !== undefined && !interaction.inThread()) {
      const threads = await ctx.settings
        .get(guildId)
        .then((s) => s.threads)
        .catch(() => false);
      if (threads) job = await moveIntoThread(interaction, ctx, job, messageId);
    }
    // Where the job is public, kept past its record's retention: /privacy delete reaches it at any age.
    await ctx.publicPosts
      .recordStart(job)
      .catch((err: unknown) => ctx.logger.warn({ err, jobId: job.id }, 'could not index the job’s messages'));
  }
  const stored = job;
  await ctx.jobs.submit(job, (webhook, hooks) => req.submit(webhook, hooks, stored));
}

/**
 * Threads on: a public thread from the reply, the live message inside it, the reply
 * cut to one line linking it. Any failure (missing permission, Discord error) leaves
 * the job in the channel as with threads off; the member is told once, ephemerally.
 */
async function moveIntoThread(
  interaction: BotInteraction,
  ctx: BotContext,
  job: JobRecord,
  replyId: string,
): Promise<JobRecord> {
  const channelId = job.message.channelId;
  try {
    let withheld = false;
    const thread = await ctx.threads
      .startThread(channelId, replyId, ctx.render.threadName(job))
      .catch((err: unknown) => {
        if (!isAutoModRefusal(err)) throw err;
        // AutoMod refused a name made from the prompt: a neutral one, and the job goes on.
        withheld = true;
        return ctx.threads.startThread(
          channelId,
          replyId,
          ctx.render.threadName({ ...job, textWithheld: true }),
        );
      });
    const live = await ctx.threads.postMessage(thread.id, job.id, ctx.render.renderJob(job, ctx.now()));
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
    if (withheld) await ctx.autoMod.refused(job.id, 'thread_name');
    return moved;
  } catch (err) {
    const tr = translatorFor(interaction);
    const content =
      err instanceof DiscordAPIError && (err.code === 50013 || err.code === 50001)
        ? tr.t('threads.no_permission')
        : tr.t('threads.failed');
    ctx.logger.warn(
      { err, jobId: job.id, channelId },
      'could not move the job into a thread; it stays in the channel',
    );
    await interaction
      .followUp({
        content,
        flags: MessageFlags.Ephemeral,
      })
      .catch((e: unknown) =>
        ctx.logger.warn({ err: e, jobId: job.id }, 'could not tell the member about the thread'),
      );
    return job;
  }
}

/** Ephemeral text reply, whether or not the interaction was already answered. */
export async function replyEphemeral(interaction: BotInteraction, content: string): Promise<void> {
  if (interaction.replied) await interaction.followUp({ content }, { ephemeral: true });
  else await interaction.reply({ content }, { ephemeral: true });
}
