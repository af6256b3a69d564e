import type { JobRecord } from '../../store/types.js';
import { isFinal } from '../../store/merge.js';
import type { MessageUpdates } from '../../jobs/ports.js';
import type { MessagePayload } from '../render/limits.js';
import type { EditQueue } from './edit-queue.js';

/** How a job's messages look: the live message in every state, and its channel line when it runs in a thread. */
export interface JobRenderers {
  render(job: JobRecord, now: number): MessagePayload;
  renderReply(job: JobRecord): MessagePayload;
}

/** The key of a job's channel line in the edit queue (its live message's key is the job id). */
export const replyKey = (jobId: string): string => `${jobId}:reply`;

/** Whether the job has a message to edit (its reply was sent). */
export function hasMessage(job: JobRecord): boolean {
  return job.message.messageId !== undefined || job.message.interaction !== undefined;
}

/**
 * A job's message kept up to date through the in-process edit queue (the embedded
 * store, one process): each change queues the job's current record, rendered only
 * when it is actually sent, so a storm's intermediate states cost nothing.
 */
export class QueuedJobMessages implements MessageUpdates {
  constructor(
    private readonly deps: {
      edits: Pick<EditQueue, 'push'>;
      renderers: JobRenderers;
      now: () => number;
      /** AutoMod refused the job's text: mark it withheld (its message is then pushed again). */
      onAutoMod?: (jobId: string) => void;
    },
  ) {}

  jobChanged(job: JobRecord): void {
    if (job.finalShownAt !== undefined || job.messageGone === true || !hasMessage(job)) return;
    const final = isFinal(job);
    const { render, renderReply } = this.deps.renderers;
    const onAutoMod = this.deps.onAutoMod;
    // Once withheld, a refusal is about text that is not the member's: an invalid edit.
    const autoMod = onAutoMod && job.textWithheld !== true ? { onAutoMod: () => onAutoMod(job.id) } : {};
    this.deps.edits.push({
      jobId: job.id,
      ref: job.message,
      messageCreatedAt: job.createdAt,
      payload: () => render(job, this.deps.now()),
      final,
      ...autoMod,
    });
    // A job in its own thread: the channel's one-line reply ends on the final state.
    if (job.reply && final) {
      this.deps.edits.push({
        jobId: replyKey(job.id),
        ref: job.reply,
        messageCreatedAt: job.createdAt,
        payload: () => renderReply(job),
        final: true,
        ...autoMod,
      });
    }
  }
}
