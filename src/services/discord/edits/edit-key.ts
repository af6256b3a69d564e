/**
 * Which message an edit is of, as one typed key, encoded and parsed here only (the
 * custom-id way): a job's live message, its channel line (a job in its own thread), the
 * "result by DM" check of a personal job (BullMQ driver), or a training session's panel.
 * The string is the in-process edit queue's slot key and the BullMQ driver's job and
 * dedup id (`m-{jobId}` there before this module: kept, so edits queued by an older
 * instance still fold into new ones).
 */
export type JobEditTarget = 'message' | 'reply' | 'notice';

export type EditKey =
  { kind: 'job'; jobId: string; target: JobEditTarget } | { kind: 'session'; messageId: string };

const JOB_TARGET_CODES = { message: 'm', reply: 'r', notice: 'n' } as const satisfies Record<
  JobEditTarget,
  string
>;
const SESSION_CODE = 's';

export function encodeEditKey(key: EditKey): string {
  return key.kind === 'session'
    ? `${SESSION_CODE}-${key.messageId}`
    : `${JOB_TARGET_CODES[key.target]}-${key.jobId}`;
}

/** A key encodeEditKey made, or undefined for any other string. */
export function decodeEditKey(encoded: string): EditKey | undefined {
  const code = encoded.slice(0, 2);
  const id = encoded.slice(2);
  if (id === '') return undefined;
  if (code === `${SESSION_CODE}-`) return { kind: 'session', messageId: id };
  for (const [target, c] of Object.entries(JOB_TARGET_CODES) as [JobEditTarget, string][]) {
    if (code === `${c}-`) return { kind: 'job', jobId: id, target };
  }
  return undefined;
}

/** The job whose live message `encoded` is the key of (what is stored with the job), else undefined. */
export function jobMessageOf(encoded: string): string | undefined {
  const key = decodeEditKey(encoded);
  return key?.kind === 'job' && key.target === 'message' ? key.jobId : undefined;
}
