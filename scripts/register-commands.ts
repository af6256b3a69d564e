/**
 * `npm run register`: the same GET-compare-overwrite the bot does on start, on
 * demand. Needs the Discord variables only (not the media service's).
 */
import { REST } from 'discord.js';
import { ConfigError, loadDotEnv, parseDiscordConfig } from '../src/config.js';
import { createLogger, resolveLogFormat } from '../src/logger.js';
import { commandData } from '../src/commands/index.js';
import { syncCommands } from '../src/services/discord/command-sync.js';

loadDotEnv();
try {
  const config = parseDiscordConfig();
  const logger = createLogger({
    level: config.logLevel,
    secrets: [config.discord.token],
    format: resolveLogFormat(config.logFormat, process.stdout.isTTY),
  });
  const rest = new REST({ api: config.discord.apiUrl }).setToken(config.discord.token);
  const result = await syncCommands({
    rest,
    applicationId: config.discord.applicationId,
    guildId: config.discord.guildId,
    commands: commandData(),
    logger,
  });
  process.stdout.write(`${result.action}: ${result.count} ${result.scope} commands\n`);
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(
      `Cannot register: invalid configuration\n${err.problems.map((p) => `  ${p}`).join('\n')}\n`,
    );
  } else {
    process.stderr.write(`Cannot register: ${err instanceof Error ? err.message : String(err)}\n`);
  }
  process.exit(1);
}
