import { Routes, type RESTPostAPIApplicationCommandsJSONBody } from 'discord.js';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { commandData, registrationPlan } from '../src/commands/index.js';
import {
  normalizeCommands,
  syncCommandScopes,
  syncCommands,
} from '../src/services/discord/registration/command-sync.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

const APP_ID = '111111111111111111';
const GUILD_ID = '222222222222222222';
const silent = pino({ level: 'silent' });

/** The bot's commands as plain JSON (a deep copy, safe to mutate). */
function ours(): JsonObject[] {
  return JSON.parse(JSON.stringify(commandData())) as JsonObject[];
}

function asObject(v: Json | undefined): JsonObject {
  if (v === null || v === undefined || typeof v !== 'object' || Array.isArray(v))
    throw new Error('not an object');
  return v;
}

function asArray(v: Json | undefined): Json[] {
  if (!Array.isArray(v)) throw new Error('not an array');
  return v;
}

function byName(list: Json[], name: string): JsonObject {
  const found = list.map(asObject).find((o) => o['name'] === name);
  if (!found) throw new Error(`no ${name}`);
  return found;
}

interface DiscordStyle {
  /** Read without `?with_localizations=true`: Discord leaves every localization out (null). */
  withoutLocalizations?: boolean;
  /** Discord omits `required: false`; some API versions echo it. */
  omitRequiredFalse: boolean;
  /** What Discord reports for a command that declares no contexts (declared ones are echoed). */
  contexts: Json;
  /** Report `contexts` for every command, declared or not (a server-side change). */
  forceContexts?: boolean;
  guildId?: string;
  /** Drop empty `options: []` of subcommands (Discord does). */
  dropEmptyOptions: boolean;
  /** Reverse the order of the top-level list (Discord's order is its own). */
  reorder: boolean;
}

function discordOption(o: JsonObject, style: DiscordStyle): JsonObject {
  const out: JsonObject = {};
  // Discord's key order differs from the builders'.
  for (const key of Object.keys(o).reverse()) {
    const value = o[key];
    if (value === undefined) continue;
    if (key === 'required' && value === false && style.omitRequiredFalse) continue;
    if (key === 'options') {
      const opts = asArray(value);
      if (opts.length === 0 && style.dropEmptyOptions) continue;
      out[key] = opts.map((x) => discordOption(asObject(x), style));
      continue;
    }
    if (key === 'choices') {
      out[key] = asArray(value).map((c) => {
        const choice = asObject(c);
        return {
          ...choice,
          name_localizations: style.withoutLocalizations ? null : (choice['name_localizations'] ?? null),
        };
      });
      continue;
    }
    out[key] = value;
  }
  out['name_localizations'] = style.withoutLocalizations ? null : (o['name_localizations'] ?? null);
  out['description_localizations'] = style.withoutLocalizations
    ? null
    : (o['description_localizations'] ?? null);
  if ((o['type'] === 3 || o['type'] === 4 || o['type'] === 10) && o['autocomplete'] === undefined) {
    out['autocomplete'] = false;
  }
  return out;
}

/** What Discord answers to GET …/commands for what we registered: our JSON plus its own fields and defaults. */
function asDiscordReturns(commands: JsonObject[], style: DiscordStyle): JsonObject[] {
  const list = commands.map((c, i) => {
    const options = asArray(c['options'] ?? []).map((o) => discordOption(asObject(o), style));
    const out: JsonObject = {
      id: `10000000000000000${i}`,
      application_id: APP_ID,
      version: `20000000000000000${i}`,
      default_member_permissions: c['default_member_permissions'] ?? null,
      type: c['type'] ?? 1,
      name: c['name'] ?? null,
      name_localizations: style.withoutLocalizations ? null : (c['name_localizations'] ?? null),
      // A message command has no description: Discord answers "".
      description: c['description'] ?? '',
      description_localizations: style.withoutLocalizations ? null : (c['description_localizations'] ?? null),
      dm_permission: true,
      contexts: style.forceContexts ? style.contexts : (c['contexts'] ?? style.contexts),
      // Declared ones are echoed; Discord's default otherwise.
      integration_types: c['integration_types'] ?? [0],
      nsfw: false,
      ...(options.length > 0 || !style.dropEmptyOptions ? { options } : {}),
      ...(style.guildId !== undefined ? { guild_id: style.guildId } : {}),
    };
    return out;
  });
  return style.reorder ? list.reverse() : list;
}

