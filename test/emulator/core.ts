/**
 * The emulator's state and task timelines, independent of HTTP: routes call
 * into it, and the programmatic/HTTP control APIs are thin wrappers over it.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Faults } from './faults.js';
import {
  failedResult,
  finishedResult,
  progressResult,
  statusResult,
  upscaleResult,
  type BodyContext,
} from './results.js';
import { applyPatch, shuffled } from './scenario.js';
import { Timers } from './timers.js';
import type {
  AccountState,
  EmulatorEvent,
  Features,
  JsonValue,
  Operation,
  RequestLogEntry,
  ResultBody,
  Scenario,
  ScenarioPatch,
  StateChange,
  TaskRecord,
  TaskState,
  UploadedImage,
  WebhookDelivery,
} from './types.js';
import type { WebhookTarget } from './validation.js';
import { WebhookSender } from './webhooks.js';

export const FIXTURE_SONG_TASK_ID = 'song-parent-0001';
export const FIXTURE_SONG_IDS = ['song-a-0001', 'song-b-0001'] as const;
export const FIXTURE_VIDEO_TASK_ID = 'video-parent-0001';

/** How long prepared training images stay valid (the spec gives no figure). */
const UPLOAD_EXPIRY_MS = 30 * 24 * 60 * 60 * 1000;

export const DEFAULT_ACCOUNT: Readonly<AccountState> = Object.freeze({
  email: 'operator@example.test',
  credits: 1_000_000,
  plan: 'pro',
  totalImages: 0,
});
export const DEFAULT_CREDIT_COSTS: Readonly<Record<Operation, number>> = Object.freeze({
  upscale: 1,
  song: 2,
  video: 6,
  upload: 2,
});
/** The provider purges result assets after about a day. */
export const DEFAULT_RESULT_TTL_MS = 24 * 60 * 60 * 1000;

/** Provider statuses that mean "waiting for a worker". */
const QUEUED_STATUSES = new Set(['pending', 'staged', 'queued']);

export interface CoreOptions {
  scenario: Scenario;
  webhookTimeoutMs: number;
  random: () => number;
  account: AccountState;
  creditCosts: Record<Operation, number>;
  features: Features;
  resultTtlMs: number;
}

type AsyncOperation = Exclude<Operation, 'upscale'>;

export class EmulatorCore {
  readonly tasks = new Map<string, TaskRecord>();
  readonly requests: RequestLogEntry[] = [];
  readonly deliveries: WebhookDelivery[] = [];
  readonly faults = new Faults();
  readonly timers = new Timers();
  baseUrl = '';

  private readonly events = new EventEmitter();
  private readonly webhooks: WebhookSender;
  /** Per task: the tail of its webhook queue, so one task's webhooks never overtake each other. */
  private readonly chains = new Map<string, Promise<void>>();
  /** Per task: webhooks held back until the end by `shuffleWebhooks`. */
  private readonly shuffleBuffers = new Map<string, StateChange[]>();
  private defaultScenario: Scenario;
  private queuedScenarios: Scenario[] = [];
  account: AccountState;
  features: Features;
  resultTtlMs: number;
  /** Tasks whose result files are gone (`expireResults(id)`). */
  private readonly expiredTasks = new Set<string>();
  /** `expireResults()`: every task (fixtures aside) that ended by then. */
  private expiredUpTo = -Infinity;
  /** Bumped by reset()/close(): queued work from before must not run. */
  private generation = 0;

  constructor(private readonly options: CoreOptions) {
    this.defaultScenario = options.scenario;
    this.account = { ...options.account };
    this.features = { ...options.features };
    this.resultTtlMs = options.resultTtlMs;
    this.webhooks = new WebhookSender(options.webhookTimeoutMs, (delivery) => {
      this.deliveries.push(delivery);
      this.emit({ type: 'webhook', delivery });
    });
  }

  start(baseUrl: string): void {
    this.baseUrl = baseUrl;
    this.seedFixtures();
  }

  /** Changes on every reset()/close(): work started before compares it to know it is stale. */
  get epoch(): number {
    return this.generation;
  }

  get scenario(): Readonly<Scenario> {
    return this.defaultScenario;
  }

  setScenario(patch: ScenarioPatch): Readonly<Scenario> {
    this.defaultScenario = applyPatch(this.defaultScenario, patch);
    return this.defaultScenario;
  }

  nextScenario(patch: ScenarioPatch): void {
    this.queuedScenarios.push(applyPatch(this.defaultScenario, patch));
  }

  onEvent(listener: (event: EmulatorEvent) => void): () => void {
    const safe = (event: EmulatorEvent): void => {
      try {
        listener(event);
      } catch (error) {
        // A test's listener must not crash a timer callback (it would be an uncaught exception).
        console.error('emulator event listener threw', error);
      }
    };
    this.events.on('event', safe);
    return () => this.events.off('event', safe);
  }

