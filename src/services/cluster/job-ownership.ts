import type { LeaseOptions } from './lease-options.js';

/**
 * Who works on a job when several instances share one Redis: its owner, the
 * holder of the lease `owner:{jobId}` (value = INSTANCE_ID, PX ttlMs). Only the
 * owner polls the job and edits its Discord message, so a message never has two
 * editors and a task is never polled twice. Any instance may merge a webhook
 * into the store (compare-and-set writes keep that safe); it then tells
 * the owner over Redis pub/sub, and the owner renders the *stored* record, so the
 * latest state wins whichever instance heard of it.
 *
 * The owner renews its leases every renewMs. The set `open` lists every job whose
 * work is not done (unfinished, or final with the final edit not yet delivered);
 * every instance sweeps it every sweepMs, and a job whose owner's lease expired
 * (the instance died, at any point) is claimed by the first sweeper to get it, who
 * resumes it from the store. A job leaves `open` only once its final state is
 * delivered (or its message is gone), so a final is never lost with its owner.
 *
 * Work is shared: in gateway mode one instance receives every command and so
 * creates every job. Once a job's first edit is delivered (nothing of it queued
 * here), an instance owning 3 or more jobs more than the least busy live one hands
 * the job over: the lease moves to that instance in one Lua step and it is told over
 * pub/sub; it polls and edits from then on. Each instance heartbeats its job
 * count into `load`/`instances`; a dead one drops out after ttlMs. A handover
 * that goes wrong half-way (a crash, Redis gone) leaves an open job whose lease
 * lapses, which the sweep picks up like any other.
 *
 * Plain Redis leases rather than a queue library: the job record in the store is
 * already the queue (state, task id, timestamps), ownership must cover edits as
 * well as polls, and a lease per job is a few lines of Lua with the same
 * failure detection as a queue's stalled-job check.
 */

/** A dead owner's jobs are taken over after at most ttlMs + sweepMs. */
export interface JobOwnershipOptions extends LeaseOptions {
  sweepMs?: number;
}

export interface JobOwnershipHandlers {
  /** A job this instance just took over from a dead owner (or found unowned): resume it. */
  adopt(jobId: string): Promise<void>;
  /** Another instance changed a job this instance owns: render it again from the store. */
  changed(jobId: string, source: string): Promise<void>;
}

/**
 * GET owner; free → take it (and list the job as open). Returns {holder, taken over}:
 * a free job already listed as open was left by another instance (died or stopped).
 */
const CLAIM = `
local v = redis.call('get', KEYS[1])
if v then return {v, 0} end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
local added = redis.call('sadd', KEYS[2], ARGV[3])
redis.call('hincrby', KEYS[3], ARGV[1], 1)
return {ARGV[1], 1 - added}`;

/** Heartbeat: this instance is alive (Redis clock) with exactly this many jobs. */
const HEARTBEAT = `
local t = redis.call('time')
redis.call('zadd', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000), ARGV[1])
redis.call('hset', KEYS[2], ARGV[1], ARGV[2])
return 1`;

/**
 * The live instance with the fewest jobs when it has at least 3 fewer than we do (a
 * little slack, so instances that each create jobs do not pass them back and forth);
 * else false. Counts move with every claim, release and handover, and each heartbeat
 * sets the exact figure.
 */
const PICK = `
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for _, id in ipairs(redis.call('zrangebyscore', KEYS[1], '-inf', now - tonumber(ARGV[3]))) do
  redis.call('zrem', KEYS[1], id)
  redis.call('hdel', KEYS[2], id)
end
local best, bestLoad = false, 0
for _, id in ipairs(redis.call('zrange', KEYS[1], 0, -1)) do
  if id ~= ARGV[1] then
    local l = tonumber(redis.call('hget', KEYS[2], id) or '0') or 0
    if best == false or l < bestLoad then best, bestLoad = id, l end
  end
end
if best == false or bestLoad + 2 >= tonumber(ARGV[2]) then return false end
return best`;

/** Moves our lease to ARGV[2] (its job count goes up, ours down); 0 when the lease is not ours. */
const MOVE = `
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('hincrby', KEYS[2], ARGV[2], 1)
redis.call('hincrby', KEYS[2], ARGV[1], -1)
return 1`;

/** Renews every lease still ours; returns the job ids whose lease is not ours any more. */
const RENEW = `
local lost = {}
for i, key in ipairs(KEYS) do
  if redis.call('get', key) == ARGV[1] then redis.call('pexpire', key, ARGV[2])
  else table.insert(lost, ARGV[i + 2]) end
end
return lost`;

/** Leases renewed per RENEW script. */
const RENEW_BATCH = 250;

/** Drops the lease if it is ours; the job leaves `open` when its work is done. */
const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('hincrby', KEYS[3], ARGV[1], -1)
end
if ARGV[3] == '1' then redis.call('srem', KEYS[2], ARGV[2]) end
return 1`;

/** A stopping instance takes no more handovers. */
const LEAVE = `
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('hdel', KEYS[2], ARGV[1])
return 1`;

/** Open jobs with no owner (at most 200 per sweep). */
const ORPHANS = `
local out = {}
for _, id in ipairs(redis.call('smembers', KEYS[1])) do
  if redis.call('exists', ARGV[1] .. id) == 0 then
    table.insert(out, id)
    if #out >= 200 then break end
  end
