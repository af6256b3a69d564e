import { readFileSync } from 'node:fs';
import { TYPE, type MessageFormatElement } from '@formatjs/icu-messageformat-parser';
import {
  ApplicationCommandOptionType,
  ApplicationCommandType,
  type RESTPostAPIApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import { REST, Routes } from 'discord.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { argumentsOf, messageArgsSource, parseMessage, type ArgumentKind } from '../scripts/i18n-types.js';
import { commandData, commands } from '../src/commands/index.js';
import { normalizeCommands } from '../src/services/discord/registration/command-sync.js';
import {
  CONSENT_WORDING,
  CONSENT_WORDINGS,
  CONSENT_WORDING_TEXTS,
} from '../src/services/training/consent.js';
import {
  CATALOGS,
  COMMAND_LIMITS,
  DEFAULT_LOCALE,
  I18nError,
  LOCALES,
  commandProblems,
  formatAgo,
  formatBytes,
  formatDuration,
  localizeCommand,
  publicLocale,
  publicTranslator,
  resolveLocale,
  t,
  translator,
  translatorFor,
  type Locale,
  type MessageKey,
} from '../src/i18n/index.js';
import { startFakeDiscord } from './fake-discord/index.js';
import { OpenApiSpec } from './fake-discord/openapi.js';

const EN = CATALOGS[DEFAULT_LOCALE];
const KEYS = Object.keys(EN) as MessageKey[];
const OTHERS = LOCALES.filter((l) => l !== DEFAULT_LOCALE);

/** Every message of every catalog, for `it.each`. */
const ALL = LOCALES.flatMap((locale) => KEYS.map((key) => ({ locale, key })));

/** Plural elements of a message (nested ones too). */
function plurals(els: MessageFormatElement[]): { name: string; options: string[] }[] {
  const out: { name: string; options: string[] }[] = [];
  for (const el of els) {
    if (el.type === TYPE.plural) out.push({ name: el.value, options: Object.keys(el.options) });
    if (el.type === TYPE.plural || el.type === TYPE.select)
      for (const o of Object.values(el.options)) out.push(...plurals(o.value));
  }
  return out;
}

/** The literal text of a message (all branches): what is left once placeholders are taken out. */
function literalText(els: MessageFormatElement[]): string {
  return els
    .map((el) => {
      if (el.type === TYPE.literal) return el.value;
      if (el.type === TYPE.plural || el.type === TYPE.select)
        return Object.values(el.options)
          .map((o) => literalText(o.value))
          .join(' ');
      return ' ';
    })
    .join('');
}

/** A value of the right kind for each placeholder of `key`. */
function sampleValues(key: MessageKey, n = 3): Record<string, string | number | Date> {
  const sample: Record<ArgumentKind, string | number | Date> = {
    text: 'x',
    number: n,
    select: 'x',
    date: new Date(0),
  };
  return Object.fromEntries([...argumentsOf(EN[key])].map(([name, kind]) => [name, sample[kind]]));
}

const untypedT = t as (locale: Locale, key: string, values?: Record<string, unknown>) => string;

describe('catalogs', () => {
  it('every catalog has exactly the English keys, in the same order', () => {
    for (const locale of OTHERS) expect(Object.keys(CATALOGS[locale]), locale).toEqual(KEYS);
  });

  it('the catalogs on disk are the ones loaded, each key once', () => {
    for (const locale of LOCALES) {
      const raw = readFileSync(new URL(`../src/i18n/locales/${locale}.json`, import.meta.url), 'utf8');
      const keys = [...raw.matchAll(/^\s*"([^"]+)":/gm)].map((m) => m[1]);
      expect(keys, locale).toEqual(KEYS);
    }
  });

  it('no message is empty or padded with spaces', () => {
    for (const { locale, key } of ALL) {
      const m = CATALOGS[locale][key];
      expect(m.trim(), `${locale} ${key}`).toBe(m);
      expect(m.length, `${locale} ${key}`).toBeGreaterThan(0);
    }
  });

  it.each(ALL)('$locale $key parses as ICU and formats with its values', ({ locale, key }) => {
    expect(() => parseMessage(CATALOGS[locale][key])).not.toThrow();
    const out = untypedT(locale, key, sampleValues(key));
    expect(out).not.toContain('{');
    expect(out.length).toBeGreaterThan(0);
  });

  it('each message takes the same placeholders, of the same kind, in every language', () => {
    for (const key of KEYS) {
      const english = Object.fromEntries(argumentsOf(EN[key]));
      for (const locale of OTHERS) {
        expect(Object.fromEntries(argumentsOf(CATALOGS[locale][key])), `${locale} ${key}`).toEqual(english);
      }
    }
  });

  it('every placeholder is used: formatting without one of them fails, naming it', () => {
    for (const { locale, key } of ALL) {
      const values = sampleValues(key);
      for (const name of Object.keys(values)) {
        const { [name]: _dropped, ...rest } = values;
        expect(() => untypedT(locale, key, rest), `${locale} ${key} without ${name}`).toThrow(
          new RegExp(`"${name}"`),
        );
      }
    }
  });

  it('plural messages have every category each language needs, and no category it lacks', () => {
    for (const locale of LOCALES) {
      const needed = new Intl.PluralRules(locale).resolvedOptions().pluralCategories as string[];
      for (const key of KEYS) {
        for (const p of plurals(parseMessage(CATALOGS[locale][key]))) {
          const where = `${locale} ${key} {${p.name}}`;
          for (const category of needed) expect(p.options, where).toContain(category);
          for (const option of p.options) {
            if (!/^=\d+$/.test(option)) expect(needed, `${where} has "${option}"`).toContain(option);
          }
        }
      }
    }
  });

  it('no apostrophe is taken as ICU quoting (every one reaches the text)', () => {
    for (const { locale, key } of ALL) {
      const source = CATALOGS[locale][key];
      const count = (s: string) => s.split("'").length - 1;
      expect(count(literalText(parseMessage(source))), `${locale} ${key}`).toBe(count(source));
    }
  });

  it('code spans (commands, options, values) are the same in every language', () => {
    const spans = (s: string) => [...s.matchAll(/`[^`]*`/g)].map((m) => m[0]).sort();
    for (const key of KEYS) {
      for (const locale of OTHERS)
        expect(spans(CATALOGS[locale][key]), `${locale} ${key}`).toEqual(spans(EN[key]));
    }
  });

  it('no bare URL (Discord would unfurl it into a link preview): each is code, <…> or a masked link', () => {
    for (const { locale, key } of ALL) {
      // What Discord leaves linkable: code spans, <url> (no preview) and [text](url) taken out.
      const linkable = CATALOGS[locale][key]
        .replace(/`[^`]*`/g, '')
        .replace(/<https?:\/\/[^>\s]+>/g, '')
        .replace(/\]\(https?:\/\/[^)\s]+\)/g, ']');
      expect(linkable, `${locale} ${key}`).not.toMatch(/https?:\/\//);
    }
  });

  it('bold markers come in pairs', () => {
    for (const { locale, key } of ALL) {
      expect((CATALOGS[locale][key].split('**').length - 1) % 2, `${locale} ${key}`).toBe(0);
    }
  });

  it("Discord's permission names are Discord's own in each language", () => {
    const terms: Record<string, Record<Locale, string>> = {
      'Manage Server': {
        'en-US': 'Manage Server',
        de: 'Server verwalten',
        fr: 'Gérer le serveur',
        'es-ES': 'Gestionar servidor',
        'pt-BR': 'Gerenciar servidor',
        ja: 'サーバー管理',
      },
      'Manage Messages': {
        'en-US': 'Manage Messages',
        de: 'Nachrichten verwalten',
        fr: 'Gérer les messages',
        'es-ES': 'Gestionar mensajes',
        'pt-BR': 'Gerenciar mensagens',
        ja: 'メッセージの管理',
      },
    };
    for (const [english, byLocale] of Object.entries(terms)) {
      const keys = KEYS.filter((k) => EN[k].includes(english));
      expect(keys.length, english).toBeGreaterThan(0);
      for (const key of keys)
        for (const locale of LOCALES)
          expect(CATALOGS[locale][key], `${locale} ${key}`).toContain(byLocale[locale]);
    }
  });

  it('messages that name a button name it by its label in the same language', () => {
    const buttons = ['buttons.add_photos', 'buttons.submit', 'buttons.retry'] as const;
    for (const button of buttons) {
      const keys = KEYS.filter((k) => EN[k].includes(`**${EN[button]}**`));
      expect(keys.length, button).toBeGreaterThan(0);
      for (const key of keys)
        for (const locale of OTHERS)
          expect(CATALOGS[locale][key], `${locale} ${key}`).toContain(`**${CATALOGS[locale][button]}**`);
    }
  });

  it("labels and titles fit Discord's component limits in every language", () => {
    const limits: [RegExp, number][] = [
      [/^buttons\./, 80],
      [/^modals\.[^.]+\.(title|prompt_label)$/, 45],
      [/^training\.modal\.(title|photos|photos_range)$/, 45],
      [/^training\.modal\.(formats|optional)$/, 100],
      [/^tasks\.open_placeholder$/, 150],
      [/^operations\.[^.]+\.(title|label)$/, 40],
    ];
    for (const { locale, key } of ALL) {
      const max = limits.find(([re]) => re.test(key))?.[1];
      if (max === undefined) continue;
      const text = untypedT(locale, key, sampleValues(key, 30));
      expect(text.length, `${locale} ${key}: ${text}`).toBeLessThanOrEqual(max);
    }
  });

  it('the English consent button says "confirm"; every language has a consent statement naming 18', () => {
    expect(EN['buttons.confirm_consent']).toMatch(/\bconfirm\b/i);
    for (const locale of LOCALES) expect(CATALOGS[locale]['training.consent.v1.adult'], locale).toMatch(/18/);
  });

  it('each consent wording reads, in English, exactly as recorded (a record names its wording)', () => {
    for (const [wording, keys] of Object.entries(CONSENT_WORDING_TEXTS))
      expect(
        keys.map((k) => EN[k]),
        wording,
      ).toEqual(CONSENT_WORDINGS[wording]);
    expect(Object.keys(CONSENT_WORDING_TEXTS)).toContain(CONSENT_WORDING);
  });

  it('src/i18n/message-args.ts is generated from the current English catalog (npm run i18n:types)', async () => {
    const onDisk = readFileSync(new URL('../src/i18n/message-args.ts', import.meta.url), 'utf8');
    expect(onDisk).toBe(await messageArgsSource(EN));
  });
});

