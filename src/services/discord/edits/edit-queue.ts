import { DiscordAPIError, RateLimitError } from '@discordjs/rest';
import type { Logger } from 'pino';
import { MemoryChannelBudget, type ChannelBudget } from './channel-budget.js';
import type { DiscordTransport, MessagePayload } from '../discord-transport.js';
import type { MessageRef, PostedMessage } from '../../shared/message-ref.js';
import {
  DEFAULT_EDIT_POLICY,
  budgetKind,
  classify,
  decide,
  editOutcome,
  editable,
  interactionReadyAt,
  routeFor,
  type Delivery,
  type EditOutcome,
  type EditPolicyOptions,
  type Route,
} from './edit-policy.js';

export type { ChannelBudget, EditKind } from './channel-budget.js';

/**
 * Coalesced, rate-budgeted edits of every message the bot keeps up to date (job
 * messages, training-session messages) in this process: the in-process driver of the
 * edit policy (./edit-policy.ts decides routes and outcomes; this only schedules).
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

export type { EditRoute, EditOutcome, Failure } from './edit-policy.js';
export { classify, editOutcome } from './edit-policy.js';

/** The queue's options are the edit policy's (one set of numbers for both drivers). */
export type EditQueueOptions = EditPolicyOptions;
export const DEFAULT_EDIT_QUEUE_OPTIONS: Readonly<EditQueueOptions> = DEFAULT_EDIT_POLICY;

export interface EditRequest {
  /** The message's key in the queue (encodeEditKey's, see ./edit-key.ts): stable for that one message. */
  jobId: string;
  ref: MessageRef;
  /** Epoch ms the message was created (for the 1 h old-message rule on the channel route). */
  messageCreatedAt: number;
  /**
   * The message body, or a function rendering it. A function is only called when
   * the state is actually sent, so states superseded in the queue cost nothing.
   */
  payload: MessagePayload | (() => MessagePayload);
  final: boolean;
  /** Discord refused the message's interaction token before (the job's record says so). */
  tokenRefused?: boolean;
  /**
   * A personal job's message: never the bot token in its channel; its final goes to
   * `userId` by DM once the token is past its use (or refused); once per `jobId` (its nonce).
   */
  personal?: { userId: string; jobId: string };
  /** Called (besides `onMessageGone`) when this message turns out deleted or inaccessible. */
  onGone?: (reason: string) => void;
  /** Discord refused the interaction token: the caller records it with the job (every instance then knows). */
  onTokenRefused?: () => void;
  /** The member's DMs are closed (50007): the caller records it with the job; its result stays in /tasks. */
  onDmRefused?: () => void;
  /** The final went by DM: where it is (the bot's own DM channel), for /privacy delete. */
  onDirectMessage?: (posted: PostedMessage) => void;
  /**
   * Discord's AutoMod refused this body (200000, 200001): the caller renders the message
   * again (without the member's text, or, `text: 'withheld'` already, without any free
   * text) and pushes it. Without it, the refusal is an invalid edit.
   */
  onAutoMod?: () => void;
  /** Which text the body carries (default `member`): the policy's AutoMod fallback steps. */
  text?: 'member' | 'withheld' | 'bare';
}

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
  onDelivered?: (jobId: string, info: { final: boolean; route: Delivery; pushedAt: number }) => void;
  metrics?: {
    editsSent: (route: Delivery, outcome: EditOutcome) => void;
    queueDepth?: (n: number) => void;
  };
  options?: Partial<EditQueueOptions>;
}

/** Forget jobs that ended (final delivered / message gone) after this long; late duplicate pushes are ignored meanwhile. */
const ENDED_TTL_MS = 6 * 3_600_000;
/** Forget idle, never-finished slots (abandoned jobs) after this long. */
const IDLE_TTL_MS = 6 * 3_600_000;
/** Refused tokens remembered here (besides the job's record) past their 15 min life. */
const DEAD_TOKEN_TTL_MS = 20 * 60_000;

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

type Target = Extract<Route, { route: 'interaction' | 'channel' | 'dm' }>;

