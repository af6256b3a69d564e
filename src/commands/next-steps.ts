import { ActionRowBuilder, ModalBuilder, TextInputBuilder } from '@discordjs/builders';
import { TextInputStyle } from 'discord-api-types/v10';
import type { BotInteraction } from '../services/discord/interactions/interaction.js';
import { requireJobAuthority } from './preconditions.js';
import {
  extendVideoModalId,
  parseExtendVideoModalId,
  parseNextStepId,
  type NextStep,
} from '../services/discord/interactions/custom-ids.js';
import type { Operation } from '../services/media/types.js';
import { NEXT_STEP_TARGETS, operationOf } from '../services/operations/index.js';
import { str } from '../services/operations/input.js';
import type { StepInput } from '../services/operations/types.js';
import type { JobRecord } from '../services/store/types.js';
import { startOperation } from './run-job.js';
import { isFinal } from '../services/store/merge.js';
import { jobMessageLink } from '../services/discord/render/job-render.js';
import { retryUpload } from './training-photos.js';
import { translatorFor } from '../i18n/index.js';
import { UserError, type BotContext, type ComponentHandler } from './types.js';

async function storedJob(ctx: BotContext, jobId: string): Promise<JobRecord> {
  const job = await ctx.records.get(jobId);
  if (!job) {
    throw new UserError('job_unavailable', (tr) => tr.t('jobs.not_stored'));
  }
  return job;
}

function requireFinished(job: JobRecord): JobRecord & { taskId: string } {
  if (job.state !== 'finished' || !job.taskId) {
    throw new UserError('job_unavailable', (tr) => tr.t('jobs.result_unavailable'));
  }
  return job as JobRecord & { taskId: string };
}

/**
 * Retry: a new job with exactly the job's parameters (after a failure, or a reroll of a
 * finished one); the job itself is kept. One retry of a job at a time (RetryGuard): a second
 * press while it runs is answered with it, never a second paid job.
 */
async function retry<K extends Operation>(
  i: BotInteraction,
  ctx: BotContext,
  job: JobRecord & { operation: K },
): Promise<void> {
  if (!isFinal(job.state)) {
    throw new UserError('still_running', (tr) => tr.t('jobs.still_running'));
  }
  // Training photos live in the member's session, not on the job: they go through consent again.
  if (operationOf(job.operation).input.kind === 'session') return retryUpload(i, ctx, job);
  const params = operationOf(job.operation).fromStored(job.params);
  if ('cannot' in params) throw new UserError('retry_unsupported', params.cannot);
  const claim = await ctx.retries.claim(job.id);
  if (!claim.ok) {
    const link = claim.running ? jobMessageLink(claim.running) : undefined;
    throw new UserError('retry_running', (tr) =>
      link ? tr.t('jobs.retry_running', { link }) : tr.t('jobs.retry_starting'),
    );
  }
  let started = false;
  try {
    await startOperation(i, ctx, job.operation, params, job, async (created) => {
      started = true;
      await claim.started(created);
    });
  } finally {
    if (!started) await claim.abandoned().catch(() => undefined);
  }
}

/** A next step: a job of the step's operation with what it inherits from its finished parent. */
async function continueJob(
  i: BotInteraction,
  ctx: BotContext,
  kind: Exclude<NextStep['kind'], 'retry'>,
  parent: JobRecord & { taskId: string },
  input: StepInput,
): Promise<void> {
  const target = NEXT_STEP_TARGETS[kind];
  const continueFrom = operationOf(target).continueFrom;
  if (!continueFrom) throw new UserError('unknown_button', (tr) => tr.t('errors.unknown_button'));
  const params = continueFrom(parent, input);
  if ('cannot' in params) throw new UserError('params_missing', params.cannot);
  await startOperation(i, ctx, target, params, parent);
}

/** Buttons under results: extend song 1/2, extend video (asks for a prompt), upscale again, retry. */
export const nextStepButtons: ComponentHandler = {
  prefix: 'next:',
  job: true,
  async button(i: BotInteraction, ctx: BotContext) {
    const step = parseNextStepId(i.customId);
    if (!step) throw new UserError('unknown_button', (tr) => tr.t('errors.foreign_button'));
    const job = await storedJob(ctx, step.jobId);
    requireJobAuthority(i, job);
    switch (step.kind) {
      case 'retry':
        await retry(i, ctx, job);
        return;
      case 'extend-song':
        await continueJob(i, ctx, step.kind, requireFinished(job), { songIndex: step.songIndex });
        return;
      case 'extend-video': {
        requireFinished(job);
        // The prompt of the continuation is asked for; the rest is inherited when the form comes back.
        const tr = translatorFor(i);
        const modal = new ModalBuilder()
          .setCustomId(extendVideoModalId(job.id))
          .setTitle(tr.t('modals.extend_video.title'))
          .addComponents(
            new ActionRowBuilder<TextInputBuilder>().addComponents(
              new TextInputBuilder()
                .setCustomId('prompt')
                .setLabel(tr.t('modals.extend_video.prompt_label'))
                .setStyle(TextInputStyle.Paragraph)
                .setRequired(true)
                .setMaxLength(2000)
                .setValue(str(job.params['prompt'])?.slice(0, 2000) ?? ''),
            ),
          );
        await i.showModal(modal.toJSON());
        return;
      }
      case 'upscale-again':
        await continueJob(i, ctx, step.kind, requireFinished(job), {});
        return;
    }
  },
};

export const extendVideoModal: ComponentHandler = {
  prefix: 'modal:extend-video:',
  job: true,
  async modal(i: BotInteraction, ctx: BotContext) {
    const jobId = parseExtendVideoModalId(i.customId);
    if (!jobId) throw new UserError('unknown_modal', (tr) => tr.t('errors.unknown_form'));
    const job = requireFinished(await storedJob(ctx, jobId));
    requireJobAuthority(i, job);
    await continueJob(i, ctx, 'extend-video', job, { prompt: i.fields.getTextInputValue('prompt') });
  },
};