const STYLES: [string, DiscordStyle][] = [
  [
    'required:false omitted, contexts null',
    { omitRequiredFalse: true, contexts: null, dropEmptyOptions: true, reorder: false },
  ],
  [
    'required:false present, contexts [0,1,2]',
    { omitRequiredFalse: false, contexts: [0, 1, 2], dropEmptyOptions: false, reorder: false },
  ],
  [
    'guild command, reordered',
    {
      omitRequiredFalse: true,
      contexts: [2, 0, 1],
      guildId: GUILD_ID,
      dropEmptyOptions: true,
      reorder: true,
    },
  ],
];

describe('normalizeCommands', () => {
  it('the command list is the contract (names)', () => {
    expect(ours().map((c) => c['name'])).toEqual([
      'upscale',
      'extend-song',
      'extend-video',
      'training-photos',
      'tasks',
      'settings',
      'privacy',
      'Remove result',
      'Upscale image',
    ]);
  });

  it('registered bodies carry the localizations of every language', () => {
    for (const c of ours()) {
      // A message command (type 3) has a name and no description.
      const key = c['type'] === 3 ? 'name_localizations' : 'description_localizations';
      expect(Object.keys(asObject(c[key])), String(c['name'])).toEqual([
        'de',
        'fr',
        'es-ES',
        'es-419',
        'pt-BR',
        'ja',
      ]);
    }
  });

  it('read without localizations, the same commands are a difference (the sync must ask for them)', () => {
    const code = ours();
    const plain = asDiscordReturns(code, {
      omitRequiredFalse: true,
      contexts: null,
      dropEmptyOptions: true,
      reorder: false,
      withoutLocalizations: true,
    });
    expect(normalizeCommands(plain, code)).not.toBe(normalizeCommands(code));
  });

  it('an empty localization map is the same as none', () => {
    const bare = [{ name: 'ping', description: 'Ping', type: 1 }];
    const echoed = [{ ...bare[0], name_localizations: {}, description_localizations: {} }];
    expect(normalizeCommands(echoed, bare)).toBe(normalizeCommands(bare));
  });

  it.each(STYLES)('what Discord returns for our commands equals them (%s)', (_name, style) => {
    const code = ours();
    const discord = asDiscordReturns(code, style);
    // The simulation really adds things: the raw JSON differs.
    expect(JSON.stringify(discord)).not.toBe(JSON.stringify(code));
    expect(normalizeCommands(discord, code)).toBe(normalizeCommands(code));
  });

  const changes: [string, (cmds: JsonObject[]) => void][] = [
    ['command description', (c) => void (byName(c, 'upscale')['description'] = 'Upscale an image!')],
    [
      'option description',
      (c) => void (byName(asArray(byName(c, 'upscale')['options']), 'detail')['description'] = 'More detail'),
    ],
    [
      'option added',
      (c) =>
        void asArray(byName(c, 'tasks')['options']).push({
          type: 5,
          name: 'all',
          description: 'Everyone',
          required: false,
        }),
    ],
    ['option removed', (c) => void asArray(byName(c, 'extend-video')['options']).pop()],
    [
      'choice changed',
      (c) => {
        const choices = asArray(
          byName(asArray(byName(c, 'extend-video')['options']), 'aspect_ratio')['choices'],
        );
        choices[0] = { name: '2:1', value: '2:1' };
      },
    ],
    [
      'min_value changed',
      (c) => void (byName(asArray(byName(c, 'upscale')['options']), 'resemblance')['min_value'] = 0),
    ],
    [
      'required flipped',
      (c) => void (byName(asArray(byName(c, 'upscale')['options']), 'detail')['required'] = true),
    ],
    [
      'autocomplete turned off',
      (c) => void delete byName(asArray(byName(c, 'extend-song')['options']), 'song_id')['autocomplete'],
    ],
    ['options reordered', (c) => void asArray(byName(c, 'upscale')['options']).reverse()],
    [
      'subcommand option changed',
      (c) => {
        const start = byName(asArray(byName(c, 'training-photos')['options']), 'start');
        byName(asArray(start['options']), 'age')['max_value'] = 99;
      },
    ],
    [
      'a description localization changed',
      (c) => void (asObject(byName(c, 'tasks')['description_localizations'])['de'] = 'Alt'),
    ],
    [
      'a choice localization removed',
      (c) => {
        const start = byName(asArray(byName(c, 'training-photos')['options']), 'start');
        const gender = byName(asArray(start['options']), 'gender');
        delete asObject(asArray(gender['choices'])[0])['name_localizations'];
      },
    ],
    ['command removed', (c) => void c.pop()],
    ['command added', (c) => void c.push({ name: 'ping', description: 'Ping', type: 1, options: [] })],
  ];

  it.each(changes)('a real change is a difference: %s', (_name, change) => {
    const code = ours();
    const registeredBefore = ours();
    change(registeredBefore);
    for (const [, style] of STYLES) {
      const discord = asDiscordReturns(registeredBefore, style);
      expect(normalizeCommands(discord, code)).not.toBe(normalizeCommands(code));
    }
  });

  it('contexts / integration_types matter when the code declares them', () => {
    const code = ours().map((c) => ({ ...c, contexts: [0], integration_types: [0] }));
    const same = asDiscordReturns(code, {
      omitRequiredFalse: true,
      contexts: [0],
      dropEmptyOptions: true,
      reorder: false,
    });
    expect(normalizeCommands(same, code)).toBe(normalizeCommands(code));
    const wider = asDiscordReturns(code, {
      omitRequiredFalse: true,
      contexts: [0, 1, 2],
      forceContexts: true,
      dropEmptyOptions: true,
      reorder: false,
    });
    expect(normalizeCommands(wider, code)).not.toBe(normalizeCommands(code));
  });

  it('regression: one command declaring contexts does not make the others’ default contexts a difference', () => {
    // A command that leaves contexts to Discord (reported as [0, 1, 2]) beside ones that declare them.
    const code = ours();
    delete byName(code, 'tasks')['contexts'];
    expect(byName(code, 'settings')['contexts']).toEqual([0]);
    const discord = code.map((c) => ({ ...c, contexts: c['contexts'] ?? [0, 1, 2] }));
    expect(normalizeCommands(discord, code)).toBe(normalizeCommands(code));
    const widened = code.map((c) => ({ ...c, contexts: [0, 1, 2] }));
    expect(normalizeCommands(widened, code)).not.toBe(normalizeCommands(code));
  });

  it('a non-default permission or nsfw on Discord’s side is a difference', () => {
    const code = ours();
    const style: DiscordStyle = {
      omitRequiredFalse: true,
      contexts: null,
      dropEmptyOptions: true,
      reorder: false,
    };
    const perms = asDiscordReturns(code, style);
    asObject(perms[0])['default_member_permissions'] = '8';
    expect(normalizeCommands(perms, code)).not.toBe(normalizeCommands(code));
    const nsfw = asDiscordReturns(code, style);
    asObject(nsfw[1])['nsfw'] = true;
    expect(normalizeCommands(nsfw, code)).not.toBe(normalizeCommands(code));
  });
});

