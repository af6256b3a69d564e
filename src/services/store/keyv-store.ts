import type { Logger } from 'pino';
import { z } from 'zod';
import {
  CORRUPT,
  openBackend,
  type Backend,
  type BackendKind,
  type RecordWrite,
  type RedisClient,
} from './backend.js';
import { describeError, StoreUnavailableError } from './errors.js';
import { isClosed, isFinal, mergeJob } from './merge.js';
import { KeyedMutex } from './mutex.js';
import { jobRecordSchemaOf, type JobOperations } from './schema.js';
import type {
  ApplyOptions,
  ApplyResult,
  AtomicKeyValueStore,
  JobRecord,
  JobStore,
  JobUpdate,
  KvClaim,
  KvDecision,
  SortedIndexStore,
} from './types.js';

/**
 * Job store and small KV space on Keyv (Redis when a URL is given, else SQLite).
 *
 * Key layout (inside the namespace; Redis: `${ns}::key`, SQLite: `${ns}:key`):
 *   job:{jobId}     JobRecord (JSON)      TTL unfinishedTtlMs while unfinished (from the
 *                                         last write), jobTtlMs once finished/failed
 *   task:{taskId}   jobId                 same TTL as its job
 *   msg:{messageId} jobId                 its message, channel reply and gallery post; same TTL
 *   user-jobs:{userId}  sorted index (score createdAt): every job of the member, pruned by
 *                       the retention sweep and /privacy delete (older versions kept a bounded
 *                       JSON list at user:{userId}, still read until it expires)
 *   ended               sorted index (score finishedAt): final jobs, for the retention sweep
 *   open jobs       (not yet closed: unfinished, or final with its final edit or after-final
 *                   work still to do) on Redis a native set `unfinished-set` (atomic add/remove:
 *                   instances never queue on one list's lock); on SQLite the sorted index
 *                   `open` (older versions kept a JSON list at `unfinished`, moved on read)
 *   kv:{key}        any JSON              caller's TTL
 *   idx:{key}       sorted index          other services' (Stores.indexes), no expiry
 *
 * Every backend call is bounded by opTimeoutMs and turned into StoreUnavailableError
 * on failure. Read-modify-writes of one key are serialised by an in-process keyed
 * mutex and, on Redis, made atomic across processes without a lock: job records by
 * compare-and-set writes (KeyvJobStore.apply), kv keys by `update` (one compare-and-set
 * over every key read) and `claim` (SET NX PX), so several bot instances sharing one
 * Redis never lose each other's updates and never wait on each other's lock. The other
 * job indexes are native sets (add/remove, no read-modify-write).
 */

export interface StoreOptions {
  /** `redis://` / `rediss://`; absent: SQLite at `${dataDir}/bot.sqlite`. */
  redisUrl?: string | undefined;
  dataDir: string;
  /** Finished/failed jobs and their task index. Default 30 days. */
  jobTtlMs?: number;
  /** Jobs not yet final (counted from their last write). Default 7 days. */
  unfinishedTtlMs?: number;
  /** Jobs remembered per user. Default 50. */
  userListLimit?: number;
  /** Bound on every backend call. Default 2000. */
  opTimeoutMs?: number;
  /**
   * Bound on waiting for a key's in-process turn, and on a kv `update` that other instances'
   * writes keep refusing. Default 5 × opTimeoutMs.
   */
  lockWaitMs?: number;
  /** Key namespace. Default `mjb`. */
  namespace?: string;
  /**
   * A re-delivery's time (it changes nothing else) is written once the stored one is this
   * much older, so the keeper of another instance, which does not see this one's memo,
   * knows the webhooks still come. Default 15 s; the app uses a third of WEBHOOK_SILENCE_MS.
   */
  eventWriteMs?: number;
  /** The operations a job may be of and their results' schemas (the registry's: `jobOperations`). */
  operations: JobOperations;
  logger: Logger;
}

export interface Stores {
  jobs: JobStore;
  kv: AtomicKeyValueStore;
  /** Sorted indexes for other services (keys `idx:{key}`, no expiry). */
  indexes: SortedIndexStore;
  backend: BackendKind;
  /** The Redis connection (Redis only): the multi-instance coordination shares it. */
  redis?: RedisClient;
  /** Closes the backend connection (idempotent; `jobs.close()` does the same). */
  close(): Promise<void>;
}

const DAY_MS = 86_400_000;
const UNFINISHED_KEY = 'unfinished';
/** Redis: the unfinished-job index as a native set (see Backend.sets). */
const UNFINISHED_SET = 'unfinished-set';
/** Records read at once when listing unfinished jobs. */
const LIST_BATCH = 100;
const idListSchema = z.array(z.string());
const jobKey = (jobId: string): string => `job:${jobId}`;
const taskKey = (taskId: string): string => `task:${taskId}`;
const messageKey = (messageId: string): string => `msg:${messageId}`;
/** Every Discord message of a job (its message, channel reply, gallery post), for getByMessageId. */
const messageIds = (job: JobRecord): string[] =>
  [job.message.messageId, job.reply?.messageId, job.galleryPost?.messageId].filter(
    (id): id is string => id !== undefined && id !== '',
  );
