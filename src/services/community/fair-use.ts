import { z } from 'zod';
import type { AtomicKeyValueStore, KeyValueStore, KvWrite } from '../store/types.js';
import type { GuildSettings } from './settings.js';

/**
 * Fair use, credits and the operator's daily ceiling, checked and reserved in one atomic
 * store update (`AtomicKeyValueStore.update`: one compare-and-set script on Redis, the
 * keys' mutexes and one statement on SQLite), so two clicks at once can never both take
 * the last slot or credit, on one instance or several. There is no lock to hold: a caller
 * paused between its read and its write (past any lease) finds its write refused, reads
 * again and decides again.
 *
 * A reservation counts against a **scope**: a server (its id) or, for personal jobs, the
 * member themself (`personal:<userId>`); the scope's limits come with each call.
 *
 *   fair-use:{scope}:{user}    { active: {jobId: {until, day, cost, op}}, lastAt }
 *   credits:{scope}:{day}      { used }   the scope's credits (always counted)
 *   operator-credits:{day}     { used }   every scope together (always counted)
 *                                          day = UTC YYYY-MM-DD
 *
 * A counter is part of the atomic step only when a limit reads it (the scope's budget, the
 * operator's ceiling). Without one it is counted just after the slot is taken, off the
 * answer's path: otherwise every submission of every member would queue on the one shared
 * counter (a 100-command storm answered one command at a time). A refund waits for its count.
 *
 * A reservation names its job: `release` frees the slot when the job ends (and gives the
 * credits back when it failed at submission). An entry whose job never ended (a lost
 * process, a record deleted at the member's request) expires at `until`, so no slot leaks
 * forever.
 */

export type Refusal =
  | { kind: 'active'; count: number; max: number }
  | { kind: 'cooldown'; retryAt: number }
  | { kind: 'credits'; left: number; cost: number; budget: number; resetAt: number }
  /** OPERATOR_DAILY_CREDITS reached: what everyone together may spend today. */
  | { kind: 'operator'; resetAt: number }
  /** ALLOWED_GUILD_IDS: this server is not one the operator allows jobs in. */
  | { kind: 'not_allowed' };

/** A scope's limits (a server's settings, or a member's personal ones). */
export type ScopeLimits = Pick<GuildSettings, 'maxActiveJobs' | 'cooldownSeconds' | 'dailyCredits'>;

export interface ReserveInput {
  /** A server id, or `personal:<userId>` (see personalScope). */
  scope: string;
  userId: string;
  jobId: string;
  cost: number;
  limits: ScopeLimits;
}

export type ReserveResult =
  | { ok: true; /** Credits taken from the operator's day (the job's cost). */ operatorCredits: number }
  | { ok: false; refusal: Refusal };

/** The scope of a member's personal jobs (no server's settings apply). */
export const personalScope = (userId: string): string => `personal:${userId}`;

// `op`: operator credits taken (absent in entries written before the operator ceiling: none).
const entrySchema = z.object({
  until: z.number(),
  day: z.string(),
  cost: z.number(),
  op: z.number().optional(),
});
const memberSchema = z.object({ active: z.record(z.string(), entrySchema), lastAt: z.number().optional() });
type Member = z.infer<typeof memberSchema>;
type Entry = z.infer<typeof entrySchema>;
const creditsSchema = z.object({ used: z.number() });

const DAY_MS = 86_400_000;
const CREDITS_TTL_MS = 3 * DAY_MS;
const utcDay = (at: number): string => new Date(at).toISOString().slice(0, 10);
/** Next UTC midnight after `at`. */
export const nextUtcMidnight = (at: number): number => Math.floor(at / DAY_MS) * DAY_MS + DAY_MS;

const memberKey = (scope: string, userId: string) => `fair-use:${scope}:${userId}`;
const creditsKey = (scope: string, day: string) => `credits:${scope}:${day}`;
const operatorKey = (day: string) => `operator-credits:${day}`;
const usedOf = (raw: unknown): number => {
  const parsed = creditsSchema.safeParse(raw);
  return parsed.success ? parsed.data.used : 0;
};

export class FairUseLedger {
  constructor(
    private readonly deps: {
      kv: KeyValueStore & Pick<AtomicKeyValueStore, 'update'>;
      /** How long an unfinished job can hold its slot (the job's own maximum duration). */
      slotTtlMs: number;
      /** OPERATOR_DAILY_CREDITS: 0 (default) = no ceiling; spending is counted either way. */
      operatorDailyCredits?: number;
      now?: () => number;
      /** A count made beside the reservation failed (`credits` are lost; the jobs go on). */
      onCountError?: (err: unknown, key: string, credits: number) => void;
    },
  ) {}

