import { Pool, errors as undiciErrors, interceptors, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { readCappedText } from './capped-body.js';
import {
  MediaAuthError,
  MediaBusyError,
  MediaOutOfCreditsError,
  MediaOutcomeUnknownError,
  MediaProtocolError,
  MediaRequestInvalidError,
  MediaRequestRejectedError,
  MediaResponseTooLargeError,
  MediaServerError,
  MediaServiceError,
} from './errors.js';
import { retryAfterMs } from './retry-after.js';
import {
  ResultShapeError,
  accountResponseSchema,
  errorBodySchema,
  fetchManyResponseSchema,
  normalizeTaskResult,
  submitResponseSchema,
  syncResponseSchema,
} from './schemas.js';
import { SubmitLimit, type Load, type Settled } from './submit-limit.js';
import { transportError } from './transport.js';
import type { MediaOperations } from './ports.js';
import type {
  Operation,
  ParamsOf,
  PhotoUploadParams,
  SongExtendParams,
  TaskResult,
  UpscaleParams,
  VideoExtendParams,
  WebhookTarget,
} from './types.js';

export interface MediaClientOptions {
  baseUrl: string;
  apiKey: string;
  paths: {
    fetch: string;
    /** Each operation's endpoint (MEDIA_PATH_*), by operation. */
    submit: Readonly<Record<string, string>>;
    /** MEDIA_FETCH_MANY_PATH (default `/fetch-many`). */
    fetchMany?: string;
    /** Default `/account`. */
    account?: string;
  };
  photoFormat: 'base64' | 'url';
  /** Per request (connect, headers, body idle). */
  timeoutMs: number;
  /** A synchronous operation (upscale) holds the response for tens of seconds. */
  upscaleTimeoutMs: number;
  /** Extra attempts for fetch (never for submissions). */
  fetchRetries?: number;
  logger: Logger;
  /** The one adaptive concurrency limit of submissions (default: a SubmitLimit of 8, up to 16). */
  submitLimit?: SubmitLimit;
  /** How long 429s on a submission are waited out. */
  busy?: {
    /** Longest single wait, whatever Retry-After says (default 60 s). */
    maxWaitMs?: number;
    /** Past this much waiting in all, MediaBusyError (default 5 min). */
    maxTotalWaitMs?: number;
    /** Without (or with an unreadable) Retry-After (default 5 s). */
    defaultWaitMs?: number;
    /** Shortest wait, so `Retry-After: 0` cannot make a busy loop (default 500 ms). */
    minWaitMs?: number;
  };
  /** Largest answer read: one task or submission (default 1 MiB), a fetch-many (default 8 MiB). */
  maxBodyBytes?: { single?: number; many?: number };
  /** Time source and sleep of the 429 waits (tests inject their own). */
  clock?: Clock;
  /** How each operation is checked, sent and read (the operations registry's mediaOperations). */
  operations: MediaOperations;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: Clock = {
  now: () => Date.now(),
  // Unref'd: a submission waiting out a 429 must not hold a stopping process open.
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()),
};

export interface Submitted {
  taskId: string;
}

export interface SubmitOptions {
  /**
   * Called each time the submission waits out a 429 (the service did not take it), with the
   * time it will be sent again: the job's message can say it is waiting.
   */
  onWaiting?: (untilEpochMs: number) => void;
}

/** One task to read: its operation (how to read the result) and id. */
export interface TaskRef {
  operation: Operation;
  taskId: string;
}

/** A fetch-many answer per task id: its result, or why that one task could not be read. */
export type FetchManyAnswer = Map<string, TaskResult | MediaServiceError>;

/** `GET {base}/account`, without the email. */
export interface AccountInfo {
  credits: number;
  plan?: string;
  totalImages?: number;
}

/** The provider reads 2 to 20 tasks per fetch-many request. */
export const FETCH_MANY_MAX = 20;

type Body = string | AsyncIterable<Uint8Array | string>;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** Statuses a read is asked again for (with Retry-After when the service sends one). */
const READ_RETRY_STATUSES = [429, 500, 502, 503, 504];

/**
 * The last answer of a read its retries gave up on. undici's retry interceptor ends with a
 * RequestRetryError holding that answer's status and headers (its body was never read):
 * classified below like any answer, with an empty body (`{}` errors are the service's too).
 */
function lastRetriedAnswer(err: unknown): Answer | undefined {
  if (!(err instanceof undiciErrors.RequestRetryError)) return undefined;
  const status = err.statusCode;
  if (!READ_RETRY_STATUSES.includes(status)) return undefined;
  return { status, headers: err.headers as IncomingHttpHeaders, text: '' };
}

type Attempt = { kind: 'taken'; json: unknown } | { kind: 'busy'; retryAfterMs: number | undefined };

const MIB = 1024 * 1024;

/**
 * HTTP client of the media service. Submissions are sent exactly once unless the service
 * answered 429 (it did not take them): once a request may have reached the service,
 * sending it again could charge twice, so an unseen answer is MediaOutcomeUnknownError.
 * Submissions share one adaptive concurrency limit (SubmitLimit). Reads (fetch,
 * fetch-many) are idempotent and retried with backoff by undici's retry interceptor.
 * Every answer is read up to a cap, and no answer body is ever logged.
 */
export class MediaClient {
  private readonly pool: Pool;
  private readonly fetchDispatcher: Dispatcher;
  private readonly basePath: string;
  private readonly limit: SubmitLimit;
  private readonly clock: Clock;
  private readonly unknownStatuses = new Set<string>();
  private fetchManyState: 'unknown' | 'yes' | 'no' = 'unknown';
  /** Set while the first fetch-many request finds out whether the service has one. */
  private fetchManyProbe: Promise<void> | undefined;
  private fetchManyAbsentLogged = false;
  private accountAbsentLogged = false;
  private lastBusyLogAt = -Infinity;

  constructor(private readonly opts: MediaClientOptions) {
    const base = new URL(opts.baseUrl);
    this.basePath = base.pathname.replace(/\/+$/, '');
    this.limit = opts.submitLimit ?? new SubmitLimit();
    this.clock = opts.clock ?? realClock;
    this.pool = new Pool(base.origin, {
      connections: 16,
      keepAliveTimeout: 30_000,
      connect: { timeout: opts.timeoutMs },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    this.fetchDispatcher = this.pool.compose(
      interceptors.retry({
        maxRetries: opts.fetchRetries ?? 2,
        minTimeout: 500,
        maxTimeout: 5_000,
        timeoutFactor: 3,
        methods: ['POST'],
        statusCodes: READ_RETRY_STATUSES,
      }),
    );
  }

  /** The submissions' concurrency limit now (it adapts to 429/503). */
  get submitConcurrency(): number {
    return this.limit.concurrency;
  }

  /** Whether the service has fetch-many: undefined until the first batched read tells. */
  get fetchManySupported(): boolean | undefined {
    return this.fetchManyState === 'unknown' ? undefined : this.fetchManyState === 'yes';
  }

  /**
   * Submits one job of `op` (its operation builds the body). A synchronous operation answers
   * with the finished result; the others with a task id. Sent once; a 429 is waited out per
   * Retry-After and sent again (bounded: MediaBusyError). Throws MediaOutcomeUnknownError
   * when the service may have taken it without us seeing the answer.
   */
  async submit<K extends Operation>(
    op: K,
    params: ParamsOf<K>,
    webhook?: WebhookTarget,
    options: SubmitOptions = {},
  ): Promise<Submitted | TaskResult> {
    const m = this.opts.operations.submission(op);
    const checked = this.opts.operations.checkParams(op, params);
    if (!checked.ok) throw new MediaRequestInvalidError(checked.problems);
    // Built again for each attempt: a streamed body (photos) can be read only once.
    const body = (): Body =>
      m.body(checked.params, { ...(webhook ? { webhook } : {}), photoFormat: this.opts.photoFormat });
    const path = this.opts.paths.submit[op];
    if (path === undefined) throw new Error(`no service path for ${op} (its MEDIA_PATH_* variable)`);
    if (m.mode === 'async') {
      const json = await this.sendSubmission(path, body, this.opts.timeoutMs, options);
      const parsed = submitResponseSchema.safeParse(json);
      if (!parsed.success) throw this.protocolError(op, json);
      return { taskId: parsed.data.task_id };
    }
    const json = await this.sendSubmission(path, body, this.opts.upscaleTimeoutMs, options);
    const parsed = syncResponseSchema.safeParse(json);
    if (!parsed.success) throw this.protocolError(op, json);
    return this.normalize(op, { ...parsed.data, status: parsed.data.status ?? 'finished' });
  }

  upscale(params: UpscaleParams, options?: SubmitOptions): Promise<TaskResult> {
    return this.submit('upscale', params, undefined, options) as Promise<TaskResult>;
  }

  extendSong(params: SongExtendParams, webhook?: WebhookTarget, options?: SubmitOptions): Promise<Submitted> {
    return this.submit('song', params, webhook, options) as Promise<Submitted>;
  }

  extendVideo(
    params: VideoExtendParams,
    webhook?: WebhookTarget,
    options?: SubmitOptions,
  ): Promise<Submitted> {
    return this.submit('video', params, webhook, options) as Promise<Submitted>;
  }

  /** Streams the body (photos → base64 → JSON) so 30 large photos never sit in memory together. */
  uploadTrainingPhotos(
    params: PhotoUploadParams,
    webhook?: WebhookTarget,
    options?: SubmitOptions,
  ): Promise<Submitted> {
    return this.submit('upload', params, webhook, options) as Promise<Submitted>;
  }

  /** Reads a task's current result (`POST {base}{fetch} {"task_id"}`), retried on transient failures. */
  async fetchTask(operation: Operation, taskId: string): Promise<TaskResult> {
    const answer = await this.exchange('POST', this.opts.paths.fetch, JSON.stringify({ task_id: taskId }), {
      dispatcher: this.fetchDispatcher,
      kind: 'read',
      maxBytes: this.opts.maxBodyBytes?.single ?? MIB,
    });
    const json = this.readAnswer(answer, this.opts.paths.fetch, true);
    const outcome = this.normalize(operation, json);
    // Upload results may omit task_id while processing; the caller asked for this one.
    return outcome.taskId ? outcome : { ...outcome, taskId };
  }

  /**
   * Reads up to 20 tasks in one `POST {base}{fetchMany} {"task_ids": [...]}`. Answers per task
   * id: its result, or the error of that one task (unreadable element; refused single
   * fetch). An id missing from the map was not in the service's answer. A whole-request
   * failure (network, auth, 5xx after retries) throws. One id is a plain fetch; a 404/405
   * means the service has no fetch-many: remembered (logged once), and single fetches are
   * used from then on, one after another.
   */
  async fetchMany(refs: readonly TaskRef[]): Promise<FetchManyAnswer> {
    const unique = [...new Map(refs.map((r) => [r.taskId, r])).values()];
    if (unique.length > FETCH_MANY_MAX) {
      throw new RangeError(`fetchMany takes at most ${FETCH_MANY_MAX} tasks, got ${unique.length}`);
    }
    if (unique.length <= 1 || this.fetchManyState === 'no') return this.fetchSingles(unique);
    // Until the service said whether it has fetch-many, one request asks; the others wait for it.
    if (this.fetchManyState === 'unknown') {
      if (this.fetchManyProbe) {
        await this.fetchManyProbe;
        return this.fetchMany(unique);
      }
      let probed!: () => void;
      this.fetchManyProbe = new Promise<void>((resolve) => (probed = resolve));
      try {
        return await this.fetchManyRequest(unique);
      } finally {
        this.fetchManyProbe = undefined;
        probed();
      }
    }
    return this.fetchManyRequest(unique);
  }

  private async fetchManyRequest(unique: readonly TaskRef[]): Promise<FetchManyAnswer> {
    const path = this.opts.paths.fetchMany ?? '/fetch-many';
    const ids = unique.map((r) => r.taskId);
    const answer = await this.exchange('POST', path, JSON.stringify({ task_ids: ids }), {
      dispatcher: this.fetchDispatcher,
      kind: 'read',
      maxBytes: this.opts.maxBodyBytes?.many ?? 8 * MIB,
    });
    if (answer.status === 404 || answer.status === 405) {
      if (!this.fetchManyAbsentLogged) {
        this.fetchManyAbsentLogged = true;
        this.opts.logger.info(
          { path, status: answer.status },
          'the media service has no fetch-many endpoint; reading tasks one per request',
        );
      }
      this.fetchManyState = 'no';
      return this.fetchSingles(unique);
    }
    let json: unknown;
    try {
      json = this.readAnswer(answer, path, false);
    } catch (err) {
      // A batch refused as a whole (one id it does not know?) must not hide the others' results.
      if (err instanceof MediaRequestRejectedError) return this.fetchSingles(unique);
      throw err;
    }
    const parsed = fetchManyResponseSchema.safeParse(json);
    if (!parsed.success) throw this.shapeError('fetch-many', json, 'no tasks array');
    this.fetchManyState = 'yes';
    return this.matchTasks(unique, parsed.data.tasks);
  }

  /**
   * The operator's account (`GET {base}/account`): credits and plan. Undefined when the
   * service has no such endpoint (404/405, logged once at info): that is not an error.
   */
  async account(): Promise<AccountInfo | undefined> {
    const path = this.opts.paths.account ?? '/account';
    const answer = await this.exchange('GET', path, undefined, {
      dispatcher: this.pool,
      kind: 'read',
      maxBytes: 64 * 1024,
    });
    if (answer.status === 404 || answer.status === 405) {
      if (!this.accountAbsentLogged) {
        this.accountAbsentLogged = true;
        this.opts.logger.info(
          { path, status: answer.status },
          'the media service has no account endpoint; the balance is not shown',
        );
      }
      return undefined;
    }
    const json = this.readAnswer(answer, path, false);
    const parsed = accountResponseSchema.safeParse(json);
    if (!parsed.success) throw this.shapeError('account', json, 'no numeric credits');
    const a = parsed.data;
    return {
      credits: a.credits,
      ...(a.plan ? { plan: a.plan.slice(0, 60) } : {}),
      ...(a.total_images !== undefined && a.total_images !== null ? { totalImages: a.total_images } : {}),
    };
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  // ------------------------------------------------------------ submissions

  private async sendSubmission(
    path: string,
    body: () => Body,
    timeoutMs: number,
    options: SubmitOptions,
  ): Promise<unknown> {
    const busy = this.opts.busy ?? {};
    const maxWait = busy.maxWaitMs ?? 60_000;
    const maxTotal = busy.maxTotalWaitMs ?? 5 * 60_000;
    let waited = 0;
    for (;;) {
      const attempt = await this.limit.run(
        () => this.submitAttempt(path, body(), timeoutMs),
        judgeSubmission,
      );
      if (attempt.kind === 'taken') return attempt.json;
      // 429: the service did not take it, so sending it again is safe.
      const wanted = attempt.retryAfterMs ?? busy.defaultWaitMs ?? 5_000;
      const wait = Math.max(busy.minWaitMs ?? 500, Math.min(wanted, maxWait));
      if (waited + wait > maxTotal) {
        this.opts.logger.warn(
          { path, waitedMs: waited },
          'media service still busy (429); submission given up',
        );
        throw new MediaBusyError(waited);
      }
      const now = this.clock.now();
      if (now - this.lastBusyLogAt >= 60_000) {
        this.lastBusyLogAt = now;
        this.opts.logger.warn(
          { path, waitMs: wait },
          'media service busy (429); submissions wait per Retry-After',
        );
      }
      try {
        options.onWaiting?.(now + wait);
      } catch (err) {
        this.opts.logger.warn({ err }, 'onWaiting callback threw');
      }
      await this.clock.sleep(wait);
      waited += wait;
    }
  }

  private async submitAttempt(path: string, body: Body, timeoutMs: number): Promise<Attempt> {
    let answer: Answer;
    try {
      answer = await this.exchange('POST', path, body, {
        dispatcher: this.pool,
        kind: 'submit',
        timeoutMs,
        maxBytes: this.opts.maxBodyBytes?.single ?? MIB,
      });
    } catch (err) {
      // Too large to read: a 2xx or a 5xx that is not the service's small JSON may stand for a taken task.
      if (err instanceof MediaResponseTooLargeError && (isOk(err.status) || (err.status ?? 0) >= 500)) {
        throw new MediaOutcomeUnknownError(`unreadable answer from ${path}`, err.status, { cause: err });
      }
      throw err;
    }
    const { status, headers, text } = answer;
    if (status === 429)
      return { kind: 'busy', retryAfterMs: retryAfterMs(headers['retry-after'], this.clock.now()) };
    const json = parseJson(text);
    if (isOk(status)) {
      if (json === undefined) throw new MediaProtocolError(`non-JSON answer from ${path}`, status);
      const refusal = refusalOf(json, status);
      if (refusal) throw refusal;
      return { kind: 'taken', json };
    }
    if (status === 401 || status === 403)
      throw new MediaAuthError(`authorization refused (${status})`, status);
    if (status === 402) throw new MediaOutOfCreditsError(status);
    // A gateway's answer, or a 5xx that is not the service's own JSON: it may have taken it.
    if (status === 502 || status === 503 || status === 504 || (status >= 500 && !isServiceErrorBody(json))) {
      throw new MediaOutcomeUnknownError(`HTTP ${status} from ${path} (not the service's own error)`, status);
    }
    if (status >= 500) throw new MediaServerError(`service error (${status})`, status);
    if (status >= 400) throw new MediaRequestRejectedError(messagesIn(json), status);
    throw new MediaProtocolError(`unexpected HTTP ${status} from ${path}`, status);
  }

  // ------------------------------------------------------------ reads

  /** A read's answer as JSON, or its typed error. */
  private readAnswer(answer: Answer, path: string, isTaskFetch: boolean): unknown {
    const { status, text } = answer;
    const json = parseJson(text);
    if (isOk(status)) {
      if (json === undefined) throw new MediaProtocolError(`non-JSON answer from ${path}`, status);
      // On fetch, a task result carrying errors (a failed task: task_id/status beside them)
      // is a result, classified by normalizeTaskResult; a bare `{errors:[…]}` is a refusal.
      const refusal = isTaskFetch && isTaskResult(json) ? undefined : refusalOf(json, status);
      if (refusal) throw refusal;
      return json;
    }
    if (status === 401 || status === 403)
      throw new MediaAuthError(`authorization refused (${status})`, status);
    if (status === 402) throw new MediaOutOfCreditsError(status);
    if (status === 429 || status >= 500) throw new MediaServerError(`service error (${status})`, status);
    if (status >= 400) throw new MediaRequestRejectedError(messagesIn(json), status);
    throw new MediaProtocolError(`unexpected HTTP ${status} from ${path}`, status);
  }

  private async fetchSingles(refs: readonly TaskRef[]): Promise<FetchManyAnswer> {
    const out: FetchManyAnswer = new Map();
    for (const ref of refs) {
      try {
        out.set(ref.taskId, await this.fetchTask(ref.operation, ref.taskId));
      } catch (err) {
        // That task's own trouble; anything else (network, auth, 5xx) is every task's.
        if (err instanceof MediaRequestRejectedError || err instanceof MediaProtocolError) {
          out.set(ref.taskId, err);
        } else throw err;
      }
    }
    return out;
  }

  /**
   * Elements are matched by their task_id. One without (the upload's processing result has
   * none) is matched by position, only when the answer is in request order: as many
   * elements as ids, each with an id at its own position.
   */
  private matchTasks(refs: readonly TaskRef[], tasks: readonly unknown[]): FetchManyAnswer {
    const byId = new Map(refs.map((r) => [r.taskId, r]));
    const aligned =
      tasks.length === refs.length &&
      tasks.every((t, i) => {
        const id = taskIdOf(t);
        return id === undefined || id === refs[i]?.taskId;
      });
    const out: FetchManyAnswer = new Map();
    tasks.forEach((task, i) => {
      const id = taskIdOf(task) ?? (aligned ? refs[i]?.taskId : undefined);
      const ref = id === undefined ? undefined : byId.get(id);
      if (!ref || out.has(ref.taskId)) return;
      try {
        const result = this.normalize(ref.operation, task);
        out.set(ref.taskId, result.taskId ? result : { ...result, taskId: ref.taskId });
      } catch (err) {
        if (err instanceof MediaServiceError) out.set(ref.taskId, err);
        else throw err;
      }
    });
    return out;
  }

  // ------------------------------------------------------------ internals

  private normalize(op: Operation, json: unknown): TaskResult {
    try {
      const { result, unknownStatus } = normalizeTaskResult(op, json, this.opts.operations);
      if (
        unknownStatus !== undefined &&
        !this.unknownStatuses.has(unknownStatus) &&
        this.unknownStatuses.size < 100
      ) {
        this.unknownStatuses.add(unknownStatus);
        this.opts.logger.warn(
          { operation: op, status: unknownStatus },
          'unknown task status, treated as processing',
        );
      }
      return result;
    } catch (err) {
      if (err instanceof ResultShapeError) throw this.protocolError(op, json, err.message);
      throw err;
    }
  }

  private protocolError(op: Operation, json: unknown, detail?: string): MediaServiceError {
    if (isEmptyObject(json)) {
      return new MediaServerError('the service answered {} where a result was expected');
    }
    return this.shapeError(op, json, detail);
  }

  /** Logged with the answer's field names only: never its values (URLs, texts, bytes). */
  private shapeError(what: string, json: unknown, detail?: string): MediaProtocolError {
    const short = detail?.slice(0, 300);
    this.opts.logger.warn(
      { what, detail: short, fields: fieldNamesOf(json) },
      'unexpected media service answer',
    );
    return new MediaProtocolError(`unexpected ${what} answer${short ? `: ${short}` : ''}`);
  }

  /** One HTTP exchange: the status, headers and (capped) text, or a typed transport error. */
  private async exchange(
    method: 'GET' | 'POST',
    path: string,
    body: Body | undefined,
    o: { dispatcher: Dispatcher; kind: 'submit' | 'read'; maxBytes: number; timeoutMs?: number },
  ): Promise<Answer> {
    const fullPath = `${this.basePath}${path}`;
    const timeout = o.timeoutMs ?? this.opts.timeoutMs;
    let res: Dispatcher.ResponseData;
    try {
      res = await o.dispatcher.request({
        method,
        path: fullPath,
        headers: {
          authorization: this.opts.apiKey,
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: typeof body === 'string' ? body : Readable.from(body) } : {}),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
    } catch (err) {
      const last = lastRetriedAnswer(err);
      if (last) return last;
      throw transportError(err, fullPath, o.kind);
    }
    let text: string;
    try {
      text = await readCappedText(res.body, o.maxBytes, res.headers['content-length'], res.statusCode);
    } catch (err) {
      if (err instanceof MediaResponseTooLargeError) throw err;
      throw transportError(err, fullPath, o.kind);
    }
    return { status: res.statusCode, headers: res.headers, text };
  }
}

/** What a submission's outcome says of the service's load (SubmitLimit). */
function judgeSubmission(outcome: Settled<Attempt>): Load {
  if (outcome.ok) return outcome.value.kind === 'busy' ? 'overloaded' : 'ok';
  const err = outcome.error;
  if (!(err instanceof MediaServiceError) || err.status === undefined) return 'unknown';
  if (err.status === 503) return 'overloaded';
  return err.status === 502 || err.status === 504 ? 'unknown' : 'ok';
}

const isOk = (status: number | undefined): boolean => status !== undefined && status >= 200 && status < 300;

/** A bare `{errors:[…]}` with at least one entry: the service refused. */
function refusalOf(json: unknown, status: number): MediaRequestRejectedError | undefined {
  const errs = errorBodySchema.safeParse(json);
  if (!errs.success || !errs.data.errors || errs.data.errors.length === 0) return undefined;
  return new MediaRequestRejectedError(messagesIn(json), status);
}

/** The service's messages, bounded (they end up in logs and Discord messages). */
function messagesIn(json: unknown): string[] {
  const errs = errorBodySchema.safeParse(json);
  if (!errs.success || !errs.data.errors) return [];
  return errs.data.errors
    .map((e) => e.msg)
    .filter((m): m is string => typeof m === 'string' && m.trim() !== '')
    .slice(0, 20)
    .map((m) => (m.length > 500 ? `${m.slice(0, 500)}…` : m));
}

/** The service's own error body: `{}` or `{errors:[…]}` (a proxy's page is neither). */
function isServiceErrorBody(json: unknown): boolean {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return false;
  return Object.keys(json).length === 0 || Array.isArray((json as { errors?: unknown }).errors);
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isTaskResult(v: unknown): boolean {
  return typeof v === 'object' && v !== null && ('task_id' in v || 'status' in v);
}

function taskIdOf(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const id = (v as { task_id?: unknown }).task_id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

function fieldNamesOf(v: unknown): string {
  if (Array.isArray(v)) return `array(${v.length})`;
  if (typeof v !== 'object' || v === null) return typeof v;
  const keys = Object.keys(v);
  const shown = keys.slice(0, 20).map((k) => k.slice(0, 40));
  return `${shown.join(',')}${keys.length > shown.length ? ',…' : ''}`;
}
