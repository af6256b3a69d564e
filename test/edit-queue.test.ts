import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DiscordAPIError, HTTPError, REST, RateLimitError } from '@discordjs/rest';
import { pino, type Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createInteractionRest,
  createRestTransport,
  type DiscordTransport,
  type MessagePayload,
} from '../src/services/discord/discord-transport.js';
import { EditQueue, type EditQueueDeps, type EditRequest } from '../src/services/discord/edits/edit-queue.js';
import type { MessageRef } from '../src/services/shared/message-ref.js';
import { QueuedJobMessages } from '../src/services/discord/edits/job-messages.js';
import type { JobRecord } from '../src/services/store/types.js';

// ---------------------------------------------------------------- helpers

const APP_ID = '123456789012345678';
const T0 = Date.UTC(2025, 0, 1, 12, 0, 0);

function payload(content: string): MessagePayload {
  return { content, embeds: [], components: [], allowed_mentions: { parse: [] } };
}

interface Call {
  route: 'interaction' | 'channel' | 'dm';
  /** Job id, taken from the payload content `${jobId}|${label}`. */
  jobId: string;
  label: string;
  at: number;
  channelId?: string;
  token?: string;
}

type Script = (call: Call, nth: number) => Error | undefined;

/** Records calls, answers after `latencyMs`, throws what `script` returns. */
class FakeTransport implements DiscordTransport {
  readonly calls: Call[] = [];
  private readonly inFlightByJob = new Map<string, number>();
  maxInFlightPerJob = 0;
  latencyMs = 50;
  script: Script = () => undefined;
  /** Never answer (for drain timeouts). */
  hang = false;

  editInteractionOriginal(applicationId: string, token: string, body: MessagePayload): Promise<void> {
    expect(applicationId).toBe(APP_ID);
    return this.run({ ...this.parse(body), route: 'interaction', token });
  }

  editChannelMessage(channelId: string, _messageId: string, body: MessagePayload): Promise<void> {
    return this.run({ ...this.parse(body), route: 'channel', channelId });
  }

  async sendDirectMessage(
    userId: string,
    body: MessagePayload,
  ): Promise<{ channelId: string; messageId: string }> {
    await this.run({ ...this.parse(body), route: 'dm', channelId: `dm-${userId}` });
    return { channelId: `dm-${userId}`, messageId: String(this.calls.length) };
  }

  private parse(body: MessagePayload): { jobId: string; label: string; at: number } {
    const [jobId = '', label = ''] = ('content' in body ? body.content : '').split('|');
    return { jobId, label, at: Date.now() };
  }

  private run(call: Call): Promise<void> {
    this.calls.push(call);
    const nth = this.calls.filter((c) => c.jobId === call.jobId).length;
    const n = (this.inFlightByJob.get(call.jobId) ?? 0) + 1;
    this.inFlightByJob.set(call.jobId, n);
    this.maxInFlightPerJob = Math.max(this.maxInFlightPerJob, n);
    if (this.hang) return new Promise(() => undefined);
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        this.inFlightByJob.set(call.jobId, (this.inFlightByJob.get(call.jobId) ?? 1) - 1);
        const err = this.script(call, nth);
        if (err) reject(err);
        else resolve();
      }, this.latencyMs);
    });
  }

  callsFor(jobId: string): Call[] {
    return this.calls.filter((c) => c.jobId === jobId);
  }
}

function apiError(code: number, status: number, extra: Record<string, unknown> = {}): DiscordAPIError {
  return new DiscordAPIError(
    { code, message: `error ${code}`, ...extra },
    code,
    status,
    'PATCH',
    'https://discord.test/api',
    {},
  );
}

function rateLimitError(retryAfterMs: number): RateLimitError {
  return new RateLimitError({
    timeToReset: retryAfterMs,
    limit: 5,
    method: 'PATCH',
    hash: 'h',
    url: 'https://discord.test/api',
    route: '/channels/:id/messages/:id',
    majorParameter: '1',
    global: false,
    retryAfter: retryAfterMs,
    sublimitTimeout: 0,
    scope: 'user',
  });
}

interface LogLine {
  level: number;
  msg: string;
  jobId?: string;
}

function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) },
  );
  return { logger, lines };
}

