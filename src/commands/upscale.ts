import { SlashCommandBuilder, type ChatInputCommandInteraction } from 'discord.js';
import { MAGIC_PROMPT_OPTIONS, type MagicPromptOption, type UpscaleParams } from '../services/media/types.js';
import { problemsOf, upscaleParamsSchema } from '../services/media/schemas.js';
import { isHttpUrlString, requireImage } from './attachments.js';
import { runJob } from './run-job.js';
import type { JobRecord } from '../services/store/types.js';
import { UserError, type BotContext, type Command } from './types.js';

// Discord requires required options before optional ones, so `prompt` comes first.
const data = new SlashCommandBuilder()
  .setName('upscale')
  .setDescription('Upscale an image to higher quality and resolution')
  .addStringOption((o) =>
    o.setName('prompt').setDescription('Describe the image to generate').setRequired(true).setMaxLength(2000),
  )
  .addAttachmentOption((o) =>
    o.setName('image').setDescription('The image to upscale (PNG, JPEG, WebP or GIF)'),
  )
  .addStringOption((o) =>
    o.setName('image_url').setDescription('Or: an http(s) URL of the image').setMaxLength(2000),
  )
  .addIntegerOption((o) =>
    o
      .setName('resemblance')
      .setDescription('How close to the original, 1-100 (default 50)')
      .setMinValue(1)
      .setMaxValue(100),
  )
  .addIntegerOption((o) =>
    o.setName('detail').setDescription('Amount of detail, 1-100').setMinValue(1).setMaxValue(100),
  )
  .addIntegerOption((o) =>
    o.setName('seed').setDescription('Seed for a repeatable result').setMinValue(0).setMaxValue(4294967295),
  )
  .addStringOption((o) =>
    o
      .setName('magic_prompt')
      .setDescription('Let the generator improve the prompt (default AUTO)')
      .addChoices(...MAGIC_PROMPT_OPTIONS.map((v) => ({ name: v, value: v }))),
  )
  .toJSON();

export function upscaleParamsFrom(i: ChatInputCommandInteraction, maxBytes: number): UpscaleParams {
  const image = i.options.getAttachment('image');
  const imageUrl = i.options.getString('image_url')?.trim();
  if (image && imageUrl)
    throw new UserError('ambiguous_image', 'Give either `image` or `image_url`, not both.');
  if (!image && !imageUrl) {
    throw new UserError('missing_image', 'Attach an `image` or give an `image_url` to upscale.');
  }
  if (imageUrl && !isHttpUrlString(imageUrl)) {
    throw new UserError(
      'invalid_image_url',
      '`image_url` must be an http(s) URL, e.g. https://example.com/photo.png.',
    );
  }
  const params: UpscaleParams = {
    imageUrl: image ? requireImage('image', image, maxBytes) : (imageUrl ?? ''),
    prompt: i.options.getString('prompt', true),
    resemblance: i.options.getInteger('resemblance') ?? 50,
  };
  const detail = i.options.getInteger('detail');
  if (detail !== null) params.detail = detail;
  const seed = i.options.getInteger('seed');
  if (seed !== null) params.seed = seed;
  const magic = i.options.getString('magic_prompt');
  if (magic !== null) params.magicPromptOption = magic as MagicPromptOption;
  const problems = problemsOf(upscaleParamsSchema.safeParse(params));
  if (problems.length > 0) throw new UserError('invalid_options', problems.join('\n'));
  return params;
}

export function upscaleJobParams(p: UpscaleParams) {
  return {
    image_url: p.imageUrl,
    prompt: p.prompt,
    resemblance: p.resemblance,
    ...(p.detail !== undefined ? { detail: p.detail } : {}),
    ...(p.seed !== undefined ? { seed: p.seed } : {}),
    ...(p.magicPromptOption ? { magic_prompt: p.magicPromptOption } : {}),
  };
}

export async function startUpscale(
  i: Parameters<typeof runJob>[0],
  ctx: BotContext,
  params: UpscaleParams,
  parent?: JobRecord,
): Promise<void> {
  await runJob(i, ctx, {
    ...(parent ? { parent } : {}),
    operation: 'upscale',
    params: upscaleJobParams(params),
    submit: () => ctx.media.upscale(params),
  });
}

export const upscale = {
  data,
  async execute(i, ctx) {
    await startUpscale(i, ctx, upscaleParamsFrom(i, ctx.config.photos.maxBytes));
  },
} satisfies Command;
