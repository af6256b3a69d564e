import type { Operation, TaskOutputs } from '../media/types.js';
import type { MessageRef, PostedMessage } from '../shared/message-ref.js';

/**
 * `submitting`: stored, service call not answered yet (the webhook may beat the
 * response). `unconfirmed`: the call went out but its answer was lost (a timeout, a
 * reset, a proxy's 502): the service may have taken it, so it is neither sent again
 * nor failed; a webhook at the job's URL confirms it, or it fails after the job's
 * maximum duration. `queued`: the service accepted it. `finished`/`failed` are final.
 */
export type JobState = 'submitting' | 'unconfirmed' | 'queued' | 'processing' | 'finished' | 'failed';
/** The states nothing changes again (store/merge.ts isFinal tells them). */
export type FinalState = Extract<JobState, 'finished' | 'failed'>;

export interface JobError {
  /** Stable identifier, e.g. `service_rejected`, `service_auth`, `timed_out`, `restart_during_submit`. */
  code: string;
  /** Text meant for the user (the service's `errors[].msg` joined, or our explanation). */
  message: string;
  details?: string[];
}

export interface GalleryPostRef extends PostedMessage {
  /** A forum or media channel's post: the thread the message starts. */
  threadId?: string;
}

export interface JobRecord {
  id: string;
  /** Per-job webhook secret (hex). Never logged. */
  secret: string;
  operation: Operation;
  userId: string;
  message: MessageRef;
  /**
   * With a thread per job: the public reply in the channel (one short line linking the
   * thread, edited to the final state at the end), while `message` is the live one in the thread.
   */
  reply?: MessageRef;
  /** What was submitted, as shown to the user (no secrets, no image bytes). */
  params: Record<string, string | number | boolean | string[]>;
  /** The server's language (Discord's guild_locale) when the job started: its public messages speak it. */
  locale?: string;
  taskId?: string;
  /** Credits the job costs (CREDIT_COSTS), shown while it waits. */
  cost?: number;
  state: JobState;
  percentage: number;
  /** Latest status text from the service (upload). */
  statusText?: string;
  /**
   * `at` and state rank (0..3; 0 for an update without a state) of the update
   * that set `statusText`: "latest text wins" compares these instead of arrival
   * order, so out-of-order deliveries converge (see ./merge.ts).
   */
  statusAt?: number;
  statusRank?: number;
  result?: TaskOutputs;
  error?: JobError;
  createdAt: number;
  updatedAt: number;
  submittedAt?: number;
  finishedAt?: number;
  /** Last webhook or successful poll. */
  lastEventAt?: number;
  /** The service answered 429: the submission waits until then (shown on the message). */
  waitingUntil?: number;
  /** The final state reached the job's message (or the message is gone): no more edits. */
  finalShownAt?: number;
  /** The job's message was deleted or is out of reach: edits stopped. */
  messageGone?: boolean;
  /** The after-final work (fair-use slot, refund, gallery, thread) is done: the job leaves the open set. */
  settledAt?: number;
  /** Its post in the server's gallery channel: a message, or a forum/media post (`threadId`). */
  galleryPost?: GalleryPostRef;
  /** Taken down by a moderator (Remove result): shown as removed everywhere, never posted again. */
  removed?: { at: number; by: string };
  /** Discord's AutoMod refused text made from the member's input: public renders leave it out. */
  textWithheld?: boolean;
  /**
   * A personal job (a user install used where the server never installed the bot, or a
   * DM): the bot is not in its channel, so its message is edited through the interaction
   * only, and its final goes to the member by DM once the token is past its use.
   */
  personal?: true;
  /**
   * Discord refused the job's interaction token (401, 50027): no one uses it again
   * (Discord bans an IP after 10,000 invalid requests in 10 minutes).
   */
  tokenRefusedAt?: number;
  /** A personal job's message said that its result will come by DM (its token was ending). */
  dmNoticeAt?: number;
  /** The member's DMs are closed (50007): a personal job's result could not be sent, it stays in /tasks. */
  dmRefused?: true;
  /** Bumped on every change. */
  version: number;
}

