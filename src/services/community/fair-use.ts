import { z } from 'zod';
import type { LockingKeyValueStore } from '../store/types.js';
import type { GuildSettings } from './settings.js';

/**
 * Fair use and credits, checked and reserved in one step under store locks (Redis: a
 * lease shared by every process; SQLite: the one process's mutex), so two clicks at
 * once can never both take the last slot or credit. A member's record has its own
 * lock, so members of one server do not wait for each other; a server with a daily
 * credit budget also takes the server's credits lock around it (always server first,
 * then member: no two holders ever wait on each other).
 *
 *   fair-use:{guild}:{user}   { active: {jobId: {until, day, cost}}, lastAt }
 *   credits:{guild}:{day}     { used }            day = UTC YYYY-MM-DD
 *
 * A reservation names its job: `release` frees the slot when the job ends (and
 * gives the credits back when it failed at submission). An entry whose job never
 * ended (a lost process) expires at `until`, so no slot leaks forever.
 *
 * Today's spending is counted with or without a budget (`/settings show` shows it, so a
 * manager sees the use before choosing one). Without a budget it is counted after the
 * reservation, off the submission's path: taking the server's lock there would make the
 * members of one server queue behind each other again for a number nothing is refused on.
 */

export type Refusal =
  | { kind: 'active'; count: number; max: number }
  | { kind: 'cooldown'; retryAt: number }
  | { kind: 'credits'; left: number; cost: number; budget: number; resetAt: number };

export interface ReserveInput {
  guildId: string;
  userId: string;
  jobId: string;
  cost: number;
  settings: Pick<GuildSettings, 'maxActiveJobs' | 'cooldownSeconds' | 'dailyCredits'>;
}

export type ReserveResult = { ok: true } | { ok: false; refusal: Refusal };

const entrySchema = z.object({ until: z.number(), day: z.string(), cost: z.number() });
const memberSchema = z.object({ active: z.record(z.string(), entrySchema), lastAt: z.number().optional() });
type Member = z.infer<typeof memberSchema>;
const creditsSchema = z.object({ used: z.number() });

const DAY_MS = 86_400_000;
const utcDay = (at: number): string => new Date(at).toISOString().slice(0, 10);
/** Next UTC midnight after `at`. */
export const nextUtcMidnight = (at: number): number => Math.floor(at / DAY_MS) * DAY_MS + DAY_MS;

const memberKey = (guildId: string, userId: string) => `fair-use:${guildId}:${userId}`;
const creditsKey = (guildId: string, day: string) => `credits:${guildId}:${day}`;
const creditsLock = (guildId: string) => `credits:${guildId}`;
const memberLock = (guildId: string, userId: string) => `fair-use:${guildId}:${userId}`;

