/**
 * At most one progress edit queued per message per window: the first change of a
 * message is queued at once (leading), later ones within the window are folded
 * into one more at its end (trailing). Queued edits render the stored record when
 * they run, so the trailing one shows the latest state; nothing is lost, only the
 * Redis round trips of changes no one could see. Finals are never held: `flush`
 * drops the window and the caller queues the final itself.
 *
 * The edit worker of this instance knows more than the window, and says so:
 * - `cover(key, at)`: it put the message's edit back to run at `at` (its budget was
 *   spent); that edit renders the stored record then, so a change before `at` needs
 *   no edit of its own, and none is queued for it;
 * - `space(key, at)`: it just sent the message's progress and no other can go before
 *   `at` (the policy's spacing and budget): the changes until then are folded into one
 *   edit queued at `at`.
 * Another instance's worker tells this one nothing: its changes are queued per window,
 * and fold into the edit waiting in Redis.
 */
export class ProgressCoalescer {
  private readonly open = new Map<string, Window>();

  constructor(
    private readonly windowMs: number,
    private readonly queue: (key: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** A progress change of `key`'s message. */
  changed(key: string): void {
    const window = this.open.get(key);
    if (window) {
      if (!window.covered) window.again = true;
      return;
    }
    this.queue(key);
    this.start(key, this.windowMs, { covered: false, again: false });
  }

  /** An edit of `key`'s message queued to run at `at` renders every change made before it. */
  cover(key: string, at: number): void {
    this.hold(key, at, true);
  }

  /** No progress edit of `key`'s message can go before `at`: changes until then become one edit then. */
  space(key: string, at: number): void {
    this.hold(key, at, false);
  }

  /** A final (or the end of the message's edits): no trailing edit for `key`. */
  flush(key: string): void {
    const window = this.open.get(key);
    if (window) clearTimeout(window.timer);
    this.open.delete(key);
  }

  /** Shutting down: no trailing edit is queued any more. */
  close(): void {
    for (const window of this.open.values()) clearTimeout(window.timer);
    this.open.clear();
  }

  /** Windows open now (tests, memory). */
  get size(): number {
    return this.open.size;
  }

  private hold(key: string, at: number, covered: boolean): void {
    const ms = at - this.now();
    if (ms <= 0) return;
    const window = this.open.get(key);
    // `space` keeps a change already waiting for its edit (now due at `at`); `cover` drops it:
    // the covering edit shows it.
    const again = !covered && window !== undefined && window.again;
    if (window) clearTimeout(window.timer);
    this.start(key, ms, { covered, again });
  }

  private start(key: string, ms: number, state: Pick<Window, 'covered' | 'again'>): void {
    const window: Window = { ...state, timer: undefined };
    this.open.set(key, window);
    window.timer = setTimeout(() => {
      if (this.open.get(key) !== window) return;
      this.open.delete(key);
      if (window.again) this.changed(key);
    }, ms);
    window.timer.unref();
  }
}

interface Window {
  /** An edit already queued renders every change until the window ends: nothing to queue for them. */
  covered: boolean;
  /** A change came that no queued edit shows yet: one more edit when the window ends. */
  again: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
}
