import { z } from 'zod';
import type { Operation, TaskOutputs, TaskResult, TaskState } from './types.js';

// ---------------------------------------------------------------- responses

/** `{errors:[{msg}]}`: the service's bad-request shape. */
export const errorBodySchema = z.looseObject({
  errors: z.array(z.looseObject({ msg: z.string().optional() })).optional(),
});

export const submitResponseSchema = z.looseObject({ task_id: z.string().min(1) });

/** The answer of a synchronous operation (upscale): the finished result itself. */
export const syncResponseSchema = z.looseObject({
  task_id: z.string().min(1),
  status: z.string().optional(),
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

/**
 * One tolerant schema for every async result body (webhook or fetch): unknown fields pass.
 * `task_type` is informational only (the provider's video extension says `luma-ext` where the
 * seed says `video-ext`): the job's own operation decides how a result is read.
 */
const taskResultBodySchema = z.looseObject({
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

/**
 * The provider's states beyond the seed's: `pending`/`staged` wait for a worker (queued);
 * `starting` and `retry` (it retries internally after a hiccup) are under way (processing).
 */
const QUEUED_STATUSES = new Set(['pending', 'staged', 'queued', 'waiting']);
const PROCESSING_STATUSES = new Set(['processing', 'starting', 'retry', 'running', 'in_progress']);

export class ResultShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResultShapeError';
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

/** What a finished result of each operation carries: the registry's (media/ports.ts, passed in). */
export interface ResultOutputs {
  /** The outputs of a finished result body of `op`, or undefined when the body does not carry them. */
  outputsOf(op: Operation, body: TaskResultBody): TaskOutputs | undefined;
}

export interface NormalizeOutcome {
  result: TaskResult;
  /** Set when the status string is not one we know (treated as processing). */
  unknownStatus?: string;
}

/**
 * Turns any result body of `op` into the internal TaskResult; `ops` says what a
 * finished body of each operation carries. Throws
 * ResultShapeError when the body is not an object of the documented shape, or
 * says `finished` without the fields a finished result must carry.
 */
export function normalizeTaskResult(op: Operation, body: unknown, ops: ResultOutputs): NormalizeOutcome {
  const parsed = taskResultBodySchema.safeParse(body);
  if (!parsed.success) {
    throw new ResultShapeError(
      parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
    );
  }
  const b = parsed.data;
  const status = b.status?.trim().toLowerCase();
  const outputs = ops.outputsOf(op, b);
  let state: TaskState;
  let unknownStatus: string | undefined;
  if (status === 'finished' || status === 'completed' || status === 'succeeded') {
    if (!outputs) throw new ResultShapeError(`status finished without the ${op} result fields`);
    state = 'finished';
  } else if (status === 'failed' || status === 'error' || status === 'cancelled') {
    state = 'failed';
  } else if (status === undefined || status === '') {
    // Finished video results carry no status at all (spec quirk): the video_url is the signal.
    // (Each operation's `outputs` says what a finished body carries: an upload, its expires_at.)
    if (outputs) state = 'finished';
    else if (errorMessagesOf(b).length > 0 && b.errors) state = 'failed';
    else state = 'processing';
  } else if (PROCESSING_STATUSES.has(status)) {
    state = 'processing';
  } else if (QUEUED_STATUSES.has(status)) {
    state = 'queued';
  } else {
    state = 'processing';
    unknownStatus = b.status?.slice(0, 40);
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

// ---------------------------------------------------------------- fetch-many, account

/** `POST {base}/fetch-many` answers `{"tasks": [...]}`; each element is read like a `/fetch` answer. */
export const fetchManyResponseSchema = z.looseObject({ tasks: z.array(z.unknown()) });

/** A numeric string counts (some providers send amounts as strings). */
const amount = z.union([
  z.number(),
  z
    .string()
    .trim()
    .regex(/^-?\d+(\.\d+)?$/)
    .transform(Number),
]);

/** `GET {base}/account`: `{email, credits, total_images, plan}` (the email is not kept). */
export const accountResponseSchema = z.looseObject({
  credits: amount,
  total_images: amount.nullish(),
  plan: z.string().nullish(),
});
