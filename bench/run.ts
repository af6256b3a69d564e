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
    title: 'Webhook storms: finished → final edit, edits per job, 429s (fake Discord with real limits)',
    run: async () => {
      for (const r of await (await import('./storm.bench.js')).runStormBench()) console.table(r);
    },
  },
  memory: {
    title: 'Bot RSS with 10 000 tracked jobs (store on Redis, bot in its own process)',
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
