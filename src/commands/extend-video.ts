import { SlashCommandBuilder } from 'discord.js';
import { problemsOf, videoExtendParamsSchema } from '../services/media/schemas.js';
import { ASPECT_RATIOS, type AspectRatio, type VideoExtendParams } from '../services/media/types.js';
import { requireImage } from './attachments.js';
import { taskChoices } from './autocomplete.js';
import { runJob } from './run-job.js';
import type { JobRecord } from '../services/store/types.js';
import { UserError, type BotContext, type Command } from './types.js';

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

export async function startVideoExtension(
  i: Parameters<typeof runJob>[0],
  ctx: BotContext,
  params: VideoExtendParams,
  parent?: JobRecord,
): Promise<void> {
  const problems = problemsOf(videoExtendParamsSchema.safeParse(params));
  if (problems.length > 0) throw new UserError('invalid_options', problems.join('\n'));
  await runJob(i, ctx, {
    ...(parent ? { parent } : {}),
    operation: 'video',
    params: {
      task_id: params.parentTaskId,
      prompt: params.prompt,
      ...(params.imageUrl ? { image_url: params.imageUrl } : {}),
      ...(params.endImageUrl ? { end_image_url: params.endImageUrl } : {}),
      ...(params.enhancePrompt !== undefined ? { enhance_prompt: params.enhancePrompt } : {}),
      ...(params.aspectRatio ? { aspect_ratio: params.aspectRatio } : {}),
    },
    submit: (webhook) => ctx.media.extendVideo(params, webhook),
  });
}

export const extendVideo = {
  data,
  async execute(i, ctx) {
    const max = ctx.config.photos.maxBytes;
    const params: VideoExtendParams = {
      parentTaskId: i.options.getString('task_id', true).trim(),
      prompt: i.options.getString('prompt', true),
    };
    const image = i.options.getAttachment('image');
    if (image) params.imageUrl = requireImage('image', image, max);
    const endImage = i.options.getAttachment('end_image');
    if (endImage) params.endImageUrl = requireImage('end_image', endImage, max);
    const enhance = i.options.getBoolean('enhance_prompt');
    if (enhance !== null) params.enhancePrompt = enhance;
    const ratio = i.options.getString('aspect_ratio');
    if (ratio !== null) params.aspectRatio = ratio as AspectRatio;
    await startVideoExtension(i, ctx, params);
  },
  async autocomplete(i, ctx) {
    await i.respond(await taskChoices(ctx, i.user.id, 'video', i.options.getFocused()));
  },
} satisfies Command;