// ---------------------------------------------------------------------------
// syncCommands with a stub REST
// ---------------------------------------------------------------------------

interface RestCall {
  method: 'get' | 'put';
  route: string;
  query?: string;
  body?: unknown;
}
const WITH_LOCALIZATIONS = 'with_localizations=true';

function stubRest(held: unknown) {
  const calls: RestCall[] = [];
  const rest = {
    get: async (route: `/${string}`, options?: { query?: URLSearchParams }): Promise<unknown> => {
      calls.push({ method: 'get', route, query: options?.query?.toString() ?? '' });
      return held;
    },
    put: async (route: `/${string}`, options?: { body?: unknown }): Promise<unknown> => {
      calls.push({ method: 'put', route, body: options?.body });
      return options?.body;
    },
  };
  return { rest, calls };
}

const code = (): RESTPostAPIApplicationCommandsJSONBody[] => commandData();
const UNCHANGED_STYLE: DiscordStyle = {
  omitRequiredFalse: true,
  contexts: null,
  dropEmptyOptions: true,
  reorder: true,
};

describe('syncCommands', () => {
  it('unchanged (global): one GET, no PUT', async () => {
    const { rest, calls } = stubRest(asDiscordReturns(ours(), UNCHANGED_STYLE));
    const r = await syncCommands({ rest, applicationId: APP_ID, commands: code(), logger: silent });
    expect(r).toEqual({ action: 'unchanged', scope: 'global', count: 9 });
    expect(calls).toEqual([
      { method: 'get', route: Routes.applicationCommands(APP_ID), query: WITH_LOCALIZATIONS },
    ]);
  });

  it('unchanged (guild): one GET on the guild route, no PUT', async () => {
    const { rest, calls } = stubRest(asDiscordReturns(ours(), { ...UNCHANGED_STYLE, guildId: GUILD_ID }));
    const r = await syncCommands({
      rest,
      applicationId: APP_ID,
      guildId: GUILD_ID,
      commands: code(),
      logger: silent,
    });
    expect(r).toEqual({ action: 'unchanged', scope: 'guild', count: 9 });
    expect(calls).toEqual([
      { method: 'get', route: Routes.applicationGuildCommands(APP_ID, GUILD_ID), query: WITH_LOCALIZATIONS },
    ]);
  });

  it('a new application (nothing registered): GET then one PUT with the full list', async () => {
    const { rest, calls } = stubRest([]);
    const commands = code();
    const r = await syncCommands({ rest, applicationId: APP_ID, commands, logger: silent });
    expect(r).toEqual({ action: 'overwritten', scope: 'global', count: 9 });
    expect(calls.map((c) => c.method)).toEqual(['get', 'put']);
    expect(calls[1]?.route).toBe(Routes.applicationCommands(APP_ID));
    expect(calls[1]?.body).toEqual(commands);
  });

  it('changed (guild): GET then one PUT of the full list on the guild route', async () => {
    const before = ours();
    byName(before, 'upscale')['description'] = 'old description';
    const { rest, calls } = stubRest(asDiscordReturns(before, { ...UNCHANGED_STYLE, guildId: GUILD_ID }));
    const commands = code();
    const r = await syncCommands({
      rest,
      applicationId: APP_ID,
      guildId: GUILD_ID,
      commands,
      logger: silent,
    });
    expect(r.action).toBe('overwritten');
    expect(r.scope).toBe('guild');
    const route = Routes.applicationGuildCommands(APP_ID, GUILD_ID);
    expect(calls).toEqual([
      { method: 'get', route, query: WITH_LOCALIZATIONS },
      { method: 'put', route, body: commands },
    ]);
  });

  it('an unexpected GET answer is treated as nothing registered', async () => {
    const { rest, calls } = stubRest({ message: 'odd' });
    const r = await syncCommands({ rest, applicationId: APP_ID, commands: code(), logger: silent });
    expect(r.action).toBe('overwritten');
    expect(calls.filter((c) => c.method === 'put')).toHaveLength(1);
  });

  it('a failing GET propagates and nothing is overwritten', async () => {
    const calls: RestCall[] = [];
    const rest = {
      get: async (route: `/${string}`): Promise<unknown> => {
        calls.push({ method: 'get', route });
        throw new Error('401: Unauthorized');
      },
      put: async (route: `/${string}`): Promise<unknown> => {
        calls.push({ method: 'put', route });
        return [];
      },
    };
    await expect(
      syncCommands({ rest, applicationId: APP_ID, commands: code(), logger: silent }),
    ).rejects.toThrow(/Unauthorized/);
    expect(calls.map((c) => c.method)).toEqual(['get']);
  });
});

