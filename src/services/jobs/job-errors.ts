import {
  MediaAuthError,
  MediaBusyError,
  MediaOutOfCreditsError,
  MediaRequestInvalidError,
  MediaRequestRejectedError,
  MediaServiceError,
  MediaUnavailableError,
} from '../media/errors.js';
import type { TaskResult } from '../media/types.js';
import type { JobError } from '../store/types.js';

/** Stable job error codes (rendered with advice in discord/render/job-render.ts). */
export type JobErrorCode =
  | 'invalid_request'
  | 'service_rejected'
  | 'service_auth'
  | 'service_error'
  | 'service_unavailable'
  | 'service_failed'
  | 'service_out_of_credits'
  | 'service_busy'
  | 'timed_out'
  | 'not_confirmed'
  | 'internal';

export function jobError(code: JobErrorCode, message: string, details?: string[]): JobError {
  return details && details.length > 0 ? { code, message, details } : { code, message };
}

/** What a failed submission means for the user. */
export function jobErrorFromMedia(err: unknown): JobError {
  if (err instanceof MediaRequestInvalidError)
    return jobError('invalid_request', err.userMessage, err.problems);
  if (err instanceof MediaRequestRejectedError)
    return jobError('service_rejected', err.messages.join('\n') || err.userMessage, err.messages);
  if (err instanceof MediaAuthError) return jobError('service_auth', err.userMessage);
  if (err instanceof MediaOutOfCreditsError) return jobError('service_out_of_credits', err.userMessage);
  if (err instanceof MediaBusyError) return jobError('service_busy', err.userMessage);
  if (err instanceof MediaUnavailableError) return jobError('service_unavailable', err.userMessage);
  if (err instanceof MediaServiceError) return jobError('service_error', err.userMessage);
  return jobError('internal', 'Something went wrong on our side. The error was logged.');
}

/** The failure a service result reports (`errors[].msg`, or a generic line when it says nothing). */
export function jobErrorFromResult(result: TaskResult): JobError {
  const msgs = result.errors ?? [];
  return jobError(
    'service_failed',
    msgs.length > 0 ? msgs.join('\n') : 'The media service reported that the task failed, without a reason.',
    msgs,
  );
}

/**
 * Error codes of a job the service never took (refused at submission, or never
 * sent): its credits come back. A job whose submission was not confirmed and
 * that no sign of the service ever confirmed is refunded too, once it times out.
 */
export const NOT_STARTED_CODES: ReadonlySet<string> = new Set<JobErrorCode>([
  'invalid_request',
  'service_rejected',
  'service_auth',
  'service_unavailable',
  'service_error',
  'service_out_of_credits',
  'service_busy',
  'not_confirmed',
  'internal',
]);
