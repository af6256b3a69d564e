import type { JsonObject } from './json.js';
import type { FakeState } from './state.js';

/**
 * Which registered command Discord offers a member where they are, the way the client
 * decides before any interaction exists: a guild command only in its guild; a global one
 * where its `contexts` (or, without them, `dm_permission`) and `integration_types` allow.
 * Which installs authorize the app where the member is (`installs`): the server's
 * (GUILD_INSTALL, 0) where it installed the app and in a DM with the bot, the member's own
 * (USER_INSTALL, 1) when they installed it; a command is offered only when one of its
 * `integration_types` is among them, and a guild command only where the server installed
 * the app. In a guild, `default_member_permissions` hides a
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
  /** The installs that authorize the app here (0 GUILD_INSTALL, 1 USER_INSTALL). */
  installs: readonly number[];
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
  const serverInstalled = where.installs.includes(0);
  const local = where.guildId !== null && serverInstalled ? inGuild(where.guildId) : undefined;
  if (local) {
    checkMemberPermissions(s, local, name, where);
    return local;
  }
  if (!global) return refuse(name, where, `it is registered only in guild(s) ${guildScoped.join(', ')}`);
  const integrations = Array.isArray(global['integration_types']) ? global['integration_types'] : [0];
  if (!integrations.some((t) => typeof t === 'number' && where.installs.includes(t)))
    return refuse(
      name,
      where,
      `its integration_types [${integrations.join(', ')}] include none of the installs here [${where.installs.join(', ')}]`,
    );
  const contexts = global['contexts'];
  if (Array.isArray(contexts)) {
    if (!contexts.includes(where.context))
      return refuse(name, where, `its contexts are [${contexts.join(', ')}]`);
  } else if (where.context === InteractionContext.BotDm && global['dm_permission'] === false) {
    return refuse(name, where, 'dm_permission is false');
  } else if (where.context === InteractionContext.PrivateChannel) {
    return refuse(name, where, 'a guild-installed app is not offered in private channels');
  }
  // A server's command permissions govern what its own install offers.
  if (serverInstalled) checkMemberPermissions(s, global, name, where);
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