/** A change proposed by a webhook, a poll, a submit response or the bot itself. */
export interface JobUpdate {
  state?: JobState;
  percentage?: number;
  taskId?: string;
  statusText?: string;
  result?: TaskOutputs;
  error?: JobError;
  messageId?: string;
  followUp?: true;
  /** Moves the live message into the job's thread (once): see JobRecord.reply. */
  thread?: { message: MessageRef; reply: MessageRef };
  /** 429 from the service: waiting until then (cleared by any later state). */
  waitingUntil?: number;
  /**
   * Bookkeeping set once, even on a final job (never shown, never a version bump):
   * the final reached the message, the message is gone, the after-final work is done.
   */
  finalShown?: true;
  messageGone?: true;
  settled?: true;
  /** Bookkeeping set once: where the gallery post went. */
  galleryPost?: GalleryPostRef;
  /** A moderator took the result down (set once, even on a final job; shown). */
  removed?: { by: string };
  /** AutoMod refused member-written text in a message or thread name (set once, even on a final job; shown). */
  textWithheld?: true;
  /**
   * Bookkeeping set once, even on a final job (never a version bump): the interaction
   * token was refused, the "result by DM" notice is due, the DM was refused (50007).
   */
  tokenRefused?: true;
  dmNotice?: true;
  dmRefused?: true;
  /** Epoch ms the event was observed. */
  at: number;
}

export interface ApplyResult {
  job: JobRecord;
  /** The job's state before this update. */
  before?: JobState;
  /** False when the update was a duplicate or would have moved the job backwards. */
  changed: boolean;
}

export interface ApplyOptions {
  /**
   * Keep the record in the store's short memo of recent records (default true), so the
   * re-deliveries that usually follow a webhook are merged without a read. A poll
   * result has none to follow: false saves the memo entry, which otherwise outlives
   * young-generation GCs (thousands of polled jobs: megabytes of old-generation garbage).
   */
  remember?: boolean;
}

