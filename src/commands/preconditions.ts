import { PermissionFlagsBits } from 'discord-api-types/v10';
import { hasPermission, type BotInteraction } from '../services/discord/interactions/interaction.js';
import type { JobRecord } from '../services/store/types.js';
import { UserError } from './types.js';

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
  throw new UserError(
    'not_owner',
    `These buttons belong to <@${job.userId}>, who ran this job (or members with Manage Server in the job's server). Run the command yourself to start your own.`,
  );
}

/** Commands and buttons that start paid work run in a server only (fair use and credits are a server's). */
export function requireGuild(i: BotInteraction, what = 'This'): string {
  if (i.guildId === null) {
    throw new UserError('guild_only', `${what} works in a server only: use it in a server the bot is in.`);
  }
  return i.guildId;
}

/** Manage Server in this server (checked again: a server can change Discord's own visibility rules). */
export function requireManageServer(i: BotInteraction, what: string): string {
  const guildId = requireGuild(i, what);
  if (!hasPermission(i.memberPermissions, PermissionFlagsBits.ManageGuild)) {
    throw new UserError(
      'not_manager',
      'Only members with **Manage Server** can change or view these settings.',
    );
  }
  return guildId;
}