/** Whether two versions of a job name the same messages (no message index to write). */
const sameMessageIds = (a: JobRecord, b: JobRecord): boolean =>
  a.message.messageId === b.message.messageId &&
  a.reply?.messageId === b.reply?.messageId &&
  a.galleryPost?.messageId === b.galleryPost?.messageId;
/** Older versions' bounded JSON list of a member's jobs (read until it expires). */
const legacyUserKey = (userId: string): string => `user:${userId}`;
const userJobsKey = (userId: string): string => `user-jobs:${userId}`;
const ENDED = 'ended';
/** SQLite: the open jobs' sorted index (Redis keeps its native set). */
const OPEN_INDEX = 'open';
const kvKey = (key: string): string => `kv:${key}`;

export async function createStores(opts: StoreOptions): Promise<Stores> {
  const opTimeoutMs = positive(opts.opTimeoutMs, 2_000, 'opTimeoutMs');
  const config: CoreConfig = {
    jobTtlMs: positive(opts.jobTtlMs, 30 * DAY_MS, 'jobTtlMs'),
    unfinishedTtlMs: positive(opts.unfinishedTtlMs, 7 * DAY_MS, 'unfinishedTtlMs'),
    userListLimit: positive(opts.userListLimit, 50, 'userListLimit'),
    opTimeoutMs,
    lockWaitMs: positive(opts.lockWaitMs, 5 * opTimeoutMs, 'lockWaitMs'),
    eventWriteMs: positive(opts.eventWriteMs, 15_000, 'eventWriteMs'),
    jobSchema: jobRecordSchemaOf(opts.operations),
  };
  const { logger } = opts;
  const reporter = new ErrorReporter(logger);
  let backend: Backend;
  try {
    backend = await openBackend({
      redisUrl: opts.redisUrl,
      dataDir: opts.dataDir,
      namespace: opts.namespace ?? 'mjb',
      opTimeoutMs,
      logger,
      onError: (source, error) => reporter.report(source, error),
    });
  } catch (error) {
    throw new StoreUnavailableError(`store could not be opened: ${describeError(error).message}`, {
      cause: error,
    });
  }
  const core = new StoreCore(backend, config, logger, reporter);
  logger.info({ backend: backend.kind }, 'store opened');
  return {
    jobs: new KeyvJobStore(core),
    kv: new KeyvKeyValueStore(core),
    indexes: new KeyvSortedIndexes(core),
    backend: backend.kind,
    ...(backend.redis ? { redis: backend.redis } : {}),
    close: () => core.close(),
  };
}

interface CoreConfig {
  jobTtlMs: number;
  unfinishedTtlMs: number;
  userListLimit: number;
  opTimeoutMs: number;
  lockWaitMs: number;
  eventWriteMs: number;
  /** Checks every job record read back and written. */
  jobSchema: ReturnType<typeof jobRecordSchemaOf>;
}

/** Timeouts, locks, validation and error mapping shared by both stores. */
class StoreCore {
  readonly #locks = new KeyedMutex();
  readonly #inflight = new Set<Promise<unknown>>();
  #closing: Promise<void> | undefined;

  constructor(
    readonly backend: Backend,
    readonly config: CoreConfig,
    readonly logger: Logger,
    readonly reporter: ErrorReporter,
  ) {}

