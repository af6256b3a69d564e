/**
 * The bot-token edit budget of Discord channels (`PATCH /channels/{c}/messages/{m}`
 * shares one bucket per channel, ~5 per 5 s).
 *
 * The edit queue asks before each channel edit and reports back; one
 * implementation per deployment: `MemoryChannelBudget` for one process, a shared
 * one (e.g. on Redis) when several instances edit in the same channels. Methods
 * may answer synchronously or with a promise.
 */
export type EditKind = 'final' | 'progress';

export interface ChannelBudget {
  /**
   * Takes one edit slot of `channelId` for an edit of `kind` now. Resolves 0 when
   * granted (the caller must then send, and call `settled` once Discord answered),
   * else how many ms to wait before asking again. Progress edits must leave
   * headroom for finals.
   */
  acquire(channelId: string, kind: EditKind, now: number): number | Promise<number>;
  /** The granted edit came back (any outcome but a rate limit): its window is counted from now. */
  settled(channelId: string, now: number): void;
  /** The granted edit was refused for a rate limit (by Discord or the REST client): it used no slot. */
  released(channelId: string, now: number): void;
  /** Discord answered 429: nothing goes to `channelId` (every channel when undefined: global) before `until`. */
  blocked(channelId: string | undefined, until: number): void;
}

export interface MemoryChannelBudgetOptions {
  /** Edits per window per channel (Discord: 5 per 5 s). */
  limit: number;
  windowMs: number;
  /** Slots per window that progress edits leave free for finals. */
  finalReserve: number;
}

interface ChannelState {
  /** Granted, not yet answered: counted until they settle. */
  open: number;
  /** Answer times of settled edits within the window, oldest first. */
  done: number[];
  blockedUntil: number;
}

/**
 * In-process budget. A slot is counted from the moment it is granted until
 * `windowMs` after Discord answered: the server saw the request somewhere in
 * between, so counting from the answer can never put a sixth edit inside the
 * server's window, whatever the latency, and costs one round trip per window.
 */
export class MemoryChannelBudget implements ChannelBudget {
  private readonly channels = new Map<string, ChannelState>();
  private globalBlockedUntil = 0;

  constructor(private readonly opts: MemoryChannelBudgetOptions) {}

  acquire(channelId: string, kind: EditKind, now: number): number {
    const st = this.state(channelId, now);
    const blockedUntil = Math.max(st.blockedUntil, this.globalBlockedUntil);
    if (blockedUntil > now) return blockedUntil - now;
    const cap = kind === 'final' ? this.opts.limit : Math.max(1, this.opts.limit - this.opts.finalReserve);
    const used = st.open + st.done.length;
    if (used < cap) {
      st.open++;
      return 0;
    }
    // The (used - cap + 1)-th oldest settled slot must leave the window; open ones wake the queue when they settle.
    const freeAt = st.done[used - cap];
    return freeAt === undefined ? this.opts.windowMs : Math.max(1, freeAt + this.opts.windowMs - now);
  }

  settled(channelId: string, now: number): void {
    const st = this.state(channelId, now);
    if (st.open > 0) st.open--;
    st.done.push(now);
  }

  released(channelId: string, now: number): void {
    const st = this.state(channelId, now);
    if (st.open > 0) st.open--;
  }

  blocked(channelId: string | undefined, until: number): void {
    if (channelId === undefined) {
      this.globalBlockedUntil = Math.max(this.globalBlockedUntil, until);
      return;
    }
    let st = this.channels.get(channelId);
    if (!st) {
      st = { open: 0, done: [], blockedUntil: 0 };
      this.channels.set(channelId, st);
    }
    st.blockedUntil = Math.max(st.blockedUntil, until);
  }

  /** Channels with anything counted (for tests and metrics). */
  size(): number {
    return this.channels.size;
  }

  private state(channelId: string, now: number): ChannelState {
    let st = this.channels.get(channelId);
    if (!st) {
      st = { open: 0, done: [], blockedUntil: 0 };
      this.channels.set(channelId, st);
      this.prune(now);
    }
    while (st.done[0] !== undefined && st.done[0] <= now - this.opts.windowMs) st.done.shift();
    return st;
  }

  /** Forgets idle channels; runs when a channel is added, so the map stays as big as the active set. */
  private prune(now: number): void {
    if (this.channels.size < 64) return;
    for (const [id, st] of this.channels) {
      const last = st.done.at(-1);
      if (st.open === 0 && (last === undefined || last <= now - this.opts.windowMs) && st.blockedUntil <= now)
        this.channels.delete(id);
    }
  }
}
