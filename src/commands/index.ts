import {
  ApplicationIntegrationType,
  InteractionContextType,
  type RESTPostAPIApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import { localizeCommand } from '../i18n/index.js';
import { operationModules } from '../services/operations/index.js';
import type { SomeOperationModule } from '../services/operations/types.js';
import type { Command, ComponentHandler } from './types.js';
import { operationCommand } from './operation-command.js';
import { trainingPhotos, trainingComponents } from './training-photos.js';
import { tasks, tasksButtons } from './tasks.js';
import { settings } from './settings.js';
import { privacy, privacyButtons } from './privacy.js';
import { removeResult } from './remove-result.js';
import { upscaleImage, upscaleImageModal } from './upscale-image.js';
import { extendVideoModal, nextStepButtons } from './next-steps.js';

/** The commands no operation module declares: training photos (a session) and the rest. */
const otherCommands: readonly Command[] = [
  trainingPhotos,
  tasks,
  settings,
  privacy,
  removeResult,
  upscaleImage,
];

/**
 * The commands of `modules` (each operation declared with slash options, in their order)
 * and the others: what is here is what gets registered.
 */
export function commandList(modules: readonly SomeOperationModule[]): Command[] {
  return [...modules.flatMap((m) => operationCommand(m) ?? []), ...otherCommands];
}

/** The one list of slash commands: the operations registry's, then the others. */
export const commands: readonly Command[] = commandList(operationModules);

/** Buttons and modals, matched by custom_id prefix. */
export const components: readonly ComponentHandler[] = [
  nextStepButtons,
  extendVideoModal,
  trainingComponents,
  tasksButtons,
  privacyButtons,
  upscaleImageModal,
];

/** Where a command may be installed and used: the one place USER_INSTALL changes (design: "Where commands work"). */
function withInstalls(c: Command, userInstall: boolean): RESTPostAPIApplicationCommandsJSONBody {
  if (!userInstall || c.userInstall === undefined)
    return { ...c.data, integration_types: [ApplicationIntegrationType.GuildInstall] };
  return {
    ...c.data,
    integration_types: [ApplicationIntegrationType.GuildInstall, ApplicationIntegrationType.UserInstall],
    ...(c.userInstall === 'job'
      ? {
          contexts: [
            InteractionContextType.Guild,
            InteractionContextType.BotDM,
            InteractionContextType.PrivateChannel,
          ],
        }
      : {}),
  };
}

/**
 * What gets registered: each command with its texts in every language
 * (`name_localizations`/`description_localizations`; names stay canonical) and where it
 * may be installed (USER_INSTALL).
 */
export const commandData = (userInstall = false, list: readonly Command[] = commands) =>
  list.map((c) => localizeCommand(withInstalls(c, userInstall)));

/** One registration scope: global (`guildId` unset) or one server's commands. */
export interface RegistrationScope {
  guildId?: string;
  commands: RESTPostAPIApplicationCommandsJSONBody[];
}

/**
 * Where each command is registered. Discord offers user installs global commands only, so
 * with USER_INSTALL the user-installable ones are global (and not also in DISCORD_GUILD_ID's
 * server, which would list them twice) while the others stay where DISCORD_GUILD_ID puts them.
 */
export function registrationPlan(opts: {
  userInstall: boolean;
  guildId?: string | undefined;
  /**
   * Without USER_INSTALL, also check the global scope (and empty it): what an earlier run with
   * USER_INSTALL left there (`npm run register`). A start checks only the server's: one GET.
   */
  everyScope?: boolean;
}): RegistrationScope[] {
  const all = commandData(opts.userInstall);
  if (opts.guildId === undefined) return [{ commands: all }];
  if (!opts.userInstall && !opts.everyScope) return [{ guildId: opts.guildId, commands: all }];
  const anywhere = new Set(
    opts.userInstall ? commands.filter((c) => c.userInstall !== undefined).map((c) => c.data.name) : [],
  );
  return [
    { commands: all.filter((c) => anywhere.has(c.name)) },
    { guildId: opts.guildId, commands: all.filter((c) => !anywhere.has(c.name)) },
  ];
}
