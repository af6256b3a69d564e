/**
 * The six catalogs, one JSON file per language under ./locales/, flat keys
 * (`area.thing.detail`). English is the source: its keys are the `MessageKey`
 * type, and a catalog missing one of them does not compile (extra keys and
 * placeholder mismatches are caught by test/i18n.test.ts).
 */
import enUS from './locales/en-US.json' with { type: 'json' };
import de from './locales/de.json' with { type: 'json' };
import fr from './locales/fr.json' with { type: 'json' };
import esES from './locales/es-ES.json' with { type: 'json' };
import ptBR from './locales/pt-BR.json' with { type: 'json' };
import ja from './locales/ja.json' with { type: 'json' };
import type { Locale } from './locales.js';

/** Every message of the bot, named by its key in the English catalog. */
export type MessageKey = keyof typeof enUS;

export type Catalog = Readonly<Record<MessageKey, string>>;

export const CATALOGS: Readonly<Record<Locale, Catalog>> = {
  'en-US': enUS,
  de,
  fr,
  'es-ES': esES,
  'pt-BR': ptBR,
  ja,
};

const KEYS: ReadonlySet<string> = new Set(Object.keys(enUS));

/** Whether `key` names a message (for keys built at run time, e.g. a parameter's label). */
export function isMessageKey(key: string): key is MessageKey {
  return KEYS.has(key);
}
