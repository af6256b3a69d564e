import type { Logger } from 'pino';

/**
 * Work done every so often for the whole deployment, not for each instance: the retention
 * sweep, the reading of the service account. What it does is the task's; when it runs is
 * the schedule's, which has two drivers: `TimerSchedule` here (the embedded store, one
 * process) and BullMQ's Job Schedulers (services/queues/periodic.ts, for one or many
 * instances on one Redis, each task once per period across them).
 */
export interface PeriodicTask {
  /** Names the task in logs, and its Job Scheduler on Redis (stable across versions). */
  name: string;
  everyMs: number;
  /** A failure is the task's to log; one that throws anyway is logged by the schedule. */
  run(): Promise<unknown>;
}

export interface PeriodicSchedule {
  /** Adds a task (before `start`). */
  add(task: PeriodicTask): void;
  /** Runs each task soon (in process: now), then once every period. */
  start(): Promise<void>;
  /** No new run; resolves once this instance's runs in flight ended. */
  close(): Promise<void>;
}

/** The in-process driver: a timer per task (unref'd: it never holds the process open). */
export class TimerSchedule implements PeriodicSchedule {
  private readonly tasks: PeriodicTask[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  /** One run of a task at a time: a slow run is joined, not doubled. */
  private readonly running = new Map<string, Promise<void>>();
  private closed = false;

  constructor(private readonly logger: Logger) {}

  add(task: PeriodicTask): void {
    this.tasks.push(task);
  }

  async start(): Promise<void> {
    if (this.timers.length > 0 || this.closed) return;
    for (const task of this.tasks) {
      this.fire(task);
      const timer = setInterval(() => this.fire(task), task.everyMs);
      timer.unref();
      this.timers.push(timer);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers.splice(0)) clearInterval(t);
    await Promise.all(this.running.values());
  }

  private fire(task: PeriodicTask): void {
    if (this.closed || this.running.has(task.name)) return;
    const run = task
      .run()
      .then(
        () => undefined,
        (err: unknown) => this.logger.warn({ err, task: task.name }, 'periodic task failed'),
      )
      .finally(() => this.running.delete(task.name));
    this.running.set(task.name, run);
  }
}
