/**
 * Where the bot posted each job of a member in public: the job's live message, its
 * channel line and thread (threads on), its gallery post and every Re-post. Kept apart
 * from the job record, which the retention sweep deletes, so that /privacy delete can
 * still reach those messages at any age, and Remove result the Re-posts.
 *
 * Key layout (the store's KV space and sorted indexes, SQLite and Redis alike):
 *   kv  public-posts:{jobId}        one PostTrace (ids only, no text), kept until deleted
 *   idx public-posts:{userId}       the member's job ids, by the job's creation
 *   kv  public-posts-repost:{messageId}  a Re-post's job id (Remove result used on a Re-post)
 * A trace is written once the job's messages are posted (its start), then changed by
 * compare-and-set (the store's `update`: gallery post, Re-post), so two instances keep both.
 * `personal` (the job's message, or a Re-post made there) marks a place the bot is not in
 * (a user install's DM, group DM or server without the bot): no bot-token request may go
 * there, so a deletion changes it through the job's interaction token while it is fresh, or
 * reports it as kept by Discord (never kept for a retry).
 */
import { z } from 'zod';
import type { Operation } from '../media/types.js';
import type {
  AtomicKeyValueStore,
  JobRecord,
  KvDecision,
  KvWrite,
  SortedIndexStore,
} from '../store/types.js';

const messageRef = z.object({ channelId: z.string(), messageId: z.string() });
export type PostedMessage = z.output<typeof messageRef>;
/** A Re-post: `personal` when it was answered in a place the bot is not in. */
const repostRef = messageRef.extend({ personal: z.literal(true).optional() });
export type RepostRef = z.output<typeof repostRef>;

/** A trace of a job of one of `operations` (the registry's, passed in). */
const traceSchemaOf = (operations: readonly Operation[]) =>
  z.object({
    v: z.literal(1),
    jobId: z.string(),
    userId: z.string(),
    guildId: z.string().optional(),
    operation: z.enum(operations),
    /** The server's language when the job started: its neutral replacement speaks it. */
    locale: z.string().optional(),
    createdAt: z.number(),
    /** A personal job (JobRecord.personal): its message is in a place the bot is not in. */
    personal: z.literal(true).optional(),
    /** The job's live message (in its thread when it has one). */
    message: messageRef.optional(),
    /** The channel line linking the job's thread. */
    reply: messageRef.optional(),
    /** The job's thread, named after its prompt. */
    thread: z.string().optional(),
    gallery: messageRef.extend({ threadId: z.string().optional() }).optional(),
    /** A personal job's result sent by DM, in the bot's own DM channel with the member (the bot token reaches it). */
    dm: messageRef.optional(),
    reposts: z.array(repostRef),
  });
export type PostTrace = z.output<ReturnType<typeof traceSchemaOf>>;

/** As long as a message on Discord can live: the trace goes with the member's deletion. */
const TRACE_TTL_MS = 20 * 365 * 86_400_000;
/** Job ids read from a member's index at once. */
const ID_PAGE = 1000;

const traceKey = (jobId: string): string => `public-posts:${jobId}`;
const memberKey = (userId: string): string => `public-posts:${userId}`;
const repostKey = (messageId: string): string => `public-posts-repost:${messageId}`;

/** What a job record says about where its messages are. */
export function traceOfJob(job: JobRecord): PostTrace {
  const ref = (r: JobRecord['message'] | undefined): PostedMessage | undefined => {
    const id = r?.messageId ?? r?.interaction?.messageId;
    return r !== undefined && id !== undefined && id !== ''
      ? { channelId: r.channelId, messageId: id }
      : undefined;
  };
  const message = ref(job.message);
  const reply = ref(job.reply);
  return {
    v: 1,
    jobId: job.id,
    userId: job.userId,
    ...(job.message.guildId !== undefined ? { guildId: job.message.guildId } : {}),
    operation: job.operation,
    ...(job.locale !== undefined ? { locale: job.locale } : {}),
    createdAt: job.createdAt,
    ...(job.personal === true ? { personal: true as const } : {}),
    ...(message ? { message } : {}),
    ...(reply ? { reply } : {}),
    // A job with a channel line lives in its thread: the live message's channel is the thread.
    ...(job.reply !== undefined ? { thread: job.message.channelId } : {}),
    ...(job.galleryPost !== undefined ? { gallery: job.galleryPost } : {}),
    reposts: [],
  };
}

/** `a` completed by what `b` knows (the newer side's messages win; Re-posts are joined). */
export function mergeTraces(a: PostTrace | undefined, b: PostTrace): PostTrace {
  if (!a) return b;
  const reposts = [...a.reposts];
  for (const r of b.reposts) if (!reposts.some((x) => x.messageId === r.messageId)) reposts.push(r);
  return { ...a, ...stripUndefined(b), reposts };
}

function stripUndefined(t: PostTrace): Partial<PostTrace> {
  return Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined));
}

export class PublicPosts {
  readonly #traceSchema: ReturnType<typeof traceSchemaOf>;

