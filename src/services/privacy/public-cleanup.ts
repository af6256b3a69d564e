import { DiscordAPIError, type REST } from '@discordjs/rest';
import { Routes } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { TakeDown } from '../community/gallery.js';
import type { ChannelBudget } from '../discord/edits/channel-budget.js';
import { isGoneOnDiscord } from '../discord/discord-transport.js';
import type { MessagePayload } from '../discord/render/limits.js';
import type { GalleryPostRef } from '../store/types.js';
import { editBody } from '../discord/render/limits.js';
import type { MessageRef } from '../shared/message-ref.js';
import type { PostedMessage, PostTrace } from './public-posts.js';

/**
 * A member's deletion, on Discord: for each job's trace (./public-posts.ts) its gallery
 * post and Re-posts are deleted, its live message and channel line replaced by a neutral
 * "removed at the member's request" (in the server's language), and its thread, named
 * after the prompt, renamed to a neutral name. Everything goes with the bot token, each
 * message edit within the channel's edit budget. A message already gone counts as done;
 * what Discord refuses is reported (and kept in the trace, so a later deletion can retry).
 * A personal job's message, and a Re-post answered in a place the bot is not in, never get
 * a bot-token request (Discord refuses it, 50001, and counts it toward its ban of IPs that
 * send 10,000 invalid requests): the message goes through the job's interaction token
 * while it is fresh; else it is reported as kept by Discord and forgotten (no retry can
 * ever reach it).
 */

export interface CleanupTally {
  galleryPosts: number;
  reposts: number;
  messages: number;
  threads: number;
  /** What could not be done (the member is told each). */
  failures: CleanupFailure[];
  /** Messages in places the bot is not in, which no one but Discord can change now (the member is told each). */
  keptByDiscord: KeptByDiscord[];
}

export interface KeptByDiscord {
  what: 'repost' | 'message';
  channelId: string;
}

/** What the job's record still knows of its message when it is deleted (its interaction token). */
export interface LiveMessage {
  interaction?: MessageRef['interaction'];
  tokenRefused: boolean;
}

export interface CleanupFailure {
  what: 'gallery' | 'repost' | 'thread' | 'message';
  channelId: string;
  /** Discord's answer (its own words and code). */
  reason: string;
}

export const emptyTally = (): CleanupTally => ({
  galleryPosts: 0,
  reposts: 0,
  messages: 0,
  threads: 0,
  failures: [],
  keptByDiscord: [],
});

export interface PublicCleanupDeps {
  rest: Pick<REST, 'get' | 'patch' | 'delete'>;
  /** The interaction webhooks' REST (no bot token): a personal job's message while its token is fresh. */
  interactionRest: Pick<REST, 'patch'>;
  /** How long an interaction token is used (the edit policy's `interactionFreshMs`). */
  interactionFreshMs: number;
  /** The channels' edit budget the job edits share. */
  budget: ChannelBudget;
  gallery: { takeDown(job: { id: string; galleryPost?: GalleryPostRef }): Promise<TakeDown> };
  /** The neutral replacement of a job's public message, in the server's language. */
  renderRemoved(locale: string | undefined): MessagePayload;
  /** A neutral thread name for the job (no member text). */
  threadName(trace: Pick<PostTrace, 'jobId' | 'operation'>): string;
  logger: Logger;
  now: () => number;
}

const threadSchema = z.object({
  thread_metadata: z.object({ archived: z.boolean().optional() }).nullish(),
});
/** Longest wait for a channel's edit budget; past it REST's own limiter takes over. */
const BUDGET_WAIT_MS = 60_000;

const why = (err: unknown): string =>
  err instanceof DiscordAPIError ? `${err.message} (${String(err.code)})` : 'Discord could not be reached';

/** Deletes the bot's messages (Re-posts), one by one; one already gone counts as deleted. */
export async function deleteMessages(
  rest: Pick<REST, 'delete'>,
  refs: readonly PostedMessage[],
): Promise<{ deleted: number; refused: { ref: PostedMessage; err: unknown }[] }> {
  const out = { deleted: 0, refused: [] as { ref: PostedMessage; err: unknown }[] };
  for (const ref of refs) {
    try {
      await rest.delete(Routes.channelMessage(ref.channelId, ref.messageId));
      out.deleted++;
    } catch (err) {
      if (isGoneOnDiscord(err)) out.deleted++;
      else out.refused.push({ ref, err });
    }
  }
  return out;
}

export class PublicCleanup {
  constructor(private readonly deps: PublicCleanupDeps) {}

