import type { JobRecord } from '../../store/types.js';
import type { MessageRef, PostedMessage } from '../../shared/message-ref.js';
import { isFinal } from '../../store/merge.js';
import type { MessageUpdates } from '../../jobs/ports.js';
import type { MessagePayload } from '../render/limits.js';
import type { EditQueue, EditRequest } from './edit-queue.js';
import { encodeEditKey } from './edit-key.js';
import { DEFAULT_EDIT_POLICY, dmNoticeAt, type EditPolicyOptions, type MessageFacts } from './edit-policy.js';

/** How a job's messages look: the live message in every state, and its channel line when it runs in a thread. */
export interface JobRenderers {
  render(job: JobRecord, now: number): MessagePayload;
  renderReply(job: JobRecord): MessagePayload;
  /** The job without any free text (the job renderer's `withoutFreeText`). */
  withoutFreeText(job: JobRecord): JobRecord;
}

/** Whether the job has a message to edit (its reply was sent). */
export function hasMessage(job: JobRecord): boolean {
  return job.message.messageId !== undefined || job.message.interaction !== undefined;
}

/** Whether edits of the job's message are over: its final shown, its message gone, or its DM refused. */
export function editsOver(job: JobRecord): boolean {
  return job.finalShownAt !== undefined || job.messageGone === true || job.dmRefused === true;
}

/** What the edit policy needs to know of a job's message (or its channel line), from its record. */
export function messageFacts(job: JobRecord, target: 'message' | 'reply'): MessageFacts {
  const ref: MessageRef = target === 'reply' && job.reply ? job.reply : job.message;
  return {
    ref,
    messageCreatedAt: job.createdAt,
    tokenRefused: job.tokenRefusedAt !== undefined,
    personal: job.personal === true,
  };
}

/** When the job's "result by DM" notice is due (a personal job still running near its token's end). */
export function dmNoticeDue(
  job: JobRecord,
  opts: EditPolicyOptions = DEFAULT_EDIT_POLICY,
): number | undefined {
  // Asked at every change of every job: the facts only, not a copy of the record.
  if (job.personal !== true) return undefined;
  return dmNoticeAt(
    {
      personal: true,
      dmNoticeAt: job.dmNoticeAt,
      tokenRefusedAt: job.tokenRefusedAt,
      ref: job.message,
      final: isFinal(job.state),
    },
    opts,
  );
}

/** What both drivers report back about a job's message, to be stored with the job. */
export interface LearnedAbout {
  /** Discord refused the interaction token: stored with the job (tokenRefused). */
  tokenRefused?: (jobId: string) => void;
  /** The member's DMs are closed: stored with the job (dmRefused). */
  dmRefused?: (jobId: string) => void;
  /** A personal job's notice is due: the caller stores it (dmNotice) and shows the message again. */
  dmNoticeDue?: (jobId: string) => void;
  /** A personal job's final went by DM: where it is (the caller indexes it for /privacy delete). */
  directMessage?: (jobId: string, posted: PostedMessage) => void;
}

/**
 * A job's message kept up to date through the in-process edit queue (the embedded
 * store, one process): each change queues the job's current record, rendered only
 * when it is actually sent, so a storm's intermediate states cost nothing.
 */
export class QueuedJobMessages implements MessageUpdates {
  /** Personal jobs' "result by DM" notices, one timer each (unref'd). */
  private readonly notices = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(
    private readonly deps: {
      edits: Pick<EditQueue, 'push' | 'editable'>;
      renderers: JobRenderers;
      now: () => number;
      /** AutoMod refused the job's text: mark it withheld (its message is then pushed again). */
      onAutoMod?: (jobId: string) => void;
      learned?: LearnedAbout;
    },
  ) {}

  jobChanged(job: JobRecord): void {
    if (editsOver(job) || !hasMessage(job)) return;
    this.scheduleNotice(job);
    this.push(job, 'message', false);
    // A job in its own thread: the channel's one-line reply ends on the final state.
    if (job.reply && isFinal(job.state)) this.push(job, 'reply', false);
  }

