import { err, fieldError } from '../errors.js';
import { isRecord, toJson, type JsonObject } from '../json.js';
import { stripNulls } from '../messages.js';
import { bodyObject, type HandlerContext, type HandlerResult, type Router } from '../router.js';
import type { FakeState } from '../state.js';

/**
 * Commands family: global and guild application commands (GET/PUT/POST/PATCH/DELETE),
 * stored with Discord's defaults, stable ids and versions that change only with the definition.
 */

function countCommandCall(s: FakeState, method: string): void {
  s.commandCalls[method] = (s.commandCalls[method] ?? 0) + 1;
}

function commandList(s: FakeState, ctx: HandlerContext): JsonObject[] {
  countCommandCall(s, ctx.method);
  if (ctx.params['application_id'] !== s.applicationId) throw err.missingAccess();
  const guildId = ctx.params['guild_id'];
  if (guildId === undefined) return s.commands.global;
  if (!s.guilds.has(guildId)) throw err.missingAccess(); // a guild the app is not in
  let list = s.commands.guilds.get(guildId);
  if (!list) {
    list = [];
    s.commands.guilds.set(guildId, list);
  }
  return list;
}

function findCommand(s: FakeState, ctx: HandlerContext): JsonObject {
  const cmd = commandList(s, ctx).find((c) => c['id'] === ctx.params['command_id']);
  if (!cmd) throw err.unknownCommand();
  return cmd;
}

/** Shape a stored command like Discord returns it. */
function commandOut(cmd: JsonObject, withLocalizations: boolean): JsonObject {
  const out = { ...cmd };
  if (!withLocalizations) {
    delete out['name_localizations'];
    delete out['description_localizations'];
  }
  return out;
}

/** Validates and normalizes one command definition; throws 50035 on rules the spec cannot express. */
function normalizeCommand(
  s: FakeState,
  input: JsonObject,
  guildId: string | undefined,
  existing: JsonObject | undefined,
  path: string[],
): JsonObject {
  const type = typeof input['type'] === 'number' ? input['type'] : 1;
  const name = typeof input['name'] === 'string' ? input['name'] : '';
  if (
    type === 1 &&
    (!/^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u.test(name) || name !== name.toLowerCase())
  ) {
    throw err.invalidForm(
      fieldError([...path, 'name'], 'APPLICATION_COMMAND_INVALID_NAME', `Command name is invalid`),
    );
  }
  const description = typeof input['description'] === 'string' ? input['description'] : '';
  if (type === 1 && description.length === 0) {
    throw err.invalidForm(
      fieldError([...path, 'description'], 'BASE_TYPE_REQUIRED', 'This field is required'),
    );
  }
  // USER (2) and MESSAGE (3) commands: any case and spaces in the name, no description, no options.
  if (type === 2 || type === 3) {
    if (name.length < 1 || name.length > 32)
      throw err.invalidForm(
        fieldError([...path, 'name'], 'BASE_TYPE_BAD_LENGTH', 'Must be between 1 and 32 in length.'),
      );
    if (description !== '')
      throw err.invalidForm(
        fieldError(
          [...path, 'description'],
          'APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION_INVALID',
          'Context menu commands cannot have description',
        ),
      );
    if (Array.isArray(input['options']) && input['options'].length > 0)
      throw err.invalidForm(
        fieldError(
          [...path, 'options'],
          'APPLICATION_COMMAND_CONTEXT_MENU_OPTIONS_INVALID',
          'Context menu commands cannot have options',
        ),
      );
  }
  const perms = input['default_member_permissions'];
  const definition: JsonObject = {
    type,
    name,
    description: type === 1 ? description : '',
    default_member_permissions: perms === null || perms === undefined ? null : String(perms),
    nsfw: input['nsfw'] === true,
    contexts: Array.isArray(input['contexts']) ? input['contexts'] : null,
    integration_types: Array.isArray(input['integration_types']) ? input['integration_types'] : [0],
  };
  if (guildId === undefined) definition['dm_permission'] = input['dm_permission'] !== false;
  if (Array.isArray(input['options']) && input['options'].length > 0)
    definition['options'] = stripNulls(input['options']);
  if (isRecord(input['name_localizations']))
    definition['name_localizations'] = input['name_localizations'] as JsonObject;
  else definition['name_localizations'] = null;
  if (isRecord(input['description_localizations']))
    definition['description_localizations'] = input['description_localizations'] as JsonObject;
  else definition['description_localizations'] = null;
  if (typeof input['handler'] === 'number') definition['handler'] = input['handler'];

  const comparable = (c: JsonObject): string => {
    const copy: JsonObject = { ...c };
    for (const k of ['id', 'application_id', 'version', 'guild_id']) delete copy[k];
    return JSON.stringify(copy, Object.keys(copy).sort());
  };
  const changed = !existing || comparable(existing) !== comparable(definition);
  const out: JsonObject = {
    id: typeof existing?.['id'] === 'string' ? existing['id'] : s.snowflakes.next(),
    application_id: s.applicationId,
    version:
      !changed && typeof existing?.['version'] === 'string' ? existing['version'] : s.snowflakes.next(),
    ...definition,
  };
  if (guildId !== undefined) out['guild_id'] = guildId;
  return out;
}

