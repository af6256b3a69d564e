/** Numbers and names of Discord's API the fake's modules share. */

export const API_PREFIX = '/api/v10';

/** A permission bitfield (as Discord sends it: a decimal string) from bit numbers. */
export const permissionBits = (...bits: number[]): string =>
  bits.reduce((acc, b) => acc | (1n << BigInt(b)), 0n).toString();

/** VIEW_CHANNEL, SEND_MESSAGES, EMBED_LINKS, ATTACH_FILES, READ_MESSAGE_HISTORY, ADD_REACTIONS, USE_EXTERNAL_EMOJIS, USE_APPLICATION_COMMANDS, SEND_MESSAGES_IN_THREADS */
export const DEFAULT_BOT_PERMISSIONS = permissionBits(10, 11, 14, 15, 16, 6, 18, 31, 38);
export const DEFAULT_MEMBER_PERMISSIONS = permissionBits(
  10,
  11,
  14,
  15,
  16,
  6,
  18,
  31,
  38,
  0 /* CREATE_INSTANT_INVITE */,
);

/** What an app may do in a DM with its bot user: ATTACH_FILES, EMBED_LINKS, MENTION_EVERYONE, USE_EXTERNAL_EMOJIS. */
export const DM_APP_PERMISSIONS = permissionBits(15, 14, 17, 18);

export const Permission = {
  Administrator: 1n << 3n,
  ManageChannels: 1n << 4n,
  ManageThreads: 1n << 34n,
} as const;

const ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024;
/** Upload limit per file by guild boost level (Discord: 10 MiB, 50 MiB at tier 2, 100 MiB at tier 3). */
export const uploadLimitForTier = (tier: number): number =>
  tier >= 3 ? 100 * 1024 * 1024 : tier === 2 ? 50 * 1024 * 1024 : ATTACHMENT_SIZE_LIMIT;

export const HOUR = 3_600_000;

/**
 * How long a message nonce sent with `enforce_nonce` is remembered. Discord documents only
 * "the past few minutes"; three is the short end of that.
 */
export const NONCE_WINDOW_MS = 3 * 60_000;

export const InteractionType = {
  Ping: 1,
  ApplicationCommand: 2,
  MessageComponent: 3,
  Autocomplete: 4,
  ModalSubmit: 5,
} as const;

export const CallbackType = {
  Pong: 1,
  ChannelMessageWithSource: 4,
  DeferredChannelMessageWithSource: 5,
  DeferredUpdateMessage: 6,
  UpdateMessage: 7,
  ApplicationCommandAutocompleteResult: 8,
  Modal: 9,
  PremiumRequired: 10,
  LaunchActivity: 12,
} as const;
