/**
 * `npm run dev:emulator [-- flags]`: runs the media-service emulator for manual testing.
 * Every flag has an environment variable too (the flag wins); `--help` lists them.
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_ACCOUNT,
  FIXTURE_SONG_IDS,
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
  startEmulator,
  type EmulatorEvent,
  type Step,
} from './server.js';

const FLAGS = {
  port: { type: 'string', env: 'EMULATOR_PORT', help: 'port (default 4010)' },
  key: { type: 'string', env: 'EMULATOR_API_KEY', help: 'API key (default dev-key)' },
  'step-ms': {
    type: 'string',
    env: 'EMULATOR_STEP_MS',
    help: 'ms between two states of a task (default 1500)',
  },
  steps: {
    type: 'string',
    env: 'EMULATOR_STEPS',
    help: 'a task\'s states, e.g. "pending,starting,30,retry,60,90" (numbers: processing %)',
  },
  'video-task-type': {
    type: 'string',
    env: 'EMULATOR_VIDEO_TASK_TYPE',
    help: 'task_type of video results: video-ext (default) or luma-ext',
  },
  'no-fetch-many': { type: 'boolean', env: 'EMULATOR_NO_FETCH_MANY', help: 'POST /fetch-many answers 404' },
  'no-account': { type: 'boolean', env: 'EMULATOR_NO_ACCOUNT', help: 'GET /account answers 404' },
  credits: {
    type: 'string',
    env: 'EMULATOR_CREDITS',
    help: `account credits (default ${DEFAULT_ACCOUNT.credits}); submissions spend them, 402 when short`,
  },
  plan: { type: 'string', env: 'EMULATOR_PLAN', help: `account plan (default ${DEFAULT_ACCOUNT.plan})` },
  'result-ttl-seconds': {
    type: 'string',
    env: 'EMULATOR_RESULT_TTL_SECONDS',
    help: 'result files answer 404 this long after their task ended (default 86400)',
  },
  help: { type: 'boolean', env: '', help: 'this text' },
} as const;

function usage(): string {
  return Object.entries(FLAGS)
    .map(([name, f]) => `  --${name.padEnd(20)} ${f.env ? `${f.env.padEnd(28)} ` : ''.padEnd(29)}${f.help}`)
    .join('\n');
}

/** The control routes (429s, failures, lost answers, scenarios…), on the emulator at `base`. */
function controlHelp(base: string): string {
  return `Control (unauthenticated, loopback only):
  GET  ${base}/_emulator/tasks
  POST ${base}/_emulator/scenario         {"hold":true} {"outcome":"failed"} {"shuffleWebhooks":true}
                                                  {"steps":["pending","starting",40,"retry",80]} {"videoTaskType":"luma-ext"} ...
  POST ${base}/_emulator/next-scenario    same fields, next task only
  POST ${base}/_emulator/tasks/<id>/finish   |  /fail {"message":"..."}
  POST ${base}/_emulator/fail-next        {"count":1,"status":500,"path":"/song-extend"}  (400 401 402 403 404 409 422 500 502 503 504)
  POST ${base}/_emulator/delay-next       {"ms":20000}
  POST ${base}/_emulator/rate-limit-next  {"count":3,"retryAfter":2,"format":"seconds"|"date"}  (429, nothing created)
  POST ${base}/_emulator/lose-next        {"count":1,"mode":"bad-gateway"|"reset"|"late","delayMs":40000}  (task created, answer lost)
  POST ${base}/_emulator/features         {"fetchMany":false,"account":false}
  POST ${base}/_emulator/account          {"credits":0} {"addCredits":500} {"plan":"basic"}
  POST ${base}/_emulator/expire-results   {} (every result) or {"taskId":"..."}
  POST ${base}/_emulator/result-ttl       {"ms":60000}
  POST ${base}/_emulator/reset`;
}