end
return out`;

const TOOK_OVER = 'took over jobs left by another instance';
/** claim()'s answer for a job being handed over from here (not a real instance id). */
const LEAVING = '\u0000leaving';

export class JobOwnership {
  readonly instanceId: string;
  private readonly owned = new Set<string>();
  /** Jobs being handed over: not ours to edit or poll, not to be claimed back meanwhile. */
  private readonly leaving = new Set<string>();
  /** Changes that reached a leaving job: the new owner is told to show the stored state. */
  private readonly changedWhileLeaving = new Set<string>();
  private readonly ttlMs: number;
  private handlers: JobOwnershipHandlers | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private stopped = false;
  private sweeping = false;
  /** Jobs taken over through route() (a webhook reached a dead owner's job first) since the last sweep. */
  private routedTakeovers = 0;

  constructor(private readonly opts: JobOwnershipOptions) {
    this.instanceId = opts.instanceId;
    this.ttlMs = opts.ttlMs ?? 10_000;
  }

  private key(jobId: string): string {
    return `${this.opts.prefix}owner:${jobId}`;
  }
  private get openKey(): string {
    return `${this.opts.prefix}open`;
  }
  private get instancesKey(): string {
    return `${this.opts.prefix}instances`;
  }
  private get loadKey(): string {
    return `${this.opts.prefix}load`;
  }
  private channel(instanceId: string): string {
    return `${this.opts.prefix}notify:${instanceId}`;
  }

  /** Subscribes to this instance's notifications and starts renewing and sweeping. */
  async start(handlers: JobOwnershipHandlers): Promise<void> {
    this.handlers = handlers;
    this.unsubscribe = await this.opts.redis.subscribe(this.channel(this.instanceId), (message) => {
      const [jobId, source = 'bot', hops = '0'] = message.split(' ');
      if (jobId) void this.onNotified(jobId, source, Number(hops));
    });
    await this.heartbeat();
    const renewMs = this.opts.renewMs ?? Math.round(this.ttlMs / 3);
    this.renewTimer = setInterval(() => void this.renew(), renewMs);
    this.renewTimer.unref();
    const sweepMs = this.opts.sweepMs ?? Math.round(this.ttlMs / 3);
    this.sweepTimer = setInterval(() => void this.sweep(), sweepMs);
    this.sweepTimer.unref();
  }

  /** This instance owns the job (polls it, edits its message). */
  owns(jobId: string): boolean {
    return this.owned.has(jobId);
  }

  size(): number {
    return this.owned.size;
  }

  /** Takes the job if nobody owns it; resolves the owner's INSTANCE_ID. */
  async claim(jobId: string): Promise<string> {
    return (await this.claimDetailed(jobId)).holder;
  }

  private async claimDetailed(jobId: string): Promise<{ holder: string; takenOver: boolean }> {
    if (this.owned.has(jobId)) return { holder: this.instanceId, takenOver: false };
    const reply = await this.opts.redis.eval(
      CLAIM,
      [this.key(jobId), this.openKey, this.loadKey],
      [this.instanceId, String(this.ttlMs), jobId],
    );
    const [holder, takenOver] = Array.isArray(reply) ? reply : [];
    if (typeof holder !== 'string') throw new Error('unexpected claim reply');
    if (holder === this.instanceId && this.leaving.has(jobId)) {
      // Still ours in Redis for one more round trip: the handover tells the new owner.
      this.changedWhileLeaving.add(jobId);
      return { holder: LEAVING, takenOver: false };
    }
    if (holder === this.instanceId && !this.stopped) this.owned.add(jobId);
    return { holder, takenOver: holder === this.instanceId && Number(takenOver) === 1 };
  }

  /**
   * The job changed outside its owner: have the owner show it (taking the job
   * when it has none). Resolves true when this instance owns it now.
   */
  async route(jobId: string, source: string, hops = 0): Promise<boolean> {
    const { holder, takenOver } = await this.claimDetailed(jobId);
    // Counted here, logged with the sweep's: one line per takeover, whichever path found the job first.
    if (takenOver) this.routedTakeovers++;
    if (holder === this.instanceId) return true;
    if (holder === LEAVING) return false;
    await this.opts.redis.publish(this.channel(holder), `${jobId} ${source} ${hops + 1}`);
    return false;
  }

  /**
   * Hands an owned job to the least busy live instance when that evens the load out.
   * `release` is asked last, synchronously: false (an edit of the job is waiting
   * here) keeps the job. Resolves true when the job is the other instance's now.
   */
  async handOff(jobId: string, release: () => boolean): Promise<boolean> {
    if (!this.owned.has(jobId) || this.stopped) return false;
    const target = await this.opts.redis.eval(
      PICK,
      [this.instancesKey, this.loadKey],
      [this.instanceId, String(this.owned.size), String(this.ttlMs)],
    );
    if (typeof target !== 'string' || !this.owned.has(jobId) || this.stopped) return false;
    if (!release()) return false;
    this.owned.delete(jobId);
    this.leaving.add(jobId);
    try {
      const moved = await this.opts.redis.eval(
        MOVE,
        [this.key(jobId), this.loadKey],
        [this.instanceId, target, String(this.ttlMs)],
      );
      // 0: the lease had lapsed and the job is someone else's already.
      if (moved !== 1) return true;
      const source = this.changedWhileLeaving.has(jobId) ? 'handoff-changed' : 'handoff';
      await this.opts.redis.publish(this.channel(target), `${jobId} ${source} 0`);
      return true;
    } finally {
      this.leaving.delete(jobId);
      this.changedWhileLeaving.delete(jobId);
    }
  }

  /**
   * The job's work here is over: `done` (final delivered, message gone) also takes it
   * off the open list; otherwise it stays open for another instance to pick up.
   */
  async release(jobId: string, done: boolean): Promise<void> {
    this.owned.delete(jobId);
    await this.opts.redis.eval(
      RELEASE,
      [this.key(jobId), this.openKey, this.loadKey],
      [this.instanceId, jobId, done ? '1' : '0'],
    );
  }

  /** Stops renewing and sweeping; leases still held are handed back so survivors take the jobs at once. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.renewTimer);
    clearInterval(this.sweepTimer);
    const jobs = [...this.owned];
    this.owned.clear();
    await Promise.allSettled([
      ...jobs.map((id) => this.release(id, false)),
      this.opts.redis.eval(LEAVE, [this.instancesKey, this.loadKey], [this.instanceId]),
    ]);
    await this.unsubscribe?.().catch(() => undefined);
  }

  private async onNotified(jobId: string, source: string, hops: number): Promise<void> {
    if (this.stopped || !this.handlers) return;
    try {
      // The lease may have lapsed meanwhile: route() takes it again or passes the news on (bounded).
      if (!this.owned.has(jobId)) {
        if (hops >= 3 || !(await this.route(jobId, source, hops))) return;
      }
      await this.handlers.changed(jobId, source);
    } catch (err) {
      this.opts.logger.warn({ err, jobId }, 'job change notification not handled');
    }
  }

  private async heartbeat(): Promise<void> {
    try {
      await this.opts.redis.eval(
        HEARTBEAT,
        [this.instancesKey, this.loadKey],
        [this.instanceId, String(this.owned.size)],
      );
    } catch (err) {
      this.opts.logger.warn({ err }, 'could not record this instance’s load');
    }
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    await this.heartbeat();
    if (this.owned.size === 0) return;
    const ids = [...this.owned];
    try {
      // In batches: one script over 10 000 leases keeps Redis busy for its whole run, and its
      // arguments (two strings per job) outlive young-generation GCs while the reply is awaited,
      // leaving megabytes of garbage in the old generation at every renewal.
      for (let i = 0; i < ids.length && !this.stopped; i += RENEW_BATCH) {
        const batch = ids.slice(i, i + RENEW_BATCH);
        const lost = await this.opts.redis.eval(
          RENEW,
          batch.map((id) => this.key(id)),
          [this.instanceId, String(this.ttlMs), ...batch],
        );
        if (!Array.isArray(lost)) continue;
        for (const id of lost) {
          if (typeof id !== 'string') continue;
          // Paused past the lease (or Redis lost it): another instance may own it now.
          this.owned.delete(id);
          this.opts.logger.warn({ jobId: id }, 'job lease lost; another instance takes the job over');
        }
      }
    } catch (err) {
      this.opts.logger.warn({ err }, 'could not renew job leases');
    }
  }

  /** Claims open jobs whose owner is gone and resumes them. */
  async sweep(): Promise<number> {
    if (this.stopped || this.sweeping || !this.handlers) return 0;
    this.sweeping = true;
    let adopted = 0;
    const viaChanges = this.routedTakeovers;
    this.routedTakeovers = 0;
    if (viaChanges > 0) this.opts.logger.info({ adopted: viaChanges, via: 'change' }, TOOK_OVER);
    try {
      const orphans = await this.opts.redis.eval(ORPHANS, [this.openKey], [`${this.opts.prefix}owner:`]);
      if (!Array.isArray(orphans)) return 0;
      for (const id of orphans) {
        if (typeof id !== 'string' || this.stopped) continue;
        if ((await this.claim(id)) !== this.instanceId) continue;
        adopted++;
        await this.handlers.adopt(id).catch(async (err: unknown) => {
          this.opts.logger.warn({ err, jobId: id }, 'could not resume an adopted job; handing it back');
          await this.release(id, false).catch(() => undefined);
        });
      }
      if (adopted > 0) this.opts.logger.info({ adopted, via: 'sweep' }, TOOK_OVER);
    } catch (err) {
      this.opts.logger.warn({ err }, 'job sweep failed');
    } finally {
      this.sweeping = false;
    }
    return adopted;
  }
}