interface Slot {
  jobId: string;
  ref: MessageRef;
  onGone: ((reason: string) => void) | undefined;
  onAutoMod: (() => void) | undefined;
  onTokenRefused: (() => void) | undefined;
  onDmRefused: (() => void) | undefined;
  onDirectMessage: ((posted: PostedMessage) => void) | undefined;
  text: 'member' | 'withheld' | 'bare';
  personal: { userId: string; jobId: string } | undefined;
  messageCreatedAt: number;
  /** Latest state not yet sent (the in-flight one is held by its request). */
  pending: QueuedState | undefined;
  /** When `pending` went from empty to set: "oldest waiting" order on a channel. */
  waitingSince: number;
  inFlight: boolean;
  /** A final was pushed: later pushes are ignored. */
  finalSeen: boolean;
  /** Interaction route: answer times of this message's edits within the window (oldest first). */
  interactionDone: number[];
  /** Backoff / retry_after for this message. */
  notBefore: number;
  /** Consecutive failures of this message, drives the backoff exponent. */
  failures: number;
  /** Discord rejected the interaction token (now or, says the job, before): never again. */
  interactionDead: boolean;
  touchedAt: number;
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
  /** Interaction tokens Discord refused → when (chronological, pruned like `ended`). */
  private readonly deadTokens = new Map<string, number>();
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
        onTokenRefused: req.onTokenRefused,
        onDmRefused: req.onDmRefused,
        onDirectMessage: req.onDirectMessage,
        text: req.text ?? 'member',
        personal: req.personal,
        messageCreatedAt: req.messageCreatedAt,
        pending: undefined,
        waitingSince: t,
        inFlight: false,
        finalSeen: false,
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
    slot.onTokenRefused = req.onTokenRefused;
    slot.onDmRefused = req.onDmRefused;
    slot.onDirectMessage = req.onDirectMessage;
    slot.text = req.text ?? 'member';
    slot.personal = req.personal;
    // Learned here or by anyone before (the job's record): a refused token is never used again.
    if (req.tokenRefused === true || this.tokenDead(req.ref)) slot.interactionDead = true;
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
  editable(ref: MessageRef, messageCreatedAt: number, final: boolean, personal = false): boolean {
    return editable(
      { ref, messageCreatedAt, tokenRefused: this.tokenDead(ref), personal },
      this.now(),
      final,
      this.opts,
    );
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

  /** Messages the queue keeps a slot for (queued, in flight, or idle until forgotten). */
  get size(): number {
    return this.slots.size;
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
      const route = this.routeOf(slot, state, t);
      if (route.route === 'none' || route.route === 'skip') {
        if (!slot.inFlight) this.dropUnroutable(slot, state, route);
        continue;
      }
      const target = route;
      if (target.route === 'channel' && state.final) finalWaiting.add(target.channelId);
      if (slot.inFlight) continue;
      let readyAt = slot.notBefore;
      if (target.route === 'interaction')
        readyAt = Math.max(readyAt, this.interactionReadyAt(slot, state, t));
      if (readyAt > t) {
        wake = Math.min(wake, readyAt);
        continue;
      }
      if (target.route !== 'channel') {
        this.send(slot, state, target);
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

  /** Interaction route: the policy's window and spacing, from this message's answer times. */
  private interactionReadyAt(slot: Slot, state: QueuedState, t: number): number {
    const done = slot.interactionDone;
    // The last answer stays, whatever its age: progress is spaced from it.
    while (done.length > 1 && (done[0] ?? t) <= t - this.opts.interactionWindowMs) done.shift();
    return interactionReadyAt(done, state.final, t, this.opts);
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
          const answer = this.budget.acquire(channelId, budgetKind(w.state.final), this.now());
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
        this.send(w.slot, w.state, w.target);
      }
    } finally {
      this.lanes.delete(channelId);
      if (this.laneDirty.delete(channelId)) this.schedulePump();
      this.reportDepth();
      this.checkDrain();
    }
  }

  private routeOf(slot: Slot, state: QueuedState, t: number): Route {
    return routeFor(
      {
        ref: slot.ref,
        messageCreatedAt: slot.messageCreatedAt,
        tokenRefused: slot.interactionDead,
        personal: slot.personal !== undefined,
      },
      t,
      state.final,
      this.opts,
    );
  }

  private tokenDead(ref: MessageRef): boolean {
    const token = ref.interaction?.token;
    return token !== undefined && this.deadTokens.has(token);
  }

  private dropUnroutable(slot: Slot, state: QueuedState, route: Extract<Route, { reason: string }>): void {
    slot.pending = undefined;
    if (state.final) {
      this.deps.logger.error(
        { jobId: slot.jobId, channelId: slot.ref.channelId, reason: route.reason },
        'final edit not delivered: no route to the message',
      );
      this.endSlot(slot);
    } else {
      this.deps.logger.debug({ jobId: slot.jobId, reason: route.reason }, 'progress edit dropped');
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

  private send(slot: Slot, state: QueuedState, target: Target): void {
    slot.pending = undefined;
    slot.inFlight = true;
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
      } else if (target.route === 'dm') {
        if (!slot.personal) throw new Error('a DM route without a member');
        const posted = await this.deps.transport.sendDirectMessage(
          slot.personal.userId,
          payload,
          slot.personal.jobId,
        );
        const told = slot.onDirectMessage;
        if (told) this.safeCall(() => told(posted));
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
    } else if (target.route === 'interaction' && !limited) slot.interactionDone.push(slot.touchedAt);
    try {
      if (ok) this.onSuccess(slot, state, target.route);
      else this.onFailure(slot, state, target.route, error);
    } catch (err) {
      this.deps.logger.error({ err, jobId: slot.jobId }, 'edit queue: outcome handling failed');
    }
    if (this.closed) this.checkDrain();
    else this.schedulePump();
  }

  private onSuccess(slot: Slot, state: QueuedState, route: Delivery): void {
    slot.failures = 0;
    this.deps.metrics?.editsSent(route, 'ok');
    this.safeCall(() =>
      this.deps.onDelivered?.(slot.jobId, { final: state.final, route, pushedAt: state.pushedAt }),
    );
    if (state.final) this.endSlot(slot);
  }

  private onFailure(slot: Slot, state: QueuedState, route: Delivery, err: unknown): void {
    const failure = classify(err, route);
    const t = this.now();
    const log = this.deps.logger;
    this.deps.metrics?.editsSent(route, editOutcome(failure));
    if (this.closed) {
      if (state.final)
        log.warn({ jobId: slot.jobId, err }, 'final edit failed while the edit queue is closed');
      return;
    }
    if (failure.kind === 'transient' || failure.kind === 'old_message') {
      state.attempts++;
      slot.failures++;
    }
    // Without a way to withhold, the body counts as bare: AutoMod's refusal is final.
    const noFallback = slot.onAutoMod === undefined;
    const decision = decide(
      failure,
      {
        route,
        final: state.final,
        attempts: state.attempts,
        failures: slot.failures,
        withheld: noFallback || slot.text !== 'member',
        bare: noFallback || slot.text === 'bare',
        channelId: slot.ref.channelId,
        random: this.random(),
      },
      this.opts,
    );
    switch (decision.do) {
      case 'done':
        return;
      case 'gone': {
        log.info({ jobId: slot.jobId, route, reason: decision.reason }, 'job message gone: edits stopped');
        slot.pending = undefined;
        this.endSlot(slot);
        this.safeCall(() => this.deps.onMessageGone?.(slot.jobId, decision.reason));
        this.safeCall(() => slot.onGone?.(decision.reason));
        return;
      }
      case 'token_refused': {
        // Never again, by anyone: remembered here and, through the caller, with the job.
        log.info({ jobId: slot.jobId }, 'interaction token refused: never used again for this message');
        slot.interactionDead = true;
        const token = slot.ref.interaction?.token;
        if (token !== undefined) {
          this.deadTokens.delete(token);
          this.deadTokens.set(token, t);
        }
        this.safeCall(() => slot.onTokenRefused?.());
        this.requeue(slot, state);
        return;
      }
      case 'dm_refused': {
        log.info({ jobId: slot.jobId }, 'the member does not accept DMs: the result stays in /tasks');
        slot.pending = undefined;
        this.endSlot(slot);
        this.safeCall(() => slot.onDmRefused?.());
        return;
      }
      case 'retry': {
        const until = t + decision.delayMs;
        if (failure.kind === 'rate_limited') {
          log.warn(
            { jobId: slot.jobId, route, retryAfterMs: failure.retryAfterMs, global: failure.global },
            'edit rate limited',
          );
        } else {
          log.warn(
            {
              jobId: slot.jobId,
              attempt: state.attempts,
              delayMs: Math.round(decision.delayMs),
              reason: failure.kind === 'transient' ? failure.message : failure.kind,
              final: state.final,
            },
            'edit failed, retrying',
          );
        }
        if (decision.block) this.budget.blocked(decision.block.channelId, until);
        else slot.notBefore = Math.max(slot.notBefore, until);
        this.requeue(slot, state);
        return;
      }
      case 'withhold':
      case 'bare': {
        // The same body would be refused again: what waits is dropped and the caller pushes the
        // message anew (without the member's text, or without any free text), its final too. The
        // slot stays with its answer times: the re-push keeps to the message's interaction window.
        log.warn({ jobId: slot.jobId, route, step: decision.do }, 'AutoMod refused the edit; text withheld');
        if (this.slots.get(slot.jobId) === slot) {
          slot.pending = undefined;
          slot.finalSeen = false;
          slot.failures = 0;
        }
        const again = slot.onAutoMod;
        if (again) this.safeCall(again);
        return;
      }
      case 'drop': {
        if (decision.level === 'error')
          log.error({ jobId: slot.jobId, route, final: state.final, why: decision.why }, 'edit dropped');
        else log.debug({ jobId: slot.jobId, why: decision.why }, 'progress edit dropped');
        if (state.final) this.endSlot(slot);
        return;
      }
    }
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
    for (const [token, at] of this.deadTokens) {
      if (t - at < DEAD_TOKEN_TTL_MS) break;
      this.deadTokens.delete(token);
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
