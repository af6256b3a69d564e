import { randomBytes } from 'node:crypto';
import { DiscordAPIError } from '@discordjs/rest';
import { RESTJSONErrorCodes } from 'discord-api-types/v10';
import { StoreUnavailableError } from '../services/store/errors.js';
import { TooLateError, type BotInteraction } from '../services/discord/interactions/interaction.js';
import { replyEphemeral } from './run-job.js';
import { requireJobsAllowed } from './preconditions.js';
import { translatorFor } from '../i18n/index.js';
import { UserError, type BotContext, type Command, type ComponentHandler } from './types.js';

/** Interaction already answered or expired: nothing left to tell the user. */
const HARMLESS_CODES = new Set<number>([
  RESTJSONErrorCodes.UnknownInteraction,
  RESTJSONErrorCodes.InteractionHasAlreadyBeenAcknowledged,
]);

/**
 * Dispatches every interaction to its command/component, the same code whether
 * it came over the gateway or over HTTP. A user error becomes an ephemeral
 * explanation; anything else is logged with context and answered with a short
 * apology and a reference. One bad interaction never affects another.
 */
export function createInteractionRouter(
  commands: readonly Command[],
  components: readonly ComponentHandler[],
  ctx: BotContext,
) {
  const byName = new Map(commands.map((c) => [c.data.name, c]));

  const route = async function route(interaction: BotInteraction): Promise<void> {
    const log = ctx.logger.child({
      interactionId: interaction.id,
      userId: interaction.user.id,
      kind: interaction.type,
      ...(interaction.commandName ? { command: interaction.commandName } : {}),
      ...(interaction.customId ? { customId: interaction.customId.slice(0, 100) } : {}),
    });
    try {
      if (interaction.isAutocomplete()) {
        const cmd = byName.get(interaction.commandName);
        // No service reads for a server the operator allows no jobs in.
        if (cmd?.job && !ctx.community.allowsJobsIn(interaction.guildId)) await interaction.respond([]);
        else if (cmd?.autocomplete) await cmd.autocomplete(interaction, ctx);
        else await interaction.respond([]);
        return;
      }
      if (interaction.isChatInputCommand() || interaction.isMessageContextMenuCommand()) {
        const cmd = byName.get(interaction.commandName);
        if (!cmd) throw new UserError('unknown_command', (tr) => tr.t('errors.unknown_command'));
        if (cmd.job) requireJobsAllowed(interaction, ctx);
        await cmd.execute(interaction, ctx);
        return;
      }
      const handler = components.find((h) => interaction.customId.startsWith(h.prefix));
      if (interaction.isStringSelectMenu()) {
        if (!handler?.select) throw new UserError('unknown_component', (tr) => tr.t('errors.unknown_menu'));
        await handler.select(interaction, ctx);
        return;
      }
      if (interaction.isButton() || interaction.isModalSubmit()) {
        const fn = interaction.isButton() ? handler?.button : handler?.modal;
        if (!handler || !fn)
          throw new UserError('unknown_component', (tr) =>
            tr.t(interaction.isButton() ? 'errors.unknown_button' : 'errors.unknown_form'),
          );
        if (handler.job) requireJobsAllowed(interaction, ctx);
        await fn.call(handler, interaction, ctx);
        return;
      }
      throw new UserError('unknown_component', (tr) => tr.t('errors.unknown_button'));
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
      // The one place errors become words: in the member's language, else the server's, else English.
      const tr = translatorFor(interaction);
      let message: string;
      if (err instanceof UserError) {
        log.info({ errorId: err.id }, 'user error');
        message = err.text(tr);
      } else if (err instanceof StoreUnavailableError) {
        log.warn({ err }, 'store unavailable');
        message = tr.t(err.memberText);
      } else if (err instanceof TooLateError) {
        log.warn('a form was opened too late for Discord; the member is asked to retry');
        message = tr.t('errors.http.form_too_slow');
      } else {
        const ref = randomBytes(4).toString('hex');
        log.error({ err, ref }, 'interaction failed');
        message = tr.t('errors.unexpected', { ref });
      }
      await replyEphemeral(interaction, message).catch((e: unknown) =>
        log.warn({ err: e }, 'could not tell the user about the error'),
      );
    }
  };
  /** Whether a command's late answer is deferred ephemerally. */
  const ephemeralCommand = (name: string): boolean => byName.get(name)?.ephemeral === true;
  return Object.assign(route, { ephemeralCommand });
}
