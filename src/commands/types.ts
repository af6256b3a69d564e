import type {
  AutocompleteInteraction,
  ButtonInteraction,
  ChatInputCommandInteraction,
  ModalSubmitInteraction,
  RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import type { Logger } from 'pino';
import { StoreUnavailableError } from '../services/store/errors.js';
import type { Config } from '../config.js';
import type { EditQueue } from '../services/discord/edit-queue.js';
import type { JobService } from '../services/jobs/job-service.js';
import type { MediaClient } from '../services/media/client.js';
import type { JobStore, KeyValueStore } from '../services/store/types.js';
import type { TrainingSessions } from '../services/training/sessions.js';
import type { CommunityService } from '../services/community/community.js';
import type { GuildSettingsStore } from '../services/community/settings.js';
import type { FairUseLedger } from '../services/community/fair-use.js';
import type { ThreadApi } from '../services/community/threads.js';

/** Everything a command needs, passed in (no singletons), so tests can swap parts. */
export interface BotContext {
  config: Config;
  logger: Logger;
  jobs: JobService;
  media: MediaClient;
  store: JobStore;
  kv: KeyValueStore;
  training: TrainingSessions;
  /** The one path for editing messages the bot keeps up to date (session messages too). */
  edits: Pick<EditQueue, 'push' | 'editable' | 'forget'>;
  /** Fair use, credits and what follows a job's end, per server. */
  community: CommunityService;
  /** Per-server settings (/settings). */
  settings: GuildSettingsStore;
  ledger: FairUseLedger;
  /** Starting a job's thread and posting its live message there (bot token). */
  threads: ThreadApi;
  now: () => number;
}

export interface Command {
  data: RESTPostAPIChatInputApplicationCommandsJSONBody;
  execute(interaction: ChatInputCommandInteraction, ctx: BotContext): Promise<void>;
  autocomplete?(interaction: AutocompleteInteraction, ctx: BotContext): Promise<void>;
}

/** A component or modal handler, matched by custom_id prefix. */
export interface ComponentHandler {
  prefix: string;
  button?(interaction: ButtonInteraction, ctx: BotContext): Promise<void>;
  modal?(interaction: ModalSubmitInteraction, ctx: BotContext): Promise<void>;
}

/**
 * An error meant for the user (Sapphire style): `id` identifies the kind for logs
 * and tests, `message` is what the user reads, shown ephemerally.
 */
export class UserError extends Error {
  constructor(
    readonly id: string,
    message: string,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

/**
 * The command layer's one translation of a store outage: StoreUnavailableError
 * thrown by `run` becomes a UserError with `message` (what the member was doing).
 */
export const STORE_DOWN_MESSAGE =
  'The bot is temporarily unavailable (storage is down). Please try again in a minute.';

export async function unlessStoreDown<T>(run: () => Promise<T>, message = STORE_DOWN_MESSAGE): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw new UserError('store_unavailable', message);
    throw err;
  }
}
