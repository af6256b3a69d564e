import {
  ApplicationCommandType,
  ComponentType,
  TextInputStyle,
  type APIAttachment,
  type APIMessage,
  type RESTPostAPIContextMenuApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import { translatorFor } from '../i18n/index.js';
import {
  parseUpscaleImageModalId,
  upscaleImageModalId,
} from '../services/discord/interactions/custom-ids.js';
import type { BotInteraction } from '../services/discord/interactions/interaction.js';
import { requireImage } from '../services/operations/input.js';
import { isHttpUrl } from '../services/shared/format.js';
import { startOperation } from './run-job.js';
import { UserError, type BotContext, type Command, type ComponentHandler } from './types.js';
import { where } from './where.js';

/**
 * `Upscale image` (message command, every member): on a message with an image it asks for
 * the prompt and runs `/upscale` on the message's first image as the member who used it,
 * through the same path as the slash command (fair use, credits, live message, result card).
 */

const data: RESTPostAPIContextMenuApplicationCommandsJSONBody = {
  type: ApplicationCommandType.Message,
  name: 'Upscale image',
  ...where.jobs,
};

/** The first image of a message: its attachments first, then its embeds. */
export type FoundImage = { kind: 'attachment'; attachment: APIAttachment } | { kind: 'embed'; url: string };

export function firstImage(message: Pick<APIMessage, 'attachments' | 'embeds'>): FoundImage | undefined {
  const attachment = message.attachments.find((a) => a.content_type?.toLowerCase().startsWith('image/'));
  if (attachment) return { kind: 'attachment', attachment };
  for (const e of message.embeds) {
    // An image embed (a posted image link) shows its picture as the thumbnail.
    const url = e.image?.url ?? (e.type === 'image' ? (e.thumbnail?.url ?? e.url) : e.thumbnail?.url);
    if (url) return { kind: 'embed', url };
  }
  return undefined;
}

/** The image's URL as `/upscale` would take it: an attachment checked like `image`, a link like `image_url`. */
function imageUrlOf(found: FoundImage, maxImageBytes: number): string {
  if (found.kind === 'attachment') return requireImage('image', found.attachment, maxImageBytes);
  if (!isHttpUrl(found.url))
    throw new UserError('invalid_image_url', (tr) => tr.t('input.upscale.bad_image_url'));
  return found.url;
}

async function execute(i: BotInteraction, ctx: BotContext): Promise<void> {
  const target = i.targetMessage;
  const found = target ? firstImage(target) : undefined;
  if (!target || !found) throw new UserError('no_image', (tr) => tr.t('upscale_image.no_image'));
  const imageUrl = imageUrlOf(found, ctx.limits.maxImageBytes);
  await ctx.imageTargets.put(i.user.id, target.id, imageUrl);
  const tr = translatorFor(i);
  await i.showModal({
    custom_id: upscaleImageModalId({ channelId: target.channel_id, messageId: target.id }),
    title: tr.t('modals.upscale_image.title'),
    components: [
      {
        type: ComponentType.ActionRow,
        components: [
          {
            type: ComponentType.TextInput,
            custom_id: 'prompt',
            label: tr.t('modals.upscale_image.prompt_label'),
            style: TextInputStyle.Paragraph,
            required: true,
            max_length: 2000,
          },
        ],
      },
    ],
  });
}

export const upscaleImage: Command = { data, job: true, userInstall: 'job', execute };

/** The prompt form: the member's image for that message, upscaled like `/upscale` with defaults. */
export const upscaleImageModal: ComponentHandler = {
  prefix: 'modal:upscale-image:',
  job: true,
  async modal(i: BotInteraction, ctx: BotContext) {
    const ids = parseUpscaleImageModalId(i.customId);
    if (!ids) throw new UserError('unknown_modal', (tr) => tr.t('errors.unknown_form'));
    const target = await ctx.imageTargets.take(i.user.id, ids.messageId);
    if (!target) throw new UserError('upscale_image_expired', (tr) => tr.t('upscale_image.expired'));
    await startOperation(i, ctx, 'upscale', {
      imageUrl: target.imageUrl,
      prompt: i.fields.getTextInputValue('prompt'),
      resemblance: 50,
    });
  },
};
