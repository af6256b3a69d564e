import type { Logger } from 'pino';
import type { PeriodicSchedule, PeriodicTask } from '../shared/periodic.js';
import { queueWithWorker, type BullContext, type QueueHandle } from './bull.js';

/**
 * Periodic work on Redis: one BullMQ Job Scheduler per task (its id is the task's name), so
 * a task runs once per period across every instance sharing the Redis, on whichever
 * instance's worker takes it. Every instance upserts the same schedulers at start: an
 * upsert with an unchanged period keeps the schedule (BullMQ replaces the waiting job with
 * one at the same time), a new or changed one runs at once. A run left by a dead instance
 * is taken again like any job of these queues (the tasks are idempotent). All tasks share
 * one queue and one worker: one blocking connection for the lot, not one per task.
 */
export class BullSchedule implements PeriodicSchedule {
  private readonly tasks = new Map<string, PeriodicTask>();
  private handle: QueueHandle<Record<string, never>> | undefined;

  constructor(
    private readonly ctx: BullContext,
    private readonly logger: Logger,
  ) {}

  add(task: PeriodicTask): void {
    this.tasks.set(task.name, task);
  }

  async start(): Promise<void> {
    if (this.handle) return;
    this.handle = queueWithWorker<Record<string, never>>(
      this.ctx,
      'periodic',
      async (job) => {
        const task = this.tasks.get(job.name);
        // A scheduler this version no longer has (an older instance's, during an upgrade).
        if (!task) return;
        // Never failed: the next period runs it again either way.
        await task
          .run()
          .catch((err: unknown) => this.logger.warn({ err, task: task.name }, 'periodic task failed'));
      },
      // Each task may run beside the others (a long retention sweep does not hold the account reading).
      { concurrency: Math.max(1, this.tasks.size) },
    );
    for (const task of this.tasks.values())
      await this.handle.queue.upsertJobScheduler(task.name, { every: task.everyMs }, { name: task.name });
  }

  async close(): Promise<void> {
    await this.handle?.close();
  }
}
