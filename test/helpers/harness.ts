import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { DestinationStream } from 'pino';
import { createApp, type App, type AppOptions } from '../../src/app.js';
import { parseConfig, type Config } from '../../src/config.js';
import { operationModules } from '../../src/services/operations/index.js';
import { createLogger } from '../../src/logger.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../emulator/server.js';
import { startFakeDiscord, type FakeDiscord } from '../fake-discord/index.js';
import type { FakeDiscordOptions } from '../fake-discord/types.js';

import { REDIS_URL } from './detect.js';
import { clearRedisNamespace } from './redis-namespace.js';

export { REDIS_URL };

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface HarnessOptions {
  /** Webhook mode (PUBLIC_URL set to the bot's own address); default polling only. */
  webhooks?: boolean;
  /**
   * `http`: DISCORD_INTERACTIONS=http with the fake's public key; the fake POSTs signed
   * interactions to the bot's `/interactions` instead of using the gateway.
   */
  interactions?: 'gateway' | 'http';
  /** Extra createApp options (e.g. interactionAckDeadlineMs). */
  app?: Partial<Pick<AppOptions, 'interactionAckDeadlineMs' | 'accountReadEveryMs'>>;
  /** Where the bot's log lines go (JSON, one per write; set LOG_LEVEL in `env` to see them). */
  logs?: DestinationStream;
  /** Use Redis at REDIS_URL instead of SQLite in a temp dir. */
  redis?: boolean;
  env?: Record<string, string>;
  fake?: FakeDiscordOptions;
  emulator?: EmulatorOptions;
  /** The app's clock (createApp `now`); e.g. `() => fake.now()` so `fake.advanceTime` ages jobs too. Default Date.now. */
  now?: () => number;
  /** Reuse a running fake Discord / emulator / data dir (restart tests). */
  reuse?: { fake?: FakeDiscord; emulator?: Emulator; dataDir?: string; namespace?: string; port?: number };
}

export interface Harness {
  fake: FakeDiscord;
  emulator: Emulator;
  app: App;
  config: Config;
  dataDir: string;
  namespace: string;
  port: number;
  baseUrl: string;
  /** Stops the bot only (fake Discord and emulator stay up). */
  stopBot(): Promise<void>;
  /** Stops everything it started. */
  close(): Promise<void>;
}

/** The real bot (createApp) against a fake Discord and the media-service emulator, all on 127.0.0.1. */
export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const fake = opts.reuse?.fake ?? (await startFakeDiscord({ warmUpValidators: true, ...opts.fake }));
  const emulator =
    opts.reuse?.emulator ?? (await startEmulator({ scenario: { stepMs: 40 }, ...opts.emulator }));
  const dataDir = opts.reuse?.dataDir ?? (await mkdtemp(join(tmpdir(), 'mediabot-')));
  const namespace = opts.reuse?.namespace ?? `t${randomBytes(4).toString('hex')}`;
  const port = opts.reuse?.port ?? (await freePort());
  const baseUrl = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    DISCORD_TOKEN: fake.token,
    DISCORD_APPLICATION_ID: fake.applicationId,
    DISCORD_GUILD_ID: fake.guildId,
    DISCORD_API_URL: fake.apiUrl,
    MEDIA_API_URL: emulator.url,
    MEDIA_API_KEY: emulator.apiKey,
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    POLL_INITIAL_MS: '150',
    POLL_MAX_MS: '600',
    WEBHOOK_SILENCE_MS: '1500',
    MEDIA_TIMEOUT_MS: '5000',
    ...(opts.webhooks ? { PUBLIC_URL: baseUrl } : {}),
    ...(opts.redis ? { REDIS_URL } : {}),
    ...(opts.interactions === 'http'
      ? { DISCORD_INTERACTIONS: 'http', DISCORD_PUBLIC_KEY: fake.publicKey }
      : {}),
    ...opts.env,
  };
  if (opts.interactions) fake.setInteractionsMode(opts.interactions, `${baseUrl}/interactions`);
  const config = parseConfig(operationModules, env);
  const logger = createLogger({
    level: process.env.TEST_LOG_LEVEL ?? config.logLevel,
    secrets: [fake.token],
    ...(opts.logs ? { destination: opts.logs } : {}),
  });
  const app = await createApp(config, {
    logger,
    storeNamespace: namespace,
    ...(opts.now ? { now: opts.now } : {}),
    ...opts.app,
  });
  await app.start();
  let botStopped = false;
  const stopBot = async () => {
    if (botStopped) return;
    botStopped = true;
    await app.stop(3000);
  };
  return {
    fake,
    emulator,
    app,
    config,
    dataDir,
    namespace,
    port,
    baseUrl,
    stopBot,
    async close() {
      // Each part is timed: a part that stalls is named on stderr instead of a bare hook timeout.
      await timed('bot', stopBot);
      if (!opts.reuse?.emulator) await timed('emulator', () => emulator.close());
      if (!opts.reuse?.fake) await timed('fake Discord', () => fake.close());
      if (!opts.reuse?.dataDir) await rm(dataDir, { recursive: true, force: true });
      if (opts.redis && !opts.reuse?.namespace)
        await timed('Redis namespace', async () => void (await clearRedisNamespace(REDIS_URL, namespace)));
    },
  };
}

async function timed(part: string, run: () => Promise<void>): Promise<void> {
  const started = Date.now();
  const warn = setTimeout(
    () => process.stderr.write(`harness: closing the ${part} takes over 10 s\n`),
    10_000,
  );
  warn.unref();
  try {
    await run();
  } finally {
    clearTimeout(warn);
    const ms = Date.now() - started;
    if (ms > 10_000) process.stderr.write(`harness: closing the ${part} took ${ms} ms\n`);
  }
}

/**
 * Stops `h`'s bot and starts a new one on the same fake Discord, emulator, store and
 * port: a bot restart (the old harness still owns and closes the shared parts).
 */
export async function restartBot(h: Harness, opts: Omit<HarnessOptions, 'reuse'> = {}): Promise<Harness> {
  await h.stopBot();
  return startHarness({
    ...opts,
    reuse: { fake: h.fake, emulator: h.emulator, dataDir: h.dataDir, namespace: h.namespace, port: h.port },
  });
}

/** Polls `check` until it returns a value (not undefined/false) or the time runs out. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Percentages shown in a message's edit history, in order (from `███░ 30%` progress bars). */
export function percentagesShown(texts: string[]): number[] {
  const out: number[] = [];
  for (const t of texts) {
    const m = /[█░]{10} (\d{1,3})%/.exec(t);
    if (m?.[1]) out.push(Number(m[1]));
  }
  return out;
}

/** The job id a job message or gallery post names in its footer (`Job <id>`). */
export function jobIdInFooter(m: { data: object }): string {
  const id = /Job ([\w-]+)/.exec(JSON.stringify(m.data))?.[1];
  if (!id) throw new Error('the message names no job');
  return id;
}
