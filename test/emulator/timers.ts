/**
 * Every timer the emulator starts goes through here, so `close()`/`reset()`
 * can cancel them all: a dangling timer would keep vitest from exiting.
 */
export class Timers {
  private readonly groups = new Map<string, Set<NodeJS.Timeout>>();
  private readonly sleepers = new Set<() => void>();

  /** Runs `fn` after `ms`, as part of `group` (a task id) so it can be cancelled with it. */
  after(group: string, ms: number, fn: () => void): void {
    let set = this.groups.get(group);
    if (!set) {
      set = new Set();
      this.groups.set(group, set);
    }
    const timers = set;
    const handle = setTimeout(() => {
      timers.delete(handle);
      fn();
    }, ms);
    timers.add(handle);
  }

  cancelGroup(group: string): void {
    for (const handle of this.groups.get(group) ?? []) clearTimeout(handle);
    this.groups.delete(group);
  }

  /** Resolves after `ms`, or early when everything is cancelled (so pending responses can finish). */
  sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(handle);
        this.sleepers.delete(wake);
        resolve();
      };
      const handle = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  cancelAll(): void {
    for (const group of [...this.groups.keys()]) this.cancelGroup(group);
    for (const wake of [...this.sleepers]) wake();
  }
}
