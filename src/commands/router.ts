import { randomBytes } from 'node:crypto';
import { DiscordAPIError, RESTJSONErrorCodes, type Interaction } from 'discord.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import { replyEphemeral } from './run-job.js';
import {
  STORE_DOWN_MESSAGE,
  UserError,
  type BotContext,
  type Command,
  type ComponentHandler,
} from './types.js';

/** Interaction already answered or expired: nothing left to tell the user. */
const HARMLESS_CODES = new Set<number>([
  RESTJSONErrorCodes.UnknownInteraction,
  RESTJSONErrorCodes.InteractionHasAlreadyBeenAcknowledged,
]);

/**
 * Dispatches every interaction to its command/component. A user error becomes an
 * ephemeral explanation; anything else is logged with context and answered with
 * a short apology and a reference. One bad interaction never affects another.
 */
export function createInteractionRouter(
  commands: readonly Command[],
  components: readonly ComponentHandler[],
  ctx: BotContext,
) {
  const byName = new Map(commands.map((c) => [c.data.name, c]));

  return async function route(interaction: Interaction): Promise<void> {
    const log = ctx.logger.child({
      interactionId: interaction.id,
      userId: interaction.user.id,
      kind: interaction.type,
      ...(interaction.isCommand() || interaction.isAutocomplete()
        ? { command: interaction.commandName }
        : {}),
      ...(interaction.isMessageComponent() || interaction.isModalSubmit()
        ? { customId: interaction.customId }
        : {}),
    });
    try {
      if (interaction.isAutocomplete()) {
        const cmd = byName.get(interaction.commandName);
        if (cmd?.autocomplete) await cmd.autocomplete(interaction, ctx);
        else await interaction.respond([]);
        return;
      }
      if (interaction.isChatInputCommand()) {
        const cmd = byName.get(interaction.commandName);
        if (!cmd) throw new UserError('unknown_command', 'This command is not available any more.');
        await cmd.execute(interaction, ctx);
        return;
      }
      if (interaction.isStringSelectMenu()) {
        const handler = components.find((h) => interaction.customId.startsWith(h.prefix));
        if (!handler?.select) throw new UserError('unknown_component', 'This menu is no longer supported.');
        await handler.select(interaction, ctx);
        return;
      }
      if (interaction.isButton() || interaction.isModalSubmit()) {
        const handler = components.find((h) => interaction.customId.startsWith(h.prefix));
        const fn = interaction.isButton() ? handler?.button : handler?.modal;
        if (!handler || !fn) throw new UserError('unknown_component', 'This button is no longer supported.');
        await (fn as (i: typeof interaction, c: BotContext) => Promise<void>).call(handler, interaction, ctx);
      }
    } catch (err) {
      if (interaction.isAutocomplete()) {
        log.warn({ err }, 'autocomplete failed');
        await interaction.respond([]).catch(() => undefined);
        return;
      }
      if (err instanceof DiscordAPIError && typeof err.code === 'number' && HARMLESS_CODES.has(err.code)) {
        log.debug({ code: err.code }, 'interaction expired or already answered');
        return;
      }
      let message: string;
      if (err instanceof UserError) {
        log.info({ errorId: err.id }, 'user error');
        message = err.message;
      } else if (err instanceof StoreUnavailableError) {
        log.warn({ err }, 'store unavailable');
        message = STORE_DOWN_MESSAGE;
      } else {
        const ref = randomBytes(4).toString('hex');
        log.error({ err, ref }, 'interaction failed');
        message = `Sorry, something went wrong on our side (ref \`${ref}\`). Please try again.`;
      }
      if (interaction.isRepliable()) {
        await replyEphemeral(interaction as Parameters<typeof replyEphemeral>[0], message).catch(
          (e: unknown) => log.warn({ err: e }, 'could not tell the user about the error'),
        );
      }
    }
  };
}
