import { z } from 'zod';
import {
  ASPECT_RATIOS,
  ETHNICITIES,
  GENDERS,
  MAGIC_PROMPT_OPTIONS,
  type Operation,
  type Song,
  type TaskOutputs,
  type TaskResult,
  type TaskState,
} from './types.js';

// ---------------------------------------------------------------- requests
// Validated before sending so a user learns the precise reason without a paid call.

const httpUrl = (field: string) =>
  z.string({ error: `${field} must be a URL` }).refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      return false;
    }
  }, `${field} must be an http(s) URL`);

const boundedInt = (field: string, min: number, max: number) =>
  z
    .number({ error: `${field} must be a whole number between ${min} and ${max}` })
    .int(`${field} must be a whole number between ${min} and ${max}`)
    .min(min, `${field} must be a whole number between ${min} and ${max}`)
    .max(max, `${field} must be a whole number between ${min} and ${max}`);

const nonEmpty = (field: string, max = 4000) =>
  z
    .string({ error: `${field} is required` })
    .trim()
    .min(1, `${field} must not be empty`)
    .max(max, `${field} must be at most ${max} characters`);

const taskId = (field: string) =>
  z
    .string({ error: `${field} is required` })
    .trim()
    .min(1, `${field} must not be empty`)
    .max(200, `${field} is too long`)
    .regex(/^[\w\-.:]+$/, `${field} must be a task id (letters, digits, - _ . :)`);

export const upscaleParamsSchema = z.object({
  imageUrl: httpUrl('image_url'),
  prompt: nonEmpty('prompt'),
  resemblance: boundedInt('resemblance', 1, 100),
  detail: boundedInt('detail', 1, 100).optional(),
  seed: z.number().int('seed must be a whole number').min(0, 'seed must not be negative').optional(),
  magicPromptOption: z
    .enum(MAGIC_PROMPT_OPTIONS, { error: 'magic_prompt must be AUTO, ON or OFF' })
    .optional(),
});

export const songExtendParamsSchema = z.object({
  parentTaskId: taskId('task_id'),
  songId: taskId('song_id'),
  continueAt: z
    .number({ error: 'continue_at must be a number of seconds' })
    .min(0, 'continue_at must be 0 seconds or more')
    .max(24 * 3600, 'continue_at must be at most 86400 seconds')
    .optional(),
});

export const videoExtendParamsSchema = z.object({
  parentTaskId: taskId('task_id'),
  prompt: nonEmpty('prompt'),
  imageUrl: httpUrl('image').optional(),
  endImageUrl: httpUrl('end_image').optional(),
  enhancePrompt: z.boolean().optional(),
  aspectRatio: z
    .enum(ASPECT_RATIOS, { error: `aspect_ratio must be one of ${ASPECT_RATIOS.join(', ')}` })
    .optional(),
});

export const MIN_PHOTOS = 10;
export const MAX_PHOTOS = 30;

export const photoUploadMetaSchema = z.object({
  count: z
    .number()
    .int()
    .min(MIN_PHOTOS, `images: at least ${MIN_PHOTOS} photos are needed`)
    .max(MAX_PHOTOS, `images: at most ${MAX_PHOTOS} photos are allowed`),
  ethnicity: z.enum(ETHNICITIES, { error: `ethnicity must be one of ${ETHNICITIES.join(', ')}` }),
  gender: z.enum(GENDERS, { error: 'gender must be female or male' }),
  age: boundedInt('age', 1, 120).optional(),
});

/** Field-named problems, or [] when valid. */
export function problemsOf(result: z.ZodSafeParseResult<unknown>): string[] {
  return result.success ? [] : result.error.issues.map((i) => i.message);
}

// ---------------------------------------------------------------- responses

/** `{errors:[{msg}]}`: the service's bad-request shape. */
export const errorBodySchema = z.looseObject({
  errors: z.array(z.looseObject({ msg: z.string().optional() })).optional(),
});

export const submitResponseSchema = z.looseObject({ task_id: z.string().min(1) });

export const upscaleResponseSchema = z.looseObject({
  task_id: z.string().min(1),
  image_urls: z.array(z.string()).min(1),
  status: z.string().optional(),
  task_type: z.string().optional(),
  seed: z.number().optional(),
});

/** Integer for songs, a string like '40' for videos; anything else is malformed. */
const percentage = z
  .union([
    z.number(),
    z
      .string()
      .trim()
      .regex(/^\d+(\.\d+)?$/, 'percentage must be numeric'),
  ])
  .transform((v) => Math.max(0, Math.min(100, Math.round(Number(v)))));

const songSchema = z.looseObject({
  song_id: z.string(),
  lyrics: z.string().nullish(),
  audio_url: z.string().nullish(),
  image_url: z.string().nullish(),
  video_url: z.string().nullish(),
});

