import type { REST } from '@discordjs/rest';
import { Routes } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { TakeDown } from '../community/gallery.js';
import type { MessagePayload } from '../discord/render/limits.js';
import { isGoneOnDiscord } from '../discord/discord-transport.js';
import type { JobRecord, JobStore } from '../store/types.js';
import type { MessageRef } from '../shared/message-ref.js';
import type { PostTrace, PublicPosts } from '../privacy/public-posts.js';
import { deleteMessages } from '../privacy/public-cleanup.js';

/**
 * Remove result: a moderator takes a job's result down everywhere the bot posted it.
 * The job is marked removed first (so every later render of it, a running job's next
 * edit included, shows "removed by a moderator" and no Re-post or gallery post ever
 * brings it back), then its messages are edited, its gallery post deleted and its
 * thread locked, each with the bot token. Each step is reported; none undoes another.
 */

export type MessageOutcome = 'edited' | 'gone' | 'failed';

export interface TakeDownReport {
  job: JobRecord;
  /** The job's live message (in its thread, or the channel reply). */
  message: MessageOutcome;
  /** The channel line of a job that has a thread. */
  reply?: MessageOutcome;
  gallery: TakeDown;
  /** Its Re-posts (`/tasks` → Re-post): deleted (or already gone), and those Discord refused. */
  reposts: { deleted: number; failed: number };
  /** The job's thread was locked (undefined: it has none). */
  threadLocked?: boolean;
}

export interface ResultTakeDownDeps {
  store: Pick<JobStore, 'apply'>;
  rest: Pick<REST, 'patch' | 'delete'>;
  gallery: { takeDown(job: Pick<JobRecord, 'id' | 'galleryPost'>): Promise<TakeDown> };
  /** Where the job was posted in public: its Re-posts. */
  posts: Pick<PublicPosts, 'get' | 'dropCopies'>;
  /** What a removed job's messages show (no job: a message whose record is gone). */
  renderRemoved(job?: JobRecord): MessagePayload;
  /** The name of a job's thread (with its text withheld when the result is taken down). */
  threadName(job: Pick<JobRecord, 'id' | 'operation' | 'params' | 'textWithheld'>): string;
  logger: Logger;
  now: () => number;
}

export class ResultTakeDown {
  constructor(private readonly deps: ResultTakeDownDeps) {}

  /**
   * Takes `job`'s result down on behalf of `moderatorId` (who acts in the job's own server:
   * the caller checks). Resolves with what happened where; `undefined` when the job is gone.
   */
  async remove(job: JobRecord, moderatorId: string, guildId: string): Promise<TakeDownReport | undefined> {
    const marked = await this.deps.store.apply(job.id, { removed: { by: moderatorId }, at: this.deps.now() });
    if (!marked) return undefined;
    const removed = marked.job;
    const body = this.deps.renderRemoved(removed);
    const message = await this.edit(removed.message, body);
    const reply = removed.reply !== undefined ? await this.edit(removed.reply, body) : undefined;
    const gallery = await this.deps.gallery.takeDown(removed);
    const reposts = await this.deleteReposts(removed);
    // Copies all gone: the index forgets them (one refused stays, for /privacy delete to retry).
    if (gallery.kind !== 'failed' && reposts.failed === 0)
      await this.deps.posts
        .dropCopies(removed.id)
        .catch((err: unknown) =>
          this.deps.logger.warn({ err, jobId: removed.id }, 'could not update the post index'),
        );
    // A job with a thread lives in it: `message` is in the thread, `reply` in the channel.
    const threadLocked =
      removed.reply !== undefined ? await this.lock(removed.message.channelId, removed) : undefined;
    this.deps.logger.info(
      {
        jobId: removed.id,
        guildId,
        moderatorId,
        ownerId: removed.userId,
        message,
        ...(reply !== undefined ? { reply } : {}),
        gallery: gallery.kind,
        reposts,
        ...(threadLocked !== undefined ? { threadLocked } : {}),
      },
      'result removed by a moderator',
    );
    return {
      job: removed,
      message,
      ...(reply !== undefined ? { reply } : {}),
      gallery,
      reposts,
      ...(threadLocked !== undefined ? { threadLocked } : {}),
    };
  }

  /** Deletes the job's Re-posts (a message already gone counts as deleted). */
  private async deleteReposts(job: JobRecord): Promise<{ deleted: number; failed: number }> {
    let trace: PostTrace | undefined;
    try {
      trace = await this.deps.posts.get(job.id);
    } catch (err) {
      this.deps.logger.warn({ err, jobId: job.id }, 'could not read a removed result’s Re-posts');
      return { deleted: 0, failed: 1 };
    }
    // A Re-post answered in a place the bot is not in (a user install's) takes no bot-token request.
    const reachable = (trace?.reposts ?? []).filter((r) => r.personal !== true);
    const out = await deleteMessages(this.deps.rest, reachable);
    for (const { ref, err } of out.refused)
      this.deps.logger.warn({ err, channelId: ref.channelId }, 'could not delete a removed result’s Re-post');
    return { deleted: out.deleted, failed: out.refused.length };
  }

  /** A message the bot posted that no job record names any more (its record expired). */
  async editOrphan(channelId: string, messageId: string): Promise<MessageOutcome> {
    return this.edit({ channelId, messageId }, this.deps.renderRemoved());
  }

  private async edit(ref: MessageRef, body: MessagePayload): Promise<MessageOutcome> {
    const messageId = ref.messageId ?? ref.interaction?.messageId;
    if (messageId === undefined) return 'gone';
    try {
      // Attachments go too: a removed result keeps none of its files.
      await this.deps.rest.patch(Routes.channelMessage(ref.channelId, messageId), {
        body: { ...body, attachments: [] },
      });
      return 'edited';
    } catch (err) {
      if (isGoneOnDiscord(err)) return 'gone';
      this.deps.logger.warn({ err, channelId: ref.channelId }, 'could not edit a removed result’s message');
      return 'failed';
    }
  }

  /** The thread loses its name made from the prompt (the bot may rename its own thread), then is locked. */
  private async lock(threadId: string, job: JobRecord): Promise<boolean> {
    try {
      await this.deps.rest.patch(Routes.channel(threadId), {
        body: { name: this.deps.threadName({ ...job, textWithheld: true }) },
      });
      await this.deps.rest.patch(Routes.channel(threadId), { body: { locked: true } });
      return true;
    } catch (err) {
      this.deps.logger.warn({ err, threadId }, 'could not lock a removed result’s thread');
      return false;
    }
  }
}
