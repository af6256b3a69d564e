import { ConfigError, loadDotEnv, parseConfig, secretsOf, type Config } from './config.js';
import { createLogger } from './logger.js';
import { createApp } from './app.js';

/** Entry point: config → app → start; graceful shutdown on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  loadDotEnv();
  let config: Config;
  try {
    config = parseConfig();
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
  const logger = createLogger({ level: config.logLevel, secrets: secretsOf(config) });

  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception'));

  const app = await createApp(config, { logger });
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'signal received');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    void app.stop().then(
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
    await app.start();
  } catch (err) {
    logger.fatal({ err }, 'could not start');
    await app.stop(1000).catch(() => undefined);
    process.exit(1);
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`Cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
