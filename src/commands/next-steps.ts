import {
  ActionRowBuilder,
  ModalBuilder,
  TextInputBuilder,
  TextInputStyle,
  type ButtonInteraction,
  type ModalSubmitInteraction,
} from 'discord.js';
import {
  extendVideoModalId,
  parseExtendVideoModalId,
  parseNextStepId,
} from '../services/discord/custom-ids.js';
import type { JobRecord } from '../services/store/types.js';
import { startSongExtension } from './extend-song.js';
import { startVideoExtension } from './extend-video.js';
import { startUpscale } from './upscale.js';
import { UserError, type BotContext, type ComponentHandler } from './types.js';

async function finishedJob(ctx: BotContext, jobId: string): Promise<JobRecord> {
  const job = await ctx.store.get(jobId);
  if (!job || job.state !== 'finished' || !job.taskId) {
    throw new UserError(
      'job_unavailable',
      'That result is no longer available (jobs are kept for a limited time).',
    );
  }
  return job;
}

/** Buttons under finished results: extend song 1/2, extend video (asks for a prompt), upscale again. */
export const nextStepButtons: ComponentHandler = {
  prefix: 'next:',
  async button(i: ButtonInteraction, ctx: BotContext) {
    const step = parseNextStepId(i.customId);
    if (!step) throw new UserError('unknown_button', 'This button is no longer supported.');
    const job = await finishedJob(ctx, step.jobId);
    switch (step.kind) {
      case 'extend-song': {
        const song = job.result?.kind === 'song' ? job.result.songs[step.songIndex] : undefined;
        if (!song) throw new UserError('song_missing', 'That song is not part of this result.');
        await startSongExtension(i, ctx, { parentTaskId: job.taskId ?? '', songId: song.songId });
        return;
      }
      case 'extend-video': {
        const modal = new ModalBuilder()
          .setCustomId(extendVideoModalId(job.id))
          .setTitle('Extend this video')
          .addComponents(
            new ActionRowBuilder<TextInputBuilder>().addComponents(
              new TextInputBuilder()
                .setCustomId('prompt')
                .setLabel('What happens next?')
                .setStyle(TextInputStyle.Paragraph)
                .setRequired(true)
                .setMaxLength(2000),
            ),
          );
        await i.showModal(modal);
        return;
      }
      case 'upscale-again': {
        const p = job.params;
        if (typeof p.image_url !== 'string' || typeof p.prompt !== 'string') {
          throw new UserError('params_missing', 'The original parameters of this upscale are not available.');
        }
        await startUpscale(i, ctx, {
          imageUrl: p.image_url,
          prompt: p.prompt,
          resemblance: typeof p.resemblance === 'number' ? p.resemblance : 50,
          ...(typeof p.detail === 'number' ? { detail: p.detail } : {}),
        });
        return;
      }
    }
  },
};

export const extendVideoModal: ComponentHandler = {
  prefix: 'modal:extend-video:',
  async modal(i: ModalSubmitInteraction, ctx: BotContext) {
    const jobId = parseExtendVideoModalId(i.customId);
    if (!jobId) throw new UserError('unknown_modal', 'This form is no longer supported.');
    const job = await finishedJob(ctx, jobId);
    await startVideoExtension(i, ctx, {
      parentTaskId: job.taskId ?? '',
      prompt: i.fields.getTextInputValue('prompt'),
    });
  },
};
