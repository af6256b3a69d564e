import type { JobRecord } from '../services/store/types.js';

/** What the webhook route needs to authenticate a delivery; immutable for a job's life (taskId set once). */
export interface JobKeyInfo {
  secret: string;
  operation: JobRecord['operation'];
  taskId?: string;
}

/**
 * Bounded in-memory memo of jobId → secret/operation/taskId.
 *
 * Filled when this process creates a job, when it recovers unfinished jobs at
 * start, and on the first store read of a delivery for a job made elsewhere. A
 * job's secret never changes, so a delivery found here is authenticated without
 * a store read, which is also what lets the route keep accepting valid
 * deliveries from a source that is being throttled for failed ones.
 * Insertion-ordered Map: the oldest entry goes first when full.
 */
export class JobKeys {
  private readonly map = new Map<string, JobKeyInfo>();
  constructor(private readonly max = 50_000) {}

  get(id: string): JobKeyInfo | undefined {
    return this.map.get(id);
  }

  set(id: string, info: JobKeyInfo): void {
    if (!this.map.has(id) && this.map.size >= this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(id, info);
  }

  /** Remembers a job record (creation, submit, recovery). */
  remember(job: Pick<JobRecord, 'id' | 'secret' | 'operation' | 'taskId'>): void {
    this.set(job.id, {
      secret: job.secret,
      operation: job.operation,
      ...(job.taskId ? { taskId: job.taskId } : {}),
    });
  }

  delete(id: string): void {
    this.map.delete(id);
  }

  get size(): number {
    return this.map.size;
  }
}
