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
];

/** Buttons and modals, matched by custom_id prefix. */
export const components: readonly ComponentHandler[] = [
  nextStepButtons,
  extendVideoModal,
  trainingComponents,
  tasksButtons,
  privacyButtons,
];

/**
 * What gets registered: each command with its texts in every language
 * (`name_localizations`/`description_localizations`; names stay canonical).
 */
export const commandData = () => commands.map((c) => localizeCommand(c.data));
