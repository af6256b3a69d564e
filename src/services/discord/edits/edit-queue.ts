import { DiscordAPIError, HTTPError, RateLimitError } from '@discordjs/rest';
import type { Logger } from 'pino';
import { MemoryChannelBudget, type ChannelBudget } from './channel-budget.js';
import { AUTOMOD_CODES, type DiscordTransport, type MessagePayload } from '../discord-transport.js';

export type { ChannelBudget, EditKind } from './channel-budget.js';

/**
 * Coalesced, rate-budgeted edits of every message the bot keeps up to date (job
 * messages, training-session messages): the one edit path to Discord.
 *
 * - Per message (key = jobId or any stable id): at most one edit in flight; the
 *   newest pushed state replaces the queued one, so intermediate progress may be
 *   skipped; once a final state is pushed nothing replaces it and it is retried.
 * - Route: interaction webhook while its token is fresh (its own budget per
 *   interaction, ~5 / 5 s, kept here per message), else the channel message edit
 *   with the bot token (one budget per channel, behind `ChannelBudget` so several
 *   instances can share it).
 * - Finals first, fast: on both routes progress edits leave `finalReserve` slots
 *   of every window free, so a final goes out as soon as it is pushed; on a
 *   channel no progress is sent while any final of that channel waits.
 * - Windows are counted from Discord's answer, not from the send, so latency can
 *   never squeeze one edit too many into Discord's window (0 429s).
 * - One wake-up timer for the whole queue; every push / completion / timer runs
 *   `pump()`, which scans the waiting messages and sends what the budgets allow.
 */

export type EditRoute = 'interaction' | 'channel';
export type EditOutcome =
  'ok' | 'rate_limited' | 'gone' | 'token_invalid' | 'old_message' | 'invalid' | 'error';

/** Where a message lives and how it can be edited (a job's JobMessageRef is one). */
export interface EditMessageRef {
  channelId: string;
  /** Needed for the channel route (bot token). */
  messageId?: string;
  /** Interaction webhook that posted the message; `messageId` set for a follow-up, else `@original`. */
  interaction?: { applicationId: string; token: string; createdAt: number; messageId?: string };
}

export interface EditRequest {
  /** The message's key in the queue: a job id, or any id stable for that one message. */
  jobId: string;
  ref: EditMessageRef;
  /** Epoch ms the message was created (for the 1 h old-message rule on the channel route). */
  messageCreatedAt: number;
  /**
   * The message body, or a function rendering it. A function is only called when
   * the state is actually sent, so states superseded in the queue cost nothing.
   */
  payload: MessagePayload | (() => MessagePayload);
  final: boolean;
  /** Called (besides `onMessageGone`) when this message turns out deleted or inaccessible. */
  onGone?: (reason: string) => void;
  /**
   * Discord's AutoMod refused this body (200000, 200001): the caller renders the message
   * again without the member's text and pushes it. Without it, the refusal is an invalid edit.
   */
  onAutoMod?: () => void;
}

