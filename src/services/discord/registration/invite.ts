import { OAuth2Scopes, PermissionFlagsBits } from 'discord-api-types/v10';

/**
 * The permissions the bot asks for when invited, each with why. Exactly what it
 * uses: replies and result buttons come through interactions (no permission
 * needed); the rest is for edits with the bot token, threads and the gallery.
 */
export const BOT_PERMISSIONS = [
  {
    name: 'Send Messages',
    bit: PermissionFlagsBits.SendMessages,
    why: 'gallery posts and re-posted results; without it those fail (the job itself still finishes)',
  },
  {
    name: 'Embed Links',
    bit: PermissionFlagsBits.EmbedLinks,
    why: 'the embeds of waiting and running job messages (results are Components V2 cards) the bot posts or edits with its token',
  },
  {
    name: 'Attach Files',
    bit: PermissionFlagsBits.AttachFiles,
    why: 'gallery posts keep the result files as attachments; without it they are linked instead',
  },
  {
    name: 'Read Message History',
    bit: PermissionFlagsBits.ReadMessageHistory,
    why: 'editing a job message after its 15-minute interaction token expired, and starting threads from replies',
  },
  {
    name: 'Create Public Threads',
    bit: PermissionFlagsBits.CreatePublicThreads,
    why: 'a thread per job when /settings threads is on; without it jobs stay in the channel',
  },
  {
    name: 'Send Messages in Threads',
    bit: PermissionFlagsBits.SendMessagesInThreads,
    why: "the job's live message inside its thread",
  },
  {
    name: 'Manage Threads',
    bit: PermissionFlagsBits.ManageThreads,
    why: "Remove result locks the job's thread, and deletes a gallery post in a forum or media channel",
  },
] as const;

export const INVITE_SCOPES = [OAuth2Scopes.Bot, OAuth2Scopes.ApplicationsCommands] as const;

export function invitePermissions(): bigint {
  return BOT_PERMISSIONS.reduce((acc, p) => acc | p.bit, 0n);
}

/** The OAuth2 URL that adds the bot with its commands (optionally preselecting a server). */
export function inviteUrl(applicationId: string, guildId?: string): string {
  const url = new URL('https://discord.com/oauth2/authorize');
  url.searchParams.set('client_id', applicationId);
  url.searchParams.set('scope', INVITE_SCOPES.join(' '));
  url.searchParams.set('permissions', invitePermissions().toString());
  if (guildId !== undefined) {
    url.searchParams.set('guild_id', guildId);
    url.searchParams.set('disable_guild_select', 'true');
  }
  return url.toString();
}

/**
 * The OAuth2 URL that installs the app to a member's own account (USER_INSTALL): commands
 * only, no bot user and no permissions (the bot is in none of the places it is then used).
 */
export function userInstallUrl(applicationId: string): string {
  const url = new URL('https://discord.com/oauth2/authorize');
  url.searchParams.set('client_id', applicationId);
  url.searchParams.set('integration_type', '1');
  url.searchParams.set('scope', OAuth2Scopes.ApplicationsCommands);
  return url.toString();
}