describe('formatting', () => {
  it('plural forms per language', () => {
    const cost = (locale: Locale, n: number) => t(locale, 'job.cost', { cost: n });
    expect(cost('en-US', 1)).toBe('Cost: 1 credit');
    expect(cost('en-US', 0)).toBe('Cost: 0 credits');
    expect(cost('en-US', 1000)).toBe('Cost: 1,000 credits');
    expect(cost('de', 1)).toBe('Kosten: 1 Credit');
    expect(cost('de', 2)).toBe('Kosten: 2 Credits');
    expect(cost('de', 1000)).toBe('Kosten: 1.000 Credits');
    // French: 0 and 1 are both "one"; a million takes "de" ("many").
    expect(cost('fr', 0)).toBe('Coût : 0 crédit');
    expect(cost('fr', 1)).toBe('Coût : 1 crédit');
    expect(cost('fr', 2)).toBe('Coût : 2 crédits');
    expect(cost('fr', 1_000_000)).toBe('Coût : 1\u202f000\u202f000 de crédits');
    expect(cost('es-ES', 1)).toBe('Coste: 1 crédito');
    expect(cost('es-ES', 0)).toBe('Coste: 0 créditos');
    expect(cost('es-ES', 1_000_000)).toBe('Coste: 1.000.000 de créditos');
    expect(cost('pt-BR', 1)).toBe('Custo: 1 crédito');
    expect(cost('pt-BR', 0)).toBe('Custo: 0 crédito');
    expect(cost('pt-BR', 2)).toBe('Custo: 2 créditos');
    expect(cost('pt-BR', 1_000_000)).toBe('Custo: 1.000.000 de créditos');
    // Japanese has no plural distinction.
    expect(cost('ja', 1)).toBe('費用: 1 クレジット');
    expect(cost('ja', 2)).toBe('費用: 2 クレジット');
  });

  it('exact matches, several plurals in one message, Discord markup kept', () => {
    expect(t('en-US', 'privacy.delete.done', { jobs: 1, sessions: 0, posts: 2, running: 1 })).toBe(
      'Deleted: 1 job record, 0 photo sessions, 2 gallery posts. Stopped tracking 1 running job.',
    );
    expect(
      t('en-US', 'privacy.show.jobs', { count: 0, days: 30 }).startsWith('• No job records (the commands'),
    ).toBe(true);
    expect(t('ja', 'refusal.cooldown', { retryAt: '<t:1700000000:R>' })).toContain('<t:1700000000:R>');
    expect(t('de', 'training.not_owner', { user: '<@123456789012345678>' })).toContain(
      '<@123456789012345678>',
    );
    expect(t('en-US', 'refusal.active_jobs', { count: 2, max: 2 })).toBe(
      'You already have 2 unfinished jobs in this server (the limit is 2). Try again when one of your 2 jobs finishes.',
    );
  });

  it('select placeholders', () => {
    expect(t('en-US', 'settings.show.threads', { state: 'on', source: 'server' })).toBe(
      '• threads: **on** (this server)',
    );
    expect(t('en-US', 'settings.show.threads', { state: 'off', source: 'default' })).toBe(
      '• threads: **off** (default)',
    );
    expect(t('de', 'settings.show.threads', { state: 'on', source: 'server' })).toBe(
      '• threads: **an** (dieser Server)',
    );
  });

  it('a missing value is an I18nError naming the language, the key and the placeholder', () => {
    const call = () => untypedT('fr', 'job.cost', {});
    expect(call).toThrow(I18nError);
    expect(call).toThrow(/fr "job\.cost".*"cost"/);
  });

  it('unknown keys and wrong values do not compile', () => {
    // Each line below is a compile error (checked by `npm run typecheck`); at run time they throw.
    // @ts-expect-error an unknown key
    expect(() => t('en-US', 'no.such.key')).toThrow(I18nError);
    // @ts-expect-error a missing value
    expect(() => t('en-US', 'job.cost', {})).toThrow(I18nError);
    // @ts-expect-error a plural takes a number
    expect(t('en-US', 'job.cost', { cost: 'many' })).toBe('Cost: NaN credits');
    // @ts-expect-error a message without placeholders takes no values
    expect(t('en-US', 'buttons.retry', { n: 1 })).toBe('Retry');
  });

  it('localized units', () => {
    const en = translator('en-US');
    const de = translator('de');
    const ja = translator('ja');
    expect(formatDuration(en, 42_000)).toBe('42s');
    expect(formatDuration(en, 65_000)).toBe('1m 05s');
    expect(formatDuration(en, 7_384_000)).toBe('2h 03m 04s');
    expect(formatDuration(ja, 7_384_000)).toBe('2時間03分04秒');
    expect(formatBytes(en, 7.5 * 1024 * 1024)).toBe('7.5 MiB');
    expect(formatBytes(de, 7.5 * 1024 * 1024)).toBe('7,5 MiB');
    expect(formatBytes(en, 10 * 1024 * 1024)).toBe('10 MiB');
    expect(formatBytes(en, 512)).toBe('512 B');
    expect(formatAgo(en, 5 * 60_000)).toBe('5 min ago');
    expect(formatAgo(en, 3 * 3_600_000)).toBe('3 h ago');
    expect(formatAgo(en, 4 * 86_400_000)).toBe('4 days ago');
    expect(formatAgo(de, 86_400_000 * 4)).toBe('vor 4 Tagen');
    expect(en.list(['a', 'b', 'c'])).toBe('a, b, and c');
    expect(de.list(['a', 'b', 'c'])).toBe('a, b und c');
  });
});