/** One tolerant schema for every async result body (webhook or fetch): unknown fields pass. */
export const taskResultBodySchema = z.looseObject({
  task_id: z.string().min(1).optional(),
  task_type: z.string().optional(),
  status: z.string().optional(),
  percentage: percentage.optional(),
  message: z.string().nullish(),
  video_url: z.string().nullish(),
  songs: z.array(songSchema).nullish(),
  image_urls: z.array(z.string()).nullish(),
  seed: z.number().nullish(),
  expires_at: z.string().nullish(),
  errors: z.array(z.looseObject({ msg: z.string().optional() })).nullish(),
  error: z.string().nullish(),
});
export type TaskResultBody = z.output<typeof taskResultBodySchema>;

const QUEUED_STATUSES = new Set(['pending', 'staged', 'starting', 'retry', 'queued', 'waiting']);

export class ResultShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResultShapeError';
  }
}

function songOf(s: z.output<typeof songSchema>): Song {
  const song: Song = { songId: s.song_id };
  if (s.audio_url) song.audioUrl = s.audio_url;
  if (s.image_url) song.imageUrl = s.image_url;
  if (s.video_url) song.videoUrl = s.video_url;
  if (s.lyrics) song.lyrics = s.lyrics;
  return song;
}

/** The outputs of a finished result, or undefined when the body does not carry them. */
function outputsOf(op: Operation, b: TaskResultBody): TaskOutputs | undefined {
  switch (op) {
    case 'upscale':
      return b.image_urls && b.image_urls.length > 0
        ? {
            kind: 'upscale',
            imageUrls: b.image_urls,
            ...(typeof b.seed === 'number' ? { seed: b.seed } : {}),
          }
        : undefined;
    case 'song':
      return b.songs && b.songs.length > 0
        ? { kind: 'song', songs: b.songs.map(songOf), ...(b.video_url ? { videoUrl: b.video_url } : {}) }
        : undefined;
    case 'video':
      return b.video_url ? { kind: 'video', videoUrl: b.video_url } : undefined;
    case 'upload':
      return b.expires_at || b.status === 'finished'
        ? {
            kind: 'upload',
            ...(b.message ? { message: b.message } : {}),
            ...(b.expires_at ? { expiresAt: b.expires_at } : {}),
          }
        : undefined;
  }
}

function errorMessagesOf(b: TaskResultBody): string[] {
  const msgs = (b.errors ?? [])
    .map((e) => e.msg)
    .filter((m): m is string => typeof m === 'string' && m !== '');
  if (msgs.length === 0 && b.error) msgs.push(b.error);
  if (msgs.length === 0 && b.message) msgs.push(b.message);
  return msgs;
}

export interface NormalizeOutcome {
  result: TaskResult;
  /** Set when the status string is not one we know (treated as processing). */
  unknownStatus?: string;
}

/**
 * Turns any result body of `op` into the internal TaskResult. Throws
 * ResultShapeError when the body is not an object of the documented shape, or
 * says `finished` without the fields a finished result must carry.
 */
export function normalizeTaskResult(op: Operation, body: unknown): NormalizeOutcome {
  const parsed = taskResultBodySchema.safeParse(body);
  if (!parsed.success) {
    throw new ResultShapeError(
      parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
    );
  }
  const b = parsed.data;
  const status = b.status?.trim().toLowerCase();
  const outputs = outputsOf(op, b);
  let state: TaskState;
  let unknownStatus: string | undefined;
  if (status === 'finished' || status === 'completed' || status === 'succeeded') {
    if (!outputs) throw new ResultShapeError(`status finished without the ${op} result fields`);
    state = 'finished';
  } else if (status === 'failed' || status === 'error' || status === 'cancelled') {
    state = 'failed';
  } else if (status === undefined || status === '') {
    // Finished video results carry no status at all (spec quirk): the video_url is the signal.
    if (outputs && op !== 'upload') state = 'finished';
    else if (op === 'upload' && b.expires_at && outputs) state = 'finished';
    else if (errorMessagesOf(b).length > 0 && b.errors) state = 'failed';
    else state = 'processing';
  } else if (status === 'processing' || status === 'running' || status === 'in_progress') {
    state = 'processing';
  } else if (QUEUED_STATUSES.has(status)) {
    state = 'queued';
  } else {
    state = 'processing';
    unknownStatus = b.status;
  }

  const result: TaskResult = { operation: op, state, raw: body };
  if (b.task_id) result.taskId = b.task_id;
  if (b.status !== undefined) result.rawStatus = b.status;
  if (b.percentage !== undefined) result.percentage = b.percentage;
  if (state === 'finished') result.percentage = 100;
  if (b.message) result.message = b.message;
  if (state === 'finished' && outputs) result.outputs = outputs;
  if (state === 'failed') result.errors = errorMessagesOf(b);
  return unknownStatus === undefined ? { result } : { result, unknownStatus };
}