export interface EditQueueOptions {
  /** Interaction tokens live 15 min; stop using them a bit earlier. */
  interactionFreshMs: number;
  /** Interaction route budget: `interactionLimit` edits per `interactionWindowMs` per message. */
  interactionLimit: number;
  interactionWindowMs: number;
  /** Channel route budget (used when no `channelBudget` is passed in). */
  channelLimit: number;
  channelWindowMs: number;
  /** Slots per window that progress edits leave for finals, on each route. */
  finalReserve: number;
  /** Interaction route: minimum gap between two progress edits of a message (a bar moves steadily, not in bursts). */
  progressIntervalMs: number;
  /** Channel route: messages older than this only get their final state (Discord error 30046). */
  oldMessageMs: number;
  /** Failed attempts (5xx, network, 30046) tolerated per progress state before dropping it (finals never give up). */
  finalRetryLimit: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_EDIT_QUEUE_OPTIONS: Readonly<EditQueueOptions> = {
  interactionFreshMs: 14 * 60_000,
  interactionLimit: 5,
  interactionWindowMs: 5000,
  channelLimit: 5,
  channelWindowMs: 5000,
  finalReserve: 2,
  progressIntervalMs: 1000,
  oldMessageMs: 3_600_000,
  finalRetryLimit: 8,
  baseBackoffMs: 1000,
  maxBackoffMs: 60_000,
};

export interface EditQueueDeps {
  transport: DiscordTransport;
  logger: Logger;
  /** Channel route budget; default an in-process one from the options. */
  channelBudget?: ChannelBudget;
  /** Clock (epoch ms). Timers are the global ones, so vitest fake timers drive both. */
  now?: () => number;
  /** Jitter source in [0, 1). */
  random?: () => number;
  /** The message is gone (deleted, no access): the caller may stop tracking the job's message. */
  onMessageGone?: (jobId: string, reason: string) => void;
  /** A state reached Discord; `pushedAt` lets the caller measure latency. */
  onDelivered?: (jobId: string, info: { final: boolean; route: EditRoute; pushedAt: number }) => void;
  metrics?: {
    editsSent: (route: EditRoute, outcome: EditOutcome) => void;
    queueDepth?: (n: number) => void;
  };
  options?: Partial<EditQueueOptions>;
}

/** Discord error codes meaning the message can never be edited again. */
const GONE_CODES: ReadonlyMap<number, string> = new Map([
  [10008, 'unknown_message'],
  [10003, 'unknown_channel'],
  [50001, 'missing_access'],
  [50013, 'missing_permissions'],
]);
/** Interaction token expired/invalid → use the channel route instead. */
const INVALID_WEBHOOK_TOKEN = 50027;
const UNKNOWN_WEBHOOK = 10015;
const OLD_MESSAGE_EDIT_LIMIT = 30046;
/** Forget jobs that ended (final delivered / message gone) after this long; late duplicate pushes are ignored meanwhile. */
const ENDED_TTL_MS = 6 * 3_600_000;
/** Forget idle, never-finished slots (abandoned jobs) after this long. */
const IDLE_TTL_MS = 6 * 3_600_000;

interface QueuedState {
  payload: MessagePayload | (() => MessagePayload);
  final: boolean;
  pushedAt: number;
  /** Failed attempts of this state (5xx, network, 30046); not 429s, which are not failures. */
  attempts: number;
}

interface Waiting {
  slot: Slot;
  state: QueuedState;
  target: Extract<Target, { route: 'channel' }>;
}

type Target =
  | { route: 'interaction'; applicationId: string; token: string; messageId?: string }
  | { route: 'channel'; channelId: string; messageId: string };

interface Slot {
  jobId: string;
  ref: EditMessageRef;
  onGone: ((reason: string) => void) | undefined;
  onAutoMod: (() => void) | undefined;
  messageCreatedAt: number;
  /** Latest state not yet sent (the in-flight one is held by its request). */
  pending: QueuedState | undefined;
  /** When `pending` went from empty to set: "oldest waiting" order on a channel. */
  waitingSince: number;
  inFlight: boolean;
  /** A final was pushed: later pushes are ignored. */
  finalSeen: boolean;
  lastSentAt: number;
  /** Interaction route: answer times of this message's edits within the window (oldest first). */
  interactionDone: number[];
  /** Backoff / retry_after for this message. */
  notBefore: number;
  /** Consecutive failures of this message, drives the backoff exponent. */
  failures: number;
  /** Discord rejected the interaction token: channel route from now on. */
  interactionDead: boolean;
  touchedAt: number;
}

export type Failure =
  | { kind: 'rate_limited'; retryAfterMs: number; global: boolean }
  | { kind: 'gone'; reason: string }
  | { kind: 'token_invalid' }
  | { kind: 'old_message' }
  | { kind: 'automod'; code: number }
  | { kind: 'invalid'; code: number | string; message: string }
  | { kind: 'transient'; message: string };

/** The metric label of an edit's outcome (an AutoMod refusal counts as invalid). */
export function editOutcome(r: { kind: 'ok' } | Failure): EditOutcome {
  if (r.kind === 'transient') return 'error';
  if (r.kind === 'automod') return 'invalid';
  return r.kind;
}

export class EditQueue {
  private readonly opts: EditQueueOptions;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly slots = new Map<string, Slot>();
  private readonly budget: ChannelBudget;
  /** Channels whose dispatch loop is running (an async budget may answer later). */
  private readonly lanes = new Set<string>();
  /** Channels pushed to while their lane ran: pump again when it ends. */
  private readonly laneDirty = new Set<string>();
  /** jobId → ended at. Insertion order is chronological, so pruning stops at the first live entry. */
  private readonly ended = new Map<string, number>();
  private wakeTimer: ReturnType<typeof setTimeout> | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private pumpQueued = false;
  private closed = false;
  private readonly drainWaiters = new Set<{ done: (ok: boolean) => void }>();

