import {
  ApplicationIntegrationType,
  InteractionContextType,
  PermissionFlagsBits,
} from 'discord-api-types/v10';
import { hasPermission, type BotInteraction } from '../services/discord/interactions/interaction.js';
import type { JobRecord } from '../services/store/types.js';
import { refusalMessage } from '../services/community/community.js';
import { UserError, type BotContext, type MemberText } from './types.js';

/**
 * Reusable checks run before a handler acts (Sapphire's preconditions). Authority
 * is always checked where the object lives: "Manage Server" means Manage Server in
 * the *job's own* server, so a manager of another server is a stranger to it.
 */

/** The member ran the job, or has Manage Server in the job's server (and acts from there). */
export function mayActOnJob(
  i: Pick<BotInteraction, 'user' | 'guildId' | 'memberPermissions'>,
  job: JobRecord,
): boolean {
  if (job.userId === i.user.id) return true;
  const jobGuild = job.message.guildId;
  return (
    jobGuild !== undefined &&
    i.guildId === jobGuild &&
    hasPermission(i.memberPermissions, PermissionFlagsBits.ManageGuild)
  );
}

/** Throws the ephemeral explanation when the member may not act on the job (nothing is shown or started). */
export function requireJobAuthority(i: BotInteraction, job: JobRecord): void {
  if (mayActOnJob(i, job)) return;
  throw new UserError('not_owner', (tr) => tr.t('refusal.buttons_not_owner', { user: `<@${job.userId}>` }));
}

/** Commands and buttons that start paid work run in a server only (fair use and credits are a server's). */
export function requireGuild(
  i: BotInteraction,
  refusal: MemberText = (tr) => tr.t('refusal.guild_only'),
): string {
  if (i.guildId === null) throw new UserError('guild_only', refusal);
  return i.guildId;
}

/** Manage Server in this server (checked again: a server can change Discord's own visibility rules). */
export function requireManageServer(i: BotInteraction, guildOnly?: MemberText): string {
  const guildId = requireGuild(i, guildOnly);
  if (!hasPermission(i.memberPermissions, PermissionFlagsBits.ManageGuild)) {
    throw new UserError('not_manager', (tr) => tr.t('settings.not_manager'));
  }
  return guildId;
}

/**
 * Where a job started here is a **personal job** (design: "Anywhere: user installs"): a DM
 * or group DM, or a server whose `authorizing_integration_owners` shows no install of the bot
 * by that server (the member's own install brought the command). In a server that installed
 * the bot every job is a server job, whatever the member installed.
 */
export function isPersonalPlace(i: Pick<BotInteraction, 'raw' | 'guildId'>): boolean {
  if (i.guildId === null) return true;
  const context = i.raw.context;
  if (context === InteractionContextType.BotDM || context === InteractionContextType.PrivateChannel)
    return true;
  const owners = i.raw.authorizing_integration_owners;
  // A payload without the map (older API versions) can only come from the server's own install.
  if (owners === undefined || owners === null) return false;
  return owners[ApplicationIntegrationType.GuildInstall] !== i.guildId;
}

/**
 * The operator allows jobs here (ALLOWED_GUILD_IDS): checked before a job command, next step
 * or job form does anything (no download, no service read). Every submission is checked again
 * where it is reserved (CommunityService.admit), so a path that skips this still cannot start a job.
 */
export function requireJobsAllowed(i: BotInteraction, ctx: Pick<BotContext, 'community'>): void {
  if (ctx.community.allowsJobsIn(i.guildId)) return;
  throw new UserError('server_not_allowed', refusalMessage({ kind: 'not_allowed' }));
}
