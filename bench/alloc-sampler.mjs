/**
 * Bench-only (BENCH_ALLOC_PROFILE=<file>, see common.ts): loaded into the benchmarked bot with
 * `--import`, samples every allocation, garbage included (V8's sampling heap profiler with
 * the objects later collected kept), for BENCH_ALLOC_PROFILE_MS or until SIGTERM, then writes the profile
 * (a `.heapprofile`, readable by Chrome DevTools) to that file. Never part of the bot.
 * BENCH_ALLOC_PROFILE_FROM_MS: sampling starts that late (the start-up left out).
 * BENCH_ALLOC_PROFILE_MODE=promoted: only what outlived the young generation (what a
 * young-generation GC collected is left out), i.e. what fills the old generation.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const file = process.env.BENCH_ALLOC_PROFILE;
const ms = Number(process.env.BENCH_ALLOC_PROFILE_MS ?? 40_000);
if (file) {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  const start = () =>
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 32_768,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: process.env.BENCH_ALLOC_PROFILE_MODE !== 'promoted',
    });
  // BENCH_ALLOC_PROFILE_FROM_MS: leave the start-up out (sampling starts that late).
  const from = Number(process.env.BENCH_ALLOC_PROFILE_FROM_MS ?? 0);
  if (from > 0) setTimeout(start, from).unref();
  else start();
  let written = false;
  // The in-process session answers synchronously: this runs whole before the bot's own SIGTERM exit.
  const write = () => {
    if (written) return;
    written = true;
    session.post('HeapProfiler.stopSampling', (err, res) => {
      if (!err) writeFileSync(file, JSON.stringify(res.profile));
      session.disconnect();
    });
  };
  setTimeout(write, ms).unref();
  process.prependListener('SIGTERM', write);
}