  /** Takes the trace's messages down; resolves with what is left of it (undefined: nothing). */
  async clean(trace: PostTrace, tally: CleanupTally, live?: LiveMessage): Promise<PostTrace | undefined> {
    const left: PostTrace = { ...trace, reposts: [] };
    if (trace.personal === true) return this.cleanPersonal(trace, tally, live);
    const fail = (what: CleanupFailure['what'], channelId: string, err: unknown): void => {
      tally.failures.push({ what, channelId, reason: why(err) });
      this.deps.logger.warn(
        { err, jobId: trace.jobId, channelId, what },
        'privacy: could not take a message down',
      );
    };

    if (trace.gallery) {
      const { channelId, messageId, threadId } = trace.gallery;
      const down = await this.deps.gallery.takeDown({
        id: trace.jobId,
        galleryPost: { channelId, messageId, ...(threadId !== undefined ? { threadId } : {}) },
      });
      if (down.kind === 'failed') {
        tally.failures.push({ what: 'gallery', channelId: trace.gallery.channelId, reason: down.reason });
      } else {
        delete left.gallery;
        if (down.kind === 'deleted') tally.galleryPosts++;
      }
    }
    const reposts = await deleteMessages(this.deps.rest, this.reachable(trace, tally));
    tally.reposts += reposts.deleted;
    for (const { ref, err } of reposts.refused) {
      left.reposts.push(ref);
      fail('repost', ref.channelId, err);
    }

    // The thread first: an archived thread takes no message edits until it is unarchived.
    let rearchive = false;
    if (trace.thread !== undefined) {
      const thread = trace.thread;
      try {
        const info = threadSchema.parse(await this.deps.rest.get(Routes.channel(thread)));
        rearchive = info.thread_metadata?.archived === true;
        await this.deps.rest.patch(Routes.channel(thread), {
          body: { name: this.deps.threadName(trace), ...(rearchive ? { archived: false } : {}) },
        });
        delete left.thread;
        tally.threads++;
      } catch (err) {
        if (isGoneOnDiscord(err)) delete left.thread;
        else fail('thread', thread, err);
      }
    }
    const body = this.deps.renderRemoved(trace.locale);
    for (const key of ['message', 'reply'] as const) {
      const ref = trace[key];
      if (!ref) continue;
      try {
        await this.edit(ref, body);
        delete left[key];
        tally.messages++;
      } catch (err) {
        if (isGoneOnDiscord(err)) delete left[key];
        else fail('message', ref.channelId, err);
      }
    }
    if (rearchive && trace.thread !== undefined) {
      // Back as it was; failing that only leaves it open (already renamed and emptied).
      await this.deps.rest
        .patch(Routes.channel(trace.thread), { body: { archived: true } })
        .catch((err: unknown) =>
          this.deps.logger.debug({ err, threadId: trace.thread }, 'privacy: thread not archived again'),
        );
    }
    const nothingLeft =
      left.gallery === undefined &&
      left.reposts.length === 0 &&
      left.thread === undefined &&
      left.message === undefined &&
      left.reply === undefined;
    return nothingLeft ? undefined : left;
  }

  /**
   * A personal job: its message only through its interaction token, while fresh and never
   * refused; else (or refused now) it is Discord's to keep. Nothing of it is kept for a retry.
   */
  private async cleanPersonal(
    trace: PostTrace,
    tally: CleanupTally,
    live: LiveMessage | undefined,
  ): Promise<PostTrace | undefined> {
    // Re-posts of a personal job were answered where it ran, or in a server: each by its own place.
    const reposts = await deleteMessages(this.deps.rest, this.reachable(trace, tally));
    tally.reposts += reposts.deleted;
    for (const { ref, err } of reposts.refused) {
      tally.failures.push({ what: 'repost', channelId: ref.channelId, reason: why(err) });
      this.deps.logger.warn(
        { err, jobId: trace.jobId, channelId: ref.channelId },
        'privacy: Re-post refused',
      );
    }
    const { message: _changed, dm: _sent, ...rest } = trace;
    const kept: PostTrace = { ...rest, reposts: reposts.refused.map((r) => r.ref) };
    const body = this.deps.renderRemoved(trace.locale);
    // Its result sent by DM: the bot's own DM channel with the member, which the bot token reaches.
    if (trace.dm) {
      try {
        await this.edit(trace.dm, body);
        tally.messages++;
      } catch (err) {
        if (!isGoneOnDiscord(err)) {
          kept.dm = trace.dm;
          tally.failures.push({ what: 'message', channelId: trace.dm.channelId, reason: why(err) });
          this.deps.logger.warn({ err, jobId: trace.jobId }, 'privacy: the DM of a result refused');
        }
      }
    }
    // Only what the bot token reaches (a Re-post in a server with the bot, the DM) is kept for a retry.
    const left = kept.reposts.length > 0 || kept.dm !== undefined ? kept : undefined;
    const ref = trace.message;
    if (!ref) return left;
    const i = live?.interaction;
    if (i && live?.tokenRefused !== true && this.deps.now() - i.createdAt < this.deps.interactionFreshMs) {
      try {
        await this.deps.interactionRest.patch(
          Routes.webhookMessage(i.applicationId, i.token, i.messageId ?? '@original'),
          { body: { ...editBody(body), attachments: [] }, auth: false },
        );
        tally.messages++;
        return left;
      } catch (err) {
        if (isGoneOnDiscord(err)) return left;
        this.deps.logger.info(
          { err, jobId: trace.jobId },
          'privacy: a personal job’s message refused through its interaction',
        );
      }
    }
    tally.keptByDiscord.push({ what: 'message', channelId: ref.channelId });
    return left;
  }

  /** The trace's Re-posts the bot token may reach; the others are reported as kept by Discord. */
  private reachable(trace: PostTrace, tally: CleanupTally): PostedMessage[] {
    const out: PostedMessage[] = [];
    for (const r of trace.reposts) {
      if (r.personal === true) tally.keptByDiscord.push({ what: 'repost', channelId: r.channelId });
      else out.push({ channelId: r.channelId, messageId: r.messageId });
    }
    return out;
  }

  /** One message edit within the channel's budget (attachments go: the replacement keeps no file). */
  private async edit(ref: PostedMessage, body: MessagePayload): Promise<void> {
    const { budget, now } = this.deps;
    const deadline = now() + BUDGET_WAIT_MS;
    for (;;) {
      const wait = await budget.acquire(ref.channelId, 'final', now());
      if (wait === 0) break;
      if (now() + wait > deadline) {
        await this.send(ref, body);
        return;
      }
      await new Promise((r) => setTimeout(r, wait));
    }
    try {
      await this.send(ref, body);
    } finally {
      budget.settled(ref.channelId, now());
    }
  }

  private async send(ref: PostedMessage, body: MessagePayload): Promise<void> {
    await this.deps.rest.patch(Routes.channelMessage(ref.channelId, ref.messageId), {
      body: { ...body, attachments: [] },
    });
  }
}