  /** Stops the notice timers (shutdown). */
  close(): void {
    for (const t of this.notices.values()) clearTimeout(t);
    this.notices.clear();
  }

  private scheduleNotice(job: JobRecord): void {
    const due = dmNoticeDue(job);
    const scheduled = this.notices.get(job.id);
    if (due === undefined) {
      if (scheduled !== undefined) clearTimeout(scheduled);
      this.notices.delete(job.id);
      return;
    }
    const notify = this.deps.learned?.dmNoticeDue;
    if (scheduled !== undefined || !notify) return;
    const timer = setTimeout(
      () => {
        this.notices.delete(job.id);
        notify(job.id);
      },
      Math.max(0, due - this.deps.now()),
    );
    timer.unref();
    this.notices.set(job.id, timer);
  }

  /**
   * `bare`: AutoMod refused the message even without the member's text, so it goes once
   * more without any free text (withoutFreeText); refused again, it is an invalid edit.
   */
  private push(job: JobRecord, target: 'message' | 'reply', bare: boolean): void {
    const reply = target === 'reply' && job.reply !== undefined ? job.reply : undefined;
    const final = reply ? true : isFinal(job.state);
    const facts = messageFacts(job, target);
    // A state no route can take now (a progress of a message over an hour old, a personal job
    // past its token) is not queued: the queue would drop it, and keep its message's slot for hours.
    const personal = job.personal === true && !reply;
    if (!this.deps.edits.editable(facts.ref, facts.messageCreatedAt, final, personal)) return;
    const shown = bare ? this.deps.renderers.withoutFreeText(job) : job;
    const onAutoMod = this.deps.onAutoMod;
    this.deps.edits.push({
      jobId: encodeEditKey({ kind: 'job', jobId: job.id, target }),
      ref: facts.ref,
      messageCreatedAt: facts.messageCreatedAt,
      // Rendered when sent; dropped from the queue once sent or replaced.
      payload: this.payloadOf(shown, reply !== undefined),
      final,
      text: bare ? 'bare' : job.textWithheld === true ? 'withheld' : 'member',
      ...(facts.tokenRefused === true ? { tokenRefused: true } : {}),
      ...(personal ? { personal: { userId: job.userId, jobId: job.id } } : {}),
      ...this.callbacks(job.id),
      ...(onAutoMod === undefined || bare
        ? {}
        : job.textWithheld !== true
          ? markWithheldOnAutoMod(onAutoMod, job.id)
          : { onAutoMod: () => this.push(job, target, true) }),
    });
  }

  private payloadOf(job: JobRecord, reply: boolean): () => MessagePayload {
    const { render, renderReply } = this.deps.renderers;
    return reply ? () => renderReply(job) : () => render(job, this.deps.now());
  }

  /**
   * What the queue reports back about the message. They stay in its slot for hours after
   * its last state: made here, apart from the payload, so they hold the job's id, not its record.
   */
  private callbacks(jobId: string): Partial<EditRequest> {
    const learned = this.deps.learned;
    return {
      ...(learned?.tokenRefused ? { onTokenRefused: () => learned.tokenRefused?.(jobId) } : {}),
      ...(learned?.dmRefused ? { onDmRefused: () => learned.dmRefused?.(jobId) } : {}),
      ...(learned?.directMessage
        ? { onDirectMessage: (p: PostedMessage) => learned.directMessage?.(jobId, p) }
        : {}),
    };
  }
}

/** AutoMod refused the member's text: the job is marked withheld (a closure of the id alone, see callbacks). */
function markWithheldOnAutoMod(
  onAutoMod: (jobId: string) => void,
  jobId: string,
): Pick<EditRequest, 'onAutoMod'> {
  return { onAutoMod: () => onAutoMod(jobId) };
}