  constructor(private readonly deps: EditQueueDeps) {
    this.opts = { ...DEFAULT_EDIT_QUEUE_OPTIONS, ...deps.options };
    this.now = deps.now ?? Date.now;
    this.random = deps.random ?? Math.random;
    this.budget =
      deps.channelBudget ??
      new MemoryChannelBudget({
        limit: this.opts.channelLimit,
        windowMs: this.opts.channelWindowMs,
        finalReserve: this.opts.finalReserve,
      });
  }

  push(req: EditRequest): void {
    if (this.closed) return;
    const t = this.now();
    this.pruneEnded(t);
    // After a final (or once the message is gone) nothing may overwrite the message.
    if (this.ended.has(req.jobId)) return;
    let slot = this.slots.get(req.jobId);
    if (!slot) {
      slot = {
        jobId: req.jobId,
        ref: req.ref,
        onGone: req.onGone,
        onAutoMod: req.onAutoMod,
        messageCreatedAt: req.messageCreatedAt,
        pending: undefined,
        waitingSince: t,
        inFlight: false,
        finalSeen: false,
        lastSentAt: Number.NEGATIVE_INFINITY,
        interactionDone: [],
        notBefore: 0,
        failures: 0,
        interactionDead: false,
        touchedAt: t,
      };
      this.slots.set(req.jobId, slot);
    }
    if (slot.finalSeen) return;
    // The latest ref wins: the messageId may only be known after the first edit.
    slot.ref = req.ref;
    if (req.onGone) slot.onGone = req.onGone;
    slot.onAutoMod = req.onAutoMod;
    slot.messageCreatedAt = req.messageCreatedAt;
    slot.touchedAt = t;
    const replaced = slot.pending !== undefined;
    if (!replaced) slot.waitingSince = t;
    slot.pending = { payload: req.payload, final: req.final, pushedAt: t, attempts: 0 };
    if (req.final) slot.finalSeen = true;
    // A progress state replacing a waiting one changes nothing the scheduler decided (the
    // wake-up, the lane or the completion of the edit in flight will pick it up): no scan.
    // Under a storm this skips almost every pump.
    if (!replaced || req.final) this.schedulePump();
  }

  /**
   * Whether a state pushed now for this message would be sent rather than dropped
   * by the routing rules (a fresh interaction token, or a message id and, for a
   * non-final, a message younger than the old-message limit).
   */
  editable(ref: EditMessageRef, messageCreatedAt: number, final: boolean): boolean {
    const t = this.now();
    if (ref.interaction && t - ref.interaction.createdAt < this.opts.interactionFreshMs) return true;
    if (!ref.messageId) return false;
    return final || t - messageCreatedAt < this.opts.oldMessageMs;
  }

  /**
   * Stops editing this message through `key` (another key takes it over): the
   * queued state is dropped and later pushes are ignored. An edit already in
   * flight still lands.
   */
  forget(key: string): void {
    const slot = this.slots.get(key);
    if (slot) {
      slot.pending = undefined;
      this.endSlot(slot);
    } else {
      this.ended.delete(key);
      this.ended.set(key, this.now());
    }
    this.reportDepth();
    this.checkDrain();
  }

  /**
   * Another instance takes the job's message over: its slot is dropped, without
   * marking it ended (the job may come back here), when nothing of it waits or is in
   * flight and no final was pushed. False: the slot stays, the job should stay too.
   */
  handOver(jobId: string): boolean {
    const slot = this.slots.get(jobId);
    if (!slot || slot.pending || slot.inFlight || slot.finalSeen) return false;
    this.slots.delete(jobId);
    return true;
  }

  /** States queued and not yet sent (in-flight ones not included). */
  depth(): number {
    let n = 0;
    for (const slot of this.slots.values()) if (slot.pending) n++;
    return n;
  }

