/** `npm run bench`: every benchmark, figures printed (no pass/fail thresholds). */
import { runStormBench } from './storm.bench.js';
import { runPhotoUploadBench } from './photo-upload.bench.js';

const only = process.argv[2];
if (!only || only === 'photo') {
  console.log('\n== Training photo upload: 30 × 10 MiB streamed as base64 ==');
  console.table(await runPhotoUploadBench());
}
if (!only || only === 'storm') {
  console.log('\n== Webhook storm ==');
  for (const r of await runStormBench()) console.table(r);
}
process.exit(0);
