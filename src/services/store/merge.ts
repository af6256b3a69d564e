import type { FinalState, JobRecord, JobState, JobUpdate } from './types.js';

/**
 * Monotonic merge of a job update into a job record.
 *
 * Rules (each one is a max/first-wins over a total order, so the final record
 * does not depend on the order updates arrive in, as long as event times are
 * plausible, i.e. the terminal update is not older than the events before it):
 *
 * - state only moves up: submitting(0) < queued(1) < processing(2) < finished|failed(3).
 *   `unconfirmed` (rank 0) is reachable from `submitting` only; anything of rank 1 or
 *   more moves on from it. A terminal job never changes again; the first terminal
 *   state wins.
 * - waitingUntil (a 429 being waited out) is the latest given, and goes once the
 *   job moves past `submitting`.
 * - finalShown, messageGone, settled, galleryPost, tokenRefused (→ tokenRefusedAt), dmNotice
 *   (→ dmNoticeAt) and dmRefused are bookkeeping set once, even on a terminal job: a new
 *   object comes back with `changed: false` (persisted; the edit drivers act on them).
 * - removed (a moderator's take-down) and textWithheld (AutoMod refused the member's text)
 *   are set once, even on a terminal job, and are shown: `changed: true` and a version bump.
 * - percentage = max(old, new), an integer clamped to 0..100; 100 on `finished`.
 * - taskId and message.messageId are set once; an update naming another task id is
 *   ignored entirely (it is about another task), a later different message id too.
 * - statusText: the text of the highest (state rank, at, text) seen, where an update
 *   without a state ranks 0. So a stale lower-state update never replaces the text
 *   of a higher-state one, and within a state the latest event wins, whatever the
 *   arrival order. (Filtering on the job's *current* state instead would make the
 *   result depend on whether a text-less state change arrived first.)
 * - result only with `finished`, error only with `failed`, finishedAt = that update's `at`.
 * - lastEventAt = max of `at`s; updatedAt = max(updatedAt, at) and version + 1 when
 *   something visible changed (not for lastEventAt/statusAt/statusRank alone).
 *
 * Returns the same object when nothing at all changed. When only bookkeeping moved
 * (lastEventAt, or statusAt/statusRank for a re-delivered identical text), a new
 * object comes back with `changed: false` (worth persisting, not worth a Discord
 * edit or a version bump).
 */
export function mergeJob(
  job: JobRecord,
  update: JobUpdate,
  opts: {
    /**
     * The caller keeps event times apart (the store's memo): when only lastEventAt would
     * move, the same object comes back with `eventAt`, not a copy of the record. A webhook
     * storm is mostly such re-deliveries, and each copy was garbage at once.
     */
    eventsApart?: boolean;
  } = {},
): { job: JobRecord; changed: boolean; eventAt?: number } {
  const at = update.at;
  if (!Number.isFinite(at)) throw new TypeError(`JobUpdate.at must be a finite number, got ${String(at)}`);
  if (update.removed && job.removed === undefined) {
    const base = markJob(job, update);
    return {
      job: {
        ...base,
        removed: { at, by: update.removed.by },
        updatedAt: Math.max(job.updatedAt, at),
        version: job.version + 1,
      },
      changed: true,
    };
  }
  if (update.textWithheld && job.textWithheld !== true) {
    return {
      job: {
        ...markJob(job, update),
        textWithheld: true,
        updatedAt: Math.max(job.updatedAt, at),
        version: job.version + 1,
      },
      changed: true,
    };
  }
  if (
    update.finalShown ||
    update.messageGone ||
    update.settled ||
    update.galleryPost ||
    update.tokenRefused ||
    update.dmNotice ||
    update.dmRefused
  ) {
    const marked = markJob(job, update);
    if (marked !== job) return { job: marked, changed: false };
  }
  if (isFinal(job.state)) return { job, changed: false };
  // A result of another task (a poll, a Refresh or a webhook naming a task this job is not):
  // nothing of it is this job's.
  if (update.taskId !== undefined && job.taskId !== undefined && update.taskId !== job.taskId) {
    return { job, changed: false };
  }

  // Each field's merged value first, the record copied only once something differs:
  // most of a webhook storm is re-deliveries, which change nothing a member sees.
  const updateRank = update.state === undefined ? undefined : stateRank(update.state);
  const state =
    update.state !== undefined &&
    updateRank !== undefined &&
    (updateRank > stateRank(job.state) || (update.state === 'unconfirmed' && job.state === 'submitting'))
      ? update.state
      : job.state;
  const waiting = waitingOf(job, update, state);
  const incoming = normalizePercentage(update.percentage);
  const percentage = state === 'finished' ? 100 : clampPercentage(Math.max(job.percentage, incoming ?? 0));
  const newTaskId =
    job.taskId === undefined && update.taskId !== undefined && update.taskId !== ''
      ? update.taskId
      : undefined;
  const textRank = updateRank ?? 0;
  const newText =
    update.statusText !== undefined && isLaterStatus(textRank, at, update.statusText, job)
      ? update.statusText
      : undefined;
  const final = isFinal(state);
  const newMessageId =
    job.message.messageId === undefined && update.messageId !== undefined && update.messageId !== ''
      ? update.messageId
      : undefined;
  const thread = job.reply === undefined ? update.thread : undefined;
  const lastEventAt = Math.max(job.lastEventAt ?? Number.NEGATIVE_INFINITY, at);

  // What a user can see (or what ends the job): worth a version bump and an edit.
  const changed =
    state !== job.state ||
    percentage !== job.percentage ||
    newTaskId !== undefined ||
    (newText !== undefined && newText !== job.statusText) ||
    final ||
    newMessageId !== undefined ||
    thread !== undefined ||
    waiting !== job.waitingUntil;

  if (!changed) {
    // Bookkeeping only (a re-delivery observed later: same text, newer `at`): keep
    // it so later comparisons stay order-independent, but report no change.
    const textMoved = newText !== undefined && (at !== job.statusAt || textRank !== job.statusRank);
    if (lastEventAt === job.lastEventAt && !textMoved) return { job, changed: false };
    if (!textMoved && opts.eventsApart === true) return { job, changed: false, eventAt: lastEventAt };
    const kept: JobRecord = { ...job, lastEventAt };
    if (textMoved) {
      kept.statusAt = at;
      kept.statusRank = textRank;
    }
    return { job: kept, changed: false };
  }

  const next: JobRecord = { ...job, message: { ...job.message }, state, percentage };
  if (newTaskId !== undefined) next.taskId = newTaskId;
  if (newText !== undefined) {
    next.statusText = newText;
    next.statusAt = at;
    next.statusRank = textRank;
  }
  if (final) {
    next.finishedAt = at;
    if (state === 'finished' && update.result !== undefined) next.result = update.result;
    if (state === 'failed' && update.error !== undefined) next.error = update.error;
  }
  if (newMessageId !== undefined) next.message.messageId = newMessageId;
  if (newMessageId !== undefined && update.followUp && next.message.interaction)
    next.message.interaction = { ...next.message.interaction, messageId: newMessageId };
  if (thread !== undefined) {
    next.message = thread.message;
    next.reply = thread.reply;
  }
  if (waiting === undefined) delete next.waitingUntil;
  else next.waitingUntil = waiting;
  next.lastEventAt = lastEventAt;
  next.updatedAt = Math.max(job.updatedAt, at);
  next.version = job.version + 1;
  return { job: next, changed: true };
}