  /**
   * Runs one backend call, bounded by opTimeoutMs. Any failure (driver error,
   * timeout, closed store) becomes StoreUnavailableError; `secrets` are scrubbed
   * from the message and cause.
   */
  call<T>(op: string, fn: () => Promise<T>, secrets: readonly string[] = []): Promise<T> {
    if (this.#closing) return Promise.reject(new StoreUnavailableError(`store ${op} failed: store closed`));
    // One promise, one timer and one settle path per call (every store operation passes here:
    // a storm makes thousands a second; a race against a second promise cost twice the objects).
    return new Promise<T>((resolve, reject) => {
      let work: Promise<T>;
      try {
        work = fn();
      } catch (error) {
        work = Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
      this.#inflight.add(work);
      let settled = false;
      const fail = (error: unknown): void => {
        if (settled) return; // a late failure after the timeout: already reported as the timeout
        settled = true;
        try {
          reject(this.unavailable(op, error, secrets));
        } catch (reporting) {
          // Describing or reporting the error failed: the call still fails, never hangs.
          reject(reporting);
        }
      };
      const timer = setTimeout(
        () => fail(new OpTimeoutError(this.config.opTimeoutMs)),
        this.config.opTimeoutMs,
      );
      const done = (): void => {
        this.#inflight.delete(work);
        clearTimeout(timer);
      };
      work.then(
        (value) => {
          done();
          if (settled) return;
          settled = true;
          resolve(value);
        },
        (error: unknown) => {
          done();
          fail(error);
        },
      );
    });
  }

  /** A failed call as StoreUnavailableError (reported; `secrets` scrubbed from message and cause). */
  private unavailable(op: string, error: unknown, secrets: readonly string[]): StoreUnavailableError {
    const { message } = describeError(error, secrets);
    this.reporter.report(`op:${op}`, error, secrets);
    const cause = secrets.some((s) => s !== '' && rawMessage(error).includes(s)) ? new Error(message) : error;
    return new StoreUnavailableError(`store ${op} failed: ${message}`, { cause });
  }

  /** Is a read-modify-write of `key` running (or queued) in this process? */
  isLocked(key: string): boolean {
    return this.#locks.isHeld(key);
  }

  /**
   * Serialises read-modify-writes of `key` within this process (callers queue FIFO). Across
   * processes, job records are written with compare-and-set (see KeyvJobStore.apply); the
   * other job keys need no more (native sets and sorted indexes, written without a read).
   */
  withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const busy = () =>
      new StoreUnavailableError(
        `store busy: waited over ${this.config.lockWaitMs}ms for ${key.split(':')[0]}`,
      );
    return this.#locks.run(key, fn, this.config.lockWaitMs, busy);
  }

  /**
   * Holds the in-process mutexes of every key, taken in the order given (see
   * AtomicKeyValueStore.update: one order everywhere, so no two holders wait on each other).
   */
  holdAll<T>(keys: readonly string[], fn: () => Promise<T>, busy: () => Error): Promise<T> {
    const sorted = [...new Set(keys)];
    const hold = (i: number): Promise<T> => {
      const key = sorted[i];
      if (key === undefined) return fn();
      return this.#locks.run(key, () => hold(i + 1), this.config.lockWaitMs, busy);
    };
    return hold(0);
  }

  async get(op: string, key: string): Promise<unknown> {
    return this.call(op, () => this.backend.get(key));
  }

  async set(op: string, key: string, value: unknown, ttlMs: number | undefined, secrets?: readonly string[]) {
    await this.call(op, () => this.backend.set(key, value, ttlMs), secrets);
  }

  async delete(op: string, key: string): Promise<void> {
    await this.call(op, () => this.backend.delete(key));
  }

  corrupt(key: string, detail: string): void {
    this.reporter.report(
      'read',
      new Error(`corrupt record at ${key} ignored (${detail})`),
      [],
      'store: corrupt record ignored',
    );
  }

  async readJob(jobId: string): Promise<JobRecord | undefined> {
    return (await this.readJobForUpdate(jobId))?.job;
  }

  /**
   * The record with the exact text it is stored as (Redis), for a compare-and-set
   * write; on SQLite (one process, in-process lock) the text is not needed. On Redis
   * every read goes this way, a plain GET and decode without Keyv's layers (each keeper
   * check reads a record: restart recovery makes thousands a minute).
   */
  async readJobForUpdate(jobId: string): Promise<Remembered | undefined> {
    const key = jobKey(jobId);
    const { cas } = this.backend;
    if (!cas) {
      const job = this.parseJob(key, jobId, await this.get('get', key));
      return job && { job };
    }
    const stored = await this.call('get', () => cas.read(key));
    const job = this.parseJob(key, jobId, stored?.value);
    return job && stored && { job, raw: stored.raw };
  }

  /** Writes `job` if its stored text is still `expected`: the new text, or undefined on a conflict. */
  async writeJobIfUnchanged(job: JobRecord, expected: string): Promise<string | undefined> {
    const { cas } = this.backend;
    if (!cas) throw new Error('compare-and-set needs the Redis backend');
    return this.call(
      'apply',
      () => cas.write(jobKey(job.id), job, this.jobTtl(job), expected),
      jobSecrets(job),
    );
  }

  private parseJob(key: string, jobId: string, raw: unknown): JobRecord | undefined {
    if (raw === undefined || raw === null) return undefined;
    if (raw === CORRUPT) {
      this.corrupt(key, 'not JSON');
      return undefined;
    }
    const parsed = this.config.jobSchema.safeParse(raw);
    if (!parsed.success) {
      this.corrupt(key, summarizeIssues(parsed.error));
      return undefined;
    }
    if (parsed.data.id !== jobId) {
      this.corrupt(key, 'id mismatch');
      return undefined;
    }
    return parsed.data;
  }

  async readIdList(key: string): Promise<string[]> {
    const raw = await this.get('get', key);
    if (raw === undefined || raw === null) return [];
    const parsed = idListSchema.safeParse(raw);
    if (!parsed.success) {
      this.corrupt(key, raw === CORRUPT ? 'not JSON' : summarizeIssues(parsed.error));
      return [];
    }
    return parsed.data;
  }

  /** Adds a job to the open index: a set op on Redis, a sorted-index row on SQLite (no lock either way). */
  async addUnfinished(jobId: string, createdAt: number): Promise<void> {
    const { sets, sorted } = this.backend;
    if (sets) await this.call('index', () => sets.add(UNFINISHED_SET, jobId, this.config.unfinishedTtlMs));
    else await this.call('index', () => sorted.add(OPEN_INDEX, jobId, createdAt));
  }

  /** Drops jobs from the open index: one set op on Redis, one indexed delete on SQLite. */
  async removeUnfinished(...jobIds: string[]): Promise<void> {
    if (jobIds.length === 0) return;
    const { sets, sorted } = this.backend;
    if (sets) await this.call('index', () => sets.remove(UNFINISHED_SET, jobIds));
    else await this.call('index', () => sorted.remove(OPEN_INDEX, jobIds));
  }

  jobTtl(job: JobRecord): number {
    return isFinal(job.state) ? this.config.jobTtlMs : this.config.unfinishedTtlMs;
  }

  async ping(): Promise<void> {
    await this.call('ping', () => this.backend.ping());
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Let calls already running finish (they are bounded), then drop the connection.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.#inflight]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, this.config.opTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
      try {
        await this.backend.close();
      } catch (error) {
        this.reporter.report('close', error);
      }
      this.logger.info('store closed');
    })();
    return this.#closing;
  }
}