function bulkOverwrite(s: FakeState, ctx: HandlerContext): HandlerResult {
  const list = commandList(s, ctx);
  const body = ctx.body === null ? [] : ctx.body;
  if (!Array.isArray(body))
    throw err.invalidForm(fieldError([], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType'));
  const guildId = ctx.params['guild_id'];
  const seen = new Set<string>();
  const next: JsonObject[] = body.map((raw, i) => {
    if (!isRecord(raw))
      throw err.invalidForm(
        fieldError([String(i)], 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType'),
      );
    const input = toJson(raw) as JsonObject;
    const key = `${String(input['type'] ?? 1)}:${String(input['name'])}`;
    if (seen.has(key)) {
      throw err.invalidForm(
        fieldError(
          [String(i), 'name'],
          'APPLICATION_COMMANDS_DUPLICATE_NAME',
          `Application command names must be unique`,
        ),
      );
    }
    seen.add(key);
    const existing = list.find(
      (c) => c['name'] === input['name'] && (c['type'] ?? 1) === (input['type'] ?? 1),
    );
    return normalizeCommand(s, input, guildId, existing, [String(i)]);
  });
  list.splice(0, list.length, ...next);
  return { status: 200, body: list.map((c) => commandOut(c, true)) };
}

function createCommand(s: FakeState, ctx: HandlerContext): HandlerResult {
  const list = commandList(s, ctx);
  const input = bodyObject(ctx);
  const existing = list.find((c) => c['name'] === input['name'] && (c['type'] ?? 1) === (input['type'] ?? 1));
  const cmd = normalizeCommand(s, input, ctx.params['guild_id'], existing, []);
  if (existing) list.splice(list.indexOf(existing), 1, cmd);
  else list.push(cmd);
  return { status: existing ? 200 : 201, body: commandOut(cmd, true) };
}

function patchCommand(s: FakeState, ctx: HandlerContext): HandlerResult {
  const list = commandList(s, ctx);
  const cmd = list.find((c) => c['id'] === ctx.params['command_id']);
  if (!cmd) throw err.unknownCommand();
  const patch = bodyObject(ctx);
  const merged = normalizeCommand(s, { ...cmd, ...patch }, ctx.params['guild_id'], cmd, []);
  list.splice(list.indexOf(cmd), 1, merged);
  return { status: 200, body: commandOut(merged, true) };
}

export function registerCommandRoutes(r: Router, s: FakeState): void {
  for (const scope of ['global', 'guild'] as const) {
    const base =
      scope === 'global'
        ? '/applications/{application_id}/commands'
        : '/applications/{application_id}/guilds/{guild_id}/commands';
    r.add('GET', base, 'bot', (ctx) => {
      const list = commandList(s, ctx);
      const withLoc = ctx.query.get('with_localizations') === 'true';
      return { status: 200, body: list.map((c) => commandOut(c, withLoc)) };
    });
    r.add('PUT', base, 'bot', (ctx) => bulkOverwrite(s, ctx));
    r.add('POST', base, 'bot', (ctx) => createCommand(s, ctx));
    r.add('GET', `${base}/{command_id}`, 'bot', (ctx) => ({
      status: 200,
      body: commandOut(findCommand(s, ctx), true),
    }));
    r.add('PATCH', `${base}/{command_id}`, 'bot', (ctx) => patchCommand(s, ctx));
    r.add('DELETE', `${base}/{command_id}`, 'bot', (ctx) => {
      const list = commandList(s, ctx);
      const cmd = findCommand(s, ctx);
      list.splice(list.indexOf(cmd), 1);
      return { status: 204 };
    });
  }
}
