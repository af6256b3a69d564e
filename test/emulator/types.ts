/** Public types of the media-service emulator (see ./server.ts for the entry point). */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A result body exactly as the service would put it on the wire. */
export type ResultBody = { [key: string]: JsonValue };

export type Operation = 'upscale' | 'song' | 'video' | 'upload';

export const OPERATION_PATHS = [
  '/image-upscale',
  '/song-extend',
  '/video-extend',
  '/ai-photo-upload',
] as const;
export const API_PATHS = [...OPERATION_PATHS, '/fetch', '/fetch-many', '/account'] as const;
export type ApiPath = (typeof API_PATHS)[number];

export type WebhookDrop = 'none' | 'all' | 'progress' | 'final';

/**
 * One step of a task's life: a number is `processing` at that percentage; a string is that
 * status as the provider reports it (`pending`, `staged`, `starting`, `retry`, …).
 */
export type Step = number | string;

/** How an asynchronous task plays out (semantics in ./scenario.ts). */
export interface Scenario {
  /** Steps reported one per `stepMs`, before the final state. */
  steps: Step[];
  stepMs: number;
  /** Send every webhook twice in a row. */
  duplicateWebhooks: boolean;
  /** Hold all webhooks until the task ends, then send them in a random order (never chronological). */
  shuffleWebhooks: boolean;
  /** Which webhooks are silently not sent (still logged, with `dropped: true`). */
  dropWebhooks: WebhookDrop;
  outcome: 'finished' | 'failed';
  failMessage: string;
  /** Stay processing after the last step until `finish(id)` / `fail(id)`. */
  hold: boolean;
  /** Status reported (and webhooked at once) before the first step, e.g. `pending`, `staged`. */
  initialStatus?: string | undefined;
  /** `task_type` of video results: the seed's `video-ext`, or the provider's `luma-ext`. */
  videoTaskType: string;
}
/** Fields left out (or undefined) keep their current value, except `initialStatus`: undefined clears it. */
export type ScenarioPatch = { [K in keyof Scenario]?: Scenario[K] | undefined };

/** Normalised lifecycle: `queued` only while a `pending`/`staged`/`queued` status is shown. */
export type TaskState = 'queued' | 'processing' | 'finished' | 'failed';

export interface StateChange {
  at: number;
  kind: 'progress' | 'final';
  body: ResultBody;
}

export type UploadedImage =
  | {
      index: number;
      kind: 'base64';
      format: ImageFormat;
      byteLength: number;
      sha256: string;
      /** Only with `keepUploadBytes: true`. */
      bytes?: Buffer;
    }
  | { index: number; kind: 'url'; url: string };

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

export interface TaskRecord {
  readonly id: string;
  readonly operation: Operation;
  readonly createdAt: number;
  /** One of the start-up parent tasks. */
  readonly fixture: boolean;
  /** The request body as received (upload: `images` replaced by their count; see `uploads`). */
  readonly params: Readonly<Record<string, JsonValue>>;
  readonly webhookUrl?: string;
  readonly webhookSecret?: string;
  readonly scenario: Readonly<Scenario>;
  /** Song tasks: the two song ids of the result (known from creation so children can be validated). */
  readonly songIds?: readonly [string, string];
  readonly uploads?: readonly UploadedImage[];
  state: TaskState;
  /** What `/fetch` returns now (the body of the latest state). */
  body: ResultBody;
  /** Every state the task went through, oldest first (the creation state included). */
  readonly history: StateChange[];
}

export interface RequestLogEntry {
  method: string;
  path: string;
  statusCode: number;
  /** Request headers; the Authorization value is replaced by `[redacted]`. */
  headers: Record<string, string | string[] | undefined>;
  authorized: boolean;
  bodyBytes: number;
  receivedAt: number;
  durationMs: number;
  injectedStatus?: FailureStatus;
  delayedMs?: number;
  /** Answered 429 by `rateLimitNext`. */
  rateLimited?: boolean;
  /** The task was created but its answer was lost this way (`loseNextAnswer`); `reset` logs status 0. */
  lostAnswer?: LostAnswerMode;
}

export interface WebhookDelivery {
  taskId: string;
  url: string;
  kind: 'progress' | 'final';
  body: ResultBody;
  /** 1, or 2 for the second copy of a duplicated webhook. */
  copy: 1 | 2;
  /** Deliberately not sent by the scenario's `dropWebhooks`. */
  dropped: boolean;
  /** True when the receiver answered 2xx. */
  ok: boolean;
  statusCode?: number;
  error?: string;
  at: number;
  durationMs: number;
}

/**
 * Statuses `failNext` can answer (nothing is created). 502 and 504 come with a proxy's HTML
 * page, 402 with the service's "insufficient credits", the others with its JSON.
 */
export const FAILURE_STATUSES = [400, 401, 402, 403, 404, 409, 422, 500, 502, 503, 504] as const;
export type FailureStatus = (typeof FAILURE_STATUSES)[number];

/**
 * How `loseNextAnswer` loses the answer of a submission the emulator did carry out (the task
 * exists, its webhooks follow): `bad-gateway` a proxy's 502 HTML page; `reset` the
 * connection destroyed without an answer; `late` the answer sent after `delayMs` (past
 * the client's timeout).
 */
export type LostAnswerMode = 'bad-gateway' | 'reset' | 'late';

/** Fields left out (or undefined) keep their value. */
export type Patch<T> = { [K in keyof T]?: T[K] | undefined };

/** Endpoints beyond the seed's that can be switched off (they then answer 404). */
export interface Features {
  /** `POST /fetch-many`. */
  fetchMany: boolean;
  /** `GET /account`. */
  account: boolean;
}