const freshInteraction = (token = 'tok') => ({ applicationId: APP_ID, token, createdAt: Date.now() });

function channelRef(channelId = '200000000000000001', messageId = '300000000000000001'): MessageRef {
  return { channelId, messageId };
}

function req(
  jobId: string,
  label: string,
  ref: MessageRef,
  final = false,
  messageCreatedAt = Date.now(),
): EditRequest {
  return { jobId, ref, messageCreatedAt, payload: payload(`${jobId}|${label}`), final };
}

function setup(opts: Partial<EditQueueDeps> = {}) {
  const transport = new FakeTransport();
  const { logger, lines } = captureLogger();
  const gone: [string, string][] = [];
  const queue = new EditQueue({
    transport,
    logger,
    random: () => 0.5,
    onMessageGone: (jobId, reason) => gone.push([jobId, reason]),
    ...opts,
  });
  return { transport, queue, lines, gone };
}

const tick = (ms: number) => vi.advanceTimersByTimeAsync(ms);

// ---------------------------------------------------------------- coalescing

describe('EditQueue (fake clock)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(T0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('coalesces 100 rapid pushes into a few edits, one in flight, final last', async () => {
    const { transport, queue } = setup();
    const ref: MessageRef = { channelId: '2', interaction: freshInteraction() };
    for (let i = 0; i < 99; i++) {
      queue.push(req('job', `p${i}`, ref));
      await tick(10);
    }
    queue.push(req('job', 'final', ref, true));
    expect(await drainWithClock(queue, 10_000)).toBe(true);

    expect(transport.calls.length).toBeLessThanOrEqual(4);
    expect(transport.maxInFlightPerJob).toBe(1);
    expect(transport.calls.at(-1)?.label).toBe('final');
    // Interaction route: progress spaced by window / (limit - reserve) = 5000 / 3 ms…
    const times = transport.calls.map((c) => c.at);
    for (let i = 1; i < times.length - 1; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1666);
    // …and the final goes out as soon as it is pushed (the previous edit had answered).
    expect(times.at(-1)).toBe(T0 + 990);
  });

  it('interaction route: progress leaves two slots of every window to the final', async () => {
    const { transport, queue } = setup({ options: { interactionLimit: 5, finalReserve: 2 } });
    transport.latencyMs = 20;
    const ref: MessageRef = { channelId: '2', interaction: freshInteraction() };
    // A progress push every 50 ms for 12 s, then the final.
    for (let i = 0; i < 240; i++) {
      queue.push(req('job', `p${i}`, ref));
      await tick(50);
    }
    const finalAt = Date.now();
    queue.push(req('job', 'final', ref, true));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    const calls = transport.calls;
    expect(calls.at(-1)?.label).toBe('final');
    expect(calls.at(-1)?.at).toBe(finalAt);
    // Never more than 3 progress edits in any 5 s (answer-time window), never more than 5 edits.
    for (const c of calls) {
      const inWindow = calls.filter((d) => d.at <= c.at && d.at > c.at - 5000 - 20);
      expect(inWindow.filter((d) => d.label !== 'final').length).toBeLessThanOrEqual(3);
      expect(inWindow.length).toBeLessThanOrEqual(5);
    }
  });

  it('interaction route: progress is spaced from the last answer even when the interval outlasts the window', async () => {
    const { transport, queue } = setup({ options: { interactionWindowMs: 1000, progressIntervalMs: 3000 } });
    const ref: MessageRef = { channelId: '2', interaction: freshInteraction() };
    queue.push(req('job', 'p1', ref));
    await tick(1);
    // Each push comes after the window has let go of the last answer, before the interval is over.
    for (let i = 2; i <= 5; i++) {
      await tick(1500);
      queue.push(req('job', `p${i}`, ref));
    }
    await tick(10_000);
    const times = transport.calls.map((c) => c.at);
    expect(times.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(3000);
  });

  it('a final is never replaced by a later progress and is delivered last', async () => {
    const { transport, queue } = setup();
    const ref = channelRef();
    queue.push(req('job', 'p1', ref));
    await tick(1); // p1 in flight
    queue.push(req('job', 'final', ref, true));
    queue.push(req('job', 'p2', ref));
    expect(queue.depth()).toBe(1);
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    queue.push(req('job', 'p3', ref)); // after the final: ignored
    await tick(10_000);
    expect(transport.calls.map((c) => c.label)).toEqual(['p1', 'final']);
  });

  // ---------------------------------------------------------------- channel budget

  it('shares one channel budget between messages: finals overtake queued progress, ≤ channelLimit per window', async () => {
    const { transport, queue } = setup();
    const channelId = '200000000000000009';
    const refs = Array.from({ length: 10 }, (_, i) => channelRef(channelId, `30000000000000000${i}`));
    refs.forEach((ref, i) => queue.push(req(`job${i}`, 'p0', ref)));
    await tick(1000);
    // Progress takes at most limit - finalReserve = 3 slots of the window; jobs 3..9 wait.
    expect(transport.calls.map((c) => c.jobId)).toEqual(['job0', 'job1', 'job2']);
    queue.push(req('job2', 'final', refs[2]!, true)); // idle message gets a final
    queue.push(req('job9', 'final', refs[9]!, true)); // waiting progress replaced by a final
    await tick(1);
    // The reserved slots: both finals go at once, ahead of the seven waiting progress edits.
    expect(transport.calls.slice(3).map((c) => `${c.jobId}|${c.label}`)).toEqual([
      'job9|final',
      'job2|final',
    ]);
    expect(transport.calls[4]?.at).toBe(T0 + 1000);
    // Keep every message busy with progress for a while.
    for (let s = 0; s < 20; s++) {
      refs.forEach((ref, i) => {
        if (i !== 2 && i !== 9) queue.push(req(`job${i}`, `p${s + 1}`, ref));
      });
      await tick(1000);
    }
    refs.forEach((ref, i) => {
      if (i !== 2 && i !== 9) queue.push(req(`job${i}`, 'final', ref, true));
    });
    const finalsPushedAt = Date.now();
    expect(await drainWithClock(queue, 120_000)).toBe(true);

    // Any 5 s span (counted from the answers, 50 ms after each send) holds at most 5 edits of the channel.
    const times = transport.calls.map((c) => c.at);
    for (let i = 0; i < times.length; i++) {
      const inWindow = times.filter((t) => t <= times[i]! && t > times[i]! - 5050).length;
      expect(inWindow).toBeLessThanOrEqual(5);
    }
    // Once the eight finals were pushed, no progress went out, and they took the whole budget:
    // the last within N s + 2 s.
    const after = transport.calls.filter((c) => c.at >= finalsPushedAt);
    expect(after.map((c) => c.label)).toEqual(Array(8).fill('final'));
    expect(after.at(-1)!.at - finalsPushedAt).toBeLessThanOrEqual((8 + 2) * 1000);
    // Every message's last edit is its final.
    for (let i = 0; i < 10; i++) expect(transport.callsFor(`job${i}`).at(-1)?.label).toBe('final');
    expect(transport.maxInFlightPerJob).toBe(1);
  });

  it('a final waiting on a channel holds back every other job’s progress there', async () => {
    const { transport, queue } = setup();
    const channelId = '200000000000000019';
    const a = channelRef(channelId, '300000000000000101');
    const b = channelRef(channelId, '300000000000000102');
    transport.latencyMs = 300;
    queue.push(req('a', 'p1', a));
    await tick(10); // a's progress in flight
    queue.push(req('a', 'final', a, true)); // waits for a's edit to come back
    queue.push(req('b', 'p1', b)); // budget free, but a final of the channel is waiting
    await tick(100);
    expect(transport.calls.map((c) => `${c.jobId}|${c.label}`)).toEqual(['a|p1']);
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls.map((c) => `${c.jobId}|${c.label}`)).toEqual(['a|p1', 'a|final', 'b|p1']);
  });

  it('takes its channel budget from the ChannelBudget passed in (a shared one can replace it)', async () => {
    const asked: string[] = [];
    let grant = false;
    const settled: string[] = [];
    const { transport, queue } = setup({
      channelBudget: {
        acquire: async (channelId, kind) => {
          asked.push(`${channelId}:${kind}`);
          return grant ? 0 : 700;
        },
        settled: (channelId) => void settled.push(channelId),
        released: () => undefined,
        blocked: () => undefined,
      },
    });
    queue.push(req('job', 'final', channelRef('42', '300000000000000201'), true));
    await tick(1);
    expect(asked).toEqual(['42:final']);
    expect(transport.calls).toHaveLength(0);
    grant = true;
    await tick(700);
    expect(transport.calls.map((c) => c.label)).toEqual(['final']);
    await tick(100);
    expect(settled).toEqual(['42']);
  });

  // ---------------------------------------------------------------- routes

  it('uses the interaction webhook while fresh, the channel edit once expired', async () => {
    const { transport, queue } = setup();
    queue.push(req('fresh', 'p', { ...channelRef(), interaction: freshInteraction('t1') }));
    const expired = { applicationId: APP_ID, token: 't2', createdAt: Date.now() - 15 * 60_000 };
    queue.push(req('old', 'p', { ...channelRef(), interaction: expired }));
    await tick(500);
    expect(transport.callsFor('fresh').map((c) => c.route)).toEqual(['interaction']);
    expect(transport.callsFor('fresh')[0]?.token).toBe('t1');
    expect(transport.callsFor('old').map((c) => c.route)).toEqual(['channel']);
  });

  it('falls back to the channel route on 50027 invalid webhook token and delivers', async () => {
    const { transport, queue } = setup();
    transport.script = (call) => (call.route === 'interaction' ? apiError(50027, 401) : undefined);
    queue.push(req('job', 'final', { ...channelRef(), interaction: freshInteraction() }, true));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls.map((c) => `${c.route}:${c.label}`)).toEqual([
      'interaction:final',
      'channel:final',
    ]);
  });

  it('without a message id and an expired token: progress dropped, final logged as error', async () => {
    const { transport, queue, lines } = setup();
    const ref: MessageRef = {
      channelId: '2',
      interaction: { applicationId: APP_ID, token: 't', createdAt: Date.now() - 20 * 60_000 },
    };
    queue.push(req('job', 'p', ref));
    queue.push(req('job2', 'final', ref, true));
    expect(await drainWithClock(queue, 1000)).toBe(true);
    expect(transport.calls).toHaveLength(0);
    expect(lines.some((l) => l.level === 50 && l.jobId === 'job2')).toBe(true);
  });

  // ---------------------------------------------------------------- old messages

  it('messages older than 1 h: progress dropped, final sent', async () => {
    const { transport, queue } = setup();
    const created = Date.now() - 2 * 3_600_000;
    queue.push(req('job', 'p1', channelRef(), false, created));
    await tick(6000);
    expect(transport.calls).toHaveLength(0);
    expect(queue.depth()).toBe(0);
    queue.push(req('job', 'final', channelRef(), true, created));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls.map((c) => c.label)).toEqual(['final']);
  });

  it('30046 on a final: retried later (backoff) and delivered', async () => {
    const { transport, queue } = setup();
    transport.script = (_call, nth) => (nth === 1 ? apiError(30046, 400) : undefined);
    const created = Date.now() - 2 * 3_600_000;
    queue.push(req('job', 'final', channelRef(), true, created));
    expect(await drainWithClock(queue, 60_000)).toBe(true);
    expect(transport.calls).toHaveLength(2);
    expect(transport.calls[1]!.at - transport.calls[0]!.at).toBeGreaterThanOrEqual(500);
  });

  // ---------------------------------------------------------------- errors

  it('10008 unknown message: edits stop, onMessageGone called, other jobs unaffected', async () => {
    const { transport, queue, gone } = setup();
    transport.script = (call) => (call.jobId === 'dead' ? apiError(10008, 404) : undefined);
    const deadRef = channelRef('200000000000000001', '300000000000000001');
    const liveRef = channelRef('200000000000000002', '300000000000000002');
    queue.push(req('dead', 'p1', deadRef));
    queue.push(req('live', 'p1', liveRef));
    await tick(100);
    queue.push(req('dead', 'p2', deadRef));
    queue.push(req('dead', 'final', deadRef, true));
    queue.push(req('live', 'final', liveRef, true));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.callsFor('dead')).toHaveLength(1);
    expect(gone).toEqual([['dead', 'unknown_message (10008)']]);
    expect(transport.callsFor('live').map((c) => c.label)).toEqual(['p1', 'final']);
  });

  it('429 RateLimitError: waits retry_after, then delivers the latest state', async () => {
    const { transport, queue } = setup();
    transport.script = (_call, nth) => (nth === 1 ? rateLimitError(3000) : undefined);
    const ref = channelRef();
    queue.push(req('job', 'p1', ref));
    await tick(100);
    queue.push(req('job', 'p2', ref)); // newer state while waiting
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls.map((c) => c.label)).toEqual(['p1', 'p2']);
    expect(transport.calls[1]!.at - transport.calls[0]!.at).toBeGreaterThanOrEqual(3000);
  });

  it('429 DiscordAPIError with retry_after (seconds): waits, then retries', async () => {
    const { transport, queue } = setup();
    transport.script = (_call, nth) => (nth === 1 ? apiError(0, 429, { retry_after: 2 }) : undefined);
    queue.push(req('job', 'final', { channelId: '2', interaction: freshInteraction() }, true));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls).toHaveLength(2);
    expect(transport.calls[1]!.at - transport.calls[0]!.at).toBeGreaterThanOrEqual(2000);
  });

  it('500 twice then OK: delivered with backoff', async () => {
    const { transport, queue } = setup();
    transport.script = (_call, nth) =>
      nth <= 2 ? new HTTPError(500, 'Internal Server Error', 'PATCH', 'https://discord.test', {}) : undefined;
    queue.push(req('job', 'final', channelRef(), true));
    expect(await drainWithClock(queue, 60_000)).toBe(true);
    expect(transport.calls).toHaveLength(3);
    const [a, b, c] = transport.calls.map((x) => x.at);
    expect(b! - a!).toBeGreaterThanOrEqual(500); // base 1 s, jitter 50–100 %
    expect(c! - b!).toBeGreaterThanOrEqual(1000); // doubled
  });

  // Regression: a final edit Discord refused for a few minutes was given up after 8 attempts,
  // leaving the message on its last percentage for good.
  it('a final refused for minutes (500s) is retried with capped backoff until it lands; no unhandled rejection', async () => {
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    try {
      const { transport, queue } = setup({ options: { finalRetryLimit: 3, maxBackoffMs: 4000 } });
      const refusedUntil = Date.now() + 3 * 60_000;
      transport.script = () => (Date.now() < refusedUntil ? new Error('socket hang up') : undefined);
      queue.push(req('job', 'final', channelRef(), true));
      expect(await drainWithClock(queue, 5 * 60_000)).toBe(true);
      const calls = transport.calls.map((c) => c.at);
      expect(calls.length).toBeGreaterThan(10); // far past finalRetryLimit
      expect(calls.at(-1)).toBeGreaterThanOrEqual(refusedUntil); // the last one landed
      const gaps = calls.slice(1).map((t, i) => t - (calls[i] ?? 0));
      expect(Math.max(...gaps)).toBeLessThanOrEqual(4000); // capped backoff
      queue.push(req('job', 'again', channelRef(), true)); // the job is over
      await tick(10_000);
      expect(transport.calls).toHaveLength(calls.length);
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off('unhandledRejection', unhandled);
    }
  });

  it('a progress state with a permanent 500 is dropped after finalRetryLimit; the next state still goes', async () => {
    const { transport, queue } = setup({ options: { finalRetryLimit: 3, maxBackoffMs: 4000 } });
    transport.script = (call) => (call.label === 'p' ? new Error('socket hang up') : undefined);
    queue.push(req('job', 'p', channelRef()));
    expect(await drainWithClock(queue, 120_000)).toBe(true);
    expect(transport.calls).toHaveLength(4); // first attempt + 3 retries
    queue.push(req('job', 'final', channelRef(), true));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls.at(-1)?.label).toBe('final');
  });

  it('400 50035 invalid form body: logged with the job id and dropped, no loop', async () => {
    const { transport, queue, lines } = setup();
    transport.script = (call) => (call.label === 'bad' ? apiError(50035, 400) : undefined);
    const ref = channelRef();
    queue.push(req('job', 'bad', ref));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls).toHaveLength(1);
    expect(lines.some((l) => l.level === 50 && l.jobId === 'job')).toBe(true);
    queue.push(req('job', 'final', ref, true)); // later states still go out
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls.map((c) => c.label)).toEqual(['bad', 'final']);
  });

  it('AutoMod (200000) on a final: the caller is asked to withhold the text, and its new final is delivered', async () => {
    const { transport, queue } = setup();
    transport.script = (call) => (call.label === 'final with prompt' ? apiError(200000, 400) : undefined);
    const ref = channelRef();
    let asked = 0;
    const onAutoMod = () => {
      asked++;
      // What QueuedJobMessages does once the record is marked: the final again, without the text.
      queue.push({ ...req('job', 'final withheld', ref, true) });
    };
    queue.push({ ...req('job', 'final with prompt', ref, true), onAutoMod });
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(asked).toBe(1);
    expect(transport.calls.map((c) => c.label)).toEqual(['final with prompt', 'final withheld']);
  });

  it('AutoMod without a way to withhold (text already withheld): dropped like an invalid edit, no loop', async () => {
    const { transport, queue } = setup();
    transport.script = () => apiError(200000, 400);
    queue.push(req('job', 'final', channelRef(), true));
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls).toHaveLength(1);
  });

  // ---------------------------------------------------------------- accounting

  it('depth(), inFlight(), drain() and close()', async () => {
    const { transport, queue } = setup({ options: { channelLimit: 2, finalReserve: 0 } });
    const channelId = '200000000000000003';
    for (let i = 0; i < 4; i++)
      queue.push(req(`job${i}`, 'p', channelRef(channelId, `30000000000000001${i}`)));
    expect(queue.depth()).toBe(4);
    await tick(1);
    expect(queue.inFlight()).toBe(2);
    expect(queue.depth()).toBe(2);
    const drained = queue.drain(20_000);
    await tick(10_000);
    expect(await drained).toBe(true);
    expect(queue.depth()).toBe(0);
    expect(queue.inFlight()).toBe(0);
    expect(transport.calls).toHaveLength(4);

    // drain() times out while a request hangs; close() drops queued non-finals.
    transport.hang = true;
    queue.push(req('job0', 'p2', channelRef(channelId, '300000000000000010')));
    queue.push(req('job9', 'p', channelRef('200000000000000004', '300000000000000099')));
    await tick(1);
    queue.push(req('job0', 'p3', channelRef(channelId, '300000000000000010')));
    expect(queue.depth()).toBe(1);
    const timedOut = queue.drain(1000);
    await tick(1000);
    expect(await timedOut).toBe(false);
    queue.close();
    expect(queue.depth()).toBe(0);
    queue.push(req('job5', 'p', channelRef()));
    await tick(10_000);
    expect(queue.depth()).toBe(0);
  });
});

