/**
 * `npm run register`: the same GET-compare-overwrite the bot does on start, on
 * demand. Needs the Discord variables only (not the media service's).
 */
import { REST } from '@discordjs/rest';
import { ConfigError, loadDotEnv, parseDiscordConfig } from '../src/config.js';
import { createLogger, resolveLogFormat } from '../src/logger.js';
import { registrationPlan } from '../src/commands/index.js';
import { describeStartFailure, StartError } from '../src/start-errors.js';
import { syncCommandScopes } from '../src/services/discord/registration/command-sync.js';

loadDotEnv();
try {
  const config = parseDiscordConfig();
  const logger = createLogger({
    level: config.logLevel,
    secrets: [config.discord.token],
    format: resolveLogFormat(config.logFormat, process.stdout.isTTY),
  });
  const rest = new REST({ api: config.discord.apiUrl }).setToken(config.discord.token);
  const results = await syncCommandScopes({
    rest,
    applicationId: config.discord.applicationId,
    // On demand, every scope: also what an earlier run with USER_INSTALL left globally.
    scopes: registrationPlan({
      userInstall: config.userInstall,
      guildId: config.discord.guildId,
      everyScope: true,
    }),
    logger,
  });
  for (const result of results)
    process.stdout.write(`${result.action}: ${result.count} ${result.scope} commands\n`);
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(
      `Cannot register: invalid configuration\n${err.problems.map((p) => `  ${p}`).join('\n')}\n`,
    );
  } else {
    // The same one-line diagnosis as a failed start (401 token, Discord unreachable, …).
    let apiUrl = 'the Discord API';
    try {
      apiUrl = parseDiscordConfig().discord.apiUrl;
    } catch {
      // configuration errors are handled above
    }
    process.stderr.write(
      `Cannot register: ${describeStartFailure(new StartError('discord', err), {
        discordApiUrl: apiUrl,
        host: '',
        port: 0,
        dataDir: '',
        redisWaitSeconds: 0,
      })}\n`,
    );
  }
  process.exit(1);
}
