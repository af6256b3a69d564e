import { SlashCommandBuilder } from '@discordjs/builders';
import { z } from 'zod';
import { optionalField } from '../shared/optional-field.js';
import { nextStepId } from '../discord/interactions/custom-ids.js';
import { actionButton } from '../discord/render/kit.js';
import { safeHttpUrl } from '../discord/render/limits.js';
import { boundedInt, httpUrl, nonEmpty, problem } from './fields.js';
import { MAGIC_PROMPT_OPTIONS, type MagicPromptOption, type UpscaleParams } from '../media/types.js';
import { isHttpUrl } from '../shared/format.js';
import { UserError, compact, num, oneOf, requireImage, str, type MemberText } from './input.js';
import type { OperationModule, StoredParams } from './types.js';

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

const upscaleParamsSchema = z.object({
  imageUrl: httpUrl('image_url'),
  prompt: nonEmpty('prompt'),
  resemblance: boundedInt('resemblance', 1, 100),
  detail: boundedInt('detail', 1, 100).optional(),
  seed: z
    .number()
    .int(problem('input.whole_number', { field: 'seed' }))
    .min(0, problem('input.not_negative', { field: 'seed' }))
    .optional(),
  magicPromptOption: z
    .enum(MAGIC_PROMPT_OPTIONS, {
      error: problem('input.one_of', { field: 'magic_prompt', values: MAGIC_PROMPT_OPTIONS.join(', ') }),
    })
    .optional(),
});

/** A finished upscale, as the job keeps it. */
const upscaleResultSchema = z.object({
  kind: z.literal('upscale'),
  imageUrls: z.array(z.string()),
  seed: optionalField(z.number()),
});

declare module '../media/types.js' {
  interface OperationTypes {
    upscale: { params: UpscaleParams; outputs: z.output<typeof upscaleResultSchema> };
  }
}

/** The stored parameters back, keeping the seed for a retry and dropping it for "Upscale again". */
function fromStored(p: StoredParams, keepSeed: boolean): UpscaleParams | { cannot: MemberText } {
  const imageUrl = str(p['image_url']);
  const prompt = str(p['prompt']);
  if (imageUrl === undefined || prompt === undefined) {
    return { cannot: (tr) => tr.t('jobs.cannot.upscale_params') };
  }
  const detail = num(p['detail']);
  const seed = num(p['seed']);
  const magic = oneOf(MAGIC_PROMPT_OPTIONS, p['magic_prompt']);
  return {
    imageUrl,
    prompt,
    resemblance: num(p['resemblance']) ?? 50,
    ...(detail !== undefined ? { detail } : {}),
    ...(keepSeed && seed !== undefined ? { seed } : {}),
    ...(magic !== undefined ? { magicPromptOption: magic } : {}),
  };
}

export const upscaleOperation: OperationModule<'upscale'> = {
  operation: 'upscale',
  command: 'upscale',
  cost: 1,
  path: { variable: 'MEDIA_PATH_UPSCALE', default: '/image-upscale' },
  mode: 'sync',
  schema: upscaleParamsSchema,
  input: {
    kind: 'slash',
    data,
    fromOptions(o, limits) {
      const image = o.getAttachment('image');
      const imageUrl = o.getString('image_url')?.trim();
      if (image && imageUrl)
        throw new UserError('ambiguous_image', (tr) => tr.t('input.upscale.both_images'));
      if (!image && !imageUrl) {
        throw new UserError('missing_image', (tr) => tr.t('input.upscale.no_image'));
      }
      if (imageUrl && !isHttpUrl(imageUrl)) {
        throw new UserError('invalid_image_url', (tr) => tr.t('input.upscale.bad_image_url'));
      }
      const detail = o.getInteger('detail');
      const seed = o.getInteger('seed');
      const magic = o.getString('magic_prompt');
      return {
        imageUrl: image ? requireImage('image', image, limits.maxImageBytes) : (imageUrl ?? ''),
        prompt: o.getString('prompt', true),
        resemblance: o.getInteger('resemblance') ?? 50,
        ...(detail !== null ? { detail } : {}),
        ...(seed !== null ? { seed } : {}),
        ...(magic !== null ? { magicPromptOption: magic as MagicPromptOption } : {}),
      };
    },
  },
  retryable: true,
  toStored: (p) => ({
    image_url: p.imageUrl,
    prompt: p.prompt,
    resemblance: p.resemblance,
    ...(p.detail !== undefined ? { detail: p.detail } : {}),
    ...(p.seed !== undefined ? { seed: p.seed } : {}),
    ...(p.magicPromptOption ? { magic_prompt: p.magicPromptOption } : {}),
  }),
  fromStored: (stored) => fromStored(stored, true),
  // Synchronous: no webhook fields.
  body: (p) =>
    JSON.stringify(
      compact({
        image_url: p.imageUrl,
        prompt: p.prompt,
        resemblance: p.resemblance,
        detail: p.detail,
        seed: p.seed,
        magic_prompt_option: p.magicPromptOption,
      }),
    ),
  outputs: (b) =>
    b.image_urls && b.image_urls.length > 0
      ? { kind: 'upscale', imageUrls: b.image_urls, ...(typeof b.seed === 'number' ? { seed: b.seed } : {}) }
      : undefined,
  resultSchema: upscaleResultSchema,
  // Links and a seed: no free text.
  resultWithoutText: (out) => out,
  inGallery: true,
  files: (out) => out.imageUrls,
  fileKinds: ['image'],
  // "Upscale again": everything but the seed (a new image is wanted).
  continueFrom: (parent) => fromStored(parent.params, false),
  card(job, out, tr) {
    const images = out.imageUrls
      .map((raw) => safeHttpUrl(raw))
      .filter((url): url is string => url !== undefined);
    return {
      title:
        images.length === 0
          ? tr.t('operations.upscale.title')
          : tr.t('result.upscale.title', { count: images.length }),
      facts: out.seed !== undefined ? [`**${tr.t('result.seed')}:** ${out.seed}`] : [],
      media: images.map((url, i) => ({ url, label: tr.t('buttons.image', { n: i + 1 }) })),
      links: [],
      notes: images.length === 0 ? [tr.t('result.upscale.no_image')] : [],
      actions: [
        actionButton(tr.t('buttons.upscale_again'), nextStepId({ kind: 'upscale-again', jobId: job.id })),
      ],
    };
  },
};