  logRequest(entry: RequestLogEntry): void {
    this.requests.push(entry);
    this.emit({ type: 'request', entry });
  }

  createUpscale(params: Record<string, JsonValue>, seed: number | undefined): ResultBody {
    const id = randomUUID();
    const body = upscaleResult(this.context(id), seed ?? Math.floor(this.options.random() * 2 ** 31));
    this.addFinished({ id, operation: 'upscale', params, body, fixture: false });
    const images = body['image_urls'];
    this.account.totalImages += Array.isArray(images) ? images.length : 0;
    return body;
  }

  /** Spends the credits of one submission of `operation`; false (nothing spent) when short. */
  charge(operation: Operation): boolean {
    const cost = this.options.creditCosts[operation];
    if (this.account.credits < cost) return false;
    this.account.credits -= cost;
    return true;
  }

  /** Whether a result file (named after its task: `<id>.mp4`, `<id>-2.png`) has expired. */
  fileExpired(name: string, now = Date.now()): boolean {
    const stem = name.replace(/\.[^.]*$/, '');
    const task = this.tasks.get(stem) ?? this.tasks.get(stem.replace(/-\d+$/, ''));
    if (!task) return false;
    if (this.expiredTasks.has(task.id)) return true;
    if (task.fixture) return false;
    const ended = task.state === 'finished' || task.state === 'failed' ? task.history.at(-1)?.at : undefined;
    if (ended === undefined) return false;
    return ended <= this.expiredUpTo || now - ended > this.resultTtlMs;
  }

  expireResults(taskId?: string): void {
    if (taskId === undefined) this.expiredUpTo = Date.now();
    else if (!this.tasks.has(taskId)) throw new Error(`unknown task ${taskId}`);
    else this.expiredTasks.add(taskId);
  }

  createAsync(
    operation: AsyncOperation,
    params: Record<string, JsonValue>,
    webhook: WebhookTarget,
    extra: { songIds?: readonly [string, string]; uploads?: readonly UploadedImage[] } = {},
  ): TaskRecord {
    const id = randomUUID();
    const scenario = this.queuedScenarios.shift() ?? { ...this.defaultScenario };
    const now = Date.now();
    const queued = scenario.initialStatus !== undefined && QUEUED_STATUSES.has(scenario.initialStatus);
    const announced = scenario.initialStatus !== undefined;
    const context = {
      ...this.context(id),
      songIds: extra.songIds,
      imageCount: extra.uploads?.length,
      videoTaskType: scenario.videoTaskType,
    };
    const body =
      scenario.initialStatus !== undefined
        ? statusResult(operation, context, scenario.initialStatus)
        : progressResult(operation, context, 0);
    const change: StateChange = { at: now, kind: 'progress', body };
    const task: TaskRecord = {
      id,
      operation,
      createdAt: now,
      fixture: false,
      params,
      ...(webhook.webhookUrl !== undefined ? { webhookUrl: webhook.webhookUrl } : {}),
      ...(webhook.webhookSecret !== undefined ? { webhookSecret: webhook.webhookSecret } : {}),
      scenario,
      ...(extra.songIds ? { songIds: extra.songIds } : {}),
      ...(extra.uploads ? { uploads: extra.uploads } : {}),
      state: queued ? 'queued' : 'processing',
      body,
      history: [change],
    };
    this.tasks.set(id, task);
    this.emit({ type: 'task', task, change });
    // An explicit initial status is news to the client, so it is webhooked (after the submit response).
    if (announced) this.timers.after(id, 0, () => this.enqueueWebhook(task, change));
    this.scheduleStep(task, 0);
    return task;
  }

  finish(taskId: string): TaskRecord {
    const task = this.running(taskId);
    this.complete(task, 'finished', '');
    return task;
  }

  fail(taskId: string, message?: string): TaskRecord {
    const task = this.running(taskId);
    this.complete(task, 'failed', message ?? task.scenario.failMessage);
    return task;
  }

  uploads(taskId: string): readonly UploadedImage[] {
    const task = this.tasks.get(taskId);
    if (!task || task.operation !== 'upload') throw new Error(`no upload task ${taskId}`);
    return task.uploads ?? [];
  }

  reset(): void {
    this.stopWork();
    this.webhooks.abortAll();
    this.tasks.clear();
    this.requests.length = 0;
    this.deliveries.length = 0;
    this.faults.clear();
    this.queuedScenarios = [];
    this.defaultScenario = this.options.scenario;
    this.account = { ...this.options.account };
    this.features = { ...this.options.features };
    this.resultTtlMs = this.options.resultTtlMs;
    this.expiredTasks.clear();
    this.expiredUpTo = -Infinity;
    this.seedFixtures();
  }

  async close(): Promise<void> {
    this.stopWork();
    await this.webhooks.close();
    this.events.removeAllListeners();
  }

  private stopWork(): void {
    this.generation++;
    this.timers.cancelAll();
    this.chains.clear();
    this.shuffleBuffers.clear();
  }

