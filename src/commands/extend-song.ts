import { SlashCommandBuilder, type AutocompleteInteraction } from 'discord.js';
import { problemsOf, songExtendParamsSchema } from '../services/media/schemas.js';
import type { SongExtendParams } from '../services/media/types.js';
import { taskChoices, songChoices } from './autocomplete.js';
import { runJob } from './run-job.js';
import type { JobRecord } from '../services/store/types.js';
import { UserError, type BotContext, type Command } from './types.js';

const data = new SlashCommandBuilder()
  .setName('extend-song')
  .setDescription('Extend a song you generated')
  .addStringOption((o) =>
    o
      .setName('task_id')
      .setDescription('The song task to extend')
      .setRequired(true)
      .setAutocomplete(true)
      .setMaxLength(200),
  )
  .addStringOption((o) =>
    o
      .setName('song_id')
      .setDescription('Which of its two songs')
      .setRequired(true)
      .setAutocomplete(true)
      .setMaxLength(200),
  )
  .addNumberOption((o) =>
    o
      .setName('continue_at')
      .setDescription('Extend from this point, in seconds')
      .setMinValue(0)
      .setMaxValue(86400),
  )
  .toJSON();

export async function startSongExtension(
  i: Parameters<typeof runJob>[0],
  ctx: BotContext,
  params: SongExtendParams,
  parent?: JobRecord,
): Promise<void> {
  const problems = problemsOf(songExtendParamsSchema.safeParse(params));
  if (problems.length > 0) throw new UserError('invalid_options', problems.join('\n'));
  await runJob(i, ctx, {
    ...(parent ? { parent } : {}),
    operation: 'song',
    params: {
      task_id: params.parentTaskId,
      song_id: params.songId,
      ...(params.continueAt !== undefined ? { continue_at: params.continueAt } : {}),
    },
    submit: (webhook) => ctx.media.extendSong(params, webhook),
  });
}

export const extendSong = {
  data,
  async execute(i, ctx) {
    const params: SongExtendParams = {
      parentTaskId: i.options.getString('task_id', true).trim(),
      songId: i.options.getString('song_id', true).trim(),
    };
    const continueAt = i.options.getNumber('continue_at');
    if (continueAt !== null) params.continueAt = continueAt;
    await startSongExtension(i, ctx, params);
  },
  async autocomplete(i: AutocompleteInteraction, ctx: BotContext) {
    const focused = i.options.getFocused(true);
    if (focused.name === 'song_id') {
      await i.respond(await songChoices(ctx, i.options.getString('task_id') ?? '', focused.value));
    } else {
      await i.respond(await taskChoices(ctx, i.user.id, 'song', focused.value));
    }
  },
} satisfies Command;
