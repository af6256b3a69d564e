import { ApplicationIntegrationType, InteractionContextType } from 'discord-api-types/v10';

/**
 * Where each command is offered (design: "Where commands work"): every command states its
 * `integration_types` and `contexts` from here, once; USER_INSTALL widens the commands that
 * declare `userInstall` in one place (`withInstalls`, src/commands/index.ts). Server install only: with User Install switched on in the Developer Portal a
 * command that stated nothing would also run in servers that never installed the bot.
 */
const SERVER_INSTALL = [ApplicationIntegrationType.GuildInstall];

export const where = {
  /** The job commands (paid work): servers that installed the bot. */
  jobs: { integration_types: SERVER_INSTALL, contexts: [InteractionContextType.Guild] },
  /** `/settings`, `Remove result`: a server's own tools. */
  serverOnly: { integration_types: SERVER_INSTALL, contexts: [InteractionContextType.Guild] },
  /** `/tasks`, `/privacy`: also in a DM with the bot. */
  serverAndDm: {
    integration_types: SERVER_INSTALL,
    contexts: [InteractionContextType.Guild, InteractionContextType.BotDM],
  },
};