/**
 * Records `apply` wrote or read in the last few seconds, so during a burst of webhooks
 * for a job it merges onto the record it already has instead of reading it back:
 * one round trip and one parse less per webhook. Writes are serialised in-process by
 * the keyed mutex; on Redis other instances may have written since, so the entry
 * keeps the exact stored text and `apply` writes with compare-and-set against it: a
 * stale entry costs one conflict and a fresh read, never a lost update. Entries live
 * RECENT_MS after their last write or re-delivery (never past the record's own TTL);
 * a failed or conflicting write drops the entry.
 */
const RECENT_MS = 15_000;
/** Compare-and-set attempts of one apply before the store is reported busy. */
const CAS_ATTEMPTS = 8;
const CONFLICT: unique symbol = Symbol('store.conflict');
const RECENT_MAX = 5_000;

/** A record as this process last saw it, with its stored text on Redis. */
interface Remembered {
  readonly job: JobRecord;
  readonly raw?: string | undefined;
  /** Latest event time of re-deliveries since `job` (merged into the next write). */
  readonly eventAt?: number | undefined;
}

interface RecentEntry {
  job: JobRecord;
  raw: string | undefined;
  until: number;
  /** How long the entry lives after its last use (RECENT_MS, never past the record's TTL). */
  lifeMs: number;
  eventAt: number | undefined;
}

class RecentRecords {
  private readonly map = new Map<string, RecentEntry>();
  /** The entry itself (read-only): no copy per webhook. */
  get(id: string): Remembered | undefined {
    const hit = this.map.get(id);
    if (!hit) return undefined;
    if (Date.now() > hit.until) {
      this.map.delete(id);
      return undefined;
    }
    return hit;
  }
  /**
   * Remembers the record as last read or written. `create` false (a poll's record, which
   * no re-delivery follows): only an entry already there is kept current; none is made.
   */
  set(job: JobRecord, raw: string | undefined, ttlMs: number, create = true): Remembered {
    if (!create && !this.map.has(job.id)) return { job, raw };
    if (this.map.size >= RECENT_MAX) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.delete(job.id);
    const lifeMs = Math.min(RECENT_MS, ttlMs);
    const entry: RecentEntry = { job, raw, until: Date.now() + lifeMs, lifeMs, eventAt: undefined };
    this.map.set(job.id, entry);
    return entry;
  }
  /**
   * A re-delivery seen at `at`: kept as a number beside the remembered record, not as
   * a new copy of it (a storm would otherwise keep a fresh record per delivery alive
   * for the old generation to collect). It keeps the entry alive like a write would,
   * so the time is not dropped before the next write carries it.
   */
  noteEvent(id: string, at: number): void {
    const hit = this.map.get(id);
    if (!hit) return;
    if (hit.eventAt === undefined || at > hit.eventAt) hit.eventAt = at;
    hit.until = Date.now() + hit.lifeMs;
  }
  delete(id: string): void {
    this.map.delete(id);
  }
}

/** An update naming another task than the one the job already has (merge ignores it). */
function conflictingTaskId(job: JobRecord, update: JobUpdate): boolean {
  return update.taskId !== undefined && job.taskId !== undefined && update.taskId !== job.taskId;
}

class KeyvJobStore implements JobStore {
  private readonly recent = new RecentRecords();
  constructor(private readonly core: StoreCore) {}

  async create(job: JobRecord): Promise<void> {
    const { core } = this;
    const record = validateForWrite(core.config.jobSchema, job, 'create');
    const secrets = jobSecrets(record);
    const { sorted } = core.backend;
    await core.withLock(jobKey(record.id), async () => {
      // The record goes first, answered before any index is sent: an id found in an index
      // always has its record written already (openPages prunes ids without one). Sent in one
      // round trip, Keyv's write of the record could reach Redis after the indexes.
      await core.set('create', jobKey(record.id), record, core.jobTtl(record), secrets);
      try {
        // The indexes are independent of each other: written at once (one round trip on Redis).
        const userTtl = core.config.jobTtlMs + core.config.unfinishedTtlMs;
        await Promise.all([
          ...(record.taskId !== undefined
            ? [core.set('create', taskKey(record.taskId), record.id, core.jobTtl(record))]
            : []),
          ...messageIds(record).map((id) =>
            core.set('create', messageKey(id), record.id, core.jobTtl(record)),
          ),
          core.call('index', () =>
            sorted.add(userJobsKey(record.userId), record.id, record.createdAt, userTtl),
          ),
          ...(isFinal(record.state)
            ? [core.call('index', () => sorted.add(ENDED, record.id, record.finishedAt ?? record.updatedAt))]
            : []),
          ...(isClosed(record) ? [] : [core.addUnfinished(record.id, record.createdAt)]),
        ]);
      } catch (error) {
        // Half-indexed: undo the record (best effort) so the caller's retry starts clean.
        await core.delete('create-undo', jobKey(record.id)).catch(() => undefined);
        throw error;
      }
    });
  }

  get(jobId: string): Promise<JobRecord | undefined> {
    return this.core.readJob(jobId);
  }

  async getByTaskId(taskId: string): Promise<JobRecord | undefined> {
    const job = await this.byIndex(taskKey(taskId));
    return job?.taskId === taskId ? job : undefined;
  }