  constructor(
    private readonly deps: {
      kv: AtomicKeyValueStore;
      indexes: SortedIndexStore;
      /** The operations a job may be of (the registry's; a trace naming another is not read). */
      operations: readonly Operation[];
    },
  ) {
    this.#traceSchema = traceSchemaOf(deps.operations);
  }

  /**
   * A job's first trace, once its messages are posted and before its service call: nothing
   * else can write it yet (its gallery post and Re-posts come after its final), so no lock
   * and no read, two writes on the job's start path.
   */
  async recordStart(job: JobRecord): Promise<void> {
    await Promise.all([
      this.deps.kv.set(traceKey(job.id), traceOfJob(job), TRACE_TTL_MS),
      this.deps.indexes.add(memberKey(job.userId), job.id, job.createdAt),
    ]);
  }

  /** The job's public messages as its record names them now (its gallery post). */
  recordJob(job: JobRecord): Promise<void> {
    return this.update(job, () => undefined);
  }

  /** A Re-post of the job's result (`/tasks id:` → Re-post). */
  async recordRepost(job: JobRecord, posted: RepostRef): Promise<void> {
    await this.update(job, (t) => {
      if (!t.reposts.some((r) => r.messageId === posted.messageId)) t.reposts.push(posted);
    });
    await this.deps.kv.set(repostKey(posted.messageId), { jobId: job.id }, TRACE_TTL_MS);
  }

  /** A personal job's final sent to the member by DM (after its interaction token). */
  recordDirectMessage(job: JobRecord, posted: PostedMessage): Promise<void> {
    return this.update(job, (t) => {
      t.dm = posted;
    });
  }

  /** The job a Re-post shows (undefined: not a Re-post the index knows). */
  async jobOfRepost(messageId: string): Promise<string | undefined> {
    const parsed = z
      .object({ jobId: z.string() })
      .safeParse(await this.deps.kv.get<unknown>(repostKey(messageId)));
    return parsed.success ? parsed.data.jobId : undefined;
  }

  async get(jobId: string): Promise<PostTrace | undefined> {
    return this.#parseTrace(await this.deps.kv.get<unknown>(traceKey(jobId)));
  }

  /** The job ids of every trace of the member, oldest first. */
  async jobIds(userId: string): Promise<string[]> {
    const ids: string[] = [];
    for (let offset = 0; ; offset += ID_PAGE) {
      const page = await this.deps.indexes.range(memberKey(userId), { offset, limit: ID_PAGE });
      ids.push(...page);
      if (page.length < ID_PAGE) return ids;
    }
  }

  /**
   * Replaces the job's trace with `left` (what could not be taken down, kept so a later
   * deletion can try again), or forgets it (`left` undefined).
   */
  async settle(trace: Pick<PostTrace, 'jobId' | 'userId'>, left?: PostTrace): Promise<void> {
    const key = traceKey(trace.jobId);
    const kept = new Set(left?.reposts.map((r) => r.messageId));
    const dropped = await this.deps.kv.update([key], ([stored]) => {
      const write: KvWrite = left ? { key, value: left, ttlMs: TRACE_TTL_MS } : { key, delete: true };
      const reposts = this.#parseTrace(stored)?.reposts ?? [];
      return { result: reposts.filter((r) => !kept.has(r.messageId)), writes: [write] };
    });
    for (const r of dropped) await this.deps.kv.delete(repostKey(r.messageId));
    if (left) await this.deps.indexes.add(memberKey(left.userId), left.jobId, left.createdAt);
    else await this.deps.indexes.remove(memberKey(trace.userId), [trace.jobId]);
  }

  /** After Remove result took them down: the job's gallery post and Re-posts are gone. */
  async dropCopies(jobId: string): Promise<void> {
    const key = traceKey(jobId);
    const dropped = await this.deps.kv.update([key], ([stored]): KvDecision<PostTrace['reposts']> => {
      const t = this.#parseTrace(stored);
      if (!t) return { result: [] };
      const { gallery: _gone, ...rest } = t;
      return { result: t.reposts, writes: [{ key, value: { ...rest, reposts: [] }, ttlMs: TRACE_TTL_MS }] };
    });
    for (const r of dropped) await this.deps.kv.delete(repostKey(r.messageId));
  }

  #parseTrace(stored: unknown): PostTrace | undefined {
    const parsed = this.#traceSchema.safeParse(stored);
    return parsed.success ? parsed.data : undefined;
  }

  /** A compare-and-set read-modify-write of the job's trace: changes made at once on several instances all land. */
  private async update(job: JobRecord, change: (t: PostTrace) => void): Promise<void> {
    const key = traceKey(job.id);
    await this.deps.kv.update([key], ([stored]) => {
      const trace = mergeTraces(this.#parseTrace(stored), traceOfJob(job));
      change(trace);
      return { result: undefined, writes: [{ key, value: trace, ttlMs: TRACE_TTL_MS }] };
    });
    await this.deps.indexes.add(memberKey(job.userId), job.id, job.createdAt);
  }
}
