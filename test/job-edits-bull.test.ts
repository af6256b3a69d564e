/**
 * BullJobEdits on a real Redis, with a recording transport. Regression: a final that
 * arrived while its message's progress edit waited out the progress spacing was folded
 * into that waiting job (BullMQ deduplication keeps the waiting job and its options), so
 * it kept the progress edit's 3 attempts: three transient Discord errors dropped it, and
 * the message stayed on its last percentage until the keeper asked again.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryChannelBudget } from '../src/services/discord/edits/channel-budget.js';
import { createJobRenderer } from '../src/services/discord/render/job-render.js';
import type { MessagePayload } from '../src/services/discord/render/limits.js';
import { renderOperations } from '../src/services/operations/index.js';
import { openBull, type BullContext } from '../src/services/queues/bull.js';
import { BullJobEdits } from '../src/services/queues/job-edits.js';
import type { JobRecord } from '../src/services/store/types.js';
import { REDIS_URL, eventually } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';

const logger = pino({ level: 'silent' });
const classic = (content: string): MessagePayload => ({
  content,
  embeds: [],
  components: [],
  allowed_mentions: { parse: [] },
});

function record(extra: Partial<JobRecord>): JobRecord {
  const now = Date.now();
  return {
    id: 'a4b9d0a2-0a77-4a35-8f43-3b1ad2b21f10',
    secret: 's',
    operation: 'song',
    userId: '111111111111111111',
    params: { task_id: 't', song_id: 's' },
    message: {
      channelId: '222222222222222222',
      guildId: '333333333333333333',
      interaction: { applicationId: '444444444444444444', token: 'tok', createdAt: now },
    },
    taskId: 'task-1',
    state: 'processing',
    percentage: 10,
    createdAt: now,
    updatedAt: now,
    version: 1,
    ...extra,
  };
}

describe('BullJobEdits (Redis)', needs('redis'), () => {
  let bull: BullContext & { close(): Promise<void> };
  let edits: BullJobEdits;
  let current: JobRecord;
  const sent: { text: string; ok: boolean }[] = [];
  /** Records the worker read (one per edit job it ran). */
  const reads: string[] = [];
  let failNext = 0;

  beforeAll(async () => {
    bull = await openBull({ url: REDIS_URL, namespace: `je${randomBytes(4).toString('hex')}`, logger });
    current = record({});
    edits = new BullJobEdits(bull, {
      store: {
        get: async (id) => {
          reads.push(id);
          return id === current.id ? current : undefined;
        },
      },
      lifecycle: {
        mark: async (_id, flags) => {
          if (flags.finalShown) current = { ...current, finalShownAt: Date.now() };
        },
      },
      transport: {
        editInteractionOriginal: async (_app, _token, body: MessagePayload) => {
          const text = 'content' in body ? String(body.content) : '';
          if (failNext > 0) {
            failNext--;
            sent.push({ text, ok: false });
            throw new Error('socket hang up');
          }
          sent.push({ text, ok: true });
        },
        editChannelMessage: async () => undefined,
        sendDirectMessage: async () => ({ channelId: '1', messageId: '2' }),
      },
      budget: new MemoryChannelBudget({ limit: 5, windowMs: 5000, finalReserve: 2 }),
      renderers: {
        render: (job) => classic(`${job.state} ${job.percentage}%`),
        renderReply: (job) => classic(`reply ${job.state}`),
        withoutFreeText: createJobRenderer(renderOperations).withoutFreeText,
      },
      marks: bull.connection,
      logger,
    });
  });
  afterAll(async () => {
    await edits?.close();
    await bull?.close();
  });

  it('a final folded into a progress edit waiting for its spacing is retried past three transient failures', async () => {
    edits.jobChanged(current);
    await eventually(() => sent.some((s) => s.ok && s.text === 'processing 10%'), 10_000, 'first progress');
    // After the coalescing window: a progress edit that must wait for the 2 s spacing.
    await new Promise((r) => setTimeout(r, 300));
    current = { ...current, percentage: 50, version: 2 };
    edits.jobChanged(current);
    await new Promise((r) => setTimeout(r, 100));
    // The final arrives while that edit waits, and Discord fails its next three sends.
    failNext = 3;
    current = { ...current, state: 'finished', percentage: 100, version: 3, finishedAt: Date.now() };
    edits.jobChanged(current);
    await eventually(
      () => sent.some((s) => s.ok && s.text === 'finished 100%'),
      20_000,
      'the final delivered',
    );
    expect(sent.filter((s) => !s.ok && s.text === 'finished 100%')).toHaveLength(3);
    // Recorded after Discord's answer and the message's answer times are written: a round trip later.
    await eventually(() => current.finalShownAt !== undefined, 5000, 'the final recorded as shown');
    // Nothing after the final, and the 50 % state never overwrote it.
    expect(sent.at(-1)).toEqual({ text: 'finished 100%', ok: true });
  }, 30_000);

  // Regression: on Redis a progress of a message over an hour old (a restart's polls of old
  // jobs) was queued as a BullMQ edit job that the worker then dropped, one per change; the
  // in-process driver queued none.
  it('a progress no route can take is not queued at all; the final of that message is', async () => {
    const hourAgo = Date.now() - 61 * 60_000;
    const old = record({
      id: 'b7c1e0f4-5d2a-4c8e-9f31-2a6b8d9e0c11',
      createdAt: hourAgo,
      message: {
        channelId: '222222222222222222',
        guildId: '333333333333333333',
        messageId: '555555555555555555',
      },
    });
    current = old;
    edits.jobChanged({ ...old, percentage: 60, version: 2 });
    // The add would have been written before depth() reads the queue: nothing waits, nothing ran.
    expect(await edits.drain(10_000)).toBe(true);
    expect(reads.filter((id) => id === old.id)).toEqual([]);
    current = { ...old, state: 'finished', percentage: 100, version: 3, finishedAt: Date.now() };
    edits.jobChanged(current);
    await eventually(() => reads.includes(old.id), 10_000, 'the final queued and run');
  }, 30_000);
});
