import { Pool, interceptors, errors as undiciErrors, type Dispatcher } from 'undici';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import {
  MediaAuthError,
  MediaProtocolError,
  MediaRequestInvalidError,
  MediaRequestRejectedError,
  MediaServerError,
  MediaServiceError,
  MediaUnavailableError,
} from './errors.js';
import { checkParams, operationOf } from '../operations/index.js';
import type { ParamsOf } from '../operations/types.js';
import {
  ResultShapeError,
  errorBodySchema,
  normalizeTaskResult,
  submitResponseSchema,
  syncResponseSchema,
} from './schemas.js';
import type {
  Operation,
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
  paths: { fetch: string; upscale: string; songExtend: string; videoExtend: string; photoUpload: string };
  photoFormat: 'base64' | 'url';
  /** Per request (connect, headers, body idle). */
  timeoutMs: number;
  /** A synchronous operation (upscale) holds the response for tens of seconds. */
  upscaleTimeoutMs: number;
  /** Extra attempts for fetch (never for submissions). */
  fetchRetries?: number;
  logger: Logger;
}

export interface Submitted {
  taskId: string;
}

type Body = string | AsyncIterable<Uint8Array | string>;

/**
 * HTTP client of the media service. Submissions are sent exactly once: once a
 * request may have reached the service, retrying it could charge the user twice.
 * Reading a result (fetch) is idempotent and retried with backoff by undici's
 * retry interceptor.
 */
export class MediaClient {
  private readonly pool: Pool;
  private readonly fetchDispatcher: Dispatcher;
  private readonly basePath: string;
  private readonly unknownStatuses = new Set<string>();

