import type { TaskOutputs } from '../../media/types.js';
import type { JobRecord } from '../../store/types.js';

/**
 * The job as a public message may still show it when AutoMod refused it even without
 * the member's own text: every free text left out, the service's too (status text,
 * error text, and what its operation says is free text in its result: lyrics, an
 * upload's message). What remains (state, progress, links, buttons) carries no words
 * anyone wrote, so the final can still be shown. Rendered at send time only; the record
 * keeps everything (the member's /tasks and /privacy export are ephemeral and not
 * subject to AutoMod). Reached through the job renderer (createJobRenderer), which
 * knows the operations.
 */
export function withoutFreeText(
  ops: { resultWithoutText(out: TaskOutputs): TaskOutputs },
  job: JobRecord,
): JobRecord {
  const bare: JobRecord = { ...job, textWithheld: true };
  delete bare.statusText;
  if (job.error) bare.error = { code: job.error.code, message: '' };
  if (job.result) bare.result = ops.resultWithoutText(job.result);
  return bare;
}
