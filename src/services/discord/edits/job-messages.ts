import type { JobRecord } from '../../store/types.js';
import { isFinal } from '../../store/merge.js';
import type { MessageUpdates } from '../../jobs/ports.js';
import type { MessagePayload } from '../render/limits.js';
import { withoutFreeText } from '../render/withheld.js';
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
    this.push(job, 'message', false);
    // A job in its own thread: the channel's one-line reply ends on the final state.
    if (job.reply && isFinal(job)) this.push(job, 'reply', false);
  }

  /**
   * `bare`: AutoMod refused the message even without the member's text, so it goes once
   * more without any free text (withoutFreeText); refused again, it is an invalid edit.
   */
  private push(job: JobRecord, target: 'message' | 'reply', bare: boolean): void {
    const { render, renderReply } = this.deps.renderers;
    const onAutoMod = this.deps.onAutoMod;
    const shown = bare ? withoutFreeText(job) : job;
    const autoMod =
      onAutoMod === undefined || bare
        ? {}
        : job.textWithheld !== true
          ? { onAutoMod: () => onAutoMod(job.id) }
          : { onAutoMod: () => this.push(job, target, true) };
    const reply = target === 'reply' && job.reply !== undefined ? job.reply : undefined;
    this.deps.edits.push({
      jobId: reply ? replyKey(job.id) : job.id,
      ref: reply ?? job.message,
      messageCreatedAt: job.createdAt,
      payload: reply ? () => renderReply(shown) : () => render(shown, this.deps.now()),
      final: reply ? true : isFinal(job),
      ...autoMod,
    });
  }
}