/** drain() with the fake clock running. */
async function drainWithClock(queue: EditQueue, timeoutMs: number): Promise<boolean> {
  const p = queue.drain(timeoutMs);
  await vi.advanceTimersByTimeAsync(timeoutMs);
  return p;
}

// ---------------------------------------------------------------- real REST

interface Seen {
  path: string;
  at: number;
  authorization: string | undefined;
}

describe('real REST transport against a local HTTP server', () => {
  it('interaction-webhook edits are not held back by the bot REST global limiter', async () => {
    const seen: Seen[] = [];
    const server = createServer((request: IncomingMessage, response: ServerResponse) => {
      request.resume();
      request.on('end', () => {
        // undici sends `@original` percent-encoded (`%40original`), as discord.js itself does.
        seen.push({
          path: decodeURIComponent(request.url ?? ''),
          at: Date.now(),
          authorization: request.headers.authorization,
        });
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"id":"1"}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
    const botRest = (): REST =>
      new REST({ api, globalRequestsPerSecond: 1, retries: 0 }).setToken('bot-token');
    const isWebhook = (s: Seen) => s.path.includes('/webhooks/');
    const webhookRoute = (i: number) => `/api/v10/webhooks/${APP_ID}/tok${i}/messages/@original`;

    try {
      // Control: the pitfall is real. Sharing the bot REST, an `auth: false`
      // interaction edit waits behind channel edits for the global limiter.
      const shared = botRest();
      const sharedTransport = createRestTransport({ botRest: shared, interactionRest: shared });
      const start1 = Date.now();
      const control = [
        sharedTransport.editChannelMessage('200000000000000001', '300000000000000001', payload('c1')),
        sharedTransport.editChannelMessage('200000000000000002', '300000000000000002', payload('c2')),
        sharedTransport.editInteractionOriginal(APP_ID, 'tok-control', payload('i')),
      ];
      await Promise.all(control);
      const controlEdit = seen.find(isWebhook);
      expect(controlEdit!.at - start1).toBeGreaterThanOrEqual(900);
      seen.length = 0;

      // The fix: a dedicated interaction REST. The bot REST is saturated by
      // channel edits (1 request/s) while 20 interaction edits go through at once.
      const transport = createRestTransport({
        botRest: botRest(),
        interactionRest: createInteractionRest({ api }),
      });
      const { logger } = captureLogger();
      const queue = new EditQueue({ transport, logger });
      const start = Date.now();
      for (let c = 0; c < 3; c++) {
        queue.push(req(`ch${c}`, 'p', channelRef(`20000000000000001${c}`, `30000000000000002${c}`)));
      }
      for (let i = 0; i < 20; i++) {
        queue.push(req(`int${i}`, 'p', { channelId: '2', interaction: freshInteraction(`tok${i}`) }));
      }
      await vi.waitFor(() => expect(seen.filter(isWebhook)).toHaveLength(20), {
        timeout: 5000,
        interval: 10,
      });
      const interactionDone = Date.now() - start;
      const channelSoFar = seen.filter((s) => !isWebhook(s)).length;
      expect(interactionDone).toBeLessThan(700);
      expect(channelSoFar).toBeLessThan(3); // the bot REST was still throttled meanwhile

      expect(await queue.drain(10_000)).toBe(true);
      const webhookEdits = seen.filter(isWebhook);
      expect(webhookEdits.map((s) => s.path).sort()).toEqual(
        Array.from({ length: 20 }, (_, i) => webhookRoute(i)).sort(),
      );
      // The bot token never goes to webhook endpoints; channel edits carry it.
      expect(webhookEdits.every((s) => s.authorization === undefined)).toBe(true);
      expect(seen.filter((s) => !isWebhook(s)).every((s) => s.authorization === 'Bot bot-token')).toBe(true);
      queue.close();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('QueuedJobMessages on the in-process queue', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(T0);
  });
  afterEach(() => vi.useRealTimers());

  // Issue 35: 10,000 tracked jobs on SQLite, polled, whose messages are over an hour old: each
  // progress was queued, dropped at once as unroutable, and its message's slot (with callbacks
  // holding the job's record) kept for six hours: 10 MiB of heap that only grew.
  it('queues no state that no route can take now, and keeps no slot for it', async () => {
    const { transport, queue } = setup();
    const messages = new QueuedJobMessages({
      edits: queue,
      renderers: {
        render: (job) => payload(`${job.id}|${job.state} ${job.percentage}`),
        renderReply: (job) => payload(`${job.id}|reply ${job.state}`),
        withoutFreeText: (job) => job,
      },
      now: Date.now,
      learned: { tokenRefused: () => undefined, dmRefused: () => undefined },
    });
    const job = (over: Partial<JobRecord>): JobRecord => ({
      id: 'j1',
      secret: 's',
      operation: 'song',
      userId: '100000000000000001',
      message: channelRef(),
      params: {} as JobRecord['params'],
      state: 'processing',
      percentage: 40,
      createdAt: T0 - 2 * 3_600_000, // two hours old: finals only on the channel route
      updatedAt: T0,
      version: 2,
      ...over,
    });
    for (let p = 41; p < 60; p++) messages.jobChanged(job({ percentage: p }));
    // A personal job past its interaction token has no route for its progress either.
    messages.jobChanged(
      job({ id: 'j2', personal: true, message: { channelId: '200000000000000009' }, percentage: 50 }),
    );
    expect(queue.size).toBe(0);
    expect(queue.depth()).toBe(0);
    // Its final still goes (the channel route takes finals of old messages).
    messages.jobChanged(job({ state: 'finished', percentage: 100, finishedAt: T0 }));
    expect(queue.size).toBe(1);
    expect(await drainWithClock(queue, 10_000)).toBe(true);
    expect(transport.calls.map((c) => c.label)).toEqual(['finished 100']);
    messages.close();
  });
});