describe('choosing the language', () => {
  it.each([
    ['de', undefined, 'de'],
    ['de-AT', undefined, 'de'],
    ['fr', undefined, 'fr'],
    ['es-ES', undefined, 'es-ES'],
    ['es-419', undefined, 'es-ES'],
    ['en-GB', undefined, 'en-US'],
    ['en-US', undefined, 'en-US'],
    ['pt-BR', undefined, 'pt-BR'],
    ['pt-PT', undefined, 'pt-BR'],
    ['ja', undefined, 'ja'],
    ['xx', undefined, 'en-US'],
    [undefined, undefined, 'en-US'],
    ['', '', 'en-US'],
    // The member's language beats the server's…
    ['ja', 'de', 'ja'],
    ['en-GB', 'fr', 'en-US'],
    // …unless we do not speak it: then the server's, else English.
    ['ko', 'de', 'de'],
    ['zh-TW', 'es-419', 'es-ES'],
    ['ko', 'sv-SE', 'en-US'],
    [undefined, 'pt-BR', 'pt-BR'],
    [null, null, 'en-US'],
  ] as const)('user %s, server %s → %s', (user, guild, expected) => {
    expect(resolveLocale(user, guild)).toBe(expected);
  });

  it("public messages speak the server's language", () => {
    expect(publicLocale('ja')).toBe('ja');
    expect(publicLocale('es-419')).toBe('es-ES');
    expect(publicLocale('ko')).toBe('en-US');
    expect(publicLocale(undefined)).toBe('en-US');
    expect(publicTranslator('ja').t('threads.line.finished')).toBe(CATALOGS.ja['threads.line.finished']);
  });

  it('a translator per interaction: discord.js and raw API field names alike', () => {
    expect(translatorFor({ locale: 'de', guildLocale: 'fr' }).locale).toBe('de');
    expect(translatorFor({ locale: 'ko', guildLocale: 'fr' }).locale).toBe('fr');
    expect(translatorFor({ locale: 'ko', guild_locale: 'ja' }).locale).toBe('ja');
    expect(translatorFor({ locale: 'xx' }).t('buttons.retry')).toBe('Retry');
    expect(translatorFor({ locale: 'de' }).t('buttons.retry')).toBe('Erneut versuchen');
    // One per language, made once.
    expect(translatorFor({ locale: 'de-AT' })).toBe(translator('de'));
  });
});