  inFlight(): number {
    let n = 0;
    for (const slot of this.slots.values()) if (slot.inFlight) n++;
    return n;
  }

  /** Resolves true once nothing is queued or in flight, false after `timeoutMs`. */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.idle()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = {
        done: (ok: boolean) => {
          clearTimeout(timer);
          this.drainWaiters.delete(waiter);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => waiter.done(false), timeoutMs);
      this.drainWaiters.add(waiter);
    });
  }

  /** Stops the timer and drops everything queued; in-flight requests finish but are not retried. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    const droppedFinals: string[] = [];
    for (const slot of this.slots.values()) {
      if (slot.pending?.final) droppedFinals.push(slot.jobId);
      slot.pending = undefined;
    }
    if (droppedFinals.length > 0) {
      this.deps.logger.warn({ jobIds: droppedFinals }, 'edit queue closed with final states not delivered');
    }
    this.reportDepth();
    this.checkDrain();
  }

  // ---- scheduling ----

  /** Coalesce a burst of pushes into one pump (a microtask later). */
  private schedulePump(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    void Promise.resolve().then(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.closed) return;
    const t = this.now();
    let wake = Number.POSITIVE_INFINITY;
    const waitingByChannel = new Map<string, Waiting[]>();
    /** Channels where a final waits (ready or not): their progress is held back. */
    const finalWaiting = new Set<string>();

    for (const slot of this.slots.values()) {
      const state = slot.pending;
      if (!state) {
        if (!slot.inFlight && t - slot.touchedAt > IDLE_TTL_MS) this.slots.delete(slot.jobId);
        continue;
      }
      const target = this.targetFor(slot, t);
      if (!target) {
        if (!slot.inFlight) this.dropUnroutable(slot, state);
        continue;
      }
      if (target.route === 'channel' && state.final) finalWaiting.add(target.channelId);
      if (slot.inFlight) continue;
      if (target.route === 'channel' && !state.final && t - slot.messageCreatedAt >= this.opts.oldMessageMs) {
        // Discord allows only a few edits of messages older than 1 h: keep them for the final.
        slot.pending = undefined;
        this.deps.logger.debug({ jobId: slot.jobId }, 'progress edit dropped: message older than 1 h');
        continue;
      }
      let readyAt = slot.notBefore;
      if (target.route === 'interaction')
        readyAt = Math.max(readyAt, this.interactionReadyAt(slot, state, t));
      if (readyAt > t) {
        wake = Math.min(wake, readyAt);
        continue;
      }
      if (target.route === 'interaction') {
        this.send(slot, state, target, t);
      } else {
        const list = waitingByChannel.get(target.channelId) ?? [];
        list.push({ slot, state, target });
        waitingByChannel.set(target.channelId, list);
      }
    }

    for (const [channelId, waiting] of waitingByChannel) {
      if (this.lanes.has(channelId)) {
        this.laneDirty.add(channelId);
        continue;
      }
      // Finals first (the user is waiting for the result), then the message waiting longest.
      waiting.sort(
        (a, b) => Number(b.state.final) - Number(a.state.final) || a.slot.waitingSince - b.slot.waitingSince,
      );
      void this.runLane(channelId, waiting, finalWaiting.has(channelId));
    }

    this.armWake(wake, t);
    this.reportDepth();
    this.checkDrain();
  }

  /**
   * Interaction route: a final may take any free slot of the message's window;
   * progress leaves `finalReserve` free and is spaced by `progressIntervalMs`.
   */
  private interactionReadyAt(slot: Slot, state: QueuedState, t: number): number {
    const { interactionLimit: limit, interactionWindowMs: windowMs, finalReserve } = this.opts;
    const done = slot.interactionDone;
    while (done[0] !== undefined && done[0] <= t - windowMs) done.shift();
    const cap = state.final ? limit : Math.max(1, limit - finalReserve);
    let readyAt = t;
    if (done.length >= cap) readyAt = (done[done.length - cap] ?? t) + windowMs;
    if (!state.final) readyAt = Math.max(readyAt, slot.lastSentAt + this.opts.progressIntervalMs);
    return readyAt;
  }

  /**
   * Sends what the channel's budget grants, best first; stops at the first refusal
   * (what follows is no better) and wakes up when the budget says.
   */
  private async runLane(channelId: string, waiting: Waiting[], holdProgress: boolean): Promise<void> {
    this.lanes.add(channelId);
    try {
      for (const w of waiting) {
        if (!w.state.final && holdProgress) break;
        let waitMs: number;
        try {
          const answer = this.budget.acquire(channelId, w.state.final ? 'final' : 'progress', this.now());
          // An in-process budget answers synchronously: no await, so nothing can change meanwhile.
          waitMs = typeof answer === 'number' ? answer : await answer;
        } catch (err) {
          this.deps.logger.warn({ err, channelId }, 'channel budget unavailable; retrying shortly');
          this.armWake(this.now() + this.opts.baseBackoffMs, this.now());
          break;
        }
        const t = this.now();
        if (waitMs > 0) {
          this.armWake(t + waitMs, t);
          break;
        }
        if (this.closed || w.slot.pending !== w.state || w.slot.inFlight) {
          // Superseded while the budget answered: the slot is spent, the newer state goes next pump.
          this.budget.settled(channelId, t);
          this.laneDirty.add(channelId);
          continue;
        }
        this.send(w.slot, w.state, w.target, t);
      }
    } finally {
      this.lanes.delete(channelId);
      if (this.laneDirty.delete(channelId)) this.schedulePump();
      this.reportDepth();
      this.checkDrain();
    }
  }

  private targetFor(slot: Slot, t: number): Target | undefined {
    const i = slot.ref.interaction;
    if (i && !slot.interactionDead && t - i.createdAt < this.opts.interactionFreshMs) {
      return {
        route: 'interaction',
        applicationId: i.applicationId,
        token: i.token,
        ...(i.messageId ? { messageId: i.messageId } : {}),
      };
    }
    if (slot.ref.messageId) {
      return { route: 'channel', channelId: slot.ref.channelId, messageId: slot.ref.messageId };
    }
    return undefined;
  }

  private dropUnroutable(slot: Slot, state: QueuedState): void {
    slot.pending = undefined;
    if (state.final) {
      this.deps.logger.error(
        { jobId: slot.jobId, channelId: slot.ref.channelId },
        'final edit not delivered: interaction token expired and no message id known',
      );
      this.endSlot(slot);
    } else {
      this.deps.logger.debug({ jobId: slot.jobId }, 'progress edit dropped: no usable route yet');
    }
  }

  private armWake(at: number, t: number): void {
    if (!Number.isFinite(at)) return;
    if (this.wakeTimer !== undefined) {
      if (this.wakeAt <= at) return; // an earlier wake-up is already armed; it will re-plan
      clearTimeout(this.wakeTimer);
    }
    this.wakeAt = at;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = undefined;
        this.wakeAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(0, at - t),
    );
  }

  // ---- sending ----

  private send(slot: Slot, state: QueuedState, target: Target, t: number): void {
    slot.pending = undefined;
    slot.inFlight = true;
    slot.lastSentAt = t;
    void this.deliver(slot, state, target);
  }

  /** Never rejects: every outcome is handled here. */
  private async deliver(slot: Slot, state: QueuedState, target: Target): Promise<void> {
    let error: unknown;
    let ok = false;
    try {
      // Rendered once, on first send; a retry sends the same body.
      if (typeof state.payload === 'function') state.payload = state.payload();
      const payload = state.payload;
      if (target.route === 'interaction') {
        await this.deps.transport.editInteractionOriginal(
          target.applicationId,
          target.token,
          payload,
          ...(target.messageId ? [target.messageId] : []),
        );
      } else {
        await this.deps.transport.editChannelMessage(target.channelId, target.messageId, payload);
      }
      ok = true;
    } catch (err) {
      error = err;
    }
    slot.inFlight = false;
    slot.touchedAt = this.now();
    // Windows count from Discord's answer (see the class comment); a rate-limited edit used no slot.
    const limited =
      !ok && (error instanceof RateLimitError || (error instanceof DiscordAPIError && error.status === 429));
    if (target.route === 'channel') {
      if (limited) this.budget.released(target.channelId, slot.touchedAt);
      else this.budget.settled(target.channelId, slot.touchedAt);
    } else if (!limited) slot.interactionDone.push(slot.touchedAt);
    try {
      if (ok) this.onSuccess(slot, state, target.route);
      else this.onFailure(slot, state, target.route, error);
    } catch (err) {
      this.deps.logger.error({ err, jobId: slot.jobId }, 'edit queue: outcome handling failed');
    }
    if (this.closed) this.checkDrain();
    else this.schedulePump();
  }

  private onSuccess(slot: Slot, state: QueuedState, route: EditRoute): void {
    slot.failures = 0;
    this.deps.metrics?.editsSent(route, 'ok');
    this.safeCall(() =>
      this.deps.onDelivered?.(slot.jobId, { final: state.final, route, pushedAt: state.pushedAt }),
    );
    if (state.final) this.endSlot(slot);
  }

  private onFailure(slot: Slot, state: QueuedState, route: EditRoute, err: unknown): void {
    const failure = classify(err, route);
    const t = this.now();
    const log = this.deps.logger;
    const outcome = editOutcome(failure);
    this.deps.metrics?.editsSent(route, outcome);
    if (this.closed) {
      if (state.final)
        log.warn({ jobId: slot.jobId, err }, 'final edit failed while the edit queue is closed');
      return;
    }

    switch (failure.kind) {
      case 'gone': {
        log.info({ jobId: slot.jobId, route, reason: failure.reason }, 'job message gone: edits stopped');
        slot.pending = undefined;
        this.endSlot(slot);
        this.safeCall(() => this.deps.onMessageGone?.(slot.jobId, failure.reason));
        this.safeCall(() => slot.onGone?.(failure.reason));
        return;
      }
      case 'token_invalid': {
        // Discord refused the interaction token: resend at once through the channel route.
        log.info({ jobId: slot.jobId }, 'interaction token rejected: switching to channel edits');
        slot.interactionDead = true;
        this.requeue(slot, state);
        return;
      }
      case 'rate_limited': {
        const until = t + failure.retryAfterMs;
        log.warn(
          { jobId: slot.jobId, route, retryAfterMs: failure.retryAfterMs, global: failure.global },
          'edit rate limited',
        );
        if (route === 'channel') {
          // The channel edit bucket is per channel, so every message in it waits.
          this.budget.blocked(failure.global ? undefined : slot.ref.channelId, until);
        } else {
          slot.notBefore = Math.max(slot.notBefore, until);
        }
        this.requeue(slot, state);
        return;
      }
      case 'old_message': {
        if (!state.final) {
          log.debug({ jobId: slot.jobId }, 'progress edit dropped: old-message edit limit (30046)');
          return;
        }
        this.retryLater(slot, state, 'old-message edit limit (30046)');
        return;
      }
      case 'automod': {
        const again = slot.onAutoMod;
        if (again) {
          // The same body would be refused again: the slot goes (not ended), the caller pushes
          // the message anew without the member's text.
          log.warn(
            { jobId: slot.jobId, route, code: failure.code },
            'AutoMod refused the edit; text withheld',
          );
          if (this.slots.get(slot.jobId) === slot) this.slots.delete(slot.jobId);
          this.safeCall(again);
          return;
        }
        log.error(
          { jobId: slot.jobId, route, code: failure.code, final: state.final },
          'AutoMod refused the edit',
        );
        if (state.final) this.endSlot(slot);
        return;
      }
      case 'invalid': {
        // Resending the same body would fail the same way: drop it, never loop.
        log.error(
          {
            jobId: slot.jobId,
            route,
            code: failure.code,
            discordMessage: failure.message,
            final: state.final,
          },
          'Discord rejected the edit; state dropped',
        );
        if (state.final) this.endSlot(slot);
        return;
      }
      case 'transient': {
        this.retryLater(slot, state, failure.message);
        return;
      }
    }
  }

  /**
   * Exponential backoff with jitter (capped at maxBackoffMs); the newest state is what gets
   * retried. A progress state gives up after finalRetryLimit attempts (the next one will
   * try); a final never does: it is retried until it lands or the message is gone (a
   * refusal that lasts minutes, 5xx or 30046, must not leave the message on its last
   * percentage).
   */
  private retryLater(slot: Slot, state: QueuedState, reason: string): void {
    state.attempts++;
    slot.failures++;
    if (!state.final && state.attempts > this.opts.finalRetryLimit) {
      this.deps.logger.debug({ jobId: slot.jobId, reason }, 'progress edit dropped after retries');
      return;
    }
    const ceiling = Math.min(
      this.opts.maxBackoffMs,
      this.opts.baseBackoffMs * 2 ** Math.min(slot.failures - 1, 16),
    );
    const delay = ceiling / 2 + (this.random() * ceiling) / 2;
    slot.notBefore = Math.max(slot.notBefore, this.now() + delay);
    this.deps.logger.warn(
      { jobId: slot.jobId, attempt: state.attempts, delayMs: Math.round(delay), reason, final: state.final },
      'edit failed, retrying',
    );
    this.requeue(slot, state);
  }

  /** Put a failed state back unless a newer one was pushed meanwhile (the newer one wins). */
  private requeue(slot: Slot, state: QueuedState): void {
    if (slot.pending) return;
    slot.pending = state;
    slot.waitingSince = state.pushedAt;
  }

  /** The job's message is done with: forget it, ignore later pushes for a while. */
  private endSlot(slot: Slot): void {
    this.slots.delete(slot.jobId);
    this.ended.delete(slot.jobId);
    this.ended.set(slot.jobId, this.now());
  }

  private pruneEnded(t: number): void {
    for (const [jobId, at] of this.ended) {
      if (t - at < ENDED_TTL_MS) break;
      this.ended.delete(jobId);
    }
  }

  private idle(): boolean {
    return this.depth() === 0 && this.inFlight() === 0;
  }

  private checkDrain(): void {
    if (this.drainWaiters.size === 0 || !this.idle()) return;
    for (const waiter of [...this.drainWaiters]) waiter.done(true);
  }

  private reportDepth(): void {
    this.deps.metrics?.queueDepth?.(this.depth());
  }

  /** Callbacks belong to the caller; their exceptions must not break the queue. */
  private safeCall(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.deps.logger.error({ err }, 'edit queue callback threw');
    }
  }
}

