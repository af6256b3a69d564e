import { MessageFlags, SlashCommandBuilder } from 'discord.js';
import { renderJob, renderJobSummaryLine } from '../services/discord/render.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import { toReplyOptions } from './run-job.js';
import { UserError, type Command } from './types.js';

const data = new SlashCommandBuilder()
  .setName('tasks')
  .setDescription('Your recent media jobs, or one of them by task id')
  .addStringOption((o) => o.setName('id').setDescription('A task id to show in full').setMaxLength(200))
  .toJSON();

const LIST_SIZE = 15;

export const tasks = {
  data,
  async execute(i, ctx) {
    const id = i.options.getString('id')?.trim();
    try {
      if (id) {
        const job = await ctx.store.getByTaskId(id);
        if (!job || job.userId !== i.user.id) {
          throw new UserError('task_not_found', `No task \`${id.replace(/`/g, '')}\` among your jobs.`);
        }
        await i.reply({ ...toReplyOptions(renderJob(job, ctx.now())), flags: MessageFlags.Ephemeral });
        return;
      }
      const jobs = await ctx.store.listByUser(i.user.id, LIST_SIZE);
      const now = ctx.now();
      const content =
        jobs.length === 0
          ? 'You have no jobs yet. Try `/upscale`, `/extend-song`, `/extend-video` or `/training-photos start`.'
          : [`**Your last ${jobs.length} jobs**`, ...jobs.map((j) => renderJobSummaryLine(j, now))]
              .join('\n')
              .slice(0, 2000);
      await i.reply({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
    } catch (err) {
      if (err instanceof StoreUnavailableError) {
        throw new UserError(
          'store_unavailable',
          'Your jobs cannot be read right now (storage is down). Try again in a minute.',
        );
      }
      throw err;
    }
  },
} satisfies Command;
