import { LRUCache } from 'lru-cache';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { TaskReading } from './ports.js';
import { MediaRequestRejectedError, MediaTaskNotInAnswerError } from './errors.js';
import type { Operation, TaskResult } from './types.js';

/**
 * Reads of tasks someone typed (the `song_id` autocomplete reads the songs of whatever
 * task id is in the box, e.g. a task made outside the bot): each keystroke would be a
 * request to the service. So a typed id must look like a task id, each member gets a few
 * lookups a moment (rate-limiter-flexible, in memory), and answers are cached (lru-cache,
 * bounded), the "no such task" ones too, so typing the same id again costs nothing.
 */

/** What a task id looks like (the service's are UUIDs; the emulator's fixtures are slugs). */
const TASK_ID = /^[\w-]{8,64}$/;

export interface TaskLookupOptions {
  reader: TaskReading;
  /** Lookups per member per window (default 5 per 10 s). */
  points?: number;
  windowSeconds?: number;
  /** How long an answer (or "not found") is kept (default 5 min) and how many (default 2000). */
  ttlMs?: number;
  max?: number;
  /** Longest a lookup may take before the autocomplete gives up on it (default 1500 ms). */
  budgetMs?: number;
}

type Cached = { found: true; result: TaskResult } | { found: false };

export class TaskLookup {
  readonly #reader: TaskReading;
  readonly #limiter: RateLimiterMemory;
  readonly #cache: LRUCache<string, Cached>;
  readonly #budgetMs: number;

  constructor(opts: TaskLookupOptions) {
    this.#reader = opts.reader;
    this.#limiter = new RateLimiterMemory({ points: opts.points ?? 5, duration: opts.windowSeconds ?? 10 });
    this.#cache = new LRUCache({ max: opts.max ?? 2000, ttl: opts.ttlMs ?? 5 * 60_000 });
    this.#budgetMs = opts.budgetMs ?? 1500;
  }

  /** The task as the service knows it; undefined when it does not, or when it is not asked. */
  async lookup(userId: string, operation: Operation, taskId: string): Promise<TaskResult | undefined> {
    const id = taskId.trim();
    if (!TASK_ID.test(id)) return undefined;
    const key = `${operation}:${id}`;
    const hit = this.#cache.get(key);
    if (hit) return hit.found ? hit.result : undefined;
    try {
      await this.#limiter.consume(userId);
    } catch {
      return undefined; // this member is typing faster than the service should be asked
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        this.#reader.read(operation, id),
        new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), this.#budgetMs);
          timer.unref();
        }),
      ]);
      // Too slow: nothing cached, the next keystroke may try again.
      if (result !== undefined) this.#cache.set(key, { found: true, result });
      return result;
    } catch (err) {
      // The service says there is no such task: remembered. Anything else (an outage) is not.
      if (err instanceof MediaRequestRejectedError || err instanceof MediaTaskNotInAnswerError) {
        this.#cache.set(key, { found: false });
      }
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
