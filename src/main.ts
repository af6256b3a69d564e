import { ConfigError, loadDotEnv, parseConfig, secretsOf, type Config } from './config.js';
import { createLogger, resolveLogFormat } from './logger.js';
import { createApp, type App } from './app.js';
import { describeStartFailure, inPhase } from './start-errors.js';
import { waitForRedis } from './services/store/wait-for-redis.js';
import { operationModules } from './services/operations/index.js';
import { warmHttpPath } from './runtime/http-warmup.js';

/** Entry point: config → app → start; graceful shutdown on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  loadDotEnv();
  let config: Config;
  try {
    // The operations declare their MEDIA_PATH_* variables and the commands CREDIT_COSTS may name.
    config = parseConfig(operationModules);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(
        `Cannot start: invalid configuration\n${err.problems.map((p) => `  ${p}`).join('\n')}\n`,
      );
      process.stderr.write('See .env.example for every variable.\n');
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger({
    level: config.logLevel,
    instance: config.instanceId,
    secrets: secretsOf(config),
    format: resolveLogFormat(config.logFormat, process.stdout.isTTY),
  });

  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception'));

  let app: App | undefined;
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'signal received');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    void (app ? app.stop() : Promise.resolve()).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));

  try {
    const { redisUrl } = config.store;
    if (redisUrl !== undefined) {
      await inPhase('store', () =>
        waitForRedis({ url: redisUrl, timeoutMs: config.store.redisStartTimeoutMs, logger }),
      );
    }
    app = await inPhase('store', () => createApp(config, { logger }));
    // After the app is built (its allocations have grown V8's young generation to its limit, where
    // V8 takes its pretenuring decisions) and before the gateway's first burst: http-warmup.ts.
    await warmHttpPath().then(
      (w) => logger.info(w, 'HTTP path warmed'),
      (err: unknown) => logger.debug({ err }, 'HTTP warm-up skipped'),
    );
    await app.start();
  } catch (err) {
    // One human line for the operator; the stack only for those who ask (LOG_LEVEL=debug).
    logger.debug({ err }, 'start failure details');
    const line = describeStartFailure(err, {
      discordApiUrl: config.discord.apiUrl,
      host: config.http.host,
      port: config.http.port,
      ...(config.metrics.port !== undefined ? { metricsPort: config.metrics.port } : {}),
      ...(config.store.redisUrl !== undefined ? { redisUrl: config.store.redisUrl } : {}),
      dataDir: config.store.dataDir,
      redisWaitSeconds: Math.round(config.store.redisStartTimeoutMs / 1000),
    });
    process.stderr.write(`Cannot start: ${line}\n`);
    await app?.stop(1000).catch(() => undefined);
    process.exit(1);
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`Cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
