import type { JobRecord } from '../store/types.js';

/**
 * What the job lifecycle needs from the machinery around it, one interface each,
 * with two implementations: in process (the embedded SQLite store, one process:
 * timers and the in-memory edit queue) and BullMQ (Redis, any number of
 * instances: durable queues). The lifecycle never knows which it runs on.
 */

/** Where a change of a job came from. */
export type JobSource = 'webhook' | 'poll' | 'refresh' | 'submit' | 'bot' | 'recovery';

/**
 * The job's keeper: one scheduled check per open job, from before its record exists
 * until it is settled (see JobWatch). `schedule` sets when the next check runs,
 * replacing the time set before; a check that is running decides its next time itself.
 */
export interface CheckScheduler {
  schedule(jobId: string, delayMs: number): Promise<void>;
  /** Checks scheduled and not yet run (in process: timers; BullMQ: this instance does not know). */
  pending(): number | undefined;
  close(): Promise<void>;
}

/** Brings a job's Discord message (and its channel line, in a thread) up to the stored state. */
export interface MessageUpdates {
  jobChanged(job: JobRecord): void;
}

/** Runs a final job's after-final work (slot, refund, gallery, thread) until it is done. */
export interface AfterFinalQueue {
  enqueue(jobId: string): Promise<void>;
  close(): Promise<void>;
}