/** Maps what @discordjs/rest (or the network) threw to what the queue does about it. */
export function classify(err: unknown, route: EditRoute): Failure {
  if (err instanceof RateLimitError) {
    // Thrown when the REST is configured with rejectOnRateLimit; retryAfter is in ms.
    return { kind: 'rate_limited', retryAfterMs: Math.max(0, err.retryAfter), global: err.global };
  }
  if (err instanceof DiscordAPIError) {
    const code = typeof err.code === 'number' ? err.code : Number.NaN;
    if (err.status === 429) {
      // Only reachable with a transport that does not sleep on 429 itself; body retry_after is seconds.
      const raw: unknown = err.rawError;
      const seconds =
        typeof raw === 'object' && raw !== null && 'retry_after' in raw && typeof raw.retry_after === 'number'
          ? raw.retry_after
          : 1;
      const global = typeof raw === 'object' && raw !== null && 'global' in raw && raw.global === true;
      return { kind: 'rate_limited', retryAfterMs: seconds * 1000, global };
    }
    const gone = GONE_CODES.get(code);
    if (gone) return { kind: 'gone', reason: `${gone} (${code})` };
    if (
      route === 'interaction' &&
      (code === INVALID_WEBHOOK_TOKEN || code === UNKNOWN_WEBHOOK || err.status === 401)
    ) {
      return { kind: 'token_invalid' };
    }
    if (code === OLD_MESSAGE_EDIT_LIMIT) return { kind: 'old_message' };
    if (AUTOMOD_CODES.has(code)) return { kind: 'automod', code };
    if (err.status >= 500) return { kind: 'transient', message: err.message };
    // 50035 invalid form body and any other 4xx: the request itself is wrong.
    return { kind: 'invalid', code: err.code, message: err.message };
  }
  if (err instanceof HTTPError) return { kind: 'transient', message: `HTTP ${err.status}` };
  // Network errors, timeouts (AbortError), anything else.
  return { kind: 'transient', message: describeTransient(err) };
}

/** A network error's message, never empty (an AggregateError or an abort has none of its own). */
function describeTransient(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const inner = err instanceof AggregateError ? err.errors[0] : err.cause;
  const own = err.message || err.name;
  const more = inner instanceof Error && inner.message ? ` (${inner.message})` : '';
  return `${own}${typeof code === 'string' ? ` ${code}` : ''}${more}`;
}
