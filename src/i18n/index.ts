/**
 * The bot in six languages (docs/i18n.md): catalogs, locale choice, `t` and
 * translators, command localizations, localized units.
 */
export { CATALOGS, isMessageKey, type Catalog, type MessageKey } from './catalogs.js';
export type { MessageArgs } from './message-args.js';
export {
  DEFAULT_LOCALE,
  DISCORD_LOCALES,
  LOCALES,
  publicLocale,
  resolveLocale,
  supportedLocale,
  type Locale,
} from './locales.js';
export {
  I18nError,
  publicTranslator,
  t,
  translator,
  translatorFor,
  type Translator,
  type ValuesOf,
} from './translate.js';
export { COMMAND_LIMITS, commandProblems, keySegment, localizeCommand } from './command-localization.js';
export { formatAgo, formatBytes, formatDuration } from './format.js';
