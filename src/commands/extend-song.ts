import { songChoices, taskChoices } from './autocomplete.js';
import { operationCommand } from './operation-command.js';
import type { Command } from './types.js';

/** `/extend-song`: declared in src/services/operations/extend-song.ts; autocomplete from the member's songs. */
export const extendSong = {
  ...operationCommand('song'),
  async autocomplete(i, ctx) {
    const focused = i.options.getFocused();
    if (focused.name === 'song_id') {
      await i.respond(await songChoices(ctx, i, i.options.getString('task_id') ?? '', focused.value));
    } else {
      await i.respond(await taskChoices(ctx, i, 'song', focused.value));
    }
  },
} satisfies Command;
