/**
 * Typed media-service failures. `userMessage` is safe to show in Discord;
 * `retryable` says whether asking again later can succeed (never used to
 * resubmit a job: that could spend the user's credits twice).
 */
export type MediaErrorCode =
  | 'MEDIA_REQUEST_INVALID'
  | 'MEDIA_REQUEST_REJECTED'
  | 'MEDIA_AUTH'
  | 'MEDIA_SERVER'
  | 'MEDIA_UNAVAILABLE'
  | 'MEDIA_PROTOCOL'
  | 'MEDIA_OUTCOME_UNKNOWN'
  | 'MEDIA_OUT_OF_CREDITS'
  | 'MEDIA_BUSY';

export abstract class MediaServiceError extends Error {
  abstract readonly code: MediaErrorCode;
  abstract readonly retryable: boolean;
  /** HTTP status, when the service answered. */
  readonly status: number | undefined;
  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
  }
  /** Text meant for the Discord user. */
  abstract get userMessage(): string;
}

/** Our own validation refused the request before it was sent (no credits spent). */
export class MediaRequestInvalidError extends MediaServiceError {
  readonly code = 'MEDIA_REQUEST_INVALID';
  readonly retryable = false;
  constructor(readonly problems: string[]) {
    super(`invalid request: ${problems.join('; ')}`);
  }
  get userMessage(): string {
    return this.problems.join('\n');
  }
}

/** The service answered 4xx with `{errors:[{msg}]}` (every msg kept). */
export class MediaRequestRejectedError extends MediaServiceError {
  readonly code = 'MEDIA_REQUEST_REJECTED';
  readonly retryable = false;
  constructor(
    readonly messages: string[],
    status: number,
  ) {
    super(`request rejected (${status}): ${messages.join('; ') || 'no reason given'}`, status);
  }
  get userMessage(): string {
    return this.messages.length > 0
      ? `The media service rejected the request: ${this.messages.join('; ')}`
      : 'The media service rejected the request without giving a reason.';
  }
}

/** 401/403 (the service sends `{}`): the operator's API key is wrong or lacks access. */
export class MediaAuthError extends MediaServiceError {
  readonly code = 'MEDIA_AUTH';
  readonly retryable = false;
  get userMessage(): string {
    return 'The media service rejected the bot’s API key. An administrator needs to fix the key; nothing was charged.';
  }
}

/** 5xx, 429 or an empty `{}` answer where a result was expected. */
export class MediaServerError extends MediaServiceError {
  readonly code = 'MEDIA_SERVER';
  readonly retryable = true;
  get userMessage(): string {
    return 'The media service had an internal error. Please try again in a few minutes.';
  }
}

/** Network failure or timeout: the service may or may not have received the request. */
export class MediaUnavailableError extends MediaServiceError {
  readonly code = 'MEDIA_UNAVAILABLE';
  readonly retryable = true;
  get userMessage(): string {
    return 'The media service did not answer in time. Check /tasks before retrying: the request may have reached it.';
  }
}

/** The service answered something that is not the documented shape. */
export class MediaProtocolError extends MediaServiceError {
  readonly code = 'MEDIA_PROTOCOL';
  readonly retryable = true;
  get userMessage(): string {
    return 'The media service sent an answer the bot could not understand. The team has been notified in the logs.';
  }
}

/**
 * The request may have reached the service and its answer was not seen (a timeout
 * after sending, a reset, a proxy's 502/503/504 page): the task may exist. A
 * submission in this state is never sent again (each one is a paid task).
 */
export class MediaOutcomeUnknownError extends MediaServiceError {
  readonly code = 'MEDIA_OUTCOME_UNKNOWN';
  readonly retryable = false;
  get userMessage(): string {
    return 'The media service did not confirm this job. It may have received it: the bot waits for it to report.';
  }
}

/** 402: the operator's account with the service is out of credits. Not the member's fault. */
export class MediaOutOfCreditsError extends MediaServiceError {
  readonly code = 'MEDIA_OUT_OF_CREDITS';
  readonly retryable = false;
  get userMessage(): string {
    return 'The media service is unavailable for now. Your credits were returned; please try again later.';
  }
}

/** 429 waited out as long as the bot allows: the service stayed busy, nothing was taken. */
export class MediaBusyError extends MediaServiceError {
  readonly code = 'MEDIA_BUSY';
  readonly retryable = true;
  get userMessage(): string {
    return 'The media service is busy. Nothing was charged; please try again in a few minutes.';
  }
}