/** The account `GET /account` shows; submissions spend `credits` (402 when short). */
export interface AccountState {
  email: string;
  credits: number;
  plan: string;
  /** Images generated so far (upscales add theirs). */
  totalImages: number;
}

export interface RateLimitOptions {
  /** Seconds in `Retry-After` (default 1); null sends no Retry-After at all. */
  retryAfter?: number | null;
  /** `seconds` (default) or `date` (an HTTP-date that many seconds ahead). */
  format?: 'seconds' | 'date';
  /** Default: any operation path. */
  path?: ApiPath;
}

export type EmulatorEvent =
  | { type: 'request'; entry: RequestLogEntry }
  | { type: 'task'; task: TaskRecord; change: StateChange }
  | { type: 'webhook'; delivery: WebhookDelivery };

export interface EmulatorOptions {
  /** Default 0 (ephemeral). */
  port?: number;
  /** Default 127.0.0.1; the control API is unauthenticated, so keep it on loopback. */
  host?: string;
  /** Default `dev-key`. */
  apiKey?: string;
  /** Default scenario for asynchronous tasks (merged over the built-in defaults). */
  scenario?: ScenarioPatch;
  /** Delay before the synchronous upscale answers. Default 0. */
  upscaleDelayMs?: number;
  /** Maximum request body in bytes. Default 512 MiB (uploads carry 30 base64 images). */
  bodyLimit?: number;
  /** Keep the decoded bytes of base64 upload images in `uploads()`. Default false. */
  keepUploadBytes?: boolean;
  /** Give up on a webhook receiver after this long. Default 5000 ms. */
  webhookTimeoutMs?: number;
  /** Source of randomness (seeds, shuffles); inject for deterministic tests. Default Math.random. */
  random?: () => number;
  /** Fastify/pino request logging. Default false. */
  logger?: boolean;
  /** The starting account (default: 1,000,000 credits on plan `pro`). */
  account?: Partial<AccountState>;
  /** Credits a submission of each operation spends (default upscale 1, song 2, video 6, upload 2). */
  creditCosts?: Partial<Record<Operation, number>>;
  /** Switched-off endpoints answer 404 (default: all on). */
  features?: Partial<Features>;
  /** Result files answer 404 once their task ended longer ago than this (default 24 h). */
  resultTtlMs?: number;
}

export interface Emulator {
  readonly url: string;
  readonly apiKey: string;
  readonly port: number;
  readonly tasks: ReadonlyMap<string, Readonly<TaskRecord>>;
  readonly requests: readonly RequestLogEntry[];
  readonly webhookDeliveries: readonly WebhookDelivery[];
  /** The current default scenario. */
  readonly scenario: Readonly<Scenario>;
  /** Stops timers, in-flight webhooks and the server. Idempotent. */
  close(): Promise<void>;
  /** Changes the default scenario for tasks created from now on; returns the result. */
  setScenario(patch: ScenarioPatch): Readonly<Scenario>;
  /** Queues a scenario (default + patch) for the next created asynchronous task only. */
  nextScenario(patch: ScenarioPatch): void;
  /** The next `count` requests to `path` (default: any operation path, not /fetch) answer `status`. */
  failNext(count: number, options: { status: FailureStatus; path?: ApiPath }): void;
  /** The next `count` requests to `path` (default: any operation path) answer 429 (nothing created). */
  rateLimitNext(count: number, options?: RateLimitOptions): void;
  /**
   * The next `count` submissions to `path` (default: any operation path) are carried out
   * (task created, webhooks sent) but their answer is lost as `mode` says.
   */
  loseNextAnswer(count: number, options: { mode: LostAnswerMode; delayMs?: number; path?: ApiPath }): void;
  /** Which extra endpoints exist now. */
  readonly features: Readonly<Features>;
  setFeatures(patch: Patch<Features>): Readonly<Features>;
  /** The account now. */
  readonly account: Readonly<AccountState>;
  /** Changes the account; `addCredits` tops it up. */
  setAccount(patch: Patch<AccountState> & { addCredits?: number | undefined }): Readonly<AccountState>;
  /** Result files of `taskId` (default: of every task but the fixtures) answer 404 from now on. */
  expireResults(taskId?: string): void;
  /** Result files answer 404 once their task ended longer ago than `ms`. */
  setResultTtl(ms: number): void;
  /** The next request to `path` (default: any operation path) is handled after `ms`. */
  delayNext(ms: number, path?: ApiPath): void;
  /** Ends a running (typically held) task as finished now. Throws if unknown or already ended. */
  finish(taskId: string): Readonly<TaskRecord>;
  /** Ends a running task as failed now, with `message` (default: the task scenario's failMessage). */
  fail(taskId: string, message?: string): Readonly<TaskRecord>;
  /** The images recorded for an upload task (throws for other/unknown tasks). */
  uploads(taskId: string): readonly UploadedImage[];
  /** Forgets tasks (fixtures re-created), logs, rules, queued scenarios; cancels timers and webhooks. */
  reset(): void;
  /** Resolves once `predicate()` is true (re-checked on every event and every 20 ms). */
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  /** Subscribes to events; returns the unsubscribe function. */
  onEvent(listener: (event: EmulatorEvent) => void): () => void;
  /**
   * Result files whose name contains `match` are served differently from now on: `status`
   * answers that HTTP error instead; `sizeBytes` pads the real file with zeros to that size
   * (a large result); `body` serves other bytes under the file's name, with `contentType`
   * (a misbehaving or compromised file host). `undefined` removes the rule.
   */
  setFileFault(match: string, fault: FileFault | undefined): void;
}

export type FileFault = { status: number } | { sizeBytes: number } | { body: Buffer; contentType: string };
