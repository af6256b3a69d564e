import type { LeaseOptions } from './lease-options.js';

/**
 * Gateway mode with several instances on one Redis: one instance holds the
 * Discord gateway at a time, the holder of the lease `gateway` (value
 * `INSTANCE_ID fencing-token`, PX ttlMs). The token comes from INCR on
 * `gateway:fence` at each acquisition, so every tenure has a new, larger token.
 *
 * - The holder renews every renewMs with a compare-and-pexpire (Lua): the renewal
 *   succeeds only while the stored value is still its own `id token`.
 * - The others try to take the lease every tryMs (SET only when absent), so a dead
 *   holder is replaced within ttlMs + tryMs (8 s + 1.5 s by default) plus the login, < 15 s.
 * - `holds()` is bounded locally by the time the lease was last confirmed plus
 *   ttlMs minus a margin, whatever Redis answers or fails to answer: a holder paused
 *   past its lease (GC, stopped VM) or cut off from Redis (the others may still reach
 *   it and take the lease when it expires) stops acting at that deadline and drops
 *   the gateway connection (`lost`), then tries to take the lease again like any
 *   standby. Every Redis call is bounded by a timeout, so a black-holed connection
 *   cannot stall the loop.
 * - `verify()` reads the lease and compares the fencing token: the interaction path
 *   calls it before acting, so an old holder that still has a half-open gateway
 *   socket can never act on an interaction after losing the lease.
 */

export interface GatewayLeaseOptions extends LeaseOptions {
  /** How often a standby tries to take the lease. */
  tryMs?: number;
  /** Clock for the local lease deadline (epoch ms). */
  now?: () => number;
}

export interface GatewayLeaseHandlers {
  /** This instance now holds the gateway: connect. */
  acquired(token: number): Promise<void> | void;
  /** The lease is gone (expired, taken, Redis unreachable past the deadline): disconnect now. */
  lost(token: number): Promise<void> | void;
}

/** Local safety margin below the lease TTL (clock drift, the renewal's own latency); at most a fifth of it. */
const MARGIN_MS = 1000;

export class GatewayLease {
  private token = 0;
  /** The last renewal failed to reach Redis (as opposed to finding another holder): logged once. */
  private unreachable = false;
  private confirmedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Fires at the local deadline of the current tenure unless a renewal moved it. */
  private deadlineTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private handlers: GatewayLeaseHandlers | undefined;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly key: string;
  private readonly fenceKey: string;

  constructor(private readonly opts: GatewayLeaseOptions) {
    this.ttlMs = opts.ttlMs ?? 8000;
    this.now = opts.now ?? Date.now;
    this.key = `${opts.prefix}gateway`;
    this.fenceKey = `${opts.prefix}gateway:fence`;
  }

  /** The fencing token of the current tenure (0 when not holding). */
  get fencingToken(): number {
    return this.holds() ? this.token : 0;
  }

  /** Holding the lease, as far as this instance can tell without asking Redis. */
  holds(): boolean {
    if (this.token === 0) return false;
    // No exception for "Redis unreachable": from here a partition looks the same as an outage,
    // and in a partition the others take the lease once it expires in Redis.
    return this.now() < this.deadline();
  }

  private deadline(): number {
    return this.confirmedAt + this.ttlMs - Math.min(MARGIN_MS, this.ttlMs / 5);
  }

  /** Asks Redis: the lease still carries this instance's id and fencing token. */
  async verify(): Promise<boolean> {
    if (!this.holds()) return false;
    const token = this.token;
    let value: unknown;
    try {
      value = await this.bounded(this.opts.redis.get(this.key));
    } catch {
      // Redis unreachable: before the local deadline nobody else can have taken the lease.
      return this.holds() && this.token === token;
    }
    return value === this.value(token);
  }