  async getByMessageId(messageId: string): Promise<JobRecord | undefined> {
    const job = await this.byIndex(messageKey(messageId));
    return job && messageIds(job).includes(messageId) ? job : undefined;
  }

  /** The job an index key names (undefined when absent or not a job id). */
  private async byIndex(key: string): Promise<JobRecord | undefined> {
    const { core } = this;
    const jobId = await core.get('get', key);
    if (jobId === undefined || jobId === null) return undefined;
    if (typeof jobId !== 'string') {
      core.corrupt(key, 'not a job id');
      return undefined;
    }
    return core.readJob(jobId);
  }

  apply(jobId: string, update: JobUpdate, opts?: ApplyOptions): Promise<ApplyResult | undefined> {
    const { core } = this;
    const remember = opts?.remember ?? true;
    return core.withLock(jobKey(jobId), async () => {
      // Redis: compare-and-set, so a record another instance wrote since we read it (or
      // since our memo of it) is read again and merged again, never overwritten.
      for (let attempt = 1; ; attempt++) {
        let seen = this.recent.get(jobId);
        if (seen === undefined) {
          const read = await core.readJobForUpdate(jobId);
          if (read === undefined) return undefined;
          // Remembered as read: the re-deliveries that follow need no read, and their
          // time has an entry to ride on until the next write.
          seen = this.recent.set(read.job, read.raw, core.jobTtl(read.job), remember);
        }
        const merged = this.merge(jobId, seen, update);
        if (!merged.write) return merged.outcome;
        const outcome = await this.write(jobId, seen, merged.outcome, remember);
        if (outcome !== CONFLICT) return outcome;
        this.recent.delete(jobId);
        if (attempt >= CAS_ATTEMPTS) {
          throw new StoreUnavailableError(`store busy: job ${jobId} kept changing under ${attempt} writes`);
        }
      }
    });
  }

  unwrittenEventAt(jobId: string): number | undefined {
    return this.recent.get(jobId)?.eventAt;
  }

  applyInMemory(jobId: string, update: JobUpdate): ApplyResult | undefined {
    // Only while no apply of this job is between its read and its write: that one's
    // merge would not see this update, and this one not its result.
    if (this.core.isLocked(jobKey(jobId))) return undefined;
    const seen = this.recent.get(jobId);
    if (seen === undefined) return undefined;
    // A conflicting taskId is apply's to report.
    if (conflictingTaskId(seen.job, update)) return undefined;
    const merged = this.merge(jobId, seen, update);
    return merged.write ? undefined : merged.outcome;
  }

  /**
   * Merges `update` onto what was seen. Without a write when nothing changed, or when
   * only lastEventAt moved (a re-delivery: most of a webhook storm): that is
   * informational, so the memo carries it to the next write (the memo keeps the
   * stored record and text, so that write still compares against what is stored).
   * Synchronous: a re-delivery costs no promise here.
   */
  private merge(
    jobId: string,
    seen: Remembered,
    update: JobUpdate,
  ): { write: boolean; outcome: ApplyResult } {
    const { core } = this;
    const current = seen.job;
    const { job: mergedJob, changed, eventAt } = mergeJob(current, update, { eventsApart: true });
    const merged: ApplyResult = { job: mergedJob, changed, before: current.state };
    if (conflictingTaskId(current, update)) {
      core.logger.warn(
        { jobId, taskId: current.taskId, ignoredTaskId: update.taskId },
        'store: conflicting taskId ignored',
      );
    }
    const next = merged.job;
    if (next === current) {
      if (eventAt !== undefined) {
        const heard = Math.max(eventAt, seen.eventAt ?? Number.NEGATIVE_INFINITY);
        if (heard - (current.lastEventAt ?? current.updatedAt) >= core.config.eventWriteMs) {
          // Now and then it is written: other instances' keepers read it from the store.
          const stamped: JobRecord = { ...current, lastEventAt: heard };
          return { write: true, outcome: { ...merged, job: stamped } };
        }
        // A re-delivery: its time is kept beside the remembered record for the next write.
        this.recent.noteEvent(jobId, eventAt);
      }
      return { write: false, outcome: merged };
    }
    const marked =
      next.finalShownAt !== current.finalShownAt ||
      next.settledAt !== current.settledAt ||
      next.messageGone !== current.messageGone ||
      next.galleryPost !== current.galleryPost ||
      next.tokenRefusedAt !== current.tokenRefusedAt ||
      next.dmNoticeAt !== current.dmNoticeAt ||
      next.dmRefused !== current.dmRefused;
    if (
      !merged.changed &&
      !marked &&
      next.statusAt === current.statusAt &&
      next.statusRank === current.statusRank
    ) {
      if (next.lastEventAt !== undefined) this.recent.noteEvent(jobId, next.lastEventAt);
      return { write: false, outcome: merged };
    }
    // `next` is a new object of this merge's own: the re-deliveries' time goes in with it.
    if (seen.eventAt !== undefined && seen.eventAt > (next.lastEventAt ?? Number.NEGATIVE_INFINITY)) {
      next.lastEventAt = seen.eventAt;
    }
    return { write: true, outcome: merged };
  }

