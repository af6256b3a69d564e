import type { Logger } from 'pino';
import type { Metrics } from '../../metrics.js';
import type { AccountInfo, MediaClient } from './client.js';

/** One reading of the operator's service account. */
export interface AccountReading extends AccountInfo {
  /** When it was read (epoch ms). */
  at: number;
}

export interface AccountMonitorOptions {
  media: Pick<MediaClient, 'account'>;
  metrics?: Pick<Metrics, 'mediaAccountCredits' | 'mediaAccountOutOfCredits'>;
  logger: Logger;
  /** MEDIA_LOW_CREDITS: a warning once the credits fall below this. */
  lowCredits: number;
  /** Between two readings (default 5 min). */
  intervalMs?: number;
  /** At most one "out of credits" error line per this long (default 1 min). */
  outOfCreditsLogEveryMs?: number;
  now?: () => number;
}

/**
 * Keeps the operator informed of the service account's balance: read at start and every
 * few minutes (`media_account_credits`), a warning when it falls below MEDIA_LOW_CREDITS
 * (once, until it is back above), and a loud error when the service refuses a submission
 * with 402 (`media_account_out_of_credits` = 1 until a submission succeeds). A service
 * without the account endpoint is not an error: there is simply no reading.
 */
export class AccountMonitor {
  private readonly intervalMs: number;
  private readonly logEveryMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private reading: AccountReading | undefined;
  private inFlight: Promise<AccountReading | undefined> | undefined;
  private warnedLow = false;
  private lastOutOfCreditsLogAt = -Infinity;
  private out = false;

  constructor(private readonly opts: AccountMonitorOptions) {
    this.intervalMs = opts.intervalMs ?? 5 * 60_000;
    this.logEveryMs = opts.outOfCreditsLogEveryMs ?? 60_000;
    this.now = opts.now ?? (() => Date.now());
  }

  /** Reads now, then every interval (the timer does not hold the process open). */
  start(): void {
    if (this.timer) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The last reading (for `/settings show`), undefined before one or without the endpoint. */
  latest(): AccountReading | undefined {
    return this.reading;
  }

  /** Reads the account now (one reading at a time); never throws (a failure is logged). */
  refresh(): Promise<AccountReading | undefined> {
    this.inFlight ??= this.read().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** The service answered 402 to a submission. */
  outOfCredits(): void {
    this.out = true;
    this.opts.metrics?.mediaAccountOutOfCredits.set(1);
    const now = this.now();
    if (now - this.lastOutOfCreditsLogAt < this.logEveryMs) return;
    this.lastOutOfCreditsLogAt = now;
    this.opts.logger.error(
      { credits: this.reading?.credits },
      'the media service account is out of credits (402): submissions fail until it is topped up',
    );
    // The balance shown should match what the service just said.
    void this.refresh();
  }

  /** A submission was taken: the account has credits again. */
  submissionSucceeded(): void {
    if (!this.out) return;
    this.out = false;
    this.opts.metrics?.mediaAccountOutOfCredits.set(0);
    this.opts.logger.info('the media service takes submissions again (credits available)');
  }

  private async read(): Promise<AccountReading | undefined> {
    let info: AccountInfo | undefined;
    try {
      info = await this.opts.media.account();
    } catch (err) {
      this.opts.logger.warn({ err }, 'could not read the media service account balance');
      return this.reading;
    }
    if (!info) return undefined;
    const reading: AccountReading = { ...info, at: this.now() };
    this.reading = reading;
    const gauge = this.opts.metrics?.mediaAccountCredits;
    if (gauge) {
      gauge.reset();
      gauge.set({ plan: reading.plan ?? 'unknown' }, reading.credits);
    }
    if (reading.credits < this.opts.lowCredits) {
      if (!this.warnedLow) {
        this.warnedLow = true;
        this.opts.logger.warn(
          { credits: reading.credits, lowCredits: this.opts.lowCredits, plan: reading.plan },
          'the media service account is running low on credits',
        );
      }
    } else this.warnedLow = false;
    return reading;
  }
}
