import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../src/metrics.js';
import { inProcessJobs, type JobCore } from './helpers/jobs.js';
import type { Operation, TaskResult } from '../src/services/media/types.js';
import { StoreUnavailableError } from '../src/services/store/errors.js';
import { createStores, type JobRecord, type Stores } from '../src/services/store/index.js';
import { secretMatches } from '../src/webhooks/media-webhook.js';
import { jsonShapeExcess } from '../src/webhooks/json-shape.js';
import { buildServer, type HttpServer } from '../src/webhooks/server.js';
import { eventually } from './helpers/harness.js';
import { jobOperations, mediaOperations } from '../src/services/operations/index.js';

const silent = pino({ level: 'silent' });

interface Applied {
  jobId: string;
  result: TaskResult;
  source: string;
}

let dataDir: string;
let stores: Stores;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'mediabot-webhook-'));
  stores = await createStores({
    operations: jobOperations,
    dataDir,
    logger: silent,
    namespace: `wh${randomBytes(3).toString('hex')}`,
  });
});

afterAll(async () => {
  await stores.close();
  await rm(dataDir, { recursive: true, force: true });
});

function newJob(operation: Operation, extra: Partial<JobRecord> = {}): JobRecord {
  const now = Date.now();
  return {
    id: randomUUID(),
    secret: randomBytes(24).toString('hex'),
    operation,
    userId: 'u1',
    message: { channelId: 'c1' },
    params: {},
    state: 'queued',
    percentage: 0,
    createdAt: now,
    updatedAt: now,
    version: 1,
    ...extra,
  };
}

async function storedJob(operation: Operation, extra: Partial<JobRecord> = {}): Promise<JobRecord> {
  const job = newJob(operation, extra);
  await stores.jobs.create(job);
  return job;
}

interface Ctx {
  app: HttpServer;
  applied: Applied[];
  metrics: Metrics;
  health: { discord: boolean; storeUp: boolean };
}

async function makeServer(store: Pick<Stores['jobs'], 'get'> = stores.jobs): Promise<Ctx> {
  const applied: Applied[] = [];
  const metrics = createMetrics();
  const health = { discord: true, storeUp: true };
  const app = await buildServer({
    logger: silent,
    webhook: {
      operations: mediaOperations,
      store,
      applyResult: async (jobId, result, source) => {
        applied.push({ jobId, result, source });
        return result.taskId ? { taskId: result.taskId } : {};
      },
      metrics,
    },
    health: {
      discordReady: () => health.discord,
      pingStore: async () => {
        if (!health.storeUp) throw new StoreUnavailableError('down');
        await stores.jobs.ping();
      },
      registry: metrics.registry,
    },
  });
  return { app, applied, metrics, health };
}

