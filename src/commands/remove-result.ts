import {
  ApplicationCommandType,
  PermissionFlagsBits,
  type RESTPostAPIContextMenuApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import { translatorFor, type Translator } from '../i18n/index.js';
import { hasPermission, type BotInteraction } from '../services/discord/interactions/interaction.js';
import type { MessageOutcome, TakeDownReport } from '../services/moderation/take-down.js';
import { requireGuild } from './preconditions.js';
import { UserError, type BotContext, type Command } from './types.js';
import { where } from './where.js';

/**
 * `Remove result` (message command, Manage Messages, servers only): used on a job's
 * message, its channel line or its gallery post, it takes the result down everywhere
 * the bot posted it and tells the moderator what happened, ephemerally.
 */

const data: RESTPostAPIContextMenuApplicationCommandsJSONBody = {
  type: ApplicationCommandType.Message,
  name: 'Remove result',
  default_member_permissions: String(PermissionFlagsBits.ManageMessages),
  ...where.serverOnly,
};

function describe(report: TakeDownReport, tr: Translator): string {
  const { job } = report;
  const parts: string[] = [];
  const edited = (o: MessageOutcome | undefined) => o === 'edited' || o === 'gone';
  if (edited(report.message) || edited(report.reply)) parts.push(tr.t('moderation.remove.job_message'));
  const g = report.gallery;
  parts.push(
    g.kind === 'deleted'
      ? tr.t('moderation.remove.gallery_deleted')
      : g.kind === 'none'
        ? tr.t('moderation.remove.gallery_none')
        : tr.t('moderation.remove.gallery_failed', { reason: g.reason }),
  );
  if (report.reposts.deleted > 0)
    parts.push(tr.t('moderation.remove.reposts_deleted', { count: report.reposts.deleted }));
  if (report.reposts.failed > 0)
    parts.push(tr.t('moderation.remove.reposts_failed', { count: report.reposts.failed }));
  if (report.threadLocked !== undefined)
    parts.push(
      tr.t(report.threadLocked ? 'moderation.remove.thread_locked' : 'moderation.remove.thread_not_locked'),
    );
  return [
    tr.t('moderation.remove.done', {
      title: tr.t(`operations.${job.operation}.title`),
      user: `<@${job.userId}>`,
    }),
    ...parts.map((p) => `• ${p}`),
  ].join('\n');
}

async function execute(i: BotInteraction, ctx: BotContext): Promise<void> {
  const tr = translatorFor(i);
  const guildId = requireGuild(i);
  // Checked again here: a server can change who sees the command in its Integrations settings.
  if (!hasPermission(i.memberPermissions, PermissionFlagsBits.ManageMessages))
    throw new UserError('not_moderator', tr.t('moderation.remove.not_moderator'));
  const target = i.targetMessage;
  if (!target || target.author.id !== i.applicationId)
    throw new UserError('not_a_result', tr.t('moderation.remove.not_a_result'));
  // A job's message, channel line or gallery post; else one of its Re-posts.
  const repostOf = async () => {
    const jobId = await ctx.publicPosts.jobOfRepost(target.id);
    return jobId === undefined ? undefined : ctx.records.get(jobId);
  };
  const job = (await ctx.records.getByMessageId(target.id)) ?? (await repostOf());
  if (!job) {
    // The bot's message, but no job names it any more (its record expired or was deleted):
    // this message is all that can still be reached.
    const outcome = await ctx.moderation.editOrphan(target.channel_id, target.id);
    if (outcome === 'failed') throw new UserError('not_a_result', tr.t('moderation.remove.not_a_result'));
    ctx.logger.info(
      { guildId, moderatorId: i.user.id, messageId: target.id },
      'result message removed by a moderator (no job record)',
    );
    await i.reply({ content: tr.t('moderation.remove.job_gone') }, { ephemeral: true });
    return;
  }
  // Authority lives with the job: its own server's moderators only.
  if (job.message.guildId !== guildId)
    throw new UserError('not_a_result', tr.t('moderation.remove.not_a_result'));
  if (job.removed !== undefined)
    throw new UserError('already_removed', tr.t('moderation.remove.already_removed'));
  const report = await ctx.moderation.remove(job, i.user.id, guildId);
  if (!report) throw new UserError('not_a_result', tr.t('moderation.remove.not_a_result'));
  await i.reply({ content: describe(report, tr) }, { ephemeral: true });
}

export const removeResult: Command = { data, ephemeral: true, execute };
