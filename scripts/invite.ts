/**
 * `npm run invite`: prints the URL that adds the bot to a server, with the
 * scopes and exactly the permissions it uses. Needs DISCORD_APPLICATION_ID only.
 */
import { ConfigError, loadDotEnv, parseInviteConfig } from '../src/config.js';
import {
  BOT_PERMISSIONS,
  INVITE_SCOPES,
  invitePermissions,
  inviteUrl,
  userInstallUrl,
} from '../src/services/discord/registration/invite.js';

loadDotEnv();
try {
  const { applicationId, guildId, userInstall } = parseInviteConfig();
  const lines = [
    'Open this URL to add the bot to a server (you need Manage Server there):',
    '',
    `  ${inviteUrl(applicationId, guildId)}`,
    '',
    `Scopes: ${INVITE_SCOPES.join(' ')} (the bot user, and its slash commands)`,
    `Permissions: ${invitePermissions().toString()}`,
    ...BOT_PERMISSIONS.map((p) => `  - ${p.name} (${p.bit.toString()}): ${p.why}`),
    '',
    'Open this URL to install the app to your own account (use it in any server, in DMs and group DMs):',
    '',
    `  ${userInstallUrl(applicationId)}`,
    '',
    userInstall
      ? 'USER_INSTALL=true: the job commands, /tasks, /privacy and Upscale image are registered for it.'
      : 'It needs USER_INSTALL=true here, and User Install ticked in the Developer Portal (Installation → Installation Contexts).',
    '',
  ];
  process.stdout.write(lines.join('\n'));
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(
      `Cannot build the invite URL: invalid configuration\n${err.problems.map((p) => `  ${p}`).join('\n')}\n`,
    );
  } else {
    process.stderr.write(
      `Cannot build the invite URL: ${err instanceof Error ? err.message : String(err)}\n`,
    );
  }
  process.exit(1);
}
