import { z } from 'zod';
import type { Operation, TaskOutputs } from '../media/types.js';
import { messageRefSchema } from '../shared/message-ref.js';
import type { JobError, JobRecord, JobState } from './types.js';

/**
 * What the store checks of the operations, passed in (createStores' `operations`): the
 * operations registry sits above the store, which names none of them.
 */
export interface JobOperations {
  /** Every operation a stored job may be of. */
  readonly names: readonly Operation[];
  /** The schema of a finished result of kind `op`, as the job record keeps it. */
  resultSchema(op: Operation): z.ZodType<TaskOutputs>;
}

/**
 * Shape check for records read back from the backend. Optional fields use
 * `exactOptional()` so the output type matches the interfaces under
 * `exactOptionalPropertyTypes` (present-with-undefined is rejected, which JSON
 * never produces anyway).
 */

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

/** The job record's schema for these operations. */
export function jobRecordSchemaOf(ops: JobOperations) {
  return jobRecordBase.extend({
    operation: z.enum(ops.names),
    result: resultSchemaOf(ops).exactOptional(),
  });
}

/** A finished result: its `kind` names the operation whose schema checks the rest. */
function resultSchemaOf(ops: JobOperations): z.ZodType<TaskOutputs> {
  return z.looseObject({ kind: z.enum(ops.names) }).transform((r, ctx) => {
    const checked = ops.resultSchema(r.kind).safeParse(r);
    if (checked.success) return checked.data;
    // The operation's own issues, at their place in the result.
    for (const { path, message } of checked.error.issues) ctx.addIssue({ code: 'custom', path, message });
    return z.NEVER;
  });
}

const jobRecordBase = z.object({
  id: z.string().min(1),
  secret: z.string(),
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
  Same<z.output<ReturnType<typeof jobRecordSchemaOf>>, JobRecord>,
  Same<z.output<typeof jobErrorSchema>, JobError>,
  Same<z.output<typeof jobStateSchema>, JobState>,
] = [true, true, true];
void schemaMatchesTypes;