function post(
  ctx: Ctx,
  jobId: string,
  body: unknown,
  secret: string | undefined,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return ctx.app.inject({
    method: 'POST',
    url: `/webhooks/media/${jobId}`,
    headers: {
      'content-type': 'application/json',
      ...(secret !== undefined ? { 'x-webhook-secret': secret } : {}),
      ...headers,
    },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function errorCode(body: string): string | undefined {
  const parsed = JSON.parse(body) as { error?: { code?: string } };
  return parsed.error?.code;
}

const SONG_PROGRESS = { task_id: 'song-task-1', task_type: 'song', status: 'processing', percentage: 30 };

let ctx: Ctx;
beforeEach(async () => {
  ctx = await makeServer();
});
afterEach(async () => {
  await ctx.app.close();
});

describe('POST /webhooks/media/:jobId: refusals', () => {
  it('401 when the secret header is missing (nothing applied)', async () => {
    const job = await storedJob('song');
    const res = await post(ctx, job.id, SONG_PROGRESS, undefined);
    expect(res.statusCode).toBe(401);
    expect(errorCode(res.body)).toBe('WEBHOOK_SECRET_MISSING');
    expect(ctx.applied).toHaveLength(0);
  });

  it('401 when the secret header is empty', async () => {
    const job = await storedJob('song');
    const res = await post(ctx, job.id, SONG_PROGRESS, '');
    expect(res.statusCode).toBe(401);
    expect(ctx.applied).toHaveLength(0);
  });

  it('401 on a wrong secret of the same length', async () => {
    const job = await storedJob('song');
    const wrong = job.secret.slice(0, -1) + (job.secret.endsWith('0') ? '1' : '0');
    expect(wrong).toHaveLength(job.secret.length);
    const res = await post(ctx, job.id, SONG_PROGRESS, wrong);
    expect(res.statusCode).toBe(401);
    expect(errorCode(res.body)).toBe('WEBHOOK_SECRET_INVALID');
    expect(ctx.applied).toHaveLength(0);
  });

  it('401 on a wrong secret of a different length (prefix and extension)', async () => {
    const job = await storedJob('song');
    for (const wrong of [job.secret.slice(0, 10), `${job.secret}00`, 'x']) {
      const res = await post(ctx, job.id, SONG_PROGRESS, wrong);
      expect(res.statusCode, wrong).toBe(401);
    }
    expect(ctx.applied).toHaveLength(0);
  });

  it('another job’s secret is refused', async () => {
    const a = await storedJob('song');
    const b = await storedJob('song');
    const res = await post(ctx, a.id, SONG_PROGRESS, b.secret);
    expect(res.statusCode).toBe(401);
  });

  it('404 for an unknown job (valid uuid)', async () => {
    const res = await post(ctx, randomUUID(), SONG_PROGRESS, 'whatever-secret');
    expect(res.statusCode).toBe(404);
    expect(errorCode(res.body)).toBe('JOB_NOT_FOUND');
  });

  it('404 for a non-uuid id', async () => {
    for (const id of ['not-a-uuid', '123', 'a'.repeat(36), '..%2F..%2Fetc']) {
      const res = await post(ctx, id, SONG_PROGRESS, 'whatever-secret');
      expect(res.statusCode, id).toBe(404);
    }
    expect(ctx.applied).toHaveLength(0);
  });

  it('400 on malformed JSON', async () => {
    const job = await storedJob('song');
    for (const body of ['{"task_id": "x",', 'not json', '']) {
      const res = await post(ctx, job.id, body, job.secret);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    expect(ctx.applied).toHaveLength(0);
  });

  it.each<[string, Operation, unknown]>([
    ['status: 5', 'song', { task_id: 't', status: 5 }],
    ["percentage 'abc'", 'video', { task_id: 't', status: 'processing', percentage: 'abc' }],
    ['percentage true', 'song', { task_id: 't', status: 'processing', percentage: true }],
    ["songs: 'x'", 'song', { task_id: 't', status: 'finished', songs: 'x' }],
    ['finished song without songs', 'song', { task_id: 't', status: 'finished' }],
    ['task_id: 42', 'song', { task_id: 42, status: 'processing' }],
    ['array body', 'song', [1, 2, 3]],
    ['null body', 'song', null],
    ['string body', 'song', '"finished"'],
  ])('400 on wrong types: %s', async (_name, operation, body) => {
    const job = await storedJob(operation);
    const res = await post(ctx, job.id, body, job.secret);
    expect(res.statusCode).toBe(400);
    expect(ctx.applied).toHaveLength(0);
  });

  it('413 for a body over 1 MiB', async () => {
    const job = await storedJob('upload');
    const body = JSON.stringify({ status: 'processing', message: 'x'.repeat(1024 * 1024) });
    const res = await post(ctx, job.id, body, job.secret);
    expect(res.statusCode).toBe(413);
    expect(ctx.applied).toHaveLength(0);
  });

  it('a body just under 1 MiB is accepted', async () => {
    const job = await storedJob('upload');
    const body = JSON.stringify({ status: 'processing', message: 'x'.repeat(1024 * 1024 - 100) });
    const res = await post(ctx, job.id, body, job.secret);
    expect(res.statusCode).toBe(202);
  });

  it('503 (with retry-after) when the store is down', async () => {
    const down = await makeServer({
      get: () => Promise.reject(new StoreUnavailableError('redis unreachable')),
    });
    try {
      const res = await post(down, randomUUID(), SONG_PROGRESS, 'some-secret');
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(errorCode(res.body)).toBe('STORE_UNAVAILABLE');
      expect(down.applied).toHaveLength(0);
    } finally {
      await down.app.close();
    }
  });

  it('503 when applying the result hits a store outage', async () => {
    const job = await storedJob('song');
    const app = await buildServer({
      logger: silent,
      webhook: {
        operations: mediaOperations,
        store: stores.jobs,
        applyResult: () => Promise.reject(new StoreUnavailableError('write timed out')),
      },
      health: {
        discordReady: () => true,
        pingStore: async () => undefined,
        registry: createMetrics().registry,
      },
    });
    try {
      const res = await app.inject({
        method: 'POST',
        url: `/webhooks/media/${job.id}`,
        headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
        payload: JSON.stringify(SONG_PROGRESS),
      });
      expect(res.statusCode).toBe(503);
    } finally {
      await app.close();
    }
  });

  it('500 (no details leaked) when the store fails unexpectedly', async () => {
    const broken = await makeServer({ get: () => Promise.reject(new Error('disk on fire at /secret/path')) });
    try {
      const res = await post(broken, randomUUID(), SONG_PROGRESS, 'some-secret');
      expect(res.statusCode).toBe(500);
      expect(res.body).not.toContain('/secret/path');
    } finally {
      await broken.app.close();
    }
  });

  it('400 when the task_id belongs to another task', async () => {
    const job = await storedJob('song', { taskId: 'song-task-1' });
    const res = await post(ctx, job.id, { ...SONG_PROGRESS, task_id: 'someone-elses-task' }, job.secret);
    expect(res.statusCode).toBe(400);
    expect(errorCode(res.body)).toBe('WEBHOOK_TASK_MISMATCH');
    expect(ctx.applied).toHaveLength(0);
  });
});

describe('POST /webhooks/media/:jobId: authenticated before the body is read', () => {
  const half = 512 * 1024;
  const nested = '['.repeat(half) + ']'.repeat(half);

  // Regression (issue 36): the body was parsed (and judged) before the secret was checked, so
  // an anonymous request of nested JSON cost ~90 ms of event loop and got 400/413, not 401.
  it('an unauthenticated request is refused whatever its body: never 400 or 413', async () => {
    const job = await storedJob('song');
    const bodies = [nested, '{"task_id": "x",', 'x'.repeat(3 * 1024 * 1024)];
    for (const body of bodies) {
      const what = `${body.slice(0, 16)}… (${body.length} bytes)`;
      expect((await post(ctx, job.id, body, undefined)).statusCode, what).toBe(401);
      expect((await post(ctx, job.id, body, 'wrong-secret')).statusCode, what).toBe(401);
      expect((await post(ctx, randomUUID(), body, 'any-secret')).statusCode, what).toBe(404);
      expect((await post(ctx, 'not-a-job', body, 'any-secret')).statusCode, what).toBe(404);
    }
    expect(ctx.applied).toHaveLength(0);
  });

  it('an authenticated body nested too deeply or holding too many values is 400 without a parse', async () => {
    const job = await storedJob('song');
    const deep = await post(ctx, job.id, nested, job.secret);
    expect(deep.statusCode).toBe(400);
    expect(errorCode(deep.body)).toBe('WEBHOOK_BODY_TOO_COMPLEX');
    const wide = await post(
      ctx,
      job.id,
      { status: 'processing', x: Array.from({ length: 20_000 }, () => 1) },
      job.secret,
    );
    expect(wide.statusCode).toBe(400);
    expect(errorCode(wide.body)).toBe('WEBHOOK_BODY_TOO_COMPLEX');
    // 17 levels (one past the bound), as an object chain inside a valid-looking body.
    const chain = `{"status":"processing","x":${'{"a":'.repeat(16)}1${'}'.repeat(16)}}`;
    expect((await post(ctx, job.id, chain, job.secret)).statusCode).toBe(400);
    expect(ctx.applied).toHaveLength(0);
    // Within the bound: accepted (brackets inside strings are text, not nesting).
    const fine = `{"status":"processing","message":"${'[{'.repeat(5000)}","x":${'{"a":'.repeat(14)}1${'}'.repeat(14)}}`;
    expect((await post(ctx, job.id, fine, job.secret)).statusCode).toBe(202);
  });

  it('an authenticated 1 MiB nested body costs well under the ~90 ms its parse would', async () => {
    const job = await storedJob('song');
    await post(ctx, job.id, nested, job.secret); // warm
    // CPU time, not wall time: other processes' load on the machine does not count.
    const before = process.cpuUsage();
    for (let i = 0; i < 5; i++) expect((await post(ctx, job.id, nested, job.secret)).statusCode).toBe(400);
    const used = process.cpuUsage(before);
    // Five refusals, each a scan that stops at the 17th bracket (a parse: ~90 ms each).
    expect((used.user + used.system) / 1000).toBeLessThan(5 * 40);
  });
});

describe('POST /webhooks/media/:jobId: accepted shapes', () => {
  async function accept(
    operation: Operation,
    body: unknown,
    extra: Partial<JobRecord> = {},
  ): Promise<TaskResult> {
    const job = await storedJob(operation, extra);
    const res = await post(ctx, job.id, body, job.secret);
    expect(res.statusCode, res.body).toBe(202);
    expect(ctx.applied).toHaveLength(1);
    const [applied] = ctx.applied;
    expect(applied?.jobId).toBe(job.id);
    expect(applied?.source).toBe('webhook');
    if (!applied) throw new Error('nothing applied');
    return applied.result;
  }

  it('song processing (integer percentage), with the matching task id', async () => {
    const r = await accept('song', SONG_PROGRESS, { taskId: 'song-task-1' });
    expect(r).toMatchObject({
      operation: 'song',
      state: 'processing',
      percentage: 30,
      taskId: 'song-task-1',
    });
  });

  it('song finished with songs', async () => {
    const r = await accept('song', {
      task_id: 's',
      task_type: 'song',
      status: 'finished',
      video_url: 'https://x.test/s.mp4',
      songs: [
        {
          song_id: 'a',
          audio_url: 'https://x.test/a.wav',
          image_url: 'https://x.test/a.png',
          video_url: 'https://x.test/a.mp4',
          lyrics: 'la',
        },
        {
          song_id: 'b',
          audio_url: 'https://x.test/b.wav',
          image_url: 'https://x.test/b.png',
          video_url: 'https://x.test/b.mp4',
          lyrics: 'la',
        },
      ],
    });
    expect(r.state).toBe('finished');
    expect(r.outputs?.kind).toBe('song');
  });

  it("video processing with a string percentage ('40')", async () => {
    const r = await accept('video', {
      task_id: 'v',
      task_type: 'video-ext',
      status: 'processing',
      percentage: '40',
    });
    expect(r.state).toBe('processing');
    expect(r.percentage).toBe(40);
  });

  it('video finished without status', async () => {
    const r = await accept('video', {
      task_id: 'v',
      task_type: 'video-ext',
      video_url: 'https://x.test/v.mp4',
    });
    expect(r.state).toBe('finished');
    expect(r.outputs).toEqual({ kind: 'video', videoUrl: 'https://x.test/v.mp4' });
  });

  it('upload processing without task_id (job has a task id: no mismatch)', async () => {
    const r = await accept(
      'upload',
      { status: 'processing', message: 'Preparing 10 images' },
      { taskId: 'up-1' },
    );
    expect(r.state).toBe('processing');
    expect(r.taskId).toBeUndefined();
    expect(r.message).toBe('Preparing 10 images');
  });

  it('upload finished with expires_at', async () => {
    const r = await accept('upload', {
      task_id: 'up-1',
      status: 'finished',
      message: 'done',
      expires_at: '2030-01-01T00:00:00.000Z',
    });
    expect(r.state).toBe('finished');
    expect(r.outputs).toEqual({ kind: 'upload', message: 'done', expiresAt: '2030-01-01T00:00:00.000Z' });
  });

  it('failed result with errors', async () => {
    const r = await accept('video', {
      task_id: 'v',
      status: 'failed',
      errors: [{ msg: 'nsfw' }, { msg: 'again' }],
    });
    expect(r.state).toBe('failed');
    expect(r.errors).toEqual(['nsfw', 'again']);
  });

  it('before the submit response (job has no task id yet), any task_id is accepted', async () => {
    const r = await accept('song', SONG_PROGRESS, { state: 'submitting' });
    expect(r.taskId).toBe('song-task-1');
  });

  it('a content-type with charset is fine; extra unknown fields are tolerated', async () => {
    const job = await storedJob('song');
    const res = await post(ctx, job.id, { ...SONG_PROGRESS, credits: 3 }, job.secret, {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(res.statusCode).toBe(202);
  });

  // Regression: a delivery with another content type was refused with 415 and lost.
  it('a JSON body sent as text/plain or without a content type is still accepted', async () => {
    const job = await storedJob('song');
    const plain = await post(ctx, job.id, SONG_PROGRESS, job.secret, { 'content-type': 'text/plain' });
    expect(plain.statusCode).toBe(202);
    const form = await post(ctx, job.id, 'not json', job.secret, {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(form.statusCode).toBe(400);
    expect(errorCode(form.body)).toBe('WEBHOOK_BODY_INVALID');
  });
});

/** The job core on the test store: no Discord edits, polls only where `fetchTask` is given. */
function realJobService(opts: {
  metrics?: Metrics;
  fetchTask?: (operation: Operation, taskId: string) => Promise<TaskResult>;
  webhookSilenceMs?: number;
}): JobCore {
  return inProcessJobs({
    store: stores.jobs,
    logger: silent,
    ...(opts.fetchTask ? { reader: { read: opts.fetchTask } } : {}),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    options: {
      publicUrl: 'http://127.0.0.1:1',
      maxDurationMs: 600_000,
      pollInitialMs: 60_000,
      pollMaxMs: 60_000,
      webhookSilenceMs: opts.webhookSilenceMs ?? 60_000,
    },
  });
}

/** A job made by `jobs`, queued on the service as `taskId` (its keeper checks after the silence). */
async function queuedJob(core: JobCore, operation: Operation, taskId: string): Promise<JobRecord> {
  const job = await core.lifecycle.create({
    operation,
    userId: 'u',
    message: { channelId: 'c' },
    params: {},
  });
  await core.lifecycle.update(job.id, { state: 'queued', taskId, at: Date.now() }, 'submit');
  await core.checks.schedule(job.id, core.lifecycle.options.webhookSilenceMs);
  return job;
}

describe('webhooks through the real JobService', () => {
  it('moves the stored job forward, never backwards, and finished is final', async () => {
    const metrics = createMetrics();
    const jobs = realJobService({ metrics });
    const app = await buildServer({
      logger: silent,
      webhook: {
        operations: mediaOperations,
        store: stores.jobs,
        applyResult: (id, result) => jobs.lifecycle.applyResult(id, result, 'webhook'),
        metrics,
      },
      health: { discordReady: () => true, pingStore: () => stores.jobs.ping(), registry: metrics.registry },
    });
    try {
      const job = await queuedJob(jobs, 'video', 'vid-1');
      const send = (body: unknown) =>
        app.inject({
          method: 'POST',
          url: `/webhooks/media/${job.id}`,
          headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
          payload: JSON.stringify(body),
        });
      expect(
        (await send({ task_id: 'vid-1', task_type: 'video-ext', status: 'processing', percentage: '60' }))
          .statusCode,
      ).toBe(202);
      expect((await stores.jobs.get(job.id))?.percentage).toBe(60);
      // Out of order: an older percentage does not move it back.
      expect(
        (await send({ task_id: 'vid-1', task_type: 'video-ext', status: 'processing', percentage: '20' }))
          .statusCode,
      ).toBe(202);
      expect((await stores.jobs.get(job.id))?.percentage).toBe(60);
      expect(
        (await send({ task_id: 'vid-1', task_type: 'video-ext', video_url: 'https://x.test/v.mp4' }))
          .statusCode,
      ).toBe(202);
      const finished = await stores.jobs.get(job.id);
      expect(finished?.state).toBe('finished');
      expect(finished?.result).toEqual({ kind: 'video', videoUrl: 'https://x.test/v.mp4' });
      // A late progress webhook after the final one changes nothing.
      expect(
        (await send({ task_id: 'vid-1', task_type: 'video-ext', status: 'processing', percentage: '90' }))
          .statusCode,
      ).toBe(202);
      const after = await stores.jobs.get(job.id);
      expect(after?.state).toBe('finished');
      expect(after?.version).toBe(finished?.version);
    } finally {
      await jobs.stop();
      await app.close();
    }
  });
});

describe('re-deliveries decided in memory', () => {
  // Regression guard for the in-memory path (a duplicate skips the store's async round):
  // it must still count as hearing from the service, or a job whose service keeps
  // re-sending the same progress would be polled as if the webhooks had gone silent.
  it('a duplicate keeps the silence poll away; silence brings it back', async () => {
    let polls = 0;
    const jobs = realJobService({
      fetchTask: (operation) => {
        polls++;
        return Promise.resolve({ operation, state: 'processing', percentage: 40, raw: {} });
      },
      webhookSilenceMs: 400,
    });
    try {
      const job = await queuedJob(jobs, 'song', 'dup-1');
      const progress = {
        operation: 'song' as const,
        state: 'processing' as const,
        taskId: 'dup-1',
        percentage: 40,
        raw: {},
      };
      expect((await jobs.lifecycle.applyResult(job.id, progress, 'webhook'))?.percentage).toBe(40);
      // The same delivery again and again, faster than the silence: decided in memory, never polled.
      for (let i = 0; i < 8; i++) {
        await sleep(100);
        expect(
          stores.jobs.applyInMemory?.(job.id, { state: 'processing', percentage: 40, at: Date.now() })
            ?.changed,
        ).toBe(false);
        expect((await jobs.lifecycle.applyResult(job.id, progress, 'webhook'))?.percentage).toBe(40);
      }
      expect(polls).toBe(0);
      await eventually(() => polls > 0, 3_000, 'the silence poll');
    } finally {
      await jobs.stop();
    }
  });
});

describe('health and metrics', () => {
  it('/healthz is 200', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
  });

  it('/readyz: 200 when Discord and the store are fine, 503 otherwise', async () => {
    expect((await ctx.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    ctx.health.discord = false;
    const notDiscord = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(notDiscord.statusCode).toBe(503);
    expect(JSON.parse(notDiscord.body)).toMatchObject({ discord: false, store: true });
    ctx.health.discord = true;
    ctx.health.storeUp = false;
    const notStore = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(notStore.statusCode).toBe(503);
    expect(JSON.parse(notStore.body)).toMatchObject({ discord: true, store: false });
    ctx.health.storeUp = true;
    expect((await ctx.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('/metrics: Prometheus text with webhook counts by status', async () => {
    const job = await storedJob('song');
    await post(ctx, job.id, SONG_PROGRESS, job.secret); // 202
    await post(ctx, job.id, SONG_PROGRESS, job.secret); // 202
    await post(ctx, job.id, SONG_PROGRESS, 'nope'); // 401
    await post(ctx, randomUUID(), SONG_PROGRESS, 'nope'); // 404
    await post(ctx, job.id, '{bad', job.secret); // 400
    await post(ctx, job.id, JSON.stringify({ message: 'x'.repeat(1024 * 1024) }), job.secret); // 413
    const res = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toContain('# TYPE mediabot_webhooks_total counter');
    expect(res.body).toMatch(/^mediabot_webhooks_total\{status="202"\} 2$/m);
    expect(res.body).toMatch(/^mediabot_webhooks_total\{status="401"\} 1$/m);
    expect(res.body).toMatch(/^mediabot_webhooks_total\{status="404"\} 1$/m);
    expect(res.body).toMatch(/^mediabot_webhooks_total\{status="400"\} 1$/m);
    expect(res.body).toMatch(/^mediabot_webhooks_total\{status="413"\} 1$/m);
  });

  it('/metrics: 503 and 500 deliveries are counted too, other routes are not', async () => {
    // Counted where each answer is made (no onResponse hook): the error handler's answers included.
    const job = await storedJob('song');
    const metrics = createMetrics();
    const failures = [new StoreUnavailableError('write timed out'), new Error('bug')];
    const app = await buildServer({
      logger: silent,
      webhook: {
        operations: mediaOperations,
        store: stores.jobs,
        applyResult: () => Promise.reject(failures.shift() ?? new Error('no more')),
        metrics,
      },
      health: { discordReady: () => true, pingStore: async () => undefined, registry: metrics.registry },
    });
    try {
      const deliver = () =>
        app.inject({
          method: 'POST',
          url: `/webhooks/media/${job.id}`,
          headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
          payload: JSON.stringify(SONG_PROGRESS),
        });
      expect((await deliver()).statusCode).toBe(503);
      expect((await deliver()).statusCode).toBe(500);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/nope' })).statusCode).toBe(404);
      const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(text).toMatch(/^mediabot_webhooks_total\{status="503"\} 1$/m);
      expect(text).toMatch(/^mediabot_webhooks_total\{status="500"\} 1$/m);
      expect(text).not.toMatch(/^mediabot_webhooks_total\{status="(200|404)"\}/m);
    } finally {
      await app.close();
    }
  });

  it('unknown routes are 404 JSON', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/nope' });
    expect(res.statusCode).toBe(404);
    expect(errorCode(res.body)).toBe('NOT_FOUND');
  });
});

describe('secretMatches', () => {
  it('compares exactly', () => {
    expect(secretMatches('abc123', 'abc123')).toBe(true);
    expect(secretMatches('abc124', 'abc123')).toBe(false);
    expect(secretMatches('abc12', 'abc123')).toBe(false);
    expect(secretMatches('abc1234', 'abc123')).toBe(false);
    expect(secretMatches('', 'abc123')).toBe(false);
  });
});

describe('jsonShapeExcess', () => {
  const limit = { maxDepth: 3, maxTokens: 6 };
  const check = (s: string) => jsonShapeExcess(Buffer.from(s), limit);

  it('counts nesting and values outside strings only', () => {
    expect(check('{"a":[1,2]}')).toBeUndefined(); // depth 2, tokens { : [ , = 4
    expect(check('[[[1]]]')).toBeUndefined();
    expect(check('[[[[1]]]]')).toBe('depth');
    expect(check('[1,2,3,4,5,6]')).toBeUndefined(); // [ and 5 commas: 6
    expect(check('[1,2,3,4,5,6,7]')).toBe('tokens');
    expect(check('["[[[[,,,,,,,", "{{{{::::"]')).toBeUndefined();
    // An escaped quote does not end the string; an escaped backslash does not escape the quote.
    expect(check('["a\\"[[[[[", 1]')).toBeUndefined();
    expect(check('["a\\\\", [[[1]]]]')).toBe('depth');
  });

  it('leaves malformed JSON to the parser', () => {
    expect(check(']]]]]]')).toBeUndefined();
    expect(check('"unterminated [[[[[')).toBeUndefined();
    expect(check('')).toBeUndefined();
  });
});