  private context(taskId: string): BodyContext {
    return { baseUrl: this.baseUrl, taskId };
  }

  private taskContext(task: TaskRecord): BodyContext {
    return {
      ...this.context(task.id),
      songIds: task.songIds,
      imageCount: task.uploads?.length,
      expiresAt: new Date(Date.now() + UPLOAD_EXPIRY_MS).toISOString(),
      videoTaskType: task.scenario.videoTaskType,
    };
  }

  private running(taskId: string): TaskRecord {
    const task = this.tasks.get(taskId);
    if (!task) throw new Error(`unknown task ${taskId}`);
    if (task.state === 'finished' || task.state === 'failed')
      throw new Error(`task ${taskId} already ${task.state}`);
    return task;
  }

  /** Steps are chained (each schedules the next) so their order never depends on timer coalescing. */
  private scheduleStep(task: TaskRecord, index: number): void {
    const { steps, stepMs, hold, outcome, failMessage } = task.scenario;
    const step = steps[index];
    if (step !== undefined) {
      this.timers.after(task.id, stepMs, () => {
        const context = this.taskContext(task);
        if (typeof step === 'number') {
          this.transition(task, 'processing', 'progress', progressResult(task.operation, context, step));
        } else {
          const state = QUEUED_STATUSES.has(step) ? 'queued' : 'processing';
          this.transition(task, state, 'progress', statusResult(task.operation, context, step));
        }
        this.scheduleStep(task, index + 1);
      });
    } else if (!hold) {
      this.timers.after(task.id, stepMs, () => this.complete(task, outcome, failMessage));
    }
  }

  private complete(task: TaskRecord, outcome: 'finished' | 'failed', message: string): void {
    this.timers.cancelGroup(task.id);
    const context = this.taskContext(task);
    const body =
      outcome === 'finished'
        ? finishedResult(task.operation, context)
        : failedResult(task.operation, context, message);
    this.transition(task, outcome, 'final', body);
  }

  private transition(task: TaskRecord, state: TaskState, kind: StateChange['kind'], body: ResultBody): void {
    const change: StateChange = { at: Date.now(), kind, body };
    task.state = state;
    task.body = body;
    task.history.push(change);
    this.emit({ type: 'task', task, change });
    this.enqueueWebhook(task, change);
  }

  private enqueueWebhook(task: TaskRecord, change: StateChange): void {
    if (!task.webhookUrl) return;
    if (!task.scenario.shuffleWebhooks) {
      this.deliver(task, change);
      return;
    }
    const buffer = this.shuffleBuffers.get(task.id) ?? [];
    buffer.push(change);
    this.shuffleBuffers.set(task.id, buffer);
    if (change.kind !== 'final') return;
    this.shuffleBuffers.delete(task.id);
    for (const held of shuffled(buffer, this.options.random)) this.deliver(task, held);
  }

  private deliver(task: TaskRecord, { kind, body }: StateChange): void {
    const drop = task.scenario.dropWebhooks;
    if (drop === 'all' || drop === kind) {
      this.webhooks.logDropped(task, kind, body);
      return;
    }
    const epoch = this.generation;
    const send = async (copy: 1 | 2): Promise<void> => {
      if (epoch === this.generation) await this.webhooks.send(task, kind, body, copy);
    };
    const previous = this.chains.get(task.id) ?? Promise.resolve();
    const next = previous
      .then(() => send(1))
      .then(() => (task.scenario.duplicateWebhooks ? send(2) : undefined))
      .catch((error: unknown) => console.error('emulator webhook queue error', error));
    this.chains.set(task.id, next);
  }

  private addFinished(init: {
    id: string;
    operation: Operation;
    params: Record<string, JsonValue>;
    body: ResultBody;
    fixture: boolean;
    songIds?: readonly [string, string];
  }): void {
    const { songIds, ...rest } = init;
    const change: StateChange = { at: Date.now(), kind: 'final', body: init.body };
    const task: TaskRecord = {
      ...rest,
      ...(songIds ? { songIds } : {}),
      createdAt: change.at,
      scenario: this.defaultScenario,
      state: 'finished',
      history: [change],
    };
    this.tasks.set(task.id, task);
    this.emit({ type: 'task', task, change });
  }

  private seedFixtures(): void {
    const songIds = FIXTURE_SONG_IDS;
    const songContext = { ...this.context(FIXTURE_SONG_TASK_ID), songIds };
    this.addFinished({
      id: FIXTURE_SONG_TASK_ID,
      operation: 'song',
      params: {},
      body: finishedResult('song', songContext),
      fixture: true,
      songIds,
    });
    this.addFinished({
      id: FIXTURE_VIDEO_TASK_ID,
      operation: 'video',
      params: {},
      body: finishedResult('video', this.context(FIXTURE_VIDEO_TASK_ID)),
      fixture: true,
    });
  }

  private emit(event: EmulatorEvent): void {
    this.events.emit('event', event);
  }
}
