import { Routes, type REST } from 'discord.js';
import { z } from 'zod';
import type { MessagePayload } from '../discord/render-limits.js';

/**
 * The Discord calls behind "a thread per job", with the bot token: start a
 * public thread from the job's reply, post the live message in it. A thread is
 * a channel of its own, so its edits get their own per-channel budget.
 */
export interface ThreadApi {
  startThread(channelId: string, messageId: string, name: string): Promise<{ id: string }>;
  postMessage(channelId: string, body: MessagePayload): Promise<{ id: string }>;
}

const idOnly = z.object({ id: z.string().regex(/^\d{1,20}$/) });

export function createThreadApi(rest: Pick<REST, 'post'>): ThreadApi {
  return {
    async startThread(channelId, messageId, name) {
      const res = await rest.post(Routes.threads(channelId, messageId), {
        body: { name, auto_archive_duration: 1440 },
      });
      return idOnly.parse(res);
    },
    async postMessage(channelId, body) {
      return idOnly.parse(await rest.post(Routes.channelMessages(channelId), { body }));
    },
  };
}