/** A 429 is waited out while the job is still being submitted; any later state ends the wait. */
function waitingOf(job: JobRecord, update: JobUpdate, state: JobState): number | undefined {
  if (state !== 'submitting') return undefined;
  return update.waitingUntil ?? job.waitingUntil;
}

/** Sets the bookkeeping flags an update carries (once each); the same object when none is new. */
function markJob(job: JobRecord, update: JobUpdate): JobRecord {
  const finalShown = update.finalShown === true && job.finalShownAt === undefined;
  const gone = update.messageGone === true && job.messageGone !== true;
  const settled = update.settled === true && job.settledAt === undefined;
  const post = update.galleryPost !== undefined && job.galleryPost === undefined;
  const refused = update.tokenRefused === true && job.tokenRefusedAt === undefined;
  const notice = update.dmNotice === true && job.dmNoticeAt === undefined;
  const noDm = update.dmRefused === true && job.dmRefused !== true;
  if (!finalShown && !gone && !settled && !post && !refused && !notice && !noDm) return job;
  const next: JobRecord = { ...job };
  if (refused) next.tokenRefusedAt = update.at;
  if (notice) next.dmNoticeAt = update.at;
  if (noDm) next.dmRefused = true;
  if (finalShown) next.finalShownAt = update.at;
  if (gone) next.messageGone = true;
  if (settled) next.settledAt = update.at;
  if (post && update.galleryPost) next.galleryPost = { ...update.galleryPost };
  return next;
}

const RANK: Readonly<Record<JobState, number>> = {
  submitting: 0,
  unconfirmed: 0,
  queued: 1,
  processing: 2,
  finished: 3,
  failed: 3,
};

export function stateRank(state: JobState): number {
  return RANK[state];
}

/** The one test of a job being over (finished or failed): nothing changes its state again. */
export function isFinal(state: JobState): state is FinalState {
  return RANK[state] === 3;
}

/** Integer 0..100, or undefined for a missing or non-finite value. */
export function normalizePercentage(value: number | undefined): number | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  return clampPercentage(value);
}

function clampPercentage(value: number): number {
  return Math.min(100, Math.max(0, Math.round(value)));
}

/** Is (rank, at, text) greater than the job's current status text key? */
function isLaterStatus(rank: number, at: number, text: string, job: JobRecord): boolean {
  if (job.statusText === undefined) return true;
  const currentRank = job.statusRank ?? 0;
  if (rank !== currentRank) return rank > currentRank;
  const currentAt = job.statusAt ?? Number.NEGATIVE_INFINITY;
  if (at !== currentAt) return at > currentAt;
  return text > job.statusText;
}

/**
 * A job nobody needs to look at again: settled (its after-final work done) and its
 * final shown, or no message to show it in. It leaves the open set then.
 */
export function isClosed(job: JobRecord): boolean {
  if (job.settledAt === undefined) return false;
  const noMessage = job.message.messageId === undefined && job.message.interaction === undefined;
  return job.finalShownAt !== undefined || job.messageGone === true || job.dmRefused === true || noMessage;
}
