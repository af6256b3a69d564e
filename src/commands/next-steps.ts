import {
  ActionRowBuilder,
  PermissionFlagsBits,
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
import {
  ASPECT_RATIOS,
  type AspectRatio,
  type UpscaleParams,
  type VideoExtendParams,
} from '../services/media/types.js';

async function storedJob(ctx: BotContext, jobId: string): Promise<JobRecord> {
  const job = await ctx.store.get(jobId);
  if (!job) {
    throw new UserError(
      'job_unavailable',
      'That job is no longer stored (jobs are kept for a limited time).',
    );
  }
  return job;
}

function requireFinished(job: JobRecord): JobRecord {
  if (job.state !== 'finished' || !job.taskId) {
    throw new UserError(
      'job_unavailable',
      'That result is no longer available (jobs are kept for a limited time).',
    );
  }
  return job;
}

/** A result's buttons are its owner's (or a Manage Server member's): nothing starts for anyone else. */
export function requireOwner(i: ButtonInteraction | ModalSubmitInteraction, job: JobRecord): void {
  if (job.userId === i.user.id) return;
  if (i.memberPermissions?.has(PermissionFlagsBits.ManageGuild)) return;
  throw new UserError(
    'not_owner',
    `These buttons belong to <@${job.userId}>, who ran this job (or members with Manage Server). Run the command yourself to start your own.`,
  );
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The parent's upscale parameters that still apply to a new upscale (the seed does not: a new image is wanted). */
function upscaleFrom(job: JobRecord, keepSeed: boolean): UpscaleParams {
  const p = job.params;
  const imageUrl = str(p['image_url']);
  const prompt = str(p['prompt']);
  if (imageUrl === undefined || prompt === undefined) {
    throw new UserError('params_missing', 'The original parameters of this upscale are not available.');
  }
  const detail = num(p['detail']);
  const seed = num(p['seed']);
  const magic = str(p['magic_prompt']);
  return {
    imageUrl,
    prompt,
    resemblance: num(p['resemblance']) ?? 50,
    ...(detail !== undefined ? { detail } : {}),
    ...(keepSeed && seed !== undefined ? { seed } : {}),
    ...(magic === 'AUTO' || magic === 'ON' || magic === 'OFF' ? { magicPromptOption: magic } : {}),
  };
}

/** The video options a continuation of `job` inherits (prompt is asked anew). */
function videoOptionsFrom(job: JobRecord): Pick<VideoExtendParams, 'enhancePrompt' | 'aspectRatio'> {
  const p = job.params;
  const ratio = str(p['aspect_ratio']);
  const enhance = p['enhance_prompt'];
  return {
    ...(typeof enhance === 'boolean' ? { enhancePrompt: enhance } : {}),
    ...(ratio !== undefined && (ASPECT_RATIOS as readonly string[]).includes(ratio)
      ? { aspectRatio: ratio as AspectRatio }
      : {}),
  };
}

/** Retry: a new job with exactly the failed job's parameters; the failed job is kept. */
async function retry(i: ButtonInteraction, ctx: BotContext, job: JobRecord): Promise<void> {
  if (job.state !== 'failed') throw new UserError('not_failed', 'Only a failed job can be retried.');
  const p = job.params;
  switch (job.operation) {
    case 'upscale':
      await startUpscale(i, ctx, upscaleFrom(job, true), job);
      return;
    case 'song': {
      const parentTaskId = str(p['task_id']);
      const songId = str(p['song_id']);
      if (!parentTaskId || !songId)
        throw new UserError('params_missing', 'The original parameters are not available.');
      const continueAt = num(p['continue_at']);
      await startSongExtension(
        i,
        ctx,
        { parentTaskId, songId, ...(continueAt !== undefined ? { continueAt } : {}) },
        job,
      );
      return;
    }
    case 'video': {
      const parentTaskId = str(p['task_id']);
      const prompt = str(p['prompt']);
      if (!parentTaskId || !prompt)
        throw new UserError('params_missing', 'The original parameters are not available.');
      const imageUrl = str(p['image_url']);
      const endImageUrl = str(p['end_image_url']);
      await startVideoExtension(
        i,
        ctx,
        {
          parentTaskId,
          prompt,
          ...(imageUrl ? { imageUrl } : {}),
          ...(endImageUrl ? { endImageUrl } : {}),
          ...videoOptionsFrom(job),
        },
        job,
      );
      return;
    }
    case 'upload':
      throw new UserError(
        'retry_unsupported',
        'Training photos are not kept: start a new set with `/training-photos start`.',
      );
  }
}

/** Buttons under results: extend song 1/2, extend video (asks for a prompt), upscale again, retry. */
export const nextStepButtons: ComponentHandler = {
  prefix: 'next:',
  async button(i: ButtonInteraction, ctx: BotContext) {
    const step = parseNextStepId(i.customId);
    if (!step)
      throw new UserError('unknown_button', 'This button is not one of this bot’s (or no longer supported).');
    const job = await storedJob(ctx, step.jobId);
    requireOwner(i, job);
    switch (step.kind) {
      case 'retry':
        await retry(i, ctx, job);
        return;
      case 'extend-song': {
        requireFinished(job);
        const song = job.result?.kind === 'song' ? job.result.songs[step.songIndex] : undefined;
        if (!song) throw new UserError('song_missing', 'That song is not part of this result.');
        await startSongExtension(i, ctx, { parentTaskId: job.taskId ?? '', songId: song.songId }, job);
        return;
      }
      case 'extend-video': {
        requireFinished(job);
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
                .setMaxLength(2000)
                .setValue(str(job.params['prompt'])?.slice(0, 2000) ?? ''),
            ),
          );
        await i.showModal(modal);
        return;
      }
      case 'upscale-again':
        requireFinished(job);
        await startUpscale(i, ctx, upscaleFrom(job, false), job);
        return;
    }
  },
};

export const extendVideoModal: ComponentHandler = {
  prefix: 'modal:extend-video:',
  async modal(i: ModalSubmitInteraction, ctx: BotContext) {
    const jobId = parseExtendVideoModalId(i.customId);
    if (!jobId) throw new UserError('unknown_modal', 'This form is no longer supported.');
    const job = requireFinished(await storedJob(ctx, jobId));
    requireOwner(i, job);
    await startVideoExtension(
      i,
      ctx,
      {
        parentTaskId: job.taskId ?? '',
        prompt: i.fields.getTextInputValue('prompt'),
        ...videoOptionsFrom(job),
      },
      job,
    );
  },
};
