/**
 * Media-service emulator: a local stand-in for the provider described in
 * shared/spec/media-service-interface.md, quirks included, with hooks to script
 * the awkward cases (slow, failing, out-of-order or lost webhooks) for tests
 * and for running the bot by hand (`npm run dev:emulator`).
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { DEFAULT_ACCOUNT, DEFAULT_CREDIT_COSTS, DEFAULT_RESULT_TTL_MS, EmulatorCore } from './core.js';
import { installJsonParsing } from './http.js';
import { apiRoutes } from './routes/api.js';
import { controlRoutes } from './routes/control.js';
import { fileRoutes } from './routes/files.js';
import { DEFAULT_SCENARIO, applyPatch } from './scenario.js';
import type { Emulator, EmulatorOptions, FileFault } from './types.js';

export {
  DEFAULT_ACCOUNT,
  DEFAULT_CREDIT_COSTS,
  DEFAULT_RESULT_TTL_MS,
  FIXTURE_SONG_IDS,
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
} from './core.js';
export { DEFAULT_SCENARIO } from './scenario.js';
export type * from './types.js';

export const DEFAULT_API_KEY = 'dev-key';
const DEFAULT_BODY_LIMIT = 512 * 1024 * 1024;

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const apiKey = options.apiKey ?? DEFAULT_API_KEY;
  const host = options.host ?? '127.0.0.1';
  const core = new EmulatorCore({
    scenario: applyPatch(DEFAULT_SCENARIO, options.scenario ?? {}),
    webhookTimeoutMs: options.webhookTimeoutMs ?? 5000,
    random: options.random ?? Math.random,
    account: { ...DEFAULT_ACCOUNT, ...options.account },
    creditCosts: { ...DEFAULT_CREDIT_COSTS, ...options.creditCosts },
    features: { fetchMany: true, account: true, ...options.features },
    resultTtlMs: options.resultTtlMs ?? DEFAULT_RESULT_TTL_MS,
  });

  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    // Keep-alive sockets from clients would otherwise hold close() (and vitest) open.
    forceCloseConnections: true,
  });
  installJsonParsing(app);

  let closed: Promise<void> | undefined;
  const fileFaults = new Map<string, FileFault>();
  const emulator: Emulator = {
    get url() {
      return core.baseUrl;
    },
    apiKey,
    get port() {
      return (app.server.address() as AddressInfo | null)?.port ?? 0;
    },
    get tasks() {
      return core.tasks;
    },
    get requests() {
      return core.requests;
    },
    get webhookDeliveries() {
      return core.deliveries;
    },
    get scenario() {
      return core.scenario;
    },
    close() {
      closed ??= core.close().then(() => app.close());
      return closed;
    },
    setScenario: (patch) => core.setScenario(patch),
    nextScenario: (patch) => core.nextScenario(patch),
    failNext: (count, { status, path }) => core.faults.failNext(count, status, path),
    rateLimitNext: (count, rateOptions) => core.faults.rateLimitNext(count, rateOptions),
    loseNextAnswer: (count, { mode, delayMs, path }) =>
      core.faults.loseNextAnswer(count, mode, delayMs, path),
    get features() {
      return core.features;
    },
    setFeatures: (patch) => {
      core.features = { ...core.features, ...defined(patch) };
      return core.features;
    },
    get account() {
      return core.account;
    },
    setAccount: ({ addCredits, ...patch }) => {
      core.account = { ...core.account, ...defined(patch) };
      if (addCredits !== undefined) core.account.credits += addCredits;
      return core.account;
    },
    expireResults: (taskId) => core.expireResults(taskId),
    setResultTtl: (ms) => {
      if (!(ms >= 0)) throw new Error('result TTL must be >= 0 ms');
      core.resultTtlMs = ms;
    },
    delayNext: (ms, path) => core.faults.delayNext(ms, path),
    finish: (taskId) => core.finish(taskId),
    fail: (taskId, message) => core.fail(taskId, message),
    uploads: (taskId) => core.uploads(taskId),
    reset: () => core.reset(),
    onEvent: (listener) => core.onEvent(listener),
    waitFor: (predicate, timeoutMs = 2000) => waitFor(core, predicate, timeoutMs),
    setFileFault: (match, fault) => {
      if (fault === undefined) fileFaults.delete(match);
      else fileFaults.set(match, fault);
    },
  };

  await app.register(
    apiRoutes(core, {
      apiKey,
      upscaleDelayMs: options.upscaleDelayMs ?? 0,
      keepUploadBytes: options.keepUploadBytes ?? false,
    }),
  );
  await app.register(fileRoutes(fileFaults, (name) => core.fileExpired(name)));
  await app.register(controlRoutes(emulator), { prefix: '/_emulator' });

  await app.listen({ port: options.port ?? 0, host });
  const { port } = app.server.address() as AddressInfo;
  core.start(`http://${host.includes(':') ? `[${host}]` : host}:${port}`);
  return emulator;
}

function waitFor(core: EmulatorCore, predicate: () => boolean, timeoutMs: number): Promise<void> {
  if (predicate()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const check = (): void => {
      let done: boolean;
      try {
        done = predicate();
      } catch (error) {
        finish();
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      if (done) {
        finish();
        resolve();
      }
    };
    // Events cover the emulator's own state; the poll covers predicates on outside state.
    const unsubscribe = core.onEvent(check);
    const poll = setInterval(check, 20);
    const timeout = setTimeout(() => {
      finish();
      reject(new Error(`waitFor: condition not met within ${timeoutMs} ms`));
    }, timeoutMs);
    function finish(): void {
      unsubscribe();
      clearInterval(poll);
      clearTimeout(timeout);
    }
  });
}

/** The patch without its undefined fields (they mean "keep"). */
function defined<T extends object>(patch: { [K in keyof T]?: T[K] | undefined }): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}