  /** Counts still being written beside their reservation, by job (a refund waits for them). */
  readonly #counting = new Map<string, Promise<void>>();

  private get now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** The operator's ceiling (0: none). */
  get operatorDailyCredits(): number {
    return this.deps.operatorDailyCredits ?? 0;
  }

  private member(raw: unknown, now: number): Member {
    const parsed = memberSchema.safeParse(raw);
    const m: Member = parsed.success ? parsed.data : { active: {} };
    for (const [jobId, e] of Object.entries(m.active)) if (e.until <= now) delete m.active[jobId];
    return m;
  }

  /** The member's record as written back: kept as long as a slot or the cooldown can matter. */
  private memberWrite(scope: string, userId: string, m: Member): KvWrite {
    return { key: memberKey(scope, userId), value: m, ttlMs: this.deps.slotTtlMs + DAY_MS };
  }

  /** Credits the scope has used on the UTC day of `at` (counted with or without a budget). */
  async creditsUsed(scope: string, at = this.now): Promise<number> {
    return usedOf(await this.deps.kv.get(creditsKey(scope, utcDay(at))));
  }

  /** Credits every scope together has used on the UTC day of `at`. */
  async operatorCreditsUsed(at = this.now): Promise<number> {
    return usedOf(await this.deps.kv.get(operatorKey(utcDay(at))));
  }

  /**
   * Checks the member's active jobs and cooldown, the scope's credits and the operator's
   * ceiling, and reserves all of them at once.
   */
  async reserve(input: ReserveInput): Promise<ReserveResult> {
    const { scope, userId, jobId, cost, limits } = input;
    const now = this.now;
    const day = utcDay(now);
    const ceiling = this.operatorDailyCredits;
    const scopeCredits = creditsKey(scope, day);
    const operatorCredits = operatorKey(day);
    // Counters a limit reads are checked and written in the atomic step; the others beside it.
    const budgeted = limits.dailyCredits > 0;
    const ceilinged = ceiling > 0;
    const keys = [
      memberKey(scope, userId),
      ...(budgeted ? [scopeCredits] : []),
      ...(ceilinged ? [operatorCredits] : []),
    ];
    const result = await this.deps.kv.update<ReserveResult>(keys, (values) => {
      const [memberRaw] = values;
      const creditsRaw = budgeted ? values[1] : undefined;
      const operatorRaw = ceilinged ? values[budgeted ? 2 : 1] : undefined;
      const refuse = (refusal: Refusal) => ({ result: { ok: false, refusal } as const });
      const m = this.member(memberRaw, now);
      const count = Object.keys(m.active).length;
      if (count >= limits.maxActiveJobs) return refuse({ kind: 'active', count, max: limits.maxActiveJobs });
      const cooldownMs = limits.cooldownSeconds * 1000;
      if (cooldownMs > 0 && m.lastAt !== undefined && now - m.lastAt < cooldownMs) {
        return refuse({ kind: 'cooldown', retryAt: m.lastAt + cooldownMs });
      }
      const used = usedOf(creditsRaw);
      if (budgeted && used + cost > limits.dailyCredits) {
        return refuse({
          kind: 'credits',
          left: Math.max(0, limits.dailyCredits - used),
          cost,
          budget: limits.dailyCredits,
          resetAt: nextUtcMidnight(now),
        });
      }
      const operatorUsed = usedOf(operatorRaw);
      if (ceilinged && operatorUsed + cost > ceiling)
        return refuse({ kind: 'operator', resetAt: nextUtcMidnight(now) });

      // Spending is counted with or without a budget: /settings show shows today's use, and a
      // budget chosen later in the day starts from it.
      m.active[jobId] = { until: now + this.deps.slotTtlMs, day, cost, op: cost };
      m.lastAt = now;
      const writes: KvWrite[] = [this.memberWrite(scope, userId, m)];
      if (budgeted && cost > 0)
        writes.push({ key: scopeCredits, value: { used: used + cost }, ttlMs: CREDITS_TTL_MS });
      if (ceilinged && cost > 0)
        writes.push({ key: operatorCredits, value: { used: operatorUsed + cost }, ttlMs: CREDITS_TTL_MS });
      return { result: { ok: true, operatorCredits: cost } as const, writes };
    });
    if (result.ok && cost > 0 && !(budgeted && ceilinged)) {
      const beside = [...(budgeted ? [] : [scopeCredits]), ...(ceilinged ? [] : [operatorCredits])];
      const counting = Promise.all(beside.map((key) => this.add(key, cost))).then(() => undefined);
      this.#counting.set(jobId, counting);
      void counting.finally(() => {
        if (this.#counting.get(jobId) === counting) this.#counting.delete(jobId);
      });
    }
    return result;
  }

  /** Counts made while a write of their key was under way, summed for its next write. */
  readonly #adding = new Map<string, { delta: number; written: Promise<void>; done: () => void }>();
  /** Keys with a write under way (one at a time per key). */
  readonly #writing = new Set<string>();

  /**
   * Adds `delta` (a cost, > 0) to a credits counter; a failure is reported, never thrown.
   * Resolves once a write holding it is done. The adds made while a write of the same key
   * is under way are summed into the next one: a burst of commands in one server writes
   * its counter and the operator's a few times, not once each (every write is a read and
   * a compare-and-set, and the writes of one key go one after the other).
   */
  private add(key: string, delta: number): Promise<void> {
    let next = this.#adding.get(key);
    if (!next) {
      let done = (): void => undefined;
      const written = new Promise<void>((resolve) => (done = resolve));
      next = { delta: 0, written, done };
      this.#adding.set(key, next);
    }
    next.delta += delta;
    if (!this.#writing.has(key)) void this.#writeAdds(key);
    return next.written;
  }

  async #writeAdds(key: string): Promise<void> {
    this.#writing.add(key);
    try {
      for (let next = this.#adding.get(key); next; next = this.#adding.get(key)) {
        this.#adding.delete(key);
        try {
          await this.#addNow(key, next.delta);
        } finally {
          next.done();
        }
      }
    } finally {
      // Whatever happened, the key takes writes again (else its later counts, and the
      // refunds waiting for them, would wait forever).
      this.#writing.delete(key);
    }
  }

  async #addNow(key: string, delta: number): Promise<void> {
    try {
      await this.deps.kv.update([key], ([raw]) => ({
        result: undefined,
        writes: [{ key, value: { used: Math.max(0, usedOf(raw) + delta) }, ttlMs: CREDITS_TTL_MS }],
      }));
    } catch (err) {
      try {
        this.deps.onCountError?.(err, key, delta);
      } catch {
        // Reporting failed too: the count is lost either way, the ledger goes on.
      }
    }
  }

