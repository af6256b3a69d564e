import { createClient } from '@keyv/redis';
import { DelayedError, Queue, Worker, type Job, type JobsOptions, type WorkerOptions } from 'bullmq';
import type { Logger } from 'pino';

/**
 * BullMQ on the Redis the store already uses, through node-redis (BullMQ's
 * node-redis adapter; no second client library). BullMQ does what must happen
 * once and survive crashes: each open job's keeper check, the Discord edits of
 * job messages, the after-final work. Its production rules are kept here:
 *
 * - Redis runs `maxmemory-policy noeviction` (checked at start, see redis-policy.ts);
 * - the lock outlasts any event-loop stall (LOCK_MS): a lock shorter than a stall
 *   lets the stalled checker hand a running job to another worker (bullmq #3183);
 * - job data holds ids only: no secrets, no tokens, no photos (it is stored in clear);
 * - workers are closed on SIGTERM (their running jobs finish or are handed back).
 */

/** Longer than any event-loop stall we expect (a full GC of a large heap is well under a second). */
export const LOCK_MS = 60_000;
/** How often each worker looks for jobs whose worker died (their lock expired). */
export const STALLED_CHECK_MS = 15_000;

function connect(url: string, logger: Logger) {
  const client = createClient({
    url,
    // Reconnect forever with a capped backoff: the queues come back when Redis does.
    socket: { reconnectStrategy: (retries: number) => Math.min(100 * 2 ** Math.min(retries, 10), 2000) },
  });
  client.on('error', (err: unknown) => logger.debug({ err }, 'queue connection error'));
  return client;
}

export type RedisClient = ReturnType<typeof connect>;

export interface BullContext {
  /** The connection queues and workers share (workers duplicate it for their blocking reads). */
  connection: RedisClient;
  /** Key prefix, e.g. `mjb-bull` (the store namespace keeps test runs apart). */
  prefix: string;
  logger: Logger;
}

export async function openBull(opts: {
  url: string;
  namespace: string;
  logger: Logger;
}): Promise<BullContext & { close(): Promise<void> }> {
  const connection = connect(opts.url, opts.logger);
  await connection.connect();
  return {
    connection,
    prefix: `${opts.namespace}-bull`,
    logger: opts.logger,
    async close() {
      if (connection.isOpen) connection.destroy();
    },
  };
}

/** A queue and its worker, closed together. */
export interface QueueHandle<D> {
  queue: Queue<D>;
  worker: Worker<D>;
  close(): Promise<void>;
}

export function queueWithWorker<D>(
  ctx: BullContext,
  name: string,
  processor: (job: Job<D>, token: string | undefined) => Promise<void>,
  opts: Partial<WorkerOptions> & { defaultJobOptions?: JobsOptions } = {},
): QueueHandle<D> {
  const { defaultJobOptions, ...workerOpts } = opts;
  const queue = new Queue<D>(name, {
    connection: ctx.connection,
    prefix: ctx.prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: true, ...defaultJobOptions },
  });
  const worker = new Worker<D>(name, processor, {
    connection: ctx.connection,
    prefix: ctx.prefix,
    lockDuration: LOCK_MS,
    stalledInterval: STALLED_CHECK_MS,
    // A job whose worker died is taken again (never failed for it): these jobs are idempotent.
    maxStalledCount: 1_000_000,
    ...workerOpts,
  });
  const log = ctx.logger.child({ queue: name });
  queue.on('error', (err) => log.warn({ err }, 'queue error'));
  worker.on('error', (err) => log.warn({ err }, 'worker error'));
  return {
    queue,
    worker,
    async close() {
      await worker.close().catch((err: unknown) => log.warn({ err }, 'worker close failed'));
      await queue.close().catch((err: unknown) => log.warn({ err }, 'queue close failed'));
    },
  };
}

/** Puts the running job back to wait `ms` (it keeps its id and deduplication): throw what this returns. */
export async function delayJob<D>(job: Job<D>, token: string | undefined, ms: number): Promise<DelayedError> {
  await job.moveToDelayed(Date.now() + Math.max(0, Math.round(ms)), token);
  return new DelayedError();
}
