/**
 * The heap trim (src/services/runtime/heap-trim.ts): a memory-reducing GC after start-up and
 * after a peak whose pages lie unused, never during a busy heap's usual sawtooth, and off where
 * the runtime gives freed pages back itself or `gc` is not exposed.
 */
import { spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import {
  createHeapTrim,
  exposedGc,
  v8PoolsFreedPages,
  type GcFunction,
} from '../src/services/runtime/heap-trim.js';
import { productionNodeFlags } from './helpers/production-node-flags.js';

const MiB = 1024 * 1024;

function setup(heap: { bytes: number }, gcImpl?: () => void) {
  let t = 1_000_000;
  const gc = vi.fn<GcFunction>(gcImpl ?? (() => undefined));
  const trim = createHeapTrim({
    logger: pino({ level: 'silent' }),
    gc,
    pools: true,
    committed: () => heap.bytes,
    now: () => t,
    options: { checkEveryMs: 5000, windowMs: 20_000, minFreedBytes: 8 * MiB, minIntervalMs: 60_000 },
  });
  /** Checks every 5 s for `ms`, the heap given by `at(elapsed)`. */
  const run = (ms: number, at: (elapsed: number) => number) => {
    for (let e = 5000; e <= ms; e += 5000) {
      t += 5000;
      heap.bytes = at(e);
      trim.check();
    }
  };
  return { trim, gc, run, start: () => trim.start() };
}

describe('heap trim', () => {
  it('after a peak whose pages stay unused for the window: one memory-reducing GC', () => {
    const heap = { bytes: 60 * MiB };
    const { gc, run, start } = setup(heap);
    start();
    // A storm: the heap grows to 80 MiB, then a GC brings it back to 60 and it stays there.
    run(10_000, () => 80 * MiB);
    run(15_000, () => 60 * MiB);
    expect(gc).not.toHaveBeenCalled(); // not before a whole window has passed below the peak
    run(10_000, () => 60 * MiB);
    expect(gc).toHaveBeenCalledTimes(1);
    expect(gc).toHaveBeenCalledWith({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  });

  it("a busy heap's sawtooth (it grows back within the window) triggers none", () => {
    const heap = { bytes: 60 * MiB };
    const { gc, run, start } = setup(heap);
    start();
    // Up to 72 MiB over 15 s, a GC back to 60, again and again: the pooled pages are reused.
    run(600_000, (e) => 60 * MiB + ((e % 20_000) / 20_000) * 12 * MiB);
    expect(gc).not.toHaveBeenCalled();
  });

  it('a drop smaller than minFreedBytes triggers none', () => {
    const heap = { bytes: 60 * MiB };
    const { gc, run, start } = setup(heap);
    start();
    run(10_000, () => 66 * MiB);
    run(120_000, () => 60 * MiB);
    expect(gc).not.toHaveBeenCalled();
  });

  it('at most one per minIntervalMs, the explicit one after start-up included', () => {
    const heap = { bytes: 90 * MiB };
    const { trim, gc, run, start } = setup(heap);
    expect(trim.trim('start-up')).toBe(true);
    start();
    // Peaks every 40 s, each followed by a long quiet stretch.
    run(300_000, (e) => (e % 40_000 === 5000 ? 90 * MiB : 60 * MiB));
    expect(gc.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(gc.mock.calls.length).toBeLessThanOrEqual(1 + 300_000 / 60_000);
  });

  it('a failing gc is logged, not thrown', () => {
    const heap = { bytes: 60 * MiB };
    const { trim } = setup(heap, () => {
      throw new Error('boom');
    });
    expect(() => trim.trim('start-up')).not.toThrow();
  });

  it('is off without an exposed gc, and where V8 gives freed pages back itself (V8 11, Node 20)', () => {
    const logger = pino({ level: 'silent' });
    expect(createHeapTrim({ logger, gc: undefined, pools: true }).enabled).toBe(false);
    const gc = vi.fn<GcFunction>();
    const off = createHeapTrim({ logger, gc, pools: false });
    expect(off.enabled).toBe(false);
    expect(off.trim('start-up')).toBe(false);
    expect(gc).not.toHaveBeenCalled();
    expect(v8PoolsFreedPages('11.3.244.8-node.33')).toBe(false);
    expect(v8PoolsFreedPages('12.4.254.21-node.57')).toBe(true);
    expect(v8PoolsFreedPages('13.6.233.17-node.53')).toBe(true);
  });

  it('exposedGc finds only a function', () => {
    expect(exposedGc({})).toBeUndefined();
    expect(exposedGc({ gc: 'no' })).toBeUndefined();
    const fn = () => undefined;
    expect(exposedGc({ gc: fn })).toBe(fn);
  });

  it('with the production flags, the real gc releases pooled pages (RSS falls after a peak)', () => {
    // A child with the bot's flags: build a ~100 MiB peak, drop it, trim, report RSS.
    const script = `
      const { createHeapTrim, exposedGc } = await import(${JSON.stringify(new URL('../src/services/runtime/heap-trim.ts', import.meta.url).href)});
      const rss = () => process.memoryUsage.rss();
      let keep = [];
      for (let i = 0; i < 400000; i++) keep.push({ a: 'x'.repeat(20) + i, b: [i, i + 1] });
      keep = null;
      globalThis.gc();
      const before = rss();
      const trim = createHeapTrim({ logger: { info() {}, warn() {} }, gc: exposedGc(), pools: true });
      const did = trim.trim('test');
      console.log(JSON.stringify({ did, before, after: rss() }));
    `;
    const r = spawnSync(
      process.execPath,
      [...productionNodeFlags(), '--import', 'tsx', '--input-type=module', '-e', script],
      { encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as {
      did: boolean;
      before: number;
      after: number;
    };
    expect(out.did).toBe(true);
    // Where V8 pools (12+), the peak's pages were still resident after the plain gc().
    if (v8PoolsFreedPages()) expect(out.before - out.after).toBeGreaterThan(40 * MiB);
    else expect(out.after).toBeLessThan(out.before + 8 * MiB);
  });
});
