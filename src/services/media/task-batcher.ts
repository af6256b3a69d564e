import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { FETCH_MANY_MAX, type MediaClient, type TaskRef } from './client.js';
import { MediaTaskNotInAnswerError } from './errors.js';
import type { Operation, TaskResult } from './types.js';

export interface TaskReaderOptions {
  media: Pick<MediaClient, 'fetchTask' | 'fetchMany' | 'fetchManySupported'>;
  logger?: Logger;
  /** How long the first read waits for others to share its request (default 5 ms). */
  windowMs?: number;
  /** Tasks per fetch-many request, 2 to 20 (default 20). */
  maxBatch?: number;
  /** Requests per second to the service, fetch and fetch-many alike (MEDIA_READS_PER_SECOND). */
  requestsPerSecond?: number;
  /** Requests in flight at once (default 4). */
  maxInFlight?: number;
}

export interface ReadOptions {
  /** A member is waiting (Refresh, autocomplete): goes before the background reads. */
  urgent?: boolean;
}

/** Thrown to reads still waiting when the reader is closed. */
export class TaskReaderClosedError extends Error {
  constructor() {
    super('the task reader was closed');
    this.name = 'TaskReaderClosedError';
  }
}

interface Waiter {
  resolve(result: TaskResult): void;
  reject(error: unknown): void;
}
interface Entry extends TaskRef {
  waiters: Waiter[];
}

/**
 * Reads tasks for the polls, the watchdog and restart recovery, batched and paced:
 * reads made within `windowMs` of each other, or 20 at once, go out as one fetch-many
 * request (a lone read as a plain fetch; only single fetches once the service turned out
 * to have no fetch-many), and requests leave at `requestsPerSecond` at most, so resuming
 * 10,000 jobs is 500 requests spread over time instead of a burst of 10,000. p-queue paces
 * (a sliding window: no more than the rate in any second) and bounds the requests in flight.
 *
 * A request takes the reads waiting *when it starts*: while the pace holds requests back,
 * reads keep joining the next one, so a backlog always leaves in full batches. Reads of one
 * task waiting together share one slot and one answer.
 */
export class TaskReader {
  private readonly media: TaskReaderOptions['media'];
  private readonly queue: PQueue;
  private readonly windowMs: number;
  private readonly maxBatch: number;
  /** Reads not yet taken by a request, urgent ones apart (taken first). */
  private readonly waiting = { urgent: new Map<string, Entry>(), normal: new Map<string, Entry>() };
  /** Requests queued (added to p-queue) that have not started yet. */
  private queued = 0;
  private windowTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(opts: TaskReaderOptions) {
    this.media = opts.media;
    this.windowMs = opts.windowMs ?? 5;
    this.maxBatch = Math.max(2, Math.min(FETCH_MANY_MAX, opts.maxBatch ?? FETCH_MANY_MAX));
    const rate = Math.max(1, opts.requestsPerSecond ?? 10);
    // Evenly spread: one request per 1000/rate ms up to 100/s; above, a few per 10 ms window.
    const [intervalCap, interval] = rate <= 100 ? [1, 1000 / rate] : [Math.ceil(rate / 100), 10];
    this.queue = new PQueue({
      concurrency: Math.max(1, opts.maxInFlight ?? 4),
      intervalCap,
      interval,
      strict: true,
    });
  }

  /** The current result of `taskId` (a job of `operation`), read with others when it can be. */
  read(operation: Operation, taskId: string, options: ReadOptions = {}): Promise<TaskResult> {
    if (this.closed) return Promise.reject(new TaskReaderClosedError());
    return new Promise<TaskResult>((resolve, reject) => {
      const map = options.urgent ? this.waiting.urgent : this.waiting.normal;
      // By task id: a task belongs to one job, so to one operation.
      const key = taskId;
      // An urgent read of a task already waiting in the background joins it and hurries it along.
      let entry = map.get(key);
      if (!entry && options.urgent) {
        entry = this.waiting.normal.get(key);
        if (entry) {
          this.waiting.normal.delete(key);
          map.set(key, entry);
        }
      }
      if (!entry) {
        entry = { operation, taskId, waiters: [] };
        map.set(key, entry);
      }
      entry.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /** Reads waiting for a request, and requests waiting for their turn. */
  get backlog(): { reads: number; requests: number } {
    return { reads: this.waiting.urgent.size + this.waiting.normal.size, requests: this.queue.size };
  }

  /** Rejects every read still waiting; requests in flight finish. */
  close(): void {
    this.closed = true;
    if (this.windowTimer) clearTimeout(this.windowTimer);
    this.windowTimer = undefined;
    this.queue.clear();
    this.queued = 0;
    const error = new TaskReaderClosedError();
    for (const map of [this.waiting.urgent, this.waiting.normal]) {
      for (const entry of map.values()) for (const w of entry.waiters) w.reject(error);
      map.clear();
    }
  }

  // ------------------------------------------------------------ internals

  private batchSize(): number {
    return this.media.fetchManySupported === false ? 1 : this.maxBatch;
  }

  /**
   * Queues as many requests as the waiting reads fill (full batches at once); the rest
   * after the window, when nothing else joined them.
   */
  private schedule(): void {
    if (this.closed) return;
    const size = this.batchSize();
    const urgent = this.waiting.urgent.size;
    const waiting = urgent + this.waiting.normal.size;
    // Urgent reads do not wait for the window.
    const due = urgent > 0 ? Math.ceil(waiting / size) : Math.floor(waiting / size);
    while (this.queued < due) this.addRequest(urgent > 0);
    if (this.queued < Math.ceil(waiting / size) && this.windowTimer === undefined) {
      this.windowTimer = setTimeout(() => {
        this.windowTimer = undefined;
        if (this.closed) return;
        const all = this.waiting.urgent.size + this.waiting.normal.size;
        while (this.queued < Math.ceil(all / this.batchSize())) this.addRequest(false);
      }, this.windowMs);
      this.windowTimer.unref();
    }
  }

  private addRequest(urgent: boolean): void {
    this.queued++;
    void this.queue.add(() => this.sendNext(), { priority: urgent ? 1 : 0 });
  }

  private async sendNext(): Promise<void> {
    this.queued--;
    const entries = this.take(this.batchSize());
    if (entries.length === 0) return;
    try {
      if (entries.length === 1) {
        const [only] = entries as [Entry];
        resolveAll(only, await this.media.fetchTask(only.operation, only.taskId));
      } else {
        const answers = await this.media.fetchMany(entries);
        for (const entry of entries) {
          const answer = answers.get(entry.taskId) ?? new MediaTaskNotInAnswerError(entry.taskId);
          if (answer instanceof Error) rejectAll(entry, answer);
          else resolveAll(entry, answer);
        }
      }
    } catch (err) {
      for (const entry of entries) rejectAll(entry, err);
    }
    // The batch size may have changed (fetch-many found absent): queue what the rest needs.
    this.schedule();
  }

  private take(count: number): Entry[] {
    const out: Entry[] = [];
    for (const map of [this.waiting.urgent, this.waiting.normal]) {
      for (const [key, entry] of map) {
        if (out.length >= count) return out;
        map.delete(key);
        out.push(entry);
      }
    }
    return out;
  }
}

function resolveAll(entry: Entry, result: TaskResult): void {
  for (const w of entry.waiters) w.resolve(result);
}

function rejectAll(entry: Entry, error: unknown): void {
  for (const w of entry.waiters) w.reject(error);
}
