import { z } from 'zod';
import { optionalField } from '../shared/optional-field.js';
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
 * Shape check for records read back from the backend. Optional fields are
 * `optionalField`s: typed as `exactOptional()`, so the output type matches the
 * interfaces under `exactOptionalPropertyTypes`, and checked as `optional()`,
 * which passes an absent field without running its schema (a record read is
 * 4× cheaper; see ../shared/optional-field.ts).
 */

const jobStateSchema = z.enum(['submitting', 'unconfirmed', 'queued', 'processing', 'finished', 'failed']);

const jobErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: optionalField(z.array(z.string())),
});

const epochMs = z.number().finite();

const galleryPostSchema = z.object({
  channelId: z.string(),
  messageId: z.string(),
  threadId: optionalField(z.string()),
});

/** The job record's schema for these operations. */
export function jobRecordSchemaOf(ops: JobOperations) {
  return jobRecordBase.extend({
    operation: z.enum(ops.names),
    result: optionalField(resultSchemaOf(ops)),
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
  reply: optionalField(messageRefSchema),
  params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])),
  locale: optionalField(z.string().max(16)),
  taskId: optionalField(z.string()),
  cost: optionalField(z.number().int().min(0)),
  state: jobStateSchema,
  percentage: z.number().int().min(0).max(100),
  statusText: optionalField(z.string()),
  statusAt: optionalField(epochMs),
  statusRank: optionalField(z.number().int().min(0).max(3)),
  error: optionalField(jobErrorSchema),
  createdAt: epochMs,
  updatedAt: epochMs,
  submittedAt: optionalField(epochMs),
  finishedAt: optionalField(epochMs),
  lastEventAt: optionalField(epochMs),
  waitingUntil: optionalField(epochMs),
  finalShownAt: optionalField(epochMs),
  messageGone: optionalField(z.boolean()),
  settledAt: optionalField(epochMs),
  galleryPost: optionalField(galleryPostSchema),
  removed: optionalField(z.object({ at: epochMs, by: z.string() })),
  textWithheld: optionalField(z.boolean()),
  personal: optionalField(z.literal(true)),
  tokenRefusedAt: optionalField(epochMs),
  dmNoticeAt: optionalField(epochMs),
  dmRefused: optionalField(z.literal(true)),
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
