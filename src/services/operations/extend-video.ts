import { SlashCommandBuilder } from '@discordjs/builders';
import { z } from 'zod';
import { nextStepId } from '../discord/interactions/custom-ids.js';
import { actionButton } from '../discord/render/kit.js';
import { maskedLink, safeHttpUrl } from '../discord/render/limits.js';
import { httpUrl, nonEmpty, problem, taskId } from './fields.js';
import { ASPECT_RATIOS, type AspectRatio, type VideoExtendParams } from '../media/types.js';
import { bool, compact, oneOf, requireImage, str, webhookFields } from './input.js';
import type { OperationModule, StoredParams } from './types.js';

const data = new SlashCommandBuilder()
  .setName('extend-video')
  .setDescription('Extend a video you generated')
  .addStringOption((o) =>
    o
      .setName('task_id')
      .setDescription('The video task to extend')
      .setRequired(true)
      .setAutocomplete(true)
      .setMaxLength(200),
  )
  .addStringOption((o) =>
    o.setName('prompt').setDescription('What happens next in the video').setRequired(true).setMaxLength(2000),
  )
  .addAttachmentOption((o) => o.setName('image').setDescription('Image for the first frame'))
  .addAttachmentOption((o) => o.setName('end_image').setDescription('Image for the last frame'))
  .addBooleanOption((o) => o.setName('enhance_prompt').setDescription('Let the generator improve the prompt'))
  .addStringOption((o) =>
    o
      .setName('aspect_ratio')
      .setDescription('Aspect ratio (default 1:1)')
      .addChoices(...ASPECT_RATIOS.map((v) => ({ name: v, value: v }))),
  )
  .toJSON();

const videoExtendParamsSchema = z.object({
  parentTaskId: taskId('task_id'),
  prompt: nonEmpty('prompt'),
  imageUrl: httpUrl('image').optional(),
  endImageUrl: httpUrl('end_image').optional(),
  enhancePrompt: z.boolean().optional(),
  aspectRatio: z
    .enum(ASPECT_RATIOS, {
      error: problem('input.one_of', { field: 'aspect_ratio', values: ASPECT_RATIOS.join(', ') }),
    })
    .optional(),
});

/** The options a continuation inherits from its parent (the prompt is asked anew, the frames belong to the parent). */
function inherited(p: StoredParams): Pick<VideoExtendParams, 'enhancePrompt' | 'aspectRatio'> {
  const enhance = bool(p['enhance_prompt']);
  const ratio = oneOf(ASPECT_RATIOS, p['aspect_ratio']);
  return {
    ...(enhance !== undefined ? { enhancePrompt: enhance } : {}),
    ...(ratio !== undefined ? { aspectRatio: ratio } : {}),
  };
}

/** A finished video extension, as the job keeps it. */
const videoResultSchema = z.object({ kind: z.literal('video'), videoUrl: z.string() });

declare module '../media/types.js' {
  interface OperationTypes {
    video: { params: VideoExtendParams; outputs: z.output<typeof videoResultSchema> };
  }
}

export const videoOperation: OperationModule<'video'> = {
  operation: 'video',
  command: 'extend-video',
  cost: 6,
  path: { variable: 'MEDIA_PATH_VIDEO_EXTEND', default: '/video-extend' },
  mode: 'async',
  schema: videoExtendParamsSchema,
  input: {
    kind: 'slash',
    data,
    autocomplete: { task_id: { from: 'tasks', of: 'video' } },
    fromOptions(o, limits) {
      const image = o.getAttachment('image');
      const endImage = o.getAttachment('end_image');
      const enhance = o.getBoolean('enhance_prompt');
      const ratio = o.getString('aspect_ratio');
      return {
        parentTaskId: o.getString('task_id', true).trim(),
        prompt: o.getString('prompt', true),
        ...(image ? { imageUrl: requireImage('image', image, limits.maxImageBytes) } : {}),
        ...(endImage ? { endImageUrl: requireImage('end_image', endImage, limits.maxImageBytes) } : {}),
        ...(enhance !== null ? { enhancePrompt: enhance } : {}),
        ...(ratio !== null ? { aspectRatio: ratio as AspectRatio } : {}),
      };
    },
  },
  retryable: true,
  toStored: (p) => ({
    task_id: p.parentTaskId,
    prompt: p.prompt,
    ...(p.imageUrl ? { image_url: p.imageUrl } : {}),
    ...(p.endImageUrl ? { end_image_url: p.endImageUrl } : {}),
    ...(p.enhancePrompt !== undefined ? { enhance_prompt: p.enhancePrompt } : {}),
    ...(p.aspectRatio ? { aspect_ratio: p.aspectRatio } : {}),
  }),
  fromStored(p) {
    const parentTaskId = str(p['task_id']);
    const prompt = str(p['prompt']);
    if (!parentTaskId || !prompt) return { cannot: (tr) => tr.t('jobs.cannot.params') };
    const imageUrl = str(p['image_url']);
    const endImageUrl = str(p['end_image_url']);
    return {
      parentTaskId,
      prompt,
      ...(imageUrl ? { imageUrl } : {}),
      ...(endImageUrl ? { endImageUrl } : {}),
      ...inherited(p),
    };
  },
  body: (p, { webhook }) =>
    JSON.stringify(
      compact({
        parent_task_id: p.parentTaskId,
        prompt: p.prompt,
        image_url: p.imageUrl,
        end_image_url: p.endImageUrl,
        enhance_prompt: p.enhancePrompt,
        aspect_ratio: p.aspectRatio,
        ...webhookFields(webhook),
      }),
    ),
  outputs: (b) => (b.video_url ? { kind: 'video', videoUrl: b.video_url } : undefined),
  resultSchema: videoResultSchema,
  // A link: no free text.
  resultWithoutText: (out) => out,
  fileKinds: ['video'],
  inGallery: true,
  files: (out) => [out.videoUrl],
  // "Extend again": the parent task, the prompt from the modal, the parent's aspect ratio and prompt enhancement.
  continueFrom(parent, input) {
    const prompt = input.prompt ?? '';
    return { parentTaskId: parent.taskId, prompt, ...inherited(parent.params) };
  },
  card(job, out, tr) {
    const video = safeHttpUrl(out.videoUrl);
    return {
      title: tr.t('operations.video.title'),
      facts: [],
      // In the card's gallery the video plays in place (Discord unfurls a video URL there);
      // the link stays for clients that show no player.
      media:
        video !== undefined
          ? [{ url: video, label: tr.t('result.video.open'), description: tr.t('operations.video.title') }]
          : [],
      links: video !== undefined ? [`🎬 ${maskedLink(tr.t('result.video.open'), video)}`] : [],
      notes: video === undefined ? [tr.t('result.video.none')] : [],
      actions: [
        actionButton(tr.t('buttons.extend_again'), nextStepId({ kind: 'extend-video', jobId: job.id })),
      ],
    };
  },
};