  /** Resolves once the counts made beside reservations are written (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all([...this.#counting.values()]);
  }

  /**
   * The job ended: frees its slot; `refund` also gives its credits back, the scope's and the
   * operator's (refused or failed at submission). Idempotent: a second call finds no entry
   * and does nothing. Resolves with the operator credits given back.
   */
  async release(input: { scope: string; userId: string; jobId: string; refund: boolean }): Promise<number> {
    const { scope, userId, jobId, refund } = input;
    // A refund must not land before the count it gives back.
    await this.#counting.get(jobId);
    const now = this.now;
    const key = memberKey(scope, userId);
    // The entry's day names the credit keys; it never changes once written.
    const seen = this.member(await this.deps.kv.get(key), now).active[jobId];
    if (!seen) return 0;
    const refunds = refund && (seen.cost > 0 || (seen.op ?? 0) > 0);
    const scopeCredits = creditsKey(scope, seen.day);
    const operatorCredits = operatorKey(seen.day);
    const keys = refunds ? [key, scopeCredits, operatorCredits] : [key];
    return this.deps.kv.update(keys, ([memberRaw, creditsRaw, operatorRaw]) => {
      const m = this.member(memberRaw, now);
      const entry: Entry | undefined = m.active[jobId];
      if (!entry) return { result: 0 };
      delete m.active[jobId];
      const writes: KvWrite[] = [this.memberWrite(scope, userId, m)];
      if (!refunds) return { result: 0, writes };
      // Slot and credits in one write: a crash never gives a job for free, nor loses a refund.
      if (entry.cost > 0)
        writes.push({
          key: scopeCredits,
          value: { used: Math.max(0, usedOf(creditsRaw) - entry.cost) },
          ttlMs: CREDITS_TTL_MS,
        });
      const op = entry.op ?? 0;
      if (op > 0)
        writes.push({
          key: operatorCredits,
          value: { used: Math.max(0, usedOf(operatorRaw) - op) },
          ttlMs: CREDITS_TTL_MS,
        });
      return { result: op, writes };
    });
  }

  /**
   * The job's record is gone (deleted at its member's request) while it may still run: its
   * slot and credits stay taken until `until` (when it would have ended), never freed early.
   */
  async holdUntil(input: { scope: string; userId: string; jobId: string; until: number }): Promise<void> {
    const { scope, userId, jobId, until } = input;
    const now = this.now;
    await this.deps.kv.update([memberKey(scope, userId)], ([raw]) => {
      const m = this.member(raw, now);
      const entry = m.active[jobId];
      if (!entry || entry.until <= until) return { result: undefined };
      m.active[jobId] = { ...entry, until };
      return { result: undefined, writes: [this.memberWrite(scope, userId, m)] };
    });
  }
}
