import { z } from 'zod';
import { OPERATIONS, type TaskOutputs } from '../media/types.js';
import { messageRefSchema } from '../shared/message-ref.js';
import type { JobError, JobRecord, JobState } from './types.js';

/**
 * Shape check for records read back from the backend. Optional fields use
 * `exactOptional()` so the output type matches the interfaces under
 * `exactOptionalPropertyTypes` (present-with-undefined is rejected, which JSON
 * never produces anyway).
 */

const songSchema = z.object({
  songId: z.string(),
  audioUrl: z.string().exactOptional(),
  imageUrl: z.string().exactOptional(),
  videoUrl: z.string().exactOptional(),
  lyrics: z.string().exactOptional(),
});

const taskOutputsSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('upscale'),
    imageUrls: z.array(z.string()),
    seed: z.number().exactOptional(),
  }),
  z.object({
    kind: z.literal('song'),
    songs: z.array(songSchema),
    videoUrl: z.string().exactOptional(),
  }),
  z.object({ kind: z.literal('video'), videoUrl: z.string() }),
  z.object({
    kind: z.literal('upload'),
    message: z.string().exactOptional(),
    expiresAt: z.string().exactOptional(),
  }),
]);

const jobStateSchema = z.enum(['submitting', 'unconfirmed', 'queued', 'processing', 'finished', 'failed']);

const jobErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.array(z.string()).exactOptional(),
});

const epochMs = z.number().finite();

const galleryPostSchema = z.object({
  channelId: z.string(),
  messageId: z.string(),
  threadId: z.string().exactOptional(),
});

export const jobRecordSchema = z.object({
  id: z.string().min(1),
  secret: z.string(),
  operation: z.enum(OPERATIONS),
  userId: z.string(),
  message: messageRefSchema,
  reply: messageRefSchema.exactOptional(),
  params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])),
  locale: z.string().max(16).exactOptional(),
  taskId: z.string().exactOptional(),
  cost: z.number().int().min(0).exactOptional(),
  state: jobStateSchema,
  percentage: z.number().int().min(0).max(100),
  statusText: z.string().exactOptional(),
  statusAt: epochMs.exactOptional(),
  statusRank: z.number().int().min(0).max(3).exactOptional(),
  result: taskOutputsSchema.exactOptional(),
  error: jobErrorSchema.exactOptional(),
  createdAt: epochMs,
  updatedAt: epochMs,
  submittedAt: epochMs.exactOptional(),
  finishedAt: epochMs.exactOptional(),
  lastEventAt: epochMs.exactOptional(),
  waitingUntil: epochMs.exactOptional(),
  finalShownAt: epochMs.exactOptional(),
  messageGone: z.boolean().exactOptional(),
  settledAt: epochMs.exactOptional(),
  galleryPost: galleryPostSchema.exactOptional(),
  removed: z.object({ at: epochMs, by: z.string() }).exactOptional(),
  textWithheld: z.boolean().exactOptional(),
  personal: z.literal(true).exactOptional(),
  tokenRefusedAt: epochMs.exactOptional(),
  dmNoticeAt: epochMs.exactOptional(),
  dmRefused: z.literal(true).exactOptional(),
  version: z.number().int().min(0),
});

// Compile-time guard: the schemas and the interfaces must describe the same shapes.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesTypes: [
  Same<z.output<typeof jobRecordSchema>, JobRecord>,
  Same<z.output<typeof taskOutputsSchema>, TaskOutputs>,
  Same<z.output<typeof jobErrorSchema>, JobError>,
  Same<z.output<typeof jobStateSchema>, JobState>,
] = [true, true, true, true];
void schemaMatchesTypes;