export class FairUseLedger {
  /** Counts of budget-free reservations still being written, by job: a refund waits for its count. */
  private readonly counting = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: {
      kv: LockingKeyValueStore;
      /** How long an unfinished job can hold its slot (the job's own maximum duration). */
      slotTtlMs: number;
      now?: () => number;
      /** Where a count that could not be written is reported (it never refuses a job). */
      onCountError?: (err: unknown, guildId: string) => void;
    },
  ) {}

  private get now(): number {
    return (this.deps.now ?? Date.now)();
  }

  private async member(guildId: string, userId: string, now: number): Promise<Member> {
    const parsed = memberSchema.safeParse(await this.deps.kv.get(memberKey(guildId, userId)));
    const m: Member = parsed.success ? parsed.data : { active: {} };
    for (const [jobId, e] of Object.entries(m.active)) if (e.until <= now) delete m.active[jobId];
    return m;
  }

  private async saveMember(guildId: string, userId: string, m: Member): Promise<void> {
    // Kept as long as a slot or the cooldown can matter.
    await this.deps.kv.set(memberKey(guildId, userId), m, this.deps.slotTtlMs + DAY_MS);
  }

  async creditsUsed(guildId: string, at = this.now): Promise<number> {
    const parsed = creditsSchema.safeParse(await this.deps.kv.get(creditsKey(guildId, utcDay(at))));
    return parsed.success ? parsed.data.used : 0;
  }

  /** Checks the member's active jobs, cooldown and the guild's credits, and reserves all three at once. */
  async reserve(input: ReserveInput): Promise<ReserveResult> {
    const { guildId, userId, settings } = input;
    const { kv } = this.deps;
    let day = '';
    const reserve = () =>
      kv.withLock(memberLock(guildId, userId), () => {
        const now = this.now;
        day = utcDay(now);
        return this.reserveLocked(input, now);
      });
    if (settings.dailyCredits > 0) return kv.withLock(creditsLock(guildId), reserve);
    const r = await reserve();
    if (r.ok && input.cost > 0) {
      const counted = this.addCredits(guildId, day, input.cost)
        .catch((err: unknown) => this.deps.onCountError?.(err, guildId))
        .finally(() => this.counting.delete(input.jobId));
      this.counting.set(input.jobId, counted);
    }
    return r;
  }

  /** Adds `delta` (negative: a refund) to the server's spending of `day`, under its credits lock. */
  private addCredits(guildId: string, day: string, delta: number): Promise<void> {
    const { kv } = this.deps;
    return kv.withLock(creditsLock(guildId), async () => {
      const parsed = creditsSchema.safeParse(await kv.get(creditsKey(guildId, day)));
      const used = parsed.success ? parsed.data.used : 0;
      await kv.set(creditsKey(guildId, day), { used: Math.max(0, used + delta) }, 3 * DAY_MS);
    });
  }

  /** reserve() under the member's lock (and the server's credits lock when it has a budget). */
  private async reserveLocked(input: ReserveInput, now: number): Promise<ReserveResult> {
    const { guildId, userId, jobId, cost, settings } = input;
    const m = await this.member(guildId, userId, now);
    const count = Object.keys(m.active).length;
    if (count >= settings.maxActiveJobs) {
      return { ok: false, refusal: { kind: 'active', count, max: settings.maxActiveJobs } };
    }
    const cooldownMs = settings.cooldownSeconds * 1000;
    if (cooldownMs > 0 && m.lastAt !== undefined && now - m.lastAt < cooldownMs) {
      return { ok: false, refusal: { kind: 'cooldown', retryAt: m.lastAt + cooldownMs } };
    }
    const day = utcDay(now);
    if (settings.dailyCredits > 0) {
      const used = await this.creditsUsed(guildId, now);
      if (used + cost > settings.dailyCredits) {
        return {
          ok: false,
          refusal: {
            kind: 'credits',
            left: Math.max(0, settings.dailyCredits - used),
            cost,
            budget: settings.dailyCredits,
            resetAt: nextUtcMidnight(now),
          },
        };
      }
      // Credits first: a crash between the two writes then costs credits, never a free job.
      if (cost > 0) await this.deps.kv.set(creditsKey(guildId, day), { used: used + cost }, 3 * DAY_MS);
    }
    // Without a budget the credits are counted by reserve() once the slot is taken.
    m.active[jobId] = { until: now + this.deps.slotTtlMs, day, cost };
    m.lastAt = now;
    await this.saveMember(guildId, userId, m);
    return { ok: true };
  }

  /**
   * The job ended: frees its slot; `refund` also gives its credits back (refused or
   * failed at submission). Idempotent: a second call finds no entry and does nothing.
   */
  async release(input: { guildId: string; userId: string; jobId: string; refund: boolean }): Promise<void> {
    const { guildId, userId, jobId, refund } = input;
    const { kv } = this.deps;
    const entry = await kv.withLock(memberLock(guildId, userId), async () => {
      const m = await this.member(guildId, userId, this.now);
      const found = m.active[jobId];
      if (!found) return undefined;
      delete m.active[jobId];
      await this.saveMember(guildId, userId, m);
      return found;
    });
    if (!entry || !refund || entry.cost <= 0) return;
    // Its count first (a budget-free reservation counts in the background), or the refund could
    // come before what it gives back.
    await this.counting.get(jobId);
    // After the member's lock, not inside it (locks are taken server first): a crash
    // in between keeps the credits spent, never gives a job for free.
    await this.addCredits(guildId, entry.day, -entry.cost);
  }
}