  /** Stores a merged record (compare-and-set against what was seen, on Redis). */
  private async write(
    jobId: string,
    seen: Remembered,
    merged: ApplyResult,
    remember: boolean,
  ): Promise<ApplyResult | typeof CONFLICT> {
    const { core } = this;
    const current = seen.job;
    // The merge of a validated record with a typed update stays valid: no second parse on the hot path.
    const { job: record, changed } = merged;
    const becameFinal = !isFinal(current.state) && isFinal(record.state);
    const becameClosed = !isClosed(current) && isClosed(record);
    // The task and message indexes (at once) before the record: a failed record write is
    // retried whole (the retry sees the new ids as new again).
    let raw: string | undefined;
    try {
      const indexes: Promise<void>[] = [];
      if (record.taskId !== undefined && (record.taskId !== current.taskId || becameFinal)) {
        indexes.push(core.set('apply', taskKey(record.taskId), record.id, core.jobTtl(record)));
      }
      // Most writes (a storm's progress) index nothing: no set, no lists, no Promise.all for them.
      if (becameFinal || !sameMessageIds(current, record)) {
        const known = messageIds(current);
        for (const id of messageIds(record)) {
          if (becameFinal || !known.includes(id))
            indexes.push(core.set('apply', messageKey(id), record.id, core.jobTtl(record)));
        }
      }
      if (indexes.length > 0) await Promise.all(indexes);
      if (seen.raw !== undefined) {
        raw = await core.writeJobIfUnchanged(record, seen.raw);
        if (raw === undefined) return CONFLICT;
      } else {
        await core.set('apply', jobKey(record.id), record, core.jobTtl(record), jobSecrets(record));
      }
    } catch (error) {
      this.recent.delete(jobId);
      throw error;
    }
    this.recent.set(record, raw, core.jobTtl(record), remember);
    // Neither index below makes the caller retry (the record is stored; the retry would be a
    // no-op and hide the change): the sweep's and openPages' own checks and the record's TTL
    // are the backstop.
    const indexing: Promise<void>[] = [];
    if (becameFinal) {
      // The retention sweep finds it by its end.
      const endedAt = record.finishedAt ?? record.updatedAt;
      indexing.push(
        core
          .call('index', () => core.backend.sorted.add(ENDED, record.id, endedAt))
          .catch((error: unknown) =>
            core.logger.warn({ jobId, error: describeError(error) }, 'store: could not index an ended job'),
          ),
      );
    }
    if (becameClosed) {
      indexing.push(
        core
          .removeUnfinished(jobId)
          .catch((error: unknown) =>
            core.logger.warn(
              { jobId, error: describeError(error) },
              'store: could not drop a settled job from the open set',
            ),
          ),
      );
    }
    // Redis answers one connection's commands in order: whatever is read after this returns
    // sees both indexes, so the caller does not wait for them. SQLite runs statements on the
    // thread pool in no set order: a sweep or a listing right after could miss them, so it waits.
    if (!core.backend.cas) await Promise.all(indexing);
    return { job: record, changed, before: current.state };
  }

  async listByUser(userId: string, limit?: number): Promise<JobRecord[]> {
    const { core } = this;
    const max = Math.max(0, Math.floor(limit ?? core.config.userListLimit));
    const indexed = await core.call('list', () =>
      core.backend.sorted.range(userJobsKey(userId), { rev: true, limit: max }),
    );
    const legacy = indexed.length < max ? await core.readIdList(legacyUserKey(userId)) : [];
    const ids = [...new Set([...indexed, ...legacy])];
    const jobs = await this.readUserJobs(userId, ids);
    return jobs.sort((a, b) => b.createdAt - a.createdAt).slice(0, max);
  }

  /** The member's records among `ids`; index entries whose record expired are pruned on the way. */
  private async readUserJobs(userId: string, ids: readonly string[]): Promise<JobRecord[]> {
    const { core } = this;
    const read = await Promise.all(ids.map(async (id) => ({ id, job: await core.readJob(id) })));
    const gone = read.filter((r) => r.job === undefined).map((r) => r.id);
    if (gone.length > 0) {
      await core
        .call('index', () => core.backend.sorted.remove(userJobsKey(userId), gone))
        .catch(() => undefined);
    }
    return read.flatMap((r) => (r.job !== undefined && r.job.userId === userId ? [r.job] : []));
  }

  async *userPages(userId: string): AsyncGenerator<JobRecord[], void, undefined> {
    const { core } = this;
    const legacy = await core.readIdList(legacyUserKey(userId));
    for (let offset = 0; ; offset += LIST_BATCH) {
      const ids = await core.call('list', () =>
        core.backend.sorted.range(userJobsKey(userId), { rev: true, offset, limit: LIST_BATCH }),
      );
      const page = offset === 0 ? [...new Set([...ids, ...legacy])] : ids;
      const records = (await Promise.all(page.map((id) => core.readJob(id)))).filter(
        (job): job is JobRecord => job !== undefined && job.userId === userId,
      );
      if (records.length > 0) yield records;
      if (ids.length < LIST_BATCH) return;
    }
  }

  async clearUserIndex(userId: string): Promise<void> {
    const { core } = this;
    const left = await core.call('list', () =>
      core.backend.sorted.range(userJobsKey(userId), { limit: Number.MAX_SAFE_INTEGER }),
    );
    await core.call('index', () => core.backend.sorted.remove(userJobsKey(userId), left));
    await core.delete('delete', legacyUserKey(userId));
  }