  /** First attempt now (awaited), then the renew / try loop. */
  async start(handlers: GatewayLeaseHandlers): Promise<void> {
    this.handlers = handlers;
    await this.tick();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.deadlineTimer);
    const token = this.token;
    if (token > 0) {
      this.token = 0;
      // Handing the lease back lets a standby connect at once instead of after the TTL.
      await this.opts.redis.run('lockRelease', [this.key], [this.value(token)]).catch(() => undefined);
    }
  }

  private value(token: number): string {
    return `${this.opts.instanceId} ${token}`;
  }

  /** A Redis call that gives up after a renewal period: a silent connection must not stall the loop. */
  private bounded<T>(call: Promise<T>): Promise<T> {
    const ms = Math.max(100, Math.min(this.opts.renewMs ?? 2500, this.ttlMs / 4));
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      call,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`redis did not answer within ${ms} ms`)), ms);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** (Re)arms the local deadline of this tenure: reaching it without a renewal gives the lease up. */
  private confirm(token: number, at: number): void {
    this.confirmedAt = at;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(
      () => {
        if (this.token !== token || this.holds()) return;
        void this.giveUp(token, 'could not renew the lease before it expired');
      },
      Math.max(0, this.deadline() - this.now()),
    );
    this.deadlineTimer.unref();
  }

  /** Drops the gateway, then hands the lease back in Redis where it still can (a standby then needs no TTL). */
  private async giveUp(token: number, reason: string): Promise<void> {
    await this.lose(token, reason);
    await this.bounded(this.opts.redis.run('lockRelease', [this.key], [this.value(token)])).catch(
      () => undefined,
    );
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const sentAt = this.now();
    if (this.token > 0) {
      const token = this.token;
      let reply: unknown;
      try {
        reply = await this.bounded(
          this.opts.redis.run('lockRenew', [this.key], [this.value(token), String(this.ttlMs)]),
        );
      } catch (err) {
        // Redis unreachable (not another holder): keep the gateway until the local deadline
        // (the deadline timer gives it up then), retrying meanwhile.
        if (!this.unreachable) this.opts.logger.warn({ err }, 'gateway lease renewal failed; retrying');
        this.unreachable = true;
        if (this.token === token && !this.holds())
          await this.giveUp(token, 'could not renew the lease before it expired');
        this.schedule(this.token > 0 ? 500 : (this.opts.tryMs ?? 1500));
        return;
      }
      this.unreachable = false;
      if (this.token !== token) {
        // Given up meanwhile (deadline reached while this renewal was on its way): hand it back.
        if (reply === 1)
          await this.bounded(this.opts.redis.run('lockRelease', [this.key], [this.value(token)])).catch(
            () => undefined,
          );
      } else if (reply === 1 && this.holds()) this.confirm(token, sentAt);
      else if (reply === 1) {
        // Renewed in Redis, but too late to trust locally: give it up there too, so a standby
        // takes it now rather than after another full lease.
        await this.giveUp(token, 'renewal came after the lease deadline');
      } else await this.lose(token, 'lease lost');
      this.schedule(this.token > 0 ? (this.opts.renewMs ?? 2500) : (this.opts.tryMs ?? 1500));
      return;
    }
    try {
      const token = Number(
        await this.bounded(
          this.opts.redis.run(
            'gatewayAcquire',
            [this.key, this.fenceKey],
            [this.opts.instanceId, String(this.ttlMs)],
          ),
        ),
      );
      if (token > 0 && !this.stopped) {
        this.token = token;
        this.unreachable = false;
        this.confirm(token, sentAt);
        this.opts.logger.info(
          { fencingToken: token },
          'gateway lease acquired: this instance holds the gateway',
        );
        // Not awaited: connecting may take longer than a renewal period, and the lease must be renewed meanwhile.
        Promise.resolve()
          .then(() => this.handlers?.acquired(token))
          .catch(async (err: unknown) => {
            this.opts.logger.error({ err }, 'could not take the gateway; handing the lease back');
            await this.giveUp(token, 'connect failed');
          });
      }
    } catch (err) {
      this.opts.logger.warn({ err }, 'gateway lease attempt failed');
    }
    this.schedule(this.token > 0 ? (this.opts.renewMs ?? 2500) : (this.opts.tryMs ?? 1500));
  }

  private async lose(token: number, reason: string): Promise<void> {
    if (this.token !== token) return;
    this.token = 0;
    clearTimeout(this.deadlineTimer);
    this.opts.logger.warn(
      { fencingToken: token, reason },
      'gateway lease lost: dropping the gateway connection',
    );
    try {
      await this.handlers?.lost(token);
    } catch (err) {
      this.opts.logger.error({ err }, 'dropping the gateway connection failed');
    }
  }
}
