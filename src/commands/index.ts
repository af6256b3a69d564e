import {
  ApplicationIntegrationType,
  InteractionContextType,
  type RESTPostAPIApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import { localizeCommand } from '../i18n/index.js';
import type { Command, ComponentHandler } from './types.js';
import { upscale } from './upscale.js';
import { extendSong } from './extend-song.js';
import { extendVideo } from './extend-video.js';
import { trainingPhotos, trainingComponents } from './training-photos.js';
import { tasks, tasksButtons } from './tasks.js';
import { settings } from './settings.js';
import { privacy, privacyButtons } from './privacy.js';
import { removeResult } from './remove-result.js';
import { upscaleImage, upscaleImageModal } from './upscale-image.js';
import { extendVideoModal, nextStepButtons } from './next-steps.js';

/** The one registry of slash commands: what is here is what gets registered. */
export const commands: readonly Command[] = [
  upscale,
  extendSong,
  extendVideo,
  trainingPhotos,
  tasks,
  settings,
  privacy,
  removeResult,
  upscaleImage,
];

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
export const commandData = (userInstall = false) =>
  commands.map((c) => localizeCommand(withInstalls(c, userInstall)));

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
