import type { REST } from '@discordjs/rest';
import { Routes, type RESTPostAPIApplicationCommandsJSONBody } from 'discord-api-types/v10';
import type { Logger } from 'pino';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Defaults Discord fills in on its side: dropped before comparing, so they never cause a false difference. */
const DEFAULTS: Record<string, Json> = {
  type: 1,
  required: false,
  autocomplete: false,
  nsfw: false,
  dm_permission: true,
  default_member_permissions: null,
  default_permission: true,
  name_localizations: null,
  description_localizations: null,
  // A user or message command has no description; Discord reports "".
  description: '',
};
/** Server-assigned fields that are not part of what we declare. */
const SERVER_FIELDS = new Set([
  'id',
  'application_id',
  'guild_id',
  'version',
  'name_localized',
  'description_localized',
]);
/** contexts/integration_types are compared only when the code sets them (Discord reports its defaults otherwise). */
const OPTIONAL_WHEN_UNSET = ['contexts', 'integration_types', 'dm_permission'];

/**
 * Canonical JSON of a command list, for comparing what Discord holds with the
 * code. discord.js `ApplicationCommand#equals` reports false differences
 * (discord.js #10596, #10920), which would re-register on every restart.
 */
export function normalizeCommands(commands: readonly unknown[], declared?: readonly unknown[]): string {
  // Per command: one command declaring `contexts` (e.g. a guild-only /settings) must not make
  // Discord's default `contexts` of every other command count as a difference.
  const declaredKeys = new Map<string, Set<string>>();
  for (const c of declared ?? commands) {
    if (!c || typeof c !== 'object') continue;
    const keys = new Set<string>();
    // Builders emit `contexts: undefined` etc.: only keys with a value count as declared.
    for (const [k, v] of Object.entries(c)) if (v !== undefined && v !== null) keys.add(k);
    declaredKeys.set(String((c as { name?: unknown }).name), keys);
  }
  const list = commands.map((c) => {
    const n = normalize(c as Json) as Record<string, Json>;
    const keys = declaredKeys.get(String(n['name']));
    for (const k of OPTIONAL_WHEN_UNSET) if (!keys?.has(k)) delete n[k];
    return n;
  });
  list.sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return JSON.stringify(list);
}

function isEmptyObject(v: Json | undefined): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0;
}

function normalize(v: Json): Json {
  if (Array.isArray(v)) return v.map(normalize);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, Json> = {};
  for (const key of Object.keys(v).sort()) {
    const value = v[key];
    if (value === undefined || SERVER_FIELDS.has(key)) continue;
    if (key in DEFAULTS && JSON.stringify(DEFAULTS[key]) === JSON.stringify(value)) continue;
    // An empty localization map says what null says.
    if (key.endsWith('_localizations') && isEmptyObject(value)) continue;
    if (
      Array.isArray(value) &&
      value.length === 0 &&
      (key === 'options' || key === 'choices' || key === 'channel_types')
    )
      continue;
    if (key === 'contexts' || key === 'integration_types') {
      out[key] = Array.isArray(value) ? [...value].sort() : value;
      continue;
    }
    out[key] = normalize(value);
  }
  return out;
}

export interface SyncResult {
  action: 'unchanged' | 'overwritten';
  scope: 'guild' | 'global';
  count: number;
}

/**
 * Reads the commands Discord holds (guild when guildId is set, else global) and
 * overwrites them in one bulk PUT only when they differ: a restart costs one GET.
 */
export async function syncCommands(opts: {
  /** discord.js REST (only get/put are used, so tests can pass a stub). */
  rest: Pick<REST, 'get' | 'put'>;
  applicationId: string;
  guildId?: string | undefined;
  commands: readonly RESTPostAPIApplicationCommandsJSONBody[];
  logger: Logger;
}): Promise<SyncResult> {
  const route = opts.guildId
    ? Routes.applicationGuildCommands(opts.applicationId, opts.guildId)
    : Routes.applicationCommands(opts.applicationId);
  const scope = opts.guildId ? 'guild' : 'global';
  // Without `with_localizations` Discord leaves the localizations out, and every start would re-register.
  const current = (await opts.rest.get(route, {
    query: new URLSearchParams({ with_localizations: 'true' }),
  })) as unknown[];
  const want = normalizeCommands(opts.commands);
  const have = normalizeCommands(Array.isArray(current) ? current : [], opts.commands);
  if (want === have) {
    opts.logger.info({ scope, count: opts.commands.length }, 'slash commands up to date');
    return { action: 'unchanged', scope, count: opts.commands.length };
  }
  await opts.rest.put(route, { body: opts.commands });
  opts.logger.info({ scope, count: opts.commands.length }, 'slash commands registered');
  return { action: 'overwritten', scope, count: opts.commands.length };
}

/**
 * Every scope the plan names (`registrationPlan`: global, and DISCORD_GUILD_ID's server when
 * set), each compared on its own and overwritten in one bulk PUT only when it differs.
 */
export async function syncCommandScopes(opts: {
  rest: Pick<REST, 'get' | 'put'>;
  applicationId: string;
  scopes: ReadonlyArray<{ guildId?: string; commands: readonly RESTPostAPIApplicationCommandsJSONBody[] }>;
  logger: Logger;
}): Promise<SyncResult[]> {
  const out: SyncResult[] = [];
  for (const scope of opts.scopes) {
    out.push(
      await syncCommands({
        rest: opts.rest,
        applicationId: opts.applicationId,
        guildId: scope.guildId,
        commands: scope.commands,
        logger: opts.logger,
      }),
    );
  }
  return out;
}