describe('registration scopes (USER_INSTALL)', () => {
  const JOBS = ['upscale', 'extend-song', 'extend-video', 'training-photos', 'Upscale image'];

  /** A REST stub holding each route's commands as Discord would report them. */
  function scopedRest() {
    const held = new Map<string, JsonObject[]>();
    const calls: RestCall[] = [];
    const rest = {
      get: async (route: `/${string}`): Promise<unknown> => {
        calls.push({ method: 'get', route });
        return held.get(route) ?? [];
      },
      put: async (route: `/${string}`, options?: { body?: unknown }): Promise<unknown> => {
        calls.push({ method: 'put', route, body: options?.body });
        const body = JSON.parse(JSON.stringify(options?.body ?? [])) as JsonObject[];
        held.set(route, asDiscordReturns(body, UNCHANGED_STYLE));
        return options?.body;
      },
    };
    return { rest, calls, held };
  }

  it('off (default): every command states integration_types [0], all in the one scope', () => {
    const plan = registrationPlan({ userInstall: false });
    expect(plan).toHaveLength(1);
    expect(plan[0]?.guildId).toBeUndefined();
    for (const c of plan[0]?.commands ?? []) expect(c.integration_types, c.name).toEqual([0]);
    expect(plan[0]?.commands).toHaveLength(9);
  });

  it('on with a server: the user-installable ones globally ([0, 1], jobs in [0, 1, 2]), the rest in the server', () => {
    const [global, guild] = registrationPlan({ userInstall: true, guildId: GUILD_ID });
    expect(global?.guildId).toBeUndefined();
    expect(global?.commands.map((c) => c.name).sort()).toEqual([...JOBS, 'privacy', 'tasks'].sort());
    for (const c of global?.commands ?? []) {
      expect(c.integration_types, c.name).toEqual([0, 1]);
      expect(c.contexts, c.name).toEqual(JOBS.includes(c.name) ? [0, 1, 2] : [0, 1]);
    }
    expect(guild?.guildId).toBe(GUILD_ID);
    expect(guild?.commands.map((c) => c.name).sort()).toEqual(['Remove result', 'settings']);
    for (const c of guild?.commands ?? []) {
      expect(c.integration_types).toEqual([0]);
      expect(c.contexts).toEqual([0]);
    }
  });

  it('each scope compared on its own: one PUT per scope that differs, none on a restart, and off again (npm run register) empties the global one', async () => {
    const { rest, calls, held } = scopedRest();
    const sync = (userInstall: boolean) =>
      syncCommandScopes({
        rest,
        applicationId: APP_ID,
        scopes: registrationPlan({ userInstall, guildId: GUILD_ID, everyScope: true }),
        logger: silent,
      });
    const globalRoute = Routes.applicationCommands(APP_ID);
    const guildRoute = Routes.applicationGuildCommands(APP_ID, GUILD_ID);
    expect((await sync(true)).map((r) => [r.scope, r.action, r.count])).toEqual([
      ['global', 'overwritten', 7],
      ['guild', 'overwritten', 2],
    ]);
    calls.length = 0;
    expect((await sync(true)).map((r) => r.action)).toEqual(['unchanged', 'unchanged']);
    expect(calls.map((c) => c.method)).toEqual(['get', 'get']);
    calls.length = 0;
    // Off again: a start checks the server's scope only (one GET); `npm run register` checks both.
    const start = await syncCommandScopes({
      rest,
      applicationId: APP_ID,
      scopes: registrationPlan({ userInstall: false, guildId: GUILD_ID }),
      logger: silent,
    });
    expect(start.map((r) => [r.scope, r.action, r.count])).toEqual([['guild', 'overwritten', 9]]);
    expect(calls.filter((c) => c.method === 'get').map((c) => c.route)).toEqual([guildRoute]);
    expect((await sync(false)).map((r) => [r.scope, r.action, r.count])).toEqual([
      ['global', 'overwritten', 0],
      ['guild', 'unchanged', 9],
    ]);
    expect(held.get(globalRoute)).toEqual([]);
    expect(held.get(guildRoute)?.map((c) => c['integration_types'])).toEqual(Array(9).fill([0]));
  });
});