  constructor(private readonly opts: MediaClientOptions) {
    const base = new URL(opts.baseUrl);
    this.basePath = base.pathname.replace(/\/+$/, '');
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
        statusCodes: [429, 500, 502, 503, 504],
        // Return the last answer instead of an opaque retry error, so it is classified below.
        throwOnError: false,
      }),
    );
  }

  /**
   * Submits one job of `op` (its module builds the body), once. A synchronous
   * operation answers with the finished result; the others with a task id.
   */
  async submit<K extends Operation>(
    op: K,
    params: ParamsOf<K>,
    webhook?: WebhookTarget,
    _hooks?: { waiting?(untilMs: number): void },
  ): Promise<Submitted | TaskResult> {
    const m = operationOf(op);
    const checked = checkParams(op, params);
    if (!checked.ok) throw new MediaRequestInvalidError(checked.problems);
    const body = m.body(checked.params, {
      ...(webhook ? { webhook } : {}),
      photoFormat: this.opts.photoFormat,
    });
    const path = this.opts.paths[m.path];
    if (m.mode === 'async') {
      const json = await this.post(path, body, {});
      const parsed = submitResponseSchema.safeParse(json);
      if (!parsed.success) throw this.protocolError(op, json);
      return { taskId: parsed.data.task_id };
    }
    const json = await this.post(path, body, { timeoutMs: this.opts.upscaleTimeoutMs });
    const parsed = syncResponseSchema.safeParse(json);
    if (!parsed.success) throw this.protocolError(op, json);
    return this.normalize(op, { ...parsed.data, status: parsed.data.status ?? 'finished' });
  }

  upscale(params: UpscaleParams): Promise<TaskResult> {
    return this.submit('upscale', params) as Promise<TaskResult>;
  }

  extendSong(params: SongExtendParams, webhook?: WebhookTarget): Promise<Submitted> {
    return this.submit('song', params, webhook) as Promise<Submitted>;
  }

  extendVideo(params: VideoExtendParams, webhook?: WebhookTarget): Promise<Submitted> {
    return this.submit('video', params, webhook) as Promise<Submitted>;
  }

  /** Streams the body (photos → base64 → JSON) so 30 large photos never sit in memory together. */
  uploadTrainingPhotos(params: PhotoUploadParams, webhook?: WebhookTarget): Promise<Submitted> {
    return this.submit('upload', params, webhook) as Promise<Submitted>;
  }

  /** Reads a task's current result (`POST {base}{fetch} {"task_id"}`), retried on transient failures. */
  async fetchTask(operation: Operation, taskId: string): Promise<TaskResult> {
    const json = await this.post(this.opts.paths.fetch, JSON.stringify({ task_id: taskId }), {
      dispatcher: this.fetchDispatcher,
      isFetch: true,
    });
    const outcome = this.normalize(operation, json);
    // Upload results may omit task_id while processing; the caller asked for this one.
    return outcome.taskId ? outcome : { ...outcome, taskId };
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  // ------------------------------------------------------------ internals

  private normalize(op: Operation, json: unknown): TaskResult {
    try {
      const { result, unknownStatus } = normalizeTaskResult(op, json);
      if (unknownStatus !== undefined && !this.unknownStatuses.has(unknownStatus)) {
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
    this.opts.logger.warn({ operation: op, detail, body: truncate(json) }, 'unexpected media service answer');
    return new MediaProtocolError(`unexpected ${op} answer${detail ? `: ${detail}` : ''}`);
  }

  private async post(
    path: string,
    body: Body,
    o: { timeoutMs?: number; dispatcher?: Dispatcher; isFetch?: boolean },
  ): Promise<unknown> {
    const fullPath = `${this.basePath}${path}`;
    const timeout = o.timeoutMs ?? this.opts.timeoutMs;
    const dispatcher: Dispatcher = o.dispatcher ?? this.pool;
    let res: Dispatcher.ResponseData;
    try {
      res = await dispatcher.request({
        method: 'POST',
        path: fullPath,
        headers: {
          authorization: this.opts.apiKey,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        body: typeof body === 'string' ? body : Readable.from(body),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
    } catch (err) {
      throw toTransportError(err, fullPath);
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw toTransportError(err, fullPath);
    }
    const json = parseJson(text);
    const status = res.statusCode;
    if (status >= 200 && status < 300) {
      if (json === undefined) throw new MediaProtocolError(`non-JSON answer from ${fullPath}`, status);
      // A bare `{errors:[…]}` is a refusal. On fetch, a task result carrying errors (a failed
      // task: task_id/status beside them) is a result, classified by normalizeTaskResult.
      const errs = errorBodySchema.safeParse(json);
      const failedTask = o.isFetch === true && isTaskResult(json);
      if (errs.success && errs.data.errors && errs.data.errors.length > 0 && !failedTask) {
        throw new MediaRequestRejectedError(messagesOf(errs.data.errors), status);
      }
      return json;
    }
    if (status === 401 || status === 403)
      throw new MediaAuthError(`authorization refused (${status})`, status);
    if (status === 429 || status >= 500) throw new MediaServerError(`service error (${status})`, status);
    if (status >= 400) {
      const errs = errorBodySchema.safeParse(json);
      const msgs = errs.success && errs.data.errors ? messagesOf(errs.data.errors) : [];
      throw new MediaRequestRejectedError(msgs, status);
    }
    throw new MediaProtocolError(`unexpected HTTP ${status} from ${fullPath}`, status);
  }
}

function messagesOf(errors: { msg?: string | undefined }[]): string[] {
  return errors.map((e) => e.msg).filter((m): m is string => typeof m === 'string' && m.trim() !== '');
}

function toTransportError(err: unknown, path: string): MediaServiceError {
  if (err instanceof MediaServiceError) return err;
  // undici may wrap an error thrown by the streamed body.
  if (err instanceof Error && err.cause instanceof MediaServiceError) return err.cause;
  const timedOut =
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError;
  const what = timedOut ? 'timed out' : 'unreachable';
  return new MediaUnavailableError(`media service ${what} on ${path}`, undefined, { cause: err });
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

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

function truncate(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 500 ? `${s.slice(0, 500)}…` : s;
}
