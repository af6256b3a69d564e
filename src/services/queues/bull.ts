import {
  DelayedError,
  Queue,
  RedisConnection,
  Worker,
  createNodeRedisClient,
  type IRedisClient,
  type Job,
  type JobsOptions,
  type WorkerOptions,
} from 'bullmq';
import type { Logger } from 'pino';
import { redisConnection } from '../store/redis-connection.js';

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

/**
 * Default lock (QUEUE_LOCK_SECONDS): renewed every half of it while a job runs, so it must
 * outlast any event-loop stall (the bot's longest synchronous work is a few milliseconds,
 * a GC pause tens of them; `npm run bench` prints the longest stall seen). Short, so that a
 * dead instance's jobs are taken again within seconds. A worker stalled past it anyway
 * (SIGSTOP, a frozen VM) is fenced: it checks the lock is still its own right before any
 * effect another worker must not repeat (`stillOurs`), and every job is idempotent.
 */
export const LOCK_MS = 5_000;

function connect(url: string, logger: Logger) {
  const client = redisConnection(url, {
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
  /**
   * BullMQ's adapter of that connection, made once and handed to every queue and worker:
   * each adapter BullMQ makes itself registers its 64 Lua scripts again (a SHA-1 of their
   * 400 KB and a SCRIPT LOAD of all of it, twelve times at start); one adapter, once.
   */
  client: IRedisClient;
  /** Key prefix, e.g. `mjb-bull` (the store namespace keeps test runs apart). */
  prefix: string;
  logger: Logger;
  /** How long a running job stays its worker's without a renewal (QUEUE_LOCK_SECONDS). */
  lockMs: number;
}

export async function openBull(opts: {
  url: string;
  namespace: string;
  logger: Logger;
  lockMs?: number;
}): Promise<BullContext & { close(): Promise<void> }> {
  const connection = connect(opts.url, opts.logger);
  await connection.connect();
  const client = createNodeRedisClient(connection);
  // BullMQ registers its scripts on the adapter as its first connection starts; a worker's
  // blocking connection duplicates the adapter at once, before that, and would register them
  // all again: registered here first, so every duplicate takes them along.
  const loader = new RedisConnection(client, { shared: true, blocking: false });
  await loader.client;
  await loader.close();
  return {
    connection,
    client,
    prefix: `${opts.namespace}-bull`,
    logger: opts.logger,
    lockMs: opts.lockMs ?? LOCK_MS,
    async close() {
      if (connection.isOpen) connection.destroy();
    },
  };
}

/** A queue and its workers, closed together. */
export interface QueueHandle<D> {
  queue: Queue<D>;
  workers: readonly Worker<D>[];
  close(): Promise<void>;
}

export function queueWithWorker<D>(
  ctx: BullContext,
  name: string,
  processor: (job: Job<D>, token: string | undefined) => Promise<void>,
  opts: Partial<WorkerOptions> & {
    defaultJobOptions?: JobsOptions;
    /**
     * Workers sharing `concurrency` (default 1). A BullMQ worker fetches the jobs of a burst
     * one round trip after another, up to its concurrency, before it starts the first
     * (its main loop): several smaller workers start a burst's first jobs sooner, each
     * with a blocking connection of its own.
     */
    workers?: number;
  } = {},
): QueueHandle<D> {
  const { defaultJobOptions, workers: count = 1, ...workerOpts } = opts;
  const queue = new Queue<D>(name, {
    connection: ctx.client,
    prefix: ctx.prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: true, ...defaultJobOptions },
  });
  const total = Math.max(1, workerOpts.concurrency ?? 1);
  const n = Math.max(1, Math.min(count, total));
  const concurrency = Math.ceil(total / n);
  const workers = Array.from(
    { length: n },
    () =>
      new Worker<D>(name, processor, {
        connection: ctx.client,
        prefix: ctx.prefix,
        lockDuration: ctx.lockMs,
        // A dead worker's jobs are taken again within a lock and a fifth of one.
        stalledInterval: Math.max(1000, Math.round(ctx.lockMs / 5)),
        // A job whose worker died is taken again (never failed for it): these jobs are idempotent.
        maxStalledCount: 1_000_000,
        ...workerOpts,
        concurrency,
      }),
  );
  const log = ctx.logger.child({ queue: name });
  // A dropped connection makes every worker loop and queue call say so: one line, then a count.
  const warn = throttled((err: Error, n: number) =>
    log.warn({ err, ...(n > 0 ? { alsoSince: n } : {}) }, 'queue connection trouble; BullMQ reconnects'),
  );
  queue.on('error', warn);
  for (const worker of workers) worker.on('error', warn);
  return {
    queue,
    workers,
    async close() {
      await Promise.all(
        workers.map((w) => w.close().catch((err: unknown) => log.warn({ err }, 'worker close failed'))),
      );
      await queue.close().catch((err: unknown) => log.warn({ err }, 'queue close failed'));
    },
  };
}

/** Calls `report` at most once per `windowMs` with the errors swallowed since the last call. */
function throttled(
  report: (err: Error, suppressed: number) => void,
  windowMs = 30_000,
): (err: Error) => void {
  let last = -Infinity;
  let suppressed = 0;
  return (err) => {
    const now = Date.now();
    if (now - last < windowMs) {
      suppressed++;
      return;
    }
    report(err, suppressed);
    last = now;
    suppressed = 0;
  };
}

/**
 * Still this worker's job (its lock renewed now)? Checked right before an effect another
 * worker must not repeat (a Discord edit): a worker paused past its lock finds it gone.
 */
export async function stillOurs<D>(job: Job<D>, token: string | undefined, lockMs: number): Promise<boolean> {
  if (token === undefined) return true;
  try {
    return (await job.extendLock(token, lockMs)) === 1;
  } catch {
    return false;
  }
}

/** Puts the running job back to wait `ms` (it keeps its id and deduplication): throw what this returns. */
export async function delayJob<D>(job: Job<D>, token: string | undefined, ms: number): Promise<DelayedError> {
  await job.moveToDelayed(Date.now() + Math.max(0, Math.round(ms)), token);
  return new DelayedError();
}
