import { z } from 'zod';
import type { AtomicKeyValueStore, JobRecord, JobStore, KvDecision } from '../store/types.js';
import { isFinal } from '../store/merge.js';

/**
 * Retry is idempotent per job: one Retry of a job runs at a time, whoever presses it and
 * on whichever instance. A press while a retry is being started, or while the job it
 * started still runs, is answered with that job instead of a second paid one; once it
 * ended, Retry starts another (a reroll). The mark is taken by the store's compare-and-set
 * `update` (atomic across instances, no lock): of two presses at once, one writes the mark,
 * the other decides again on it and is refused.
 *
 *   retry-of:{jobId}   { starting: true, at } while the new job is being made,
 *                      { jobId } once it exists
 */
const markSchema = z.union([
  z.object({ starting: z.literal(true), at: z.number() }),
  z.object({ jobId: z.string() }),
]);

/** A retry being started (its job not made yet) is given this long before another press may try. */
const STARTING_TTL_MS = 60_000;

export type RetryClaim =
  | { ok: true; started(job: JobRecord): Promise<void>; abandoned(): Promise<void> }
  | { ok: false; running?: JobRecord };

export class RetryGuard {
  constructor(
    private readonly deps: {
      kv: AtomicKeyValueStore;
      records: Pick<JobStore, 'get'>;
      /** How long the mark of a started retry is kept (a job can run that long). */
      runningTtlMs: number;
      now: () => number;
    },
  ) {}

  /** Claims the right to retry `jobId` now; throws StoreUnavailableError when the store is down. */
  async claim(jobId: string): Promise<RetryClaim> {
    const key = `retry-of:${jobId}`;
    const { kv } = this.deps;
    type Decided = { ok: true } | { ok: false; running?: JobRecord };
    const won = await kv.update([key], async ([stored]): Promise<KvDecision<Decided>> => {
      const mark = markSchema.safeParse(stored);
      if (mark.success) {
        if ('starting' in mark.data) {
          if (this.deps.now() - mark.data.at < STARTING_TTL_MS) return { result: { ok: false } };
        } else {
          const running = await this.deps.records.get(mark.data.jobId);
          if (running && !isFinal(running.state)) return { result: { ok: false, running } };
        }
      }
      return {
        result: { ok: true },
        writes: [{ key, value: { starting: true, at: this.deps.now() }, ttlMs: STARTING_TTL_MS }],
      };
    });
    if (!won.ok) return won;
    return {
      ok: true,
      started: (job) => kv.set(key, { jobId: job.id }, this.deps.runningTtlMs),
      abandoned: () => kv.delete(key),
    };
  }
}