describe('command localizations', () => {
  /** What the code declares, before localizing (the nine commands of design.md). */
  const all: RESTPostAPIApplicationCommandsJSONBody[] = commands.map((c) => c.data);
  let localized: RESTPostAPIApplicationCommandsJSONBody[];

  beforeAll(() => {
    localized = all.map((c) => localizeCommand(c));
  });

  type Item = {
    name: string;
    description?: string;
    type?: number;
    name_localizations?: Record<string, string | null> | null;
    description_localizations?: Record<string, string | null> | null;
    options?: Item[];
    choices?: { name: string; value: string | number; name_localizations?: Record<string, string | null> }[];
  };
  const items = (c: Item, path = c.name): { path: string; item: Item }[] => [
    { path, item: c },
    ...(c.options ?? []).flatMap((o) => items(o, `${path} ${o.name}`)),
  ];
  const DISCORD_LOCALES = ['de', 'fr', 'es-ES', 'es-419', 'pt-BR', 'ja'];

  it('every command the bot registers localizes without error (the nine of design.md)', () => {
    expect(localized).toHaveLength(9);
    for (const c of localized) expect(commandProblems(c), c.name).toEqual([]);
  });

  it('what the bot registers is the localized bodies, in all six languages', () => {
    const registered = commandData();
    // Registered as declared, plus where each may be installed (server installs only, by default).
    expect(registered).toEqual(localized.map((c) => ({ ...c, integration_types: [0] })));
    for (const c of registered) {
      expect(commandProblems(c), c.name).toEqual([]);
      // A message command has a name and no description.
      const texts =
        c.type === ApplicationCommandType.Message ? c.name_localizations : c.description_localizations;
      expect(Object.keys(texts ?? {}), c.name).toEqual(DISCORD_LOCALES);
    }
  });

  it('names stay canonical; English texts are the ones the code declares', () => {
    for (const [i, c] of all.entries()) {
      const before = items(c as Item);
      const after = items(localized[i] as Item);
      expect(after.map((x) => x.path)).toEqual(before.map((x) => x.path));
      for (const [j, { item }] of before.entries()) {
        expect(after[j]?.item.name).toBe(item.name);
        expect(after[j]?.item.description, before[j]?.path).toBe(item.description);
        expect(after[j]?.item.choices?.map((ch) => [ch.name, ch.value])).toEqual(
          item.choices?.map((ch) => [ch.name, ch.value]),
        );
      }
    }
  });

  it('every description of every command, subcommand and option is there in all six languages', () => {
    for (const c of localized.filter((x) => (x.type ?? 1) === ApplicationCommandType.ChatInput)) {
      for (const { path, item } of items(c as Item)) {
        for (const l of DISCORD_LOCALES) {
          const d = item.description_localizations?.[l];
          expect(typeof d, `${path} [${l}]`).toBe('string');
          expect(d?.length ?? 0, `${path} [${l}]`).toBeGreaterThan(0);
          expect(d?.length ?? 0, `${path} [${l}]: ${d}`).toBeLessThanOrEqual(100);
        }
        // Latin American Spanish reads the Spanish text.
        expect(item.description_localizations?.['es-419']).toBe(item.description_localizations?.['es-ES']);
      }
    }
  });

  it("every name and choice fits Discord's rules", () => {
    for (const c of localized) {
      const chat = (c.type ?? 1) === ApplicationCommandType.ChatInput;
      for (const { path, item } of items(c as Item)) {
        for (const name of [item.name, ...Object.values(item.name_localizations ?? {})]) {
          if (typeof name !== 'string') continue;
          if (chat) {
            expect(name, path).toMatch(COMMAND_LIMITS.chatInputName);
            expect(name, path).toBe(name.toLowerCase());
          } else {
            expect(name.length, path).toBeGreaterThanOrEqual(1);
            expect(name.length, path).toBeLessThanOrEqual(32);
          }
        }
        for (const choice of item.choices ?? []) {
          for (const n of [choice.name, ...Object.values(choice.name_localizations ?? {})]) {
            expect(
              typeof n === 'string' && n.length >= 1 && n.length <= 100,
              `${path} ${choice.value}: ${n}`,
            ).toBe(true);
          }
        }
      }
    }
  });

  it('word choices are translated; setting names, ratios and other identifiers are not', () => {
    for (const c of localized) {
      for (const { path, item } of items(c as Item)) {
        const siblings = new Set(items(c as Item).map((x) => x.item.name));
        for (const choice of item.choices ?? []) {
          const identifier = siblings.has(String(choice.value)) || !/[a-z]/i.test(choice.name);
          if (identifier) expect(choice.name_localizations, `${path} ${choice.value}`).toBeUndefined();
          else
            expect(Object.keys(choice.name_localizations ?? {}), `${path} ${choice.value}`).toEqual(
              DISCORD_LOCALES,
            );
        }
      }
    }
  });

  it('Remove result is named in every language; numbered options share one text', () => {
    const remove = localized.find((c) => c.name === 'Remove result') as Item;
    expect(remove.name_localizations?.['de']).toBe('Ergebnis entfernen');
    expect(Object.keys(remove.name_localizations ?? {})).toEqual(DISCORD_LOCALES);
    expect(remove.description).toBeUndefined();
    const training = localized.find((c) => c.name === 'training-photos') as Item;
    const start = training.options?.find((o) => o.name === 'start');
    const photo7 = start?.options?.find((o) => o.name === 'photo7');
    expect(photo7?.description).toBe('Photo 7 (PNG, JPEG, GIF or WebP)');
    expect(photo7?.description_localizations?.['de']).toBe('Foto 7 (PNG, JPEG, GIF oder WebP)');
    expect(photo7?.type).toBe(ApplicationCommandOptionType.Attachment);
  });

  it('leaves its input alone', () => {
    const before = JSON.stringify(all);
    for (const c of all) localizeCommand(c);
    expect(JSON.stringify(all)).toBe(before);
  });

  it("refuses a command whose texts are missing or break Discord's limits", () => {
    expect(() =>
      localizeCommand({
        name: 'nope',
        description: 'not in the catalogs',
        type: ApplicationCommandType.ChatInput,
      }),
    ).toThrow(/commands\.nope\.description/);
    expect(() => localizeCommand({ name: 'Nope', type: ApplicationCommandType.Message })).toThrow(
      /commands\.nope\.name/,
    );
    expect(commandProblems({ name: 'Bad Name', description: 'x'.repeat(101) })).toHaveLength(2);
    expect(
      commandProblems({
        name: 'ok',
        description: 'ok',
        name_localizations: { de: 'Groß' },
        description_localizations: {},
      }),
    ).toEqual(['command ok [de]: name "Groß" is not lower case']);
  });

  it('a registration round trip keeps every localization, when read back with_localizations', async () => {
    const fake = await startFakeDiscord();
    try {
      const rest = new REST({ api: fake.apiUrl }).setToken(fake.token);
      const route = Routes.applicationCommands(fake.applicationId);
      // Slash commands (a message command comes back with `description: ""`, which command sync must ignore).
      const slash = localized.filter((c) => (c.type ?? 1) === ApplicationCommandType.ChatInput);
      await rest.put(route, { body: slash });
      const withLocalizations = (await rest.get(route, {
        query: new URLSearchParams({ with_localizations: 'true' }),
      })) as unknown[];
      expect(normalizeCommands(withLocalizations, slash)).toBe(normalizeCommands(slash));
      // Without the query Discord leaves them out: command sync must ask for them, or it re-registers on every start.
      const plain = (await rest.get(route)) as unknown[];
      expect(normalizeCommands(plain, slash)).not.toBe(normalizeCommands(slash));
    } finally {
      await fake.close();
    }
  });

  it("the localized bulk registration is a valid body for Discord's API", () => {
    const spec = OpenApiSpec.load();
    const template = spec.matchPath('/applications/123456789012345678/commands')?.template ?? '';
    const r = spec.validateRequestBody(template, 'PUT', localized);
    expect(r.ok === false ? r.errors : [], template).toEqual([]);
    expect(r.ok).not.toBe('no-schema');
  });
});
