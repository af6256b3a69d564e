/**
 * Where a message the bot keeps editing is, and how it can be edited, in one shape for
 * every message (a job's live message and channel line, a training session's panel),
 * with the zod schema the stores read it back with.
 */
import { z } from 'zod';
import { optionalField } from './optional-field.js';

/** The interaction webhook that posted a message: it edits the message for ~15 min from `createdAt`. */
export const interactionRefSchema = z.object({
  applicationId: z.string(),
  token: z.string(),
  createdAt: z.number(),
  /** Set for a follow-up; absent: the interaction's `@original`. */
  messageId: optionalField(z.string()),
});

export const messageRefSchema = z.object({
  channelId: z.string(),
  guildId: optionalField(z.string()),
  /** The channel route (bot token) needs it; a message in a place the bot is not in has none. */
  messageId: optionalField(z.string()),
  interaction: optionalField(interactionRefSchema),
});

export type InteractionRef = z.output<typeof interactionRefSchema>;
export type MessageRef = z.output<typeof messageRefSchema>;

/** A message that exists where the bot can reach it with its token (a DM it sent, a gallery post). */
export interface PostedMessage {
  channelId: string;
  messageId: string;
}
