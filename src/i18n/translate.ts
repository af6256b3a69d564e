/**
 * Formatting messages: ICU MessageFormat through FormatJS `intl-messageformat`
 * (plurals from the platform's `Intl.PluralRules`, numbers from
 * `Intl.NumberFormat`). Each message is parsed once per language, on first use,
 * and kept; the Intl formatters are shared by all of them.
 *
 * Values are inserted as they are: text from members or the media service must
 * be escaped (escapeMarkdown) before it is passed in, as everywhere else.
 */
import { IntlMessageFormat, type Formatters } from 'intl-messageformat';
import { CATALOGS, type MessageKey } from './catalogs.js';
import type { MessageArgs } from './message-args.js';
import { DEFAULT_LOCALE, publicLocale, resolveLocale, type Locale } from './locales.js';

/** The values argument of `t` for `key`: none for a message without placeholders. */
export type ValuesOf<K extends MessageKey> = MessageArgs[K] extends undefined
  ? [values?: undefined]
  : [values: MessageArgs[K]];

/** A message could not be formatted (a value missing or of the wrong kind): a bug, named precisely. */
export class I18nError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'I18nError';
  }
}

/** One Intl formatter per locale and options for the whole process (they are costly to build). */
function memo<A extends unknown[], R>(make: (...args: A) => R): (...args: A) => R {
  const cache = new Map<string, R>();
  return (...args) => {
    const id = JSON.stringify(args);
    let hit = cache.get(id);
    if (hit === undefined) {
      hit = make(...args);
      cache.set(id, hit);
    }
    return hit;
  };
}

const formatters: Formatters = {
  getNumberFormat: memo(
    (locales?: string | string[], opts?: object) =>
      new Intl.NumberFormat(locales, opts as Intl.NumberFormatOptions),
  ),
  getDateTimeFormat: memo(
    (...args: ConstructorParameters<typeof Intl.DateTimeFormat>) => new Intl.DateTimeFormat(...args),
  ),
  getPluralRules: memo(
    (...args: ConstructorParameters<typeof Intl.PluralRules>) => new Intl.PluralRules(...args),
  ),
};

const compiled = new Map<string, IntlMessageFormat>();

/** The message compiled for `locale`, parsed on first use. */
function message(locale: Locale, key: MessageKey): IntlMessageFormat {
  const id = `${locale}\u0000${key}`;
  let m = compiled.get(id);
  if (m === undefined) {
    // A key the catalog lacks cannot pass the tests; English is the safe answer if one ever does.
    const source = CATALOGS[locale][key] ?? CATALOGS[DEFAULT_LOCALE][key];
    if (source === undefined) throw new I18nError(`no message "${key}"`);
    try {
      // ignoreTag: `<@id>`, `<#id>` and `<t:…>` are Discord markup, not ICU rich-text tags.
      m = new IntlMessageFormat(source, locale, undefined, { formatters, ignoreTag: true });
    } catch (err) {
      throw new I18nError(`${locale} "${key}" is not a valid ICU message: ${String(err)}`, { cause: err });
    }
    compiled.set(id, m);
  }
  return m;
}

/** The text of `key` in `locale` with its placeholders filled. Throws I18nError when a value is missing. */
export function t<K extends MessageKey>(locale: Locale, key: K, ...[values]: ValuesOf<K>): string {
  let out: unknown;
  try {
    out = message(locale, key).format(values as Record<string, string | number | Date> | undefined);
  } catch (err) {
    if (err instanceof I18nError) throw err;
    throw new I18nError(`${locale} "${key}": ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  if (typeof out !== 'string') throw new I18nError(`${locale} "${key}" did not format to text`);
  return out;
}

/** `t` bound to one language: what a reply, a render or a command handler holds. */
export interface Translator {
  readonly locale: Locale;
  t<K extends MessageKey>(key: K, ...values: ValuesOf<K>): string;
  /** `a, b and c` (`a、b、c`, `a, b et c`, …) in this language. */
  list(items: readonly string[]): string;
}

const translators = new Map<Locale, Translator>();

/** The translator of `locale` (one per language, made once: free to ask for on every interaction). */
export function translator(locale: Locale): Translator {
  let tr = translators.get(locale);
  if (tr === undefined) {
    const lists = new Intl.ListFormat(locale, { style: 'long', type: 'conjunction' });
    tr = {
      locale,
      t: (key, ...values) => t(locale, key, ...values),
      list: (items) => lists.format(items),
    };
    translators.set(locale, tr);
  }
  return tr;
}

/**
 * The translator for a reply to an interaction (discord.js `Interaction` or raw
 * API fields alike): the member's language, else the server's, else English.
 */
export function translatorFor(interaction: {
  locale?: string | null | undefined;
  guildLocale?: string | null | undefined;
  guild_locale?: string | null | undefined;
}): Translator {
  return translator(resolveLocale(interaction.locale, interaction.guildLocale ?? interaction.guild_locale));
}

/** The translator for a public message in a server (job messages, threads, gallery posts). */
export function publicTranslator(guildLocale?: string | null): Translator {
  return translator(publicLocale(guildLocale));
}
