/**
 * The bot's languages and how one is chosen for a reply. Discord sends its own
 * locale codes (`en-US`, `en-GB`, `es-419`, `pt-BR`, `zh-TW`, …) on every
 * interaction (`locale`, the member's client language) and, in servers,
 * `guild_locale` (the server's primary language). Each of ours stands for its
 * whole language: a variant we have no catalog for falls back to the catalog of
 * its language, and anything else to English.
 */
import type { LocaleString } from 'discord-api-types/v10';

/** One catalog each (src/i18n/locales/<locale>.json); the first is the source language. */
export const LOCALES = ['en-US', 'de', 'fr', 'es-ES', 'pt-BR', 'ja'] as const;
export type Locale = (typeof LOCALES)[number];

export const DEFAULT_LOCALE: Locale = 'en-US';

/**
 * Language subtag → the catalog for every variant of it. `pt` → pt-BR: Discord
 * has one Portuguese locale (pt-BR), and a European reader understands Brazilian
 * Portuguese far better than English; `es` → es-ES likewise serves es-419.
 */
const BY_LANGUAGE: Readonly<Record<string, Locale>> = {
  en: 'en-US',
  de: 'de',
  fr: 'fr',
  es: 'es-ES',
  pt: 'pt-BR',
  ja: 'ja',
};

/** The catalog for a locale tag (`de-AT` → de, `es-419` → es-ES, `EN_gb` → en-US), or undefined when we have none. */
export function supportedLocale(tag: string | null | undefined): Locale | undefined {
  if (typeof tag !== 'string') return undefined;
  const language = tag.trim().split(/[-_]/)[0]?.toLowerCase() ?? '';
  return BY_LANGUAGE[language];
}

/**
 * The language of a reply to one member: their own client language when we speak
 * it, else the server's (a member whose language we lack most likely reads the
 * server's, e.g. a Korean member of a German server), else English.
 */
export function resolveLocale(userLocale?: string | null, guildLocale?: string | null): Locale {
  return supportedLocale(userLocale) ?? supportedLocale(guildLocale) ?? DEFAULT_LOCALE;
}

/** The language of a public message (job messages, threads, gallery posts): the server's. */
export function publicLocale(guildLocale?: string | null): Locale {
  return resolveLocale(undefined, guildLocale);
}

/**
 * Discord locales that get a command's localized texts, per catalog. English is
 * the command's base text, so `en-US`/`en-GB` need none; Latin American Spanish
 * shows the Spanish text rather than falling back to English.
 */
export const DISCORD_LOCALES: Readonly<Record<Exclude<Locale, 'en-US'>, readonly LocaleString[]>> = {
  de: ['de'],
  fr: ['fr'],
  'es-ES': ['es-ES', 'es-419'],
  'pt-BR': ['pt-BR'],
  ja: ['ja'],
};
