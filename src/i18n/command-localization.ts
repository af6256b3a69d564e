/**
 * Command, option and choice texts in every language, from the catalogs, for
 * registration. Keys follow the command's shape:
 *
 *     commands.<command>.description                       (chat input)
 *     commands.<command>.name                              (optional; required for context-menu commands)
 *     commands.<command>.<subcommand>.description          (groups nest the same way)
 *     commands.<command>[.<sub>].options.<option>.description
 *     commands.<command>[.<sub>].options.<option>.name     (optional)
 *     commands.<command>[.<sub>].options.<option>.choices.<value>   (optional: a choice without a key keeps its name)
 *
 * Each segment is the canonical name in lower case with anything but letters,
 * digits, `-` and `_` turned into `-` (`Remove result` → `remove-result`, the
 * choice value `middle eastern` → `middle-eastern`). Numbered options (`photo1`
 * … `photo10`) share one key with `N` for the number (`options.photoN`) and
 * `{n}` in its text.
 *
 * The canonical `name` of commands and options never changes (Discord sends it
 * whatever the member's language); the base description and choice names are
 * the English catalog's, and the other languages go in `*_localizations` for the
 * Discord locales they serve (DISCORD_LOCALES).
 */
import {
  ApplicationCommandOptionType,
  ApplicationCommandType,
  type LocaleString,
  type LocalizationMap,
  type RESTPostAPIApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import { isMessageKey } from './catalogs.js';
import { DEFAULT_LOCALE, DISCORD_LOCALES, type Locale } from './locales.js';
import { t } from './translate.js';

/** Discord's rules for names and texts of commands (API reference, "Application Command Object"). */
export const COMMAND_LIMITS = {
  /** Chat-input command, subcommand and option names: lower case where the letter has a case. */
  chatInputName: /^[-_\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u,
  /** User and message command names: free text of 1 to 32 characters. */
  contextMenuNameMax: 32,
  descriptionMax: 100,
  choiceNameMax: 100,
} as const;

/** `Remove result` → `remove-result`. */
export function keySegment(name: string): string {
  return name.toLowerCase().replace(/[^\p{L}\p{N}_-]+/gu, '-');
}

type Translated = { key: string; values?: Record<string, number> };

/** The parts of a command, subcommand or option that carry texts (the API JSON, read loosely). */
interface Node {
  type?: number | undefined;
  name: string;
  name_localizations?: LocalizationMap | null | undefined;
  description?: string | undefined;
  description_localizations?: LocalizationMap | null | undefined;
  options?: Node[] | undefined;
  choices?:
    { name: string; value: string | number; name_localizations?: LocalizationMap | null }[] | undefined;
}

/** The key of `base.<name>.<field>`, or of its numbered form (`photo3` → `photoN`, n = 3). */
function keyOf(base: string, name: string, field: 'name' | 'description'): Translated | undefined {
  const exact = `${base}.${keySegment(name)}.${field}`;
  if (isMessageKey(exact)) return { key: exact };
  const numbered = /^(.*\D)(\d+)$/.exec(name);
  if (numbered?.[1] !== undefined && numbered[2] !== undefined) {
    const key = `${base}.${keySegment(numbered[1])}N.${field}`;
    if (isMessageKey(key)) return { key, values: { n: Number(numbered[2]) } };
  }
  return undefined;
}

function text(locale: Locale, k: Translated): string {
  // The key was checked by isMessageKey and built from the command's shape; `n` is the only value such texts take.
  return (t as (l: Locale, key: string, v?: Record<string, number>) => string)(locale, k.key, k.values);
}

/** The other languages' texts, under the Discord locales each serves. */
function localizations(k: Translated): LocalizationMap {
  const out: LocalizationMap = {};
  for (const [locale, discordLocales] of Object.entries(DISCORD_LOCALES) as [
    Locale,
    readonly LocaleString[],
  ][]) {
    const value = text(locale, k);
    for (const discord of discordLocales) out[discord] = value;
  }
  return out;
}

const isChatInput = (c: { type?: number | undefined }) =>
  c.type === undefined || c.type === ApplicationCommandType.ChatInput;
const isNested = (o: Node) =>
  o.type === ApplicationCommandOptionType.Subcommand ||
  o.type === ApplicationCommandOptionType.SubcommandGroup;

/** Fills `node`'s texts in place; `base` is the key of its parent (`commands`, `commands.x.options`, …). */
function fill(
  node: Node,
  base: string,
  where: string,
  context: { nameRequired: boolean; described: boolean },
): void {
  const self = `${base}.${keySegment(node.name)}`;
  const name = keyOf(base, node.name, 'name');
  if (name) node.name_localizations = localizations(name);
  else if (context.nameRequired) throw new Error(`${where}: no catalog text for its name (${self}.name)`);
  if (context.described) {
    const description = keyOf(base, node.name, 'description');
    if (!description) throw new Error(`${where}: no catalog text for its description (${self}.description)`);
    node.description = text(DEFAULT_LOCALE, description);
    node.description_localizations = localizations(description);
  }
  for (const option of node.options ?? []) {
    // Subcommands and groups nest under their own name; plain options under `options`.
    const parent = isNested(option) ? self : `${self}.options`;
    fill(option, parent, `${where} ${option.name}`, { nameRequired: false, described: true });
  }
  if (node.choices) {
    node.choices = node.choices.map((c) => {
      const key = `${self}.choices.${keySegment(String(c.value))}`;
      if (!isMessageKey(key)) return c;
      return { ...c, name: text(DEFAULT_LOCALE, { key }), name_localizations: localizations({ key }) };
    });
  }
}

/**
 * `data` with its texts in the six languages (a copy; `data` is not changed).
 * Throws when a text the command needs has no key, or when a text breaks one of
 * Discord's limits (COMMAND_LIMITS).
 */
export function localizeCommand<T extends RESTPostAPIApplicationCommandsJSONBody>(data: T): T {
  const out = structuredClone(data) as unknown as Node;
  const chatInput = isChatInput(out);
  fill(out, 'commands', `command ${data.name}`, { nameRequired: !chatInput, described: chatInput });
  const localized = out as unknown as T;
  const problems = commandProblems(localized);
  if (problems.length > 0)
    throw new Error(`command ${data.name} breaks Discord's limits:\n${problems.join('\n')}`);
  return localized;
}

/** Every name, description and choice of `data` (localizations included) that Discord would refuse. */
export function commandProblems(data: RESTPostAPIApplicationCommandsJSONBody): string[] {
  const problems: string[] = [];
  const checkName = (where: string, name: string, chat: boolean) => {
    if (!chat) {
      if (name.length < 1 || name.length > COMMAND_LIMITS.contextMenuNameMax)
        problems.push(`${where}: name "${name}" is not 1-${COMMAND_LIMITS.contextMenuNameMax} characters`);
    } else if (!COMMAND_LIMITS.chatInputName.test(name)) {
      problems.push(`${where}: name "${name}" does not match Discord's pattern`);
    } else if (name !== name.toLowerCase()) {
      problems.push(`${where}: name "${name}" is not lower case`);
    }
  };
  const checkText = (where: string, s: string, max: number) => {
    if (s.trim().length < 1 || s.length > max) problems.push(`${where}: "${s}" is not 1-${max} characters`);
  };
  const walk = (node: Node, where: string, chat: boolean) => {
    checkName(where, node.name, chat);
    for (const [l, n] of Object.entries(node.name_localizations ?? {}))
      if (typeof n === 'string') checkName(`${where} [${l}]`, n, chat);
    if (chat) {
      checkText(where, node.description ?? '', COMMAND_LIMITS.descriptionMax);
      for (const [l, d] of Object.entries(node.description_localizations ?? {}))
        if (typeof d === 'string') checkText(`${where} [${l}]`, d, COMMAND_LIMITS.descriptionMax);
    }
    for (const c of node.choices ?? []) {
      checkText(`${where} choice ${c.value}`, c.name, COMMAND_LIMITS.choiceNameMax);
      for (const [l, n] of Object.entries(c.name_localizations ?? {}))
        if (typeof n === 'string')
          checkText(`${where} choice ${c.value} [${l}]`, n, COMMAND_LIMITS.choiceNameMax);
    }
    for (const o of node.options ?? []) walk(o, `${where} ${o.name}`, true);
  };
  const root = data as unknown as Node;
  walk(root, `command ${root.name}`, isChatInput(root));
  return problems;
}
