/**
 * `npm run dev:emulator`: runs the media-service emulator for manual testing.
 * Env: EMULATOR_PORT (4010), EMULATOR_API_KEY (dev-key), EMULATOR_STEP_MS (1500).
 */
import {
  FIXTURE_SONG_IDS,
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
  startEmulator,
  type EmulatorEvent,
} from './server.js';

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`);
    process.exit(1);
  }
  return value;
}

function describe(event: EmulatorEvent): string {
  switch (event.type) {
    case 'request': {
      const { method, path, statusCode, bodyBytes } = event.entry;
      return `← ${method} ${path} ${statusCode} (${bodyBytes} B)`;
    }
    case 'task': {
      const body = event.change.body;
      const detail = body['percentage'] ?? body['message'] ?? '';
      return `• task ${event.task.id} [${event.task.operation}] ${event.task.state} ${String(detail)}`;
    }
    case 'webhook': {
      const d = event.delivery;
      const outcome = d.dropped ? 'dropped' : (d.statusCode ?? d.error ?? '?');
      return `→ webhook ${d.kind} for ${d.taskId} to ${d.url}: ${String(outcome)}`;
    }
  }
}

const emulator = await startEmulator({
  port: envNumber('EMULATOR_PORT', 4010),
  apiKey: process.env['EMULATOR_API_KEY'] || 'dev-key',
  scenario: { stepMs: envNumber('EMULATOR_STEP_MS', 1500) },
});
emulator.onEvent((event) => console.log(describe(event)));

console.log(`Media-service emulator listening on ${emulator.url} (key: ${emulator.apiKey})

Point the bot at it:
  MEDIA_API_URL=${emulator.url}
  MEDIA_API_KEY=${emulator.apiKey}

Parent tasks you can extend:
  song:  parent_task_id=${FIXTURE_SONG_TASK_ID}  song_id=${FIXTURE_SONG_IDS.join(' | ')}
  video: parent_task_id=${FIXTURE_VIDEO_TASK_ID}
  (every song/video task created here can be extended too)

Control (unauthenticated, loopback only):
  GET  ${emulator.url}/_emulator/tasks
  POST ${emulator.url}/_emulator/scenario         {"hold":true} {"outcome":"failed"} {"shuffleWebhooks":true} ...
  POST ${emulator.url}/_emulator/next-scenario    same fields, next task only
  POST ${emulator.url}/_emulator/tasks/<id>/finish   |  /fail {"message":"..."}
  POST ${emulator.url}/_emulator/fail-next        {"count":1,"status":500,"path":"/song-extend"}
  POST ${emulator.url}/_emulator/delay-next       {"ms":20000}
  POST ${emulator.url}/_emulator/reset
`);

let stopping = false;
const stop = (signal: NodeJS.Signals): void => {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping emulator`);
  emulator.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
