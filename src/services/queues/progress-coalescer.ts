/**
 * At most one progress edit queued per message per window: the first change of a
 * message is queued at once (leading), later ones within the window are folded
 * into one more at its end (trailing). Queued edits render the stored record when
 * they run, so the trailing one shows the latest state; nothing is lost, only the
 * Redis round trips of changes no one could see (progress edits of one message go
 * out at most every 2 s). Finals are never held: `flush` drops the window and the
 * caller queues the final itself.
 */
export class ProgressCoalescer {
  private readonly open = new Map<string, { again: boolean }>();

  constructor(
    private readonly windowMs: number,
    private readonly queue: (key: string) => void,
  ) {}

  /** A progress change of `key`'s message. */
  changed(key: string): void {
    const window = this.open.get(key);
    if (window) {
      window.again = true;
      return;
    }
    this.queue(key);
    this.start(key);
  }

  /** A final (or the end of the message's edits): no trailing edit for `key`. */
  flush(key: string): void {
    this.open.delete(key);
  }

  /** Shutting down: no trailing edit is queued any more. */
  close(): void {
    this.open.clear();
  }

  /** Windows open now (tests, memory). */
  get size(): number {
    return this.open.size;
  }

  private start(key: string): void {
    const window = { again: false };
    this.open.set(key, window);
    const timer = setTimeout(() => {
      if (this.open.get(key) !== window) return;
      this.open.delete(key);
      if (window.again) this.changed(key);
    }, this.windowMs);
    timer.unref();
  }
}