let args: Record<string, string | boolean | undefined>;
try {
  args = parseArgs({
    options: Object.fromEntries(Object.entries(FLAGS).map(([n, f]) => [n, { type: f.type }])),
    allowPositionals: false,
  }).values;
} catch (error) {
  console.error(
    `${error instanceof Error ? error.message : String(error)}\n\nFlags (or environment):\n${usage()}`,
  );
  process.exit(2);
}
if (args['help'] === true) {
  // The control routes too: 429s, failures and lost answers are switched there, not by flags.
  const port = typeof args['port'] === 'string' ? args['port'] : '4010';
  console.log(
    `npm run dev:emulator -- [flags]\n\nFlags (or environment):\n${usage()}\n\n${controlHelp(`http://127.0.0.1:${port}`)}`,
  );
  process.exit(0);
}

function raw(name: keyof typeof FLAGS): string | boolean | undefined {
  const flag = args[name];
  if (flag !== undefined) return flag;
  const fromEnv = process.env[FLAGS[name].env];
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}

function flagNumber(name: keyof typeof FLAGS, fallback: number): number {
  const value = raw(name);
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || !Number.isFinite(n) || n < 0) {
    console.error(
      `--${name} / ${FLAGS[name].env} must be a non-negative number, got ${JSON.stringify(value)}`,
    );
    process.exit(1);
  }
  return n;
}

function flagOn(name: keyof typeof FLAGS): boolean {
  const value = raw(name);
  return (
    value === true || (typeof value === 'string' && ['1', 'true', 'yes', 'on'].includes(value.toLowerCase()))
  );
}

function flagString(name: keyof typeof FLAGS): string | undefined {
  const value = raw(name);
  return typeof value === 'string' ? value : undefined;
}

function steps(): Step[] | undefined {
  const list = flagString('steps');
  if (list === undefined) return undefined;
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function describe(event: EmulatorEvent): string {
  switch (event.type) {
    case 'request': {
      const { method, path, statusCode, bodyBytes, rateLimited, lostAnswer } = event.entry;
      const note = rateLimited ? ' [rate limited]' : lostAnswer ? ` [answer lost: ${lostAnswer}]` : '';
      return `← ${method} ${path} ${statusCode} (${bodyBytes} B)${note}`;
    }
    case 'task': {
      const body = event.change.body;
      const detail = body['percentage'] ?? body['status'] ?? body['message'] ?? '';
      return `• task ${event.task.id} [${event.task.operation}] ${event.task.state} ${String(detail)}`;
    }
    case 'webhook': {
      const d = event.delivery;
      const outcome = d.dropped ? 'dropped' : (d.statusCode ?? d.error ?? '?');
      return `→ webhook ${d.kind} for ${d.taskId} to ${d.url}: ${String(outcome)}`;
    }
  }
}

const taskSteps = steps();
const videoTaskType = flagString('video-task-type');
const plan = flagString('plan');
const emulator = await startEmulator({
  port: flagNumber('port', 4010),
  apiKey: flagString('key') ?? 'dev-key',
  scenario: {
    stepMs: flagNumber('step-ms', 1500),
    ...(taskSteps ? { steps: taskSteps } : {}),
    ...(videoTaskType ? { videoTaskType } : {}),
  },
  features: { fetchMany: !flagOn('no-fetch-many'), account: !flagOn('no-account') },
  account: { credits: flagNumber('credits', DEFAULT_ACCOUNT.credits), ...(plan ? { plan } : {}) },
  resultTtlMs: flagNumber('result-ttl-seconds', 86_400) * 1000,
});
emulator.onEvent((event) => console.log(describe(event)));

const on = (b: boolean): string => (b ? 'on' : 'off (404)');
console.log(`Media-service emulator listening on ${emulator.url} (key: ${emulator.apiKey})

Point the bot at it:
  MEDIA_API_URL=${emulator.url}
  MEDIA_API_KEY=${emulator.apiKey}

Parent tasks you can extend:
  /extend-song  task_id=${FIXTURE_SONG_TASK_ID}  song_id=${FIXTURE_SONG_IDS.join(' | ')}
  /extend-video task_id=${FIXTURE_VIDEO_TASK_ID}
  (every song/video task created here can be extended too)

Now: fetch-many ${on(emulator.features.fetchMany)}, account ${on(emulator.features.account)}, ${emulator.account.credits} credits (${emulator.account.plan}), video task_type ${emulator.scenario.videoTaskType}, steps ${JSON.stringify(emulator.scenario.steps)}

Flags (or environment):
${usage()}

${controlHelp(emulator.url)}
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
