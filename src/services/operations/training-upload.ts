import { z } from 'zod';
import { optionalField } from '../shared/optional-field.js';
import { escapeMarkdown, inlineCode, truncate } from '../discord/render/limits.js';
import { photoUploadBody } from '../media/photo-body.js';
import { MAX_PHOTOS, MIN_PHOTOS, boundedInt, problem } from './fields.js';
import { ETHNICITIES, GENDERS, type PhotoSource, type PhotoUploadParams } from '../media/types.js';
import { discordTimestamp } from '../shared/format.js';
import { compact, webhookFields } from './input.js';
import type { OperationModule } from './types.js';

const photoUploadParamsSchema = z.object({
  photos: z
    .array(z.custom<PhotoSource>((v) => typeof v === 'object' && v !== null && 'url' in v))
    .min(MIN_PHOTOS, problem('input.photos_min', { field: 'images', min: MIN_PHOTOS }))
    .max(MAX_PHOTOS, problem('input.photos_max', { field: 'images', max: MAX_PHOTOS })),
  ethnicity: z.enum(ETHNICITIES, {
    error: problem('input.one_of', { field: 'ethnicity', values: ETHNICITIES.join(', ') }),
  }),
  gender: z.enum(GENDERS, {
    error: problem('input.one_of', { field: 'gender', values: GENDERS.join(', ') }),
  }),
  age: boundedInt('age', 1, 120).optional(),
});

/** A finished upload of training photos, as the job keeps it. */
const uploadResultSchema = z.object({
  kind: z.literal('upload'),
  message: optionalField(z.string()),
  expiresAt: optionalField(z.string()),
});

declare module '../media/types.js' {
  interface OperationTypes {
    upload: { params: PhotoUploadParams; outputs: z.output<typeof uploadResultSchema> };
  }
}

export const uploadOperation: OperationModule<'upload'> = {
  operation: 'upload',
  command: 'training-photos',
  cost: 2,
  path: { variable: 'MEDIA_PATH_PHOTO_UPLOAD', default: '/ai-photo-upload' },
  mode: 'async',
  schema: photoUploadParamsSchema,
  // Gathered over several interactions (src/commands/training-photos.ts, src/services/training/).
  input: { kind: 'session' },
  // A failed upload keeps its photos in the member's session until it expires: Retry sends them
  // again, through the consent step (src/commands/training-photos.ts `retryUpload`), not through
  // `fromStored` (the job keeps no photo and no demographics).
  retryable: true,
  // The job's params are shown in public messages: the photo count only. Ethnicity, gender and
  // age stay in the member's session (shown to them alone); Retry reads them from there.
  toStored: (p) => ({ photos: p.photos.length }),
  fromStored: () => ({ cannot: (tr) => tr.t('jobs.cannot.training_not_kept') }),
  // Streamed, so 30 large photos never sit in memory together.
  body: (p, { webhook, photoFormat }) =>
    photoUploadBody(
      compact({ ethnicity: p.ethnicity, gender: p.gender, age: p.age, ...webhookFields(webhook) }),
      p.photos,
      photoFormat,
    ),
  outputs: (b) =>
    b.expires_at || b.status === 'finished'
      ? {
          kind: 'upload',
          ...(b.message ? { message: b.message } : {}),
          ...(b.expires_at ? { expiresAt: b.expires_at } : {}),
        }
      : undefined,
  resultSchema: uploadResultSchema,
  resultWithoutText: ({ message: _message, ...rest }) => rest,
  inGallery: false,
  files: () => [],
  fileKinds: [],
  continueFrom: undefined,
  card(_job, out, tr) {
    const message = out.message?.trim();
    let expiry: string | undefined;
    if (out.expiresAt !== undefined && out.expiresAt.trim() !== '') {
      const ms = Date.parse(out.expiresAt);
      // Discord shows a timestamp in the reader's own time zone; the service's text only when it is no time.
      expiry = Number.isFinite(ms)
        ? tr.t('result.training.expires', {
            relative: discordTimestamp(ms, 'R'),
            full: discordTimestamp(ms, 'F'),
          })
        : tr.t('result.training.expires_at', { raw: inlineCode(out.expiresAt, 64) });
    }
    return {
      title: tr.t('operations.upload.title'),
      facts: [],
      media: [],
      links: [],
      notes: [
        ...(message !== undefined && message !== '' ? [truncate(escapeMarkdown(message), 2000)] : []),
        ...(expiry !== undefined ? [expiry] : []),
      ],
      actions: [],
    };
  },
};
