import type { Logger } from 'pino';
import { z } from 'zod';
import { optionalField } from '../shared/optional-field.js';
import type { Metrics } from '../../metrics.js';
import type { AccountInfo, MediaClient } from './client.js';

/** One reading of the operator's service account. */
export interface AccountReading extends AccountInfo {
  /** When it was read (epoch ms). */
  at: number;
}

const readingSchema = z.object({
  credits: z.number(),
  plan: optionalField(z.string()),
  totalImages: optionalField(z.number()),
  at: z.number(),
});

/** Where the last reading is kept for every instance (the store shared by the cluster). */
export interface AccountReadings {
  load(): Promise<unknown>;
  save(reading: AccountReading): Promise<void>;
}

export interface AccountMonitorOptions {
  media: Pick<MediaClient, 'account'>;
  readings: AccountReadings;
  metrics?: Pick<Metrics, 'mediaAccountCredits' | 'mediaAccountOutOfCredits'>;
  logger: Logger;
  /** MEDIA_LOW_CREDITS: a warning once the credits fall below this. */
  lowCredits: number;
  /** At most one "out of credits" error line per this long (default 1 min). */
  outOfCreditsLogEveryMs?: number;
  now?: () => number;
}

/**
 * Keeps the operator informed of the service account's balance: `refresh` reads it (a
 * periodic task: once per period for the whole deployment) and keeps the reading in the
 * shared store, where every instance finds it for `/settings show` and its own
 * `media_account_credits` (`showLatest` at each scrape); a warning when it falls below
 * MEDIA_LOW_CREDITS (once per fall, whichever instance reads it), and a loud error when the
 * service refuses a submission with 402 (`media_account_out_of_credits` = 1 on the instance
 * that saw it, until a submission succeeds there). A service without the account endpoint
 * is not an error: there is simply no reading.
 */
export class AccountMonitor {
  private readonly logEveryMs: number;
  private readonly now: () => number;
  /** This instance's last reading (its own or the store's): the 402 line names it. */
  private reading: AccountReading | undefined;
  private inFlight: Promise<AccountReading | undefined> | undefined;
  private lastOutOfCreditsLogAt = -Infinity;
  private out = false;

  constructor(private readonly opts: AccountMonitorOptions) {
    this.logEveryMs = opts.outOfCreditsLogEveryMs ?? 60_000;
    this.now = opts.now ?? (() => Date.now());
  }

  /**
   * The last reading of any instance (for `/settings show`), undefined before one or without
   * the endpoint (while the store does not answer: the last one this instance saw).
   */
  async latest(): Promise<AccountReading | undefined> {
    let stored: unknown;
    try {
      stored = await this.opts.readings.load();
    } catch (err) {
      this.opts.logger.debug({ err }, 'could not load the account reading');
      return this.reading;
    }
    const parsed = readingSchema.safeParse(stored);
    if (parsed.success) this.reading = parsed.data;
    return parsed.success ? this.reading : undefined;
  }

  /** Sets this instance's `media_account_credits` to the last reading of any instance (before a scrape). */
  async showLatest(): Promise<void> {
    const reading = await this.latest();
    if (reading) this.show(reading);
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
    // The reading before this one, whichever instance took it: below the threshold, it warned already.
    const before = await this.latest();
    this.reading = reading;
    this.show(reading);
    if (reading.credits < this.opts.lowCredits && !(before && before.credits < this.opts.lowCredits))
      this.opts.logger.warn(
        { credits: reading.credits, lowCredits: this.opts.lowCredits, plan: reading.plan },
        'the media service account is running low on credits',
      );
    await this.opts.readings
      .save(reading)
      .catch((err: unknown) => this.opts.logger.warn({ err }, 'could not keep the account reading'));
    return reading;
  }

  private show(reading: AccountReading): void {
    const gauge = this.opts.metrics?.mediaAccountCredits;
    if (!gauge) return;
    // One sample: a plan that changed leaves no series behind at its last value.
    gauge.reset();
    gauge.set({ plan: reading.plan ?? 'unknown' }, reading.credits);
  }
}