  async delete(jobId: string): Promise<JobRecord | undefined> {
    const { core } = this;
    return core.withLock(jobKey(jobId), async () => {
      const job = await core.readJob(jobId);
      this.recent.delete(jobId);
      await core.delete('delete', jobKey(jobId));
      if (job?.taskId !== undefined) await core.delete('delete', taskKey(job.taskId));
      for (const id of job ? messageIds(job) : []) await core.delete('delete', messageKey(id));
      const { sorted } = core.backend;
      if (job) await core.call('index', () => sorted.remove(userJobsKey(job.userId), [jobId]));
      await core.call('index', () => sorted.remove(ENDED, [jobId]));
      await core.removeUnfinished(jobId);
      return job;
    });
  }

  async sweepEnded(endedBefore: number, pageSize = 500): Promise<number> {
    const { core } = this;
    let deleted = 0;
    for (;;) {
      const ids = await core.call('list', () =>
        core.backend.sorted.range(ENDED, { before: endedBefore, limit: pageSize }),
      );
      for (const id of ids) {
        await this.delete(id);
        deleted++;
      }
      if (ids.length < pageSize) return deleted;
    }
  }

  async listOpen(): Promise<JobRecord[]> {
    const all: JobRecord[] = [];
    for await (const page of this.openPages()) all.push(...page);
    return all;
  }

  /**
   * The ids are read in the index's in-process turn (a legacy JSON list left by an older
   * version moves into the index here; two instances moving it at once add the same ids,
   * which the set and the sorted index take once); the records are then read and handed out a page at
   * a time. A restart with thousands of jobs thus never holds every record at once: held
   * together, they all outlived young-generation GCs and were left in the old generation
   * as garbage once recovery was done (~25 MiB of heap, and RSS, with 10 000 jobs).
   * Expired, corrupt or closed jobs met on the way leave the index.
   */
  async *openPages(): AsyncGenerator<JobRecord[], void, undefined> {
    const { core } = this;
    const { sets, sorted } = core.backend;
    const ids = await core.withLock(UNFINISHED_KEY, async () => {
      // An older version's JSON list moves into the index the first time it is read.
      const legacy = await core.readIdList(UNFINISHED_KEY);
      const indexed = sets
        ? await core.call('list', () => sets.members(UNFINISHED_SET))
        : await core.call('list', () => sorted.range(OPEN_INDEX, { limit: Number.MAX_SAFE_INTEGER }));
      const inIndex = new Set(indexed);
      const moved = legacy.filter((id) => !inIndex.has(id));
      for (const id of moved) await core.addUnfinished(id, 0);
      if (legacy.length > 0) await core.delete('delete', UNFINISHED_KEY);
      return [...indexed, ...moved];
    });
    for (let i = 0; i < ids.length; i += LIST_BATCH) {
      const page = ids.slice(i, i + LIST_BATCH);
      const records = await Promise.all(page.map((id) => core.readJob(id)));
      const live: JobRecord[] = [];
      const gone: string[] = [];
      page.forEach((id, k) => {
        const job = records[k];
        if (job !== undefined && !isClosed(job)) live.push(job);
        else gone.push(id);
      });
      await core.removeUnfinished(...gone);
      if (live.length > 0) yield live;
    }
  }

  ping(): Promise<void> {
    return this.core.ping();
  }

  close(): Promise<void> {
    return this.core.close();
  }
}

class KeyvKeyValueStore implements AtomicKeyValueStore {
  constructor(private readonly core: StoreCore) {}

  /** A kv value as read: CORRUPT is reported and counts as absent. */
  private value(key: string, raw: unknown): unknown {
    if (raw === CORRUPT) {
      this.core.corrupt(key, 'not JSON');
      return undefined;
    }
    return raw === null ? undefined : raw;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const raw = await this.core.get('kv-get', kvKey(key));
    if (raw === CORRUPT) {
      this.core.corrupt(kvKey(key), 'not JSON');
      return undefined;
    }
    return raw === null ? undefined : (raw as T | undefined);
  }

  async set(key: string, value: unknown, ttlMs: number): Promise<void> {
    checkKvWrite(value, ttlMs);
    await this.core.set('kv-set', kvKey(key), value, ttlMs);
  }

  async delete(key: string): Promise<void> {
    await this.core.delete('kv-delete', kvKey(key));
  }

