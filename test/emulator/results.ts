/**
 * Result bodies, shaped exactly as the spec shows them, quirks included:
 * the video percentage is a string, the finished video has no `status`, the
 * upload processing body has no `task_id`.
 */
import type { Operation, ResultBody } from './types.js';

export const TASK_TYPES: Partial<Record<Operation, string>> = {
  upscale: 'image-upscale',
  song: 'song',
  video: 'video-ext',
};

/** The `task_type` of an operation's results (the video one can be `luma-ext`, as the provider says). */
function taskTypeOf(operation: Operation, ctx: BodyContext): string | undefined {
  return operation === 'video' ? (ctx.videoTaskType ?? TASK_TYPES.video) : TASK_TYPES[operation];
}

/** What a result body builder needs to know about its task. */
export interface BodyContext {
  baseUrl: string;
  taskId: string;
  songIds?: readonly [string, string] | undefined;
  imageCount?: number | undefined;
  expiresAt?: string | undefined;
  /** Scenario `videoTaskType`. */
  videoTaskType?: string | undefined;
}

function fileUrl(ctx: BodyContext, name: string): string {
  return `${ctx.baseUrl}/files/${encodeURIComponent(name)}`;
}

export function upscaleResult(ctx: BodyContext, seed: number): ResultBody {
  return {
    task_id: ctx.taskId,
    image_urls: [1, 2, 3, 4].map((n) => fileUrl(ctx, `${ctx.taskId}-${n}.png`)),
    status: 'finished',
    task_type: 'image-upscale',
    seed,
  };
}

/** A task reporting just a status (`pending`, `staged`, `starting`, `retry`, …). */
export function statusResult(operation: Operation, ctx: BodyContext, status: string): ResultBody {
  if (operation === 'upload') return { status, message: `${status}: ${ctx.imageCount ?? 0} images` };
  return { task_id: ctx.taskId, task_type: taskTypeOf(operation, ctx) ?? operation, status };
}

export function progressResult(operation: Operation, ctx: BodyContext, percentage: number): ResultBody {
  switch (operation) {
    case 'song':
      return { task_id: ctx.taskId, task_type: 'song', status: 'processing', percentage };
    case 'video':
      return {
        task_id: ctx.taskId,
        task_type: taskTypeOf('video', ctx) ?? 'video-ext',
        status: 'processing',
        percentage: String(percentage),
      };
    case 'upload':
      return { status: 'processing', message: `Preparing ${ctx.imageCount ?? 0} images…` };
    case 'upscale':
      throw new Error('upscale has no progress state');
  }
}

export function finishedResult(operation: Operation, ctx: BodyContext): ResultBody {
  switch (operation) {
    case 'song': {
      const [a, b] = ctx.songIds ?? ['song-a', 'song-b'];
      return {
        task_id: ctx.taskId,
        task_type: 'song',
        status: 'finished',
        video_url: fileUrl(ctx, `${ctx.taskId}.mp4`),
        songs: [a, b].map((songId, index) => ({
          lyrics: `[Verse]\nEmulated lyrics, take ${index + 1}\n[Chorus]\nLa la la`,
          song_id: songId,
          audio_url: fileUrl(ctx, `${ctx.taskId}-${index + 1}.wav`),
          image_url: fileUrl(ctx, `${ctx.taskId}-${index + 1}.png`),
          video_url: fileUrl(ctx, `${ctx.taskId}-${index + 1}.mp4`),
        })),
      };
    }
    case 'video':
      return {
        task_id: ctx.taskId,
        task_type: taskTypeOf('video', ctx) ?? 'video-ext',
        video_url: fileUrl(ctx, `${ctx.taskId}.mp4`),
      };
    case 'upload':
      return {
        task_id: ctx.taskId,
        status: 'finished',
        message: `${ctx.imageCount ?? 0} images prepared for training`,
        expires_at: ctx.expiresAt ?? new Date(0).toISOString(),
      };
    case 'upscale':
      throw new Error('upscale results are built by upscaleResult');
  }
}

export function failedResult(operation: Operation, ctx: BodyContext, message: string): ResultBody {
  const taskType = taskTypeOf(operation, ctx);
  return {
    task_id: ctx.taskId,
    ...(taskType !== undefined ? { task_type: taskType } : {}),
    status: 'failed',
    errors: [{ msg: message }],
  };
}
