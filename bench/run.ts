/**
 * `npm run bench [-- name…]`: every benchmark, or the named ones
 * (throughput, storm, memory, photo, recovery). Figures printed; no pass/fail thresholds.
 */
import { runMemoryBench } from './memory.bench.js';
import { runPhotoUploadBench } from './photo-upload.bench.js';
import { runRecoveryBench } from './recovery.bench.js';
import { runStormBench } from './storm.bench.js';
import { runThroughputBench } from './throughput.bench.js';

const BENCHES: Record<string, { title: string; run: () => Promise<unknown> }> = {
  throughput: {
    title: 'Webhook intake throughput vs a bare Fastify + Keyv/Redis handler (autocannon, separate process)',
    run: async () => console.table(await runThroughputBench()),
  },
  storm: {
    title: 'Webhook storms: finished → final edit, edits per job, 429s (fake Discord with real limits)',
    run: async () => {
      for (const r of await runStormBench()) console.table(r);
    },
  },
  memory: {
    title: 'Bot RSS with 10 000 tracked jobs (store on Redis, bot in its own process)',
    run: async () => {
      for (const r of await runMemoryBench()) console.table(r);
    },
  },
  photo: {
    title: 'Training photos: 30 × 10 MiB phone JPEGs cleaned (sharp) and streamed as base64',
    run: async () => console.table(await runPhotoUploadBench()),
  },
  recovery: {
    title: 'Reading 10 000 unfinished tasks back: fetch-many vs single fetch (TaskReader, paced)',
    run: async () => console.table(await runRecoveryBench()),
  },
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !(n in BENCHES));
if (unknown.length > 0) {
  console.error(
    `unknown benchmark(s): ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}`,
  );
  process.exit(2);
}
for (const [name, b] of Object.entries(BENCHES)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  console.log(`\n== ${b.title} ==`);
  await b.run();
}
process.exit(0);