/** Durable job state. Every method throws StoreUnavailableError when the backend is down. */
export interface JobStore {
  /** Stores a new job and indexes it (user list, unfinished set, task index when taskId is set). */
  create(job: JobRecord): Promise<void>;
  get(jobId: string): Promise<JobRecord | undefined>;
  getByTaskId(taskId: string): Promise<JobRecord | undefined>;
  /** The job whose message, channel reply or gallery post has this id (Remove result). */
  getByMessageId(messageId: string): Promise<JobRecord | undefined>;
  /**
   * Applies an update through the monotonic merge (see ./merge.ts), serialised per
   * job within the process. Indexes task_id on first sight; drops the job from the
   * unfinished set when it becomes final. `undefined` when the job is unknown.
   */
  apply(jobId: string, update: JobUpdate, opts?: ApplyOptions): Promise<ApplyResult | undefined>;
  /**
   * `apply` decided from memory, synchronously, when it can be: the job's record is
   * remembered from a recent read or write, nobody is applying to it right now, and
   * the update changes nothing worth storing (a re-delivery, most of a webhook storm).
   * `changed` is then always false. `undefined`: call `apply`.
   */
  applyInMemory?(jobId: string, update: JobUpdate): ApplyResult | undefined;
  /**
   * The latest event time this process has seen for the job and not written yet (the
   * re-deliveries `applyInMemory` absorbed), if any: a job whose service keeps re-sending
   * the same webhook is not silent.
   */
  unwrittenEventAt?(jobId: string): number | undefined;
  /** The member's most recent jobs first, at most `limit` (default 50). */
  listByUser(userId: string, limit?: number): Promise<JobRecord[]>;
  /** Every job of the member, newest first, a page at a time (/privacy export and delete). */
  userPages(userId: string): AsyncIterable<JobRecord[]>;
  /** Forgets the member's job index (after their jobs were deleted: /privacy delete). */
  clearUserIndex(userId: string): Promise<void>;
  /** Deletes a job and every index entry of it; resolves with what it was (or undefined). */
  delete(jobId: string): Promise<JobRecord | undefined>;
  /** Deletes every job that ended before `endedBefore` (retention), a page at a time; resolves with how many. */
  sweepEnded(endedBefore: number, pageSize?: number): Promise<number>;
  /** Every open job (not yet settled: unfinished, or final with work left), all at once (tests, tools). */
  listOpen(): Promise<JobRecord[]>;
  /**
   * Every open job, a page (at most 100) at a time, for restart recovery: only one page
   * of records is alive at once, however many jobs there are.
   */
  openPages(): AsyncIterable<JobRecord[]>;
  /** Resolves when the backend answers; throws StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Small TTL'd key/value space beside the jobs (training-photo sessions, etc.). */
export interface KeyValueStore {
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
}

/** What an atomic update writes to one of the keys it read: a value with its TTL, or its deletion. */
export type KvWrite = { key: string; value: unknown; ttlMs: number } | { key: string; delete: true };

/** A claim's answer: this caller holds the key now, or what another caller stored there (see `claim`). */
export type KvClaim = { won: true } | { won: false; holder: unknown };

/**
 * The store's KV space with its two atomic primitives, and no lock: `claim` for a one-shot
 * "first caller wins" (an interaction, an export slot), `update` for every read-modify-write
 * (fair use, credits, settings, sessions, leases carrying a fencing token). Neither waits for
 * another holder: a lost claim answers who holds the key, a lost compare-and-set decides again
 * on what the winner wrote.
 */
export interface AtomicKeyValueStore extends KeyValueStore {
  /**
   * Stores `value` under `key` for `ttlMs` only if the key holds nothing live (absent,
   * expired or unreadable), atomically across every process sharing the store: the first
   * caller wins, every later one gets `won: false` with what the key holds (`holder`:
   * undefined only when it expired in between). Redis: SET NX PX, with the holder read in
   * the same Lua step (`lua/claim.lua`); SQLite: one INSERT .. ON CONFLICT DO UPDATE that
   * replaces only an expired row. Never waits. A claimed key is then changed through
   * `update` (or `set`/`delete` by its holder).
   */
  claim(key: string, value: unknown, ttlMs: number): Promise<KvClaim>;
  /**
   * Reads `keys` (undefined: absent), lets `decide` choose what to write, and writes it only
   * if none of the keys changed since they were read; on a change it reads and decides again
   * (so `decide` must have no effect beyond its answer). Redis: one Lua compare-and-set over
   * every key (`lua/cas-set-many.lua`); SQLite (one process): the keys' in-process mutexes,
   * then one multi-row statement (atomic against other updates: write such keys through
   * `update` only). No lock and no lease: a caller paused between its read and
   * its write (a GC pause, a stopped VM) finds its write refused instead of overwriting what
   * another instance reserved meanwhile. `writes` may name only keys that were read. The keys'
   * in-process mutexes are taken in the order given: list a member's own record before shared
   * counters, in one order everywhere, so a caller waiting for a busy member holds nothing
   * others need. A write `{ key, delete: true }` deletes the key (in the same atomic step).
   * Throws StoreUnavailableError when the backend is down, or when other writers kept winning
   * for the lock wait.
   */
  update<T>(
    keys: readonly string[],
    decide: (values: readonly unknown[]) => Promise<KvDecision<T>> | KvDecision<T>,
  ): Promise<T>;
}

export interface KvDecision<T> {
  result: T;
  writes?: readonly KvWrite[];
}

/**
 * Sorted indexes beside the jobs for other services (a member's public posts, which
 * outlive the job records): member → score, read in score order, a page at a time.
 */
export interface SortedIndexStore {
  add(key: string, member: string, score: number): Promise<void>;
  remove(key: string, members: readonly string[]): Promise<void>;
  /** Members in score order (`rev`: highest first), paged. */
  range(key: string, opts: { rev?: boolean; offset?: number; limit: number }): Promise<string[]>;
}
