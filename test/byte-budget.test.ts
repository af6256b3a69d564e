/**
 * The memory budget for buffered files: reservations in bytes, served first come first
 * served, with a timeout that takes a waiter out of the queue; shrink and release give
 * bytes back; bufferWithinBudget reserves before reading and never holds more.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  bufferWithinBudget,
  ByteBudget,
  ByteBudgetError,
  DEFAULT_BUFFER_BUDGET_BYTES,
  type BodySource,
  type Reservation,
} from '../src/services/net/byte-budget.js';
import { compileAllowList } from '../src/services/net/address-policy.js';
import { createSafeDownloader } from '../src/services/net/safe-download.js';

const MIB = 1024 * 1024;

/** Lets promise callbacks run (no time passes). */
const settle = () => new Promise<void>((r) => setImmediate(r));

/** The order in which reservations are granted. */
function track(budget: ByteBudget, name: string, bytes: number, log: string[], timeoutMs?: number) {
  const p = budget.reserve(bytes, timeoutMs === undefined ? {} : { timeoutMs });
  void p.then(
    () => log.push(name),
    (e: unknown) => log.push(`${name}:${(e as ByteBudgetError).kind}`),
  );
  return p;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('ByteBudget', () => {
  it('64 MiB by default; grants at once while there is room', async () => {
    const budget = new ByteBudget();
    expect(budget.capacity).toBe(DEFAULT_BUFFER_BUDGET_BYTES);
    expect(DEFAULT_BUFFER_BUDGET_BYTES).toBe(64 * MIB);
    const a = await budget.reserve(40 * MIB);
    const b = await budget.reserve(24 * MIB);
    expect(budget.available).toBe(0);
    a.release();
    b.release();
    expect(budget.available).toBe(64 * MIB);
  });

  it('waits when full and is served when bytes come back', async () => {
    const budget = new ByteBudget(100);
    const log: string[] = [];
    const a = await budget.reserve(80);
    void track(budget, 'b', 50, log);
    await settle();
    expect(log).toEqual([]);
    expect(budget.waiting).toBe(1);
    a.release();
    await settle();
    expect(log).toEqual(['b']);
    expect(budget.available).toBe(50);
  });

  it('first come first served: a small late request does not pass a large waiting one', async () => {
    const budget = new ByteBudget(100);
    const log: string[] = [];
    const held = await budget.reserve(70);
    const big = track(budget, 'big', 60, log);
    const small = track(budget, 'small', 10, log); // would fit now (30 free) but arrived later
    await settle();
    expect(log).toEqual([]);
    held.release();
    await settle();
    expect(log).toEqual(['big', 'small']);
    (await big).release();
    (await small).release();
    expect(budget.available).toBe(100);
  });

  it('shrink gives back what is above the real size, and wakes waiters', async () => {
    const budget = new ByteBudget(100);
    const log: string[] = [];
    const r = await budget.reserve(100); // the cap, size unknown
    void track(budget, 'next', 60, log);
    r.shrink(30); // the file was 30 bytes
    await settle();
    expect(r.bytes).toBe(30);
    expect(log).toEqual(['next']);
    expect(budget.available).toBe(10);
    r.shrink(50); // never grows
    expect(r.bytes).toBe(30);
    r.release();
    r.release(); // idempotent
    expect(budget.available).toBe(40);
  });

  it('more than the whole budget is refused at once', async () => {
    const budget = new ByteBudget(64 * MIB);
    await expect(budget.reserve(100 * MIB)).rejects.toMatchObject({ kind: 'too_large' });
    expect(budget.available).toBe(64 * MIB);
  });

  it('a waiter times out (fake timers), leaves the queue, and no longer holds up the ones behind it', async () => {
    vi.useFakeTimers();
    const budget = new ByteBudget(100);
    const log: string[] = [];
    const held = await budget.reserve(60);
    void track(budget, 'big', 80, log, 5000).catch(() => undefined);
    void track(budget, 'small', 30, log, 60_000);
    await vi.advanceTimersByTimeAsync(4999);
    expect(log).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    // big gave up; small (30 ≤ 40 free) is served right away instead of waiting behind it.
    expect(log).toEqual(['big:timeout', 'small']);
    expect(budget.waiting).toBe(0);
    held.release();
    expect(budget.available).toBe(70);
  });

  it('uses the default wait of the budget', async () => {
    vi.useFakeTimers();
    const budget = new ByteBudget(10, 1000);
    await budget.reserve(10);
    const log: string[] = [];
    void track(budget, 'w', 5, log).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(1000);
    expect(log).toEqual(['w:timeout']);
  });

  it('an aborted waiter leaves the queue', async () => {
    const budget = new ByteBudget(10);
    const held = await budget.reserve(10);
    const ac = new AbortController();
    const p = budget.reserve(5, { signal: ac.signal });
    expect(budget.waiting).toBe(1);
    ac.abort();
    await expect(p).rejects.toMatchObject({ kind: 'aborted' });
    expect(budget.waiting).toBe(0);
    held.release();
    expect(budget.available).toBe(10);
    await expect(budget.reserve(1, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(ByteBudgetError);
  });

  it('a granted waiter is not timed out later', async () => {
    vi.useFakeTimers();
    const budget = new ByteBudget(10);
    const held = await budget.reserve(10);
    const p = budget.reserve(10, { timeoutMs: 1000 });
    held.release();
    const r: Reservation = await p;
    await vi.advanceTimersByTimeAsync(5000);
    expect(r.bytes).toBe(10);
    expect(budget.available).toBe(0);
  });
});

/** A body of `chunks`, reporting whether it was aborted. */
function source(chunks: Buffer[], contentLength?: number): BodySource & { aborted: boolean; read: number } {
  const state = { aborted: false, read: 0 };
  async function* body(): AsyncGenerator<Uint8Array> {
    for (const c of chunks) {
      state.read += c.length;
      yield c;
    }
  }
  return Object.assign(state, {
    ...(contentLength !== undefined ? { contentLength } : {}),
    body: body(),
    abort: () => {
      state.aborted = true;
    },
  });
}

describe('bufferWithinBudget', () => {
  it('reserves the declared length, reads into it, releases on demand', async () => {
    const budget = new ByteBudget(1000);
    const src = source([Buffer.from('hello '), Buffer.from('world')], 11);
    const spy = vi.spyOn(budget, 'reserve');
    const out = await bufferWithinBudget(src, budget, { maxBytes: 500 });
    expect(spy).toHaveBeenCalledWith(11, {});
    expect(out.data.toString()).toBe('hello world');
    expect(budget.available).toBe(989);
    out.release();
    expect(budget.available).toBe(1000);
  });

  it('no declared length: reserves the cap, shrinks to the real size', async () => {
    const budget = new ByteBudget(1000);
    const src = source([Buffer.alloc(100), Buffer.alloc(20)]);
    const spy = vi.spyOn(budget, 'reserve');
    const out = await bufferWithinBudget(src, budget, { maxBytes: 500 });
    expect(spy.mock.calls[0]?.[0]).toBe(500);
    expect(out.data.length).toBe(120);
    expect(budget.available).toBe(880);
  });

  it('a cap over the whole budget reserves the whole budget', async () => {
    const budget = new ByteBudget(1000);
    const spy = vi.spyOn(budget, 'reserve');
    const out = await bufferWithinBudget(source([Buffer.alloc(10)]), budget, { maxBytes: 100 * MIB });
    expect(spy.mock.calls[0]?.[0]).toBe(1000);
    expect(out.data.length).toBe(10);
  });

  it('a body longer than its declared length is stopped and the bytes given back', async () => {
    const budget = new ByteBudget(1000);
    const src = source([Buffer.alloc(8), Buffer.alloc(8)], 10);
    await expect(bufferWithinBudget(src, budget, { maxBytes: 500 })).rejects.toMatchObject({
      kind: 'too_large',
    });
    expect(src.aborted).toBe(true);
    expect(budget.available).toBe(1000);
  });

  it('a read error releases the reservation', async () => {
    const budget = new ByteBudget(1000);
    const src: BodySource = {
      body: (async function* () {
        yield Buffer.alloc(10);
        throw new Error('connection reset');
      })(),
      abort: () => undefined,
    };
    await expect(bufferWithinBudget(src, budget, { maxBytes: 500 })).rejects.toThrow('connection reset');
    expect(budget.available).toBe(1000);
  });

  it('waits for room before reading a byte, and gives up after its timeout (fake timers)', async () => {
    vi.useFakeTimers();
    const budget = new ByteBudget(100);
    const held = await budget.reserve(90);
    const src = source([Buffer.alloc(50)], 50);
    const p = bufferWithinBudget(src, budget, { maxBytes: 100, timeoutMs: 2000 });
    const outcome = p.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1000);
    expect(src.read).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await outcome).toMatchObject({ kind: 'timeout' });
    expect(src.aborted).toBe(true);
    expect(src.read).toBe(0);
    held.release();
    expect(budget.available).toBe(100);
  });

  it('with a real download: the file is held within the budget', async () => {
    const server = createServer((_req, res) => res.end(Buffer.alloc(3000, 9)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const downloader = createSafeDownloader();
    try {
      const budget = new ByteBudget(10_000);
      const res = await downloader.download(`${origin}/f`, {
        maxBytes: 5000,
        timeoutMs: 10_000,
        allow: compileAllowList({ origins: [origin], cidrs: [] }),
      });
      const file = await bufferWithinBudget(res, budget, { maxBytes: 5000 });
      expect(file.data.equals(Buffer.alloc(3000, 9))).toBe(true);
      expect(budget.available).toBe(7000);
      file.release();
      expect(budget.available).toBe(10_000);
    } finally {
      await downloader.close();
      server.close();
    }
  });
});
