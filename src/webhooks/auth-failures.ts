import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface AuthFailureLimit {
  /** Failed authentications (401/404) a source may make per `durationSec`… */
  points: number;
  durationSec: number;
  /** …before it is throttled for this long. */
  blockSec: number;
}

/** Far above what a real service produces (a stray 404 for an expired job now and then). */
export const DEFAULT_AUTH_FAILURE_LIMIT: Readonly<AuthFailureLimit> = {
  points: 50,
  durationSec: 10,
  blockSec: 30,
};

/**
 * Counts failed webhook authentications per source address (rate-limiter-flexible,
 * in memory). Only failures are counted: a source delivering valid webhooks is
 * never throttled, whatever its pace. A throttled source still gets every delivery
 * the route can authenticate from memory; only requests that would need a store
 * read to be judged are refused (429), so a flood costs no store reads.
 */
export class AuthFailureGuard {
  private readonly limiter: RateLimiterMemory;

  constructor(readonly limit: AuthFailureLimit = DEFAULT_AUTH_FAILURE_LIMIT) {
    this.limiter = new RateLimiterMemory({
      points: limit.points,
      duration: limit.durationSec,
      blockDuration: limit.blockSec,
    });
  }

  /** Records one failed authentication from `source`. */
  async fail(source: string): Promise<void> {
    try {
      await this.limiter.consume(source);
    } catch (res) {
      // Over the limit: the limiter rejects with a RateLimiterRes (and blocks the key); that is the point.
      if (!(res instanceof RateLimiterRes)) throw res;
    }
  }

  /** Milliseconds until `source` may make store-backed requests again; 0 when not throttled. */
  async throttledForMs(source: string): Promise<number> {
    const res = await this.limiter.get(source);
    if (!res || res.consumedPoints <= this.limit.points) return 0;
    return Math.max(1, res.msBeforeNext);
  }
}
