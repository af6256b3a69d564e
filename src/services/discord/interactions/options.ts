import {
  ApplicationCommandOptionType,
  type APIApplicationCommandInteractionDataOption,
  type APIAttachment,
  type APIInteractionDataResolved,
  type APIInteractionDataResolvedChannel,
} from 'discord-api-types/v10';

/**
 * Typed reads of a slash command's options from the raw interaction data, the way
 * discord.js's resolver reads them (`getString('x', true)`…), without a client or
 * caches: the command code is the same whether the interaction came over the
 * gateway or over HTTP. Option names are the canonical English ones on the wire.
 */

/** A required option is missing or has another type than the command declares: the command data is out of date. */
export class OptionError extends Error {
  constructor(name: string, problem: string) {
    super(`option "${name}" ${problem}`);
    this.name = 'OptionError';
  }
}

type Leaf = Exclude<
  APIApplicationCommandInteractionDataOption,
  { type: ApplicationCommandOptionType.Subcommand | ApplicationCommandOptionType.SubcommandGroup }
>;

export interface FocusedOption {
  name: string;
  value: string;
}

export class OptionResolver {
  readonly #leaves = new Map<string, Leaf>();
  readonly #subcommand: string | undefined;
  readonly #group: string | undefined;
  readonly #resolved: APIInteractionDataResolved;

  constructor(
    options: readonly APIApplicationCommandInteractionDataOption[] | undefined,
    resolved: APIInteractionDataResolved | undefined,
  ) {
    this.#resolved = resolved ?? {};
    let list = options ?? [];
    const first = list[0];
    if (first?.type === ApplicationCommandOptionType.SubcommandGroup) {
      this.#group = first.name;
      const sub = first.options[0];
      this.#subcommand = sub?.name;
      list = sub?.options ?? [];
    } else if (first?.type === ApplicationCommandOptionType.Subcommand) {
      this.#subcommand = first.name;
      list = first.options ?? [];
    }
    for (const o of list) {
      if (
        o.type !== ApplicationCommandOptionType.Subcommand &&
        o.type !== ApplicationCommandOptionType.SubcommandGroup
      ) {
        this.#leaves.set(o.name, o);
      }
    }
  }

  getSubcommand(): string | null;
  getSubcommand(required: true): string;
  getSubcommand(required = false): string | null {
    if (this.#subcommand === undefined && required) throw new OptionError('(subcommand)', 'is missing');
    return this.#subcommand ?? null;
  }

  getSubcommandGroup(): string | null {
    return this.#group ?? null;
  }

  /** The option being typed in an autocomplete interaction. */
  getFocused(): FocusedOption {
    for (const o of this.#leaves.values()) {
      if ('focused' in o && o.focused) return { name: o.name, value: String(o.value) };
    }
    throw new OptionError('(focused)', 'is missing');
  }

  #leaf<T extends ApplicationCommandOptionType>(
    name: string,
    type: T,
    required: boolean,
  ): Extract<Leaf, { type: T }> | undefined {
    const o = this.#leaves.get(name);
    if (o === undefined) {
      if (required) throw new OptionError(name, 'is missing');
      return undefined;
    }
    if (o.type !== type) throw new OptionError(name, `is of type ${o.type}, expected ${type}`);
    return o as Extract<Leaf, { type: T }>;
  }

  getString(name: string): string | null;
  getString(name: string, required: true): string;
  getString(name: string, required = false): string | null {
    const o = this.#leaf(name, ApplicationCommandOptionType.String, required);
    return o === undefined ? null : String(o.value);
  }

  getInteger(name: string): number | null;
  getInteger(name: string, required: true): number;
  getInteger(name: string, required = false): number | null {
    const o = this.#leaf(name, ApplicationCommandOptionType.Integer, required);
    // Autocomplete sends what was typed so far as a string: only a whole number counts.
    if (o === undefined) return null;
    const n = typed(o.value);
    return Number.isInteger(n) ? n : null;
  }

  getNumber(name: string): number | null;
  getNumber(name: string, required: true): number;
  getNumber(name: string, required = false): number | null {
    const o = this.#leaf(name, ApplicationCommandOptionType.Number, required);
    if (o === undefined) return null;
    const n = typed(o.value);
    return Number.isFinite(n) ? n : null;
  }

  getBoolean(name: string): boolean | null;
  getBoolean(name: string, required: true): boolean;
  getBoolean(name: string, required = false): boolean | null {
    const o = this.#leaf(name, ApplicationCommandOptionType.Boolean, required);
    return o === undefined ? null : o.value === true;
  }

  /** The attachment behind an attachment option (from `resolved.attachments`). */
  getAttachment(name: string): APIAttachment | null;
  getAttachment(name: string, required: true): APIAttachment;
  getAttachment(name: string, required = false): APIAttachment | null {
    const o = this.#leaf(name, ApplicationCommandOptionType.Attachment, required);
    if (o === undefined) return null;
    const a = this.#resolved.attachments?.[String(o.value)];
    if (!a) {
      if (required) throw new OptionError(name, 'has no resolved attachment');
      return null;
    }
    return a;
  }

  /** The channel behind a channel option (from `resolved.channels`). */
  getChannel(name: string): APIInteractionDataResolvedChannel | null {
    const o = this.#leaf(name, ApplicationCommandOptionType.Channel, false);
    if (o === undefined) return null;
    return (
      this.#resolved.channels?.[String(o.value)] ??
      ({ id: String(o.value) } as APIInteractionDataResolvedChannel)
    );
  }
}

/** A number option's value; autocomplete's text so far, blank being nothing typed yet (not 0). */
function typed(value: string | number): number {
  return typeof value === 'string' && value.trim() === '' ? Number.NaN : Number(value);
}