  /**
   * See AtomicKeyValueStore.update. The keys' in-process mutexes come first (callers of one
   * process queue instead of failing each other's compare-and-set); on Redis the write is one
   * compare-and-set over every key read, tried again from a fresh read when another instance
   * wrote one of them meanwhile (lock-free: a conflict means that writer made progress).
   */
  update<T>(
    keys: readonly string[],
    decide: (values: readonly unknown[]) => Promise<KvDecision<T>> | KvDecision<T>,
  ): Promise<T> {
    const { lockWaitMs } = this.core.config;
    const full = keys.map(kvKey);
    const busy = () =>
      new StoreUnavailableError(`store busy: waited over ${lockWaitMs}ms to update ${keys.join(', ')}`);
    const toWrite = (d: KvDecision<T>): RecordWrite[] =>
      (d.writes ?? []).map((w) => {
        if (!keys.includes(w.key)) throw new Error(`kv update: ${w.key} was not read`);
        if ('delete' in w) return { key: kvKey(w.key), delete: true };
        checkKvWrite(w.value, w.ttlMs);
        return { key: kvKey(w.key), value: w.value, ttlMs: w.ttlMs };
      });
    return this.core.holdAll(
      full,
      async () => {
        const { backend } = this.core;
        const { cas } = backend;
        if (!cas) {
          // SQLite: one process, and its mutexes are held: read, decide, one statement.
          const values: unknown[] = [];
          for (const k of full) values.push(this.value(k, await this.core.get('kv-get', k)));
          const decision = await decide(values);
          const writes = toWrite(decision);
          if (writes.length > 0) {
            await this.core.call('kv-update', async () => {
              if (!backend.setMany) throw new Error('this backend cannot write several keys at once');
              await backend.setMany(writes);
            });
          }
          return decision.result;
        }
        const deadline = Date.now() + lockWaitMs;
        for (;;) {
          const read = await this.core.call('kv-get', () => cas.readMany(full));
          const decision = await decide(read.map((r, i) => this.value(full[i] ?? '', r.value)));
          const writes = toWrite(decision);
          // Nothing to write: the decision stands on one consistent read (MGET).
          if (writes.length === 0) return decision.result;
          const expected = read.map((r) => r.raw);
          if (await this.core.call('kv-update', () => cas.writeMany(full, expected, writes)))
            return decision.result;
          if (Date.now() > deadline) throw busy();
        }
      },
      busy,
    );
  }

  /**
   * See AtomicKeyValueStore.claim. On SQLite the key's in-process mutex is held around the
   * statement, so a claim never lands between an `update`'s read and its write there (on
   * Redis that update's compare-and-set sees the claim and decides again).
   */
  async claim(key: string, value: unknown, ttlMs: number): Promise<KvClaim> {
    checkKvWrite(value, ttlMs);
    const full = kvKey(key);
    const { backend, config } = this.core;
    const run = async (): Promise<KvClaim> => {
      const got = await this.core.call('kv-claim', () => backend.claim(full, value, ttlMs));
      return got.won ? got : { won: false, holder: this.value(full, got.holder) };
    };
    if (backend.kind === 'redis') return run();
    const busy = () =>
      new StoreUnavailableError(`store busy: waited over ${config.lockWaitMs}ms to claim ${key}`);
    return this.core.holdAll([full], run, busy);
  }
}

class KeyvSortedIndexes implements SortedIndexStore {
  constructor(private readonly core: StoreCore) {}

  async add(key: string, member: string, score: number): Promise<void> {
    const { sorted } = this.core.backend;
    await this.core.call('index', () => sorted.add(`idx:${key}`, member, score));
  }

  async remove(key: string, members: readonly string[]): Promise<void> {
    if (members.length === 0) return;
    const { sorted } = this.core.backend;
    await this.core.call('index', () => sorted.remove(`idx:${key}`, members));
  }

  range(key: string, opts: { rev?: boolean; offset?: number; limit: number }): Promise<string[]> {
    const { sorted } = this.core.backend;
    return this.core.call('list', () => sorted.range(`idx:${key}`, opts));
  }
}

/**
 * Logs backend errors at warn without flooding: each distinct error (name and
 * message, whichever call or event it came from) is logged once, then at most
 * once per window with a count of the repeats skipped meanwhile. A down Redis
 * thus costs a handful of lines per window, not one per call.
 */
class ErrorReporter {
  readonly #seen = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly windowMs = 30_000,
  ) {}

  report(source: string, error: unknown, secrets: readonly string[] = [], msg = 'store backend error'): void {
    const err = describeError(error, secrets);
    const key = `${err.name}|${err.message}`;
    const now = Date.now();
    const entry = this.#seen.get(key);
    if (entry !== undefined && now - entry.at < this.windowMs) {
      entry.suppressed += 1;
      return;
    }
    if (this.#seen.size >= 200) this.#seen.clear();
    this.#seen.set(key, { at: now, suppressed: 0 });
    this.logger.warn({ source, error: err, suppressed: entry?.suppressed ?? 0 }, msg);
  }
}

class OpTimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms}ms`);
    this.name = 'TimeoutError';
  }
}

function rawMessage(error: unknown): string {
  if (error instanceof Error) return `${error.message} ${rawMessage(error.cause ?? '')}`;
  return typeof error === 'string' ? error : '';
}

function jobSecrets(job: JobRecord): string[] {
  const token = job.message.interaction?.token;
  return token === undefined ? [job.secret] : [job.secret, token];
}

function validateForWrite(schema: CoreConfig['jobSchema'], job: JobRecord, op: string): JobRecord {
  const parsed = schema.safeParse(job);
  if (!parsed.success)
    throw new TypeError(`store ${op}: invalid job record (${summarizeIssues(parsed.error)})`);
  return parsed.data;
}

/** Paths and codes only: zod messages could quote values. */
function summarizeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.code}`)
    .join(', ');
}

/** What every kv write (set, update, claim) must carry: a value, and a TTL that expires it. */
function checkKvWrite(value: unknown, ttlMs: number): void {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0)
    throw new RangeError(`kv ttlMs must be a positive number, got ${ttlMs}`);
  if (value === undefined) throw new TypeError('kv value must not be undefined (use delete)');
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  return value;
}
