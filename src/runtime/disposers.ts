import type { Logger } from 'pino';
import { shutdownSteps } from '../shutdown-steps.js';

/** What a stop knows: how long the edits still queued may take to go out. */
export interface StopContext {
  drainMs: number;
}

export interface Disposer {
  /** Named in the log when the step fails or stalls. */
  name: string;
  close: (stop: StopContext) => Promise<unknown> | void;
  /** The step's own time limit (default shutdownSteps' 5 s). */
  timeoutMs?: number | ((stop: StopContext) => number);
  /** A synchronous stop that cannot hang: called directly, not as a timed step. */
  inline?: true;
}

/**
 * What the runtime built and must close, closed in reverse order of registration (as
 * fastify's onClose hooks are): what was built last, and depends on the rest, stops first.
 */
export class Disposers {
  private readonly list: Disposer[] = [];

  add(disposer: Disposer): void {
    this.list.push(disposer);
  }

  /** The names in the order `closeAll` runs them (tests, the docs). */
  order(): string[] {
    return this.list.map((d) => d.name).reverse();
  }

  async closeAll(logger: Logger, stop: StopContext): Promise<void> {
    const step = shutdownSteps(logger);
    for (const d of [...this.list].reverse()) {
      if (d.inline) {
        d.close(stop);
        continue;
      }
      const limit = typeof d.timeoutMs === 'function' ? d.timeoutMs(stop) : d.timeoutMs;
      await step(d.name, () => d.close(stop), limit);
    }
  }
}
