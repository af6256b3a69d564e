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
  | 'MEDIA_BUSY'
  | 'MEDIA_RESPONSE_TOO_LARGE'
  | 'MEDIA_TASK_NOT_IN_ANSWER';

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

/**
 * The service's own server error (500 with its JSON body `{}`), an empty `{}` answer where a
 * result was expected, or (on a read) a 429/5xx that outlasted the retries. On a submission
 * the service answered, so nothing was taken.
 */
export class MediaServerError extends MediaServiceError {
  readonly code = 'MEDIA_SERVER';
  readonly retryable = true;
  get userMessage(): string {
    return 'The media service had an internal error. Please try again in a few minutes.';
  }
}

/**
 * The service could not be reached. On a submission the request was certainly not sent
 * (connection refused, connect timeout, DNS failure); on a read, any transport failure.
 */
export class MediaUnavailableError extends MediaServiceError {
  readonly code = 'MEDIA_UNAVAILABLE';
  readonly retryable = true;
  get userMessage(): string {
    return 'The media service could not be reached. Nothing was charged; please try again in a few minutes.';
  }
}

/**
 * A submission that may have reached the service without us seeing its answer: a timeout
 * after the request was sent, a connection cut after sending, a 502/503/504, or a 5xx that
 * is not the service's own JSON (a proxy's page). The task may exist and be paid for, so it
 * must never be sent again: the job waits for a webhook (design.md, "Jobs and webhooks").
 */
export class MediaOutcomeUnknownError extends MediaServiceError {
  readonly code = 'MEDIA_OUTCOME_UNKNOWN';
  readonly retryable = false;
  get userMessage(): string {
    return 'The media service did not confirm the request. It may still be running: this message updates if the service reports it.';
  }
}

/** 402: the operator's service account has run out of credits (no fault of the member's). */
export class MediaOutOfCreditsError extends MediaServiceError {
  readonly code = 'MEDIA_OUT_OF_CREDITS';
  readonly retryable = true;
  constructor(status = 402) {
    super('the media service account is out of credits (402)', status);
  }
  get userMessage(): string {
    return 'The media service is unavailable for now. Nothing was charged; please try again later.';
  }
}

/** 429s outlasted the client's bound on waiting: the submission was never taken. */
export class MediaBusyError extends MediaServiceError {
  readonly code = 'MEDIA_BUSY';
  readonly retryable = true;
  constructor(
    readonly waitedMs: number,
    status = 429,
  ) {
    super(`the media service stayed busy (429) for ${Math.round(waitedMs / 1000)} s`, status);
  }
  get userMessage(): string {
    return 'The media service is busy. Nothing was charged; please try again later.';
  }
}

/** An answer larger than the client reads (its rest discarded, none of it logged). */
export class MediaResponseTooLargeError extends MediaServiceError {
  readonly code = 'MEDIA_RESPONSE_TOO_LARGE';
  readonly retryable = true;
  constructor(
    readonly limitBytes: number,
    status?: number,
  ) {
    super(`media service answer over ${limitBytes} bytes${status ? ` (HTTP ${status})` : ''}`, status);
  }
  get userMessage(): string {
    return 'The media service sent an answer the bot could not read. The team has been notified in the logs.';
  }
}

/** A batched read (fetch-many) whose answer did not carry this task. */
export class MediaTaskNotInAnswerError extends MediaServiceError {
  readonly code = 'MEDIA_TASK_NOT_IN_ANSWER';
  readonly retryable = true;
  constructor(readonly taskId: string) {
    super(`the fetch-many answer did not include task ${taskId}`);
  }
  get userMessage(): string {
    return 'The media service did not report this task. Please try again in a minute.';
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
