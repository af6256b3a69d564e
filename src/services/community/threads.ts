import { DiscordAPIError, type REST } from '@discordjs/rest';
import { Routes } from 'discord-api-types/v10';
import { z } from 'zod';
import { oncePerJob } from '../discord/message-nonce.js';
import type { MessagePayload } from '../discord/render/limits.js';

/**
 * The Discord calls behind "a thread per job", with the bot token: start a
 * public thread from the job's reply, post the live message in it. A thread is
 * a channel of its own, so its edits get their own per-channel budget.
 */
export interface ThreadApi {
  startThread(channelId: string, messageId: string, name: string): Promise<{ id: string }>;
  /** The job's live message in its thread, created once however often it is sent. */
  postMessage(channelId: string, jobId: string, body: MessagePayload): Promise<{ id: string }>;
}

const idOnly = z.object({ id: z.string().regex(/^\d{1,20}$/) });
/** "A thread has already been created for this message". */
const THREAD_ALREADY_CREATED = 160004;

export function createThreadApi(rest: Pick<REST, 'post'>): ThreadApi {
  return {
    async startThread(channelId, messageId, name) {
      try {
        const res = await rest.post(Routes.threads(channelId, messageId), {
          body: { name, auto_archive_duration: 1440 },
        });
        return idOnly.parse(res);
      } catch (err) {
        // Only the job's own flow starts a thread from its reply, so a thread already there is
        // ours: REST retried a 5xx or a timeout whose request Discord had taken. A thread
        // started from a message has that message's id.
        if (err instanceof DiscordAPIError && err.code === THREAD_ALREADY_CREATED) return { id: messageId };
        throw err;
      }
    },
    async postMessage(channelId, jobId, body) {
      return idOnly.parse(
        await rest.post(Routes.channelMessages(channelId), {
          body: { ...body, ...oncePerJob('thread', jobId) },
        }),
      );
    },
  };
}
