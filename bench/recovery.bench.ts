/**
 * Reading 10,000 unfinished tasks back (what restart recovery does): the emulator holds
 * 10,000 processing song tasks, and a TaskReader reads every one, once with fetch-many (20
 * per request) and once against an emulator without it (one per request). Printed: requests
 * sent to the service, time to the last read, and what the pace alone costs at the
 * production default (MEDIA_READS_PER_SECOND=10).
 *
 * BENCH_RECOVERY_TASKS (10000) and BENCH_READS_PER_SECOND (200: the single-fetch run then
 * takes ~50 s; the default 10/s would take ~17 min) tune it.
 */
import { pino } from 'pino';
import { MediaClient } from '../src/services/media/client.js';
import { SubmitLimit } from '../src/services/media/submit-limit.js';
import { TaskReader } from '../src/services/media/task-batcher.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, startEmulator } from '../test/emulator/server.js';
import { r1 } from './common.js';
import { mediaOperations } from '../src/services/operations/index.js';
import { DEFAULT_MEDIA_PATHS } from '../test/helpers/media-paths.js';

const PRODUCTION_RATE = 10;

function envInt(name: string, fallback: number): number {
  const n = Number(process.env[name] ?? fallback);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

export interface RecoveryRow {
  mode: string;
  tasks: number;
  'reads/s allowed': number;
  'requests sent': number;
  'time to last read (s)': number;
  'at 10/s it would take (s)': number;
  'failed reads': number;
}

export async function runRecoveryBench(): Promise<RecoveryRow[]> {
  const count = envInt('BENCH_RECOVERY_TASKS', 10_000);
  const rate = envInt('BENCH_READS_PER_SECOND', 200);
  const emulator = await startEmulator({ scenario: { hold: true, steps: [] } });
  const logger = pino({ level: 'warn' });
  const client = (): MediaClient =>
    new MediaClient({
      baseUrl: emulator.url,
      apiKey: emulator.apiKey,
      paths: DEFAULT_MEDIA_PATHS,
      photoFormat: 'url',
      timeoutMs: 30_000,
      upscaleTimeoutMs: 30_000,
      logger,
      operations: mediaOperations,
      submitLimit: new SubmitLimit({ initial: 64 }),
    });
  const rows: RecoveryRow[] = [];
  try {
    const seeding = client();
    const ids: string[] = [];
    const song = { parentTaskId: FIXTURE_SONG_TASK_ID, songId: FIXTURE_SONG_IDS[0] };
    for (let i = 0; i < count; i += 500) {
      const batch = Math.min(500, count - i);
      const made = await Promise.all(Array.from({ length: batch }, () => seeding.extendSong(song)));
      ids.push(...made.map((m) => m.taskId));
    }
    await seeding.close();
    console.log(
      `${ids.length} unfinished tasks held by the emulator; reading them back at ≤ ${rate} requests/s`,
    );

    for (const fetchMany of [true, false]) {
      emulator.setFeatures({ fetchMany });
      const media = client();
      const reader = new TaskReader({ media, requestsPerSecond: rate, logger });
      const before = emulator.requests.length;
      const started = performance.now();
      const outcomes = await Promise.allSettled(ids.map((id) => reader.read('song', id)));
      const elapsed = (performance.now() - started) / 1000;
      const sent = emulator.requests
        .slice(before)
        .filter((r) => r.path === '/fetch' || r.path === '/fetch-many').length;
      rows.push({
        mode: fetchMany ? 'fetch-many (20 per request)' : 'single fetch (no fetch-many)',
        tasks: ids.length,
        'reads/s allowed': rate,
        'requests sent': sent,
        'time to last read (s)': r1(elapsed),
        'at 10/s it would take (s)': r1(sent / PRODUCTION_RATE),
        'failed reads': outcomes.filter((o) => o.status === 'rejected').length,
      });
      reader.close();
      await media.close();
    }
  } finally {
    await emulator.close();
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await runRecoveryBench());
  process.exit(0);
}
