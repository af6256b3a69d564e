/**
 * `npm run bench [-- name…]`: every benchmark, or the named ones
 * (throughput, storm, memory, photo, recovery). Figures printed; no pass/fail thresholds.
 * Each is loaded only when it runs, so `--help` answers at once.
 */
const BENCHES: Record<string, { title: string; run: () => Promise<unknown> }> = {
  throughput: {
    title: 'Webhook intake throughput vs a bare Fastify + Keyv/Redis handler (autocannon, separate process)',
    run: async () => console.table(await (await import('./throughput.bench.js')).runThroughputBench()),
  },
  storm: {
    title:
      'Webhook storms on Redis and SQLite: finished → final p95, ack p99 beside a bare gateway handler, 429s, bot RSS peak and after (fake Discord)',
    run: async () => {
      for (const r of await (await import('./storm.bench.js')).runStormBench()) console.table(r);
    },
  },
  memory: {
    title: 'Bot RSS with no jobs and with 10 000 tracked jobs, on Redis and SQLite (bot in its own process)',
    run: async () => {
      for (const r of await (await import('./memory.bench.js')).runMemoryBench()) console.table(r);
    },
  },
  photo: {
    title: 'Training photos: 30 × 10 MiB phone JPEGs cleaned (sharp) and streamed as base64',
    run: async () => console.table(await (await import('./photo-upload.bench.js')).runPhotoUploadBench()),
  },
  recovery: {
    title: 'Reading 10 000 unfinished tasks back: fetch-many vs single fetch (TaskReader, paced)',
    run: async () => console.table(await (await import('./recovery.bench.js')).runRecoveryBench()),
  },
};

const usage = (): string =>
  [
    'npm run bench [-- name…]: every benchmark, or the named ones (figures printed, no pass/fail)',
    '',
    ...Object.entries(BENCHES).map(([name, b]) => `  ${name.padEnd(11)} ${b.title}`),
    '',
    'Each takes minutes and most of the machine; see docs/performance.md.',
    'Environment: BENCH_STORES=redis,sqlite (storm, memory), BENCH_STORMS=one,ten,expired,',
    '  BENCH_SETTLE_MS (storm: when RSS is read after the last final, 5000), BENCH_JOBS,',
    '  BENCH_WATCH_SECONDS, BENCH_SETTLE_SECONDS, BENCH_BOT_OUTPUT=<prefix> (memory),',
    '  BENCH_HEAP_SNAPSHOTS=<dir> (heap snapshots of the bot),',
    '  BENCH_ALLOC_PROFILE=<file> (its allocations sampled, garbage included; _MODE=promoted, _FROM_MS),',
    '  BENCH_NODE_FLAGS.',
  ].join('\n');

const wanted = process.argv.slice(2);
if (wanted.some((a) => a === '--help' || a === '-h')) {
  console.log(usage());
  process.exit(0);
}
const unknown = wanted.filter((n) => !(n in BENCHES));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}\n\n${usage()}`);
  process.exit(2);
}
for (const [name, b] of Object.entries(BENCHES)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  console.log(`\n== ${b.title} ==`);
  await b.run();
}
process.exit(0);
