import type { JsonObject } from './json.js';
import type { FakeState } from './state.js';

/**
 * Which registered command Discord offers a member where they are, the way the client
 * decides before any interaction exists: a guild command only in its guild; a global one
 * where its `contexts` (or, without them, `dm_permission`) and `integration_types` allow.
 * The fake's application is installed to guilds (GUILD_INSTALL) only, so a command that is
 * user-installable only is never offered. In a guild, `default_member_permissions` hides a
 * command from members lacking them (administrators and the owner always see it; "0" means
 * administrators only) unless a server admin allowed or denied that member the command
 * (Server Settings → Integrations: `setCommandPermission`).
 */

const ADMINISTRATOR = 1n << 3n;

export const InteractionContext = { Guild: 0, BotDm: 1, PrivateChannel: 2 } as const;

export interface Where {
  guildId: string | null;
  context: number;
  userId: string;
}

const contextName = (c: number): string =>
  c === InteractionContext.Guild
    ? 'a guild'
    : c === InteractionContext.BotDm
      ? 'a DM with the bot'
      : 'a private channel';

const same = (c: JsonObject, name: string, type: number): boolean =>
  c['name'] === name && (typeof c['type'] === 'number' ? c['type'] : 1) === type;

function refuse(name: string, where: Where, why: string): never {
  throw new Error(
    `fake-discord: Discord does not offer command "${name}" to user ${where.userId} in ${contextName(where.context)}` +
      `${where.guildId ? ` (guild ${where.guildId})` : ''}: ${why}`,
  );
}

/**
 * The command of that name and type a member is offered where they are, or undefined when no
 * such command is registered anywhere (tests may send commands the fake never saw). Throws
 * when one is registered but Discord would not offer it there.
 */
export function offeredCommand(
  s: FakeState,
  name: string,
  type: number,
  where: Where,
): JsonObject | undefined {
  const inGuild = (id: string): JsonObject | undefined =>
    (s.commands.guilds.get(id) ?? []).find((c) => same(c, name, type));
  const global = s.commands.global.find((c) => same(c, name, type));
  const guildScoped = [...s.commands.guilds.keys()].filter((id) => inGuild(id) !== undefined);
  if (!global && guildScoped.length === 0) return undefined;
  const local = where.guildId !== null ? inGuild(where.guildId) : undefined;
  if (local) {
    checkMemberPermissions(s, local, name, where);
    return local;
  }
  if (!global) return refuse(name, where, `it is registered only in guild(s) ${guildScoped.join(', ')}`);
  const integrations = Array.isArray(global['integration_types']) ? global['integration_types'] : [0];
  if (!integrations.includes(0))
    return refuse(name, where, 'its integration_types do not include GUILD_INSTALL (0)');
  const contexts = global['contexts'];
  if (Array.isArray(contexts)) {
    if (!contexts.includes(where.context))
      return refuse(name, where, `its contexts are [${contexts.join(', ')}]`);
  } else if (where.context === InteractionContext.BotDm && global['dm_permission'] === false) {
    return refuse(name, where, 'dm_permission is false');
  } else if (where.context === InteractionContext.PrivateChannel) {
    return refuse(name, where, 'a guild-installed app is not offered in private channels');
  }
  checkMemberPermissions(s, global, name, where);
  return global;
}

function checkMemberPermissions(s: FakeState, cmd: JsonObject, name: string, where: Where): void {
  if (where.guildId === null) return; // DMs have no member permissions
  const override = s.commandPermissions.get(`${where.guildId}:${String(cmd['id'])}`)?.get(where.userId);
  if (override !== undefined) {
    if (!override) refuse(name, where, 'a server admin denied this member the command');
    return;
  }
  const required = cmd['default_member_permissions'];
  if (typeof required !== 'string') return;
  const guild = s.guild(where.guildId);
  if (guild.ownerId === where.userId) return;
  const have = BigInt(s.member(where.guildId, where.userId)?.permissions ?? '0');
  if ((have & ADMINISTRATOR) !== 0n) return;
  const need = BigInt(required);
  if (need !== 0n && (have & need) === need) return;
  refuse(name, where, `the member lacks default_member_permissions ${required}`);
}

/** A server admin's per-member override of a command in a guild (true: offered, false: hidden). */
export function setCommandPermission(
  s: FakeState,
  guildId: string,
  name: string,
  userId: string,
  allowed: boolean,
  type: number,
): void {
  const cmd = findCommand(s, guildId, name, type);
  if (!cmd) throw new Error(`fake-discord: no command "${name}" of type ${type} is registered`);
  const key = `${guildId}:${String(cmd['id'])}`;
  const perUser = s.commandPermissions.get(key) ?? new Map<string, boolean>();
  s.commandPermissions.set(key, perUser);
  perUser.set(userId, allowed);
}

/** The registered command (guild first, then global) a name and type stand for, for permission overrides. */
export function findCommand(
  s: FakeState,
  guildId: string,
  name: string,
  type: number,
): JsonObject | undefined {
  return (
    (s.commands.guilds.get(guildId) ?? []).find((c) => same(c, name, type)) ??
    s.commands.global.find((c) => same(c, name, type))
  );
}
