import { taskChoices } from './autocomplete.js';
import { operationCommand } from './operation-command.js';
import type { Command } from './types.js';

/** `/extend-video`: declared in src/services/operations/extend-video.ts; autocomplete from the member's videos. */
export const extendVideo = {
  ...operationCommand('video'),
  async autocomplete(i, ctx) {
    await i.respond(await taskChoices(ctx, i, 'video', i.options.getFocused().value));
  },
} satisfies Command;
