/**
 * Webhook intake under load: valid deliveries are never refused, however fast;
 * failed authentications are bounded per source and cost no store read once the
 * source is throttled; the client address honours TRUST_PROXY.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.js';
import { createStores, type JobRecord, type Stores } from '../src/services/store/index.js';
import type { TaskResult } from '../src/services/media/types.js';
import type { AuthFailureLimit } from '../src/webhooks/auth-failures.js';
import { JobKeys } from '../src/webhooks/job-keys.js';
import { buildServer, type HttpServer, type TrustProxy } from '../src/webhooks/server.js';
import { eventually } from './helpers/harness.js';
import { jobOperations, mediaOperations } from '../src/services/operations/index.js';

const silent = pino({ level: 'silent' });
let dataDir: string;
let stores: Stores;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'mediabot-intake-'));
  stores = await createStores({
    operations: jobOperations,
    dataDir,
    logger: silent,
    namespace: `in${randomBytes(3).toString('hex')}`,
    // 3000 injected requests hold this process's event loop at once: a store read's answer
    // waits behind them, past the 2 s default on a busy machine. What is tested here is the
    // route's throttle, not a slow store (a store timing out answers 503 by design).
    opTimeoutMs: 30_000,
  });
});
afterAll(async () => {
  await stores.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function storedJob(): Promise<JobRecord> {
  const now = Date.now();
  const job: JobRecord = {
    id: randomUUID(),
    secret: randomBytes(24).toString('hex'),
    operation: 'song',
    userId: 'u1',
    message: { channelId: 'c1' },
    params: {},
    state: 'queued',
    taskId: `task-${randomBytes(4).toString('hex')}`,
    percentage: 0,
    createdAt: now,
    updatedAt: now,
    version: 1,
  };
  await stores.jobs.create(job);
  return job;
}

interface Intake {
  app: HttpServer;
  keys: JobKeys;
  /** Store reads made by the route (the real SQLite store, counted). */
  reads: () => number;
  applied: { jobId: string; result: TaskResult }[];
}

const servers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function intake(opts: { limit?: AuthFailureLimit; trustProxy?: TrustProxy } = {}): Promise<Intake> {
  let reads = 0;
  const applied: Intake['applied'] = [];
  const keys = new JobKeys();
  const metrics = createMetrics();
  const app = await buildServer({
    logger: silent,
    ...(opts.trustProxy !== undefined ? { trustProxy: opts.trustProxy } : {}),
    webhook: {
      operations: mediaOperations,
      store: {
        get: (id) => {
          reads++;
          return stores.jobs.get(id);
        },
      },
      applyResult: async (jobId, result) => {
        applied.push({ jobId, result });
        return result.taskId ? { taskId: result.taskId } : {};
      },
      keys,
      metrics,
      ...(opts.limit ? { authFailures: opts.limit } : {}),
    },
    health: { discordReady: () => true, pingStore: () => stores.jobs.ping(), registry: metrics.registry },
  });
  servers.push(app);
  return { app, keys, reads: () => reads, applied };
}

const progress = (job: JobRecord, pct: number) =>
  JSON.stringify({ task_id: job.taskId, task_type: 'song', status: 'processing', percentage: pct });

function deliver(
  s: Intake,
  jobId: string,
  secret: string | undefined,
  body: string,
  from = '203.0.113.7',
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return s.app.inject({
    method: 'POST',
    url: `/webhooks/media/${jobId}`,
    remoteAddress: from,
    headers: {
      'content-type': 'application/json',
      ...(secret !== undefined ? { 'x-webhook-secret': secret } : {}),
      ...headers,
    },
    payload: body,
  });
}

const codes = (rs: LightMyRequestResponse[]) => {
  const out: Record<number, number> = {};
  for (const r of rs) out[r.statusCode] = (out[r.statusCode] ?? 0) + 1;
  return out;
};

describe('valid deliveries are never refused', () => {
  it('a burst of 3000 valid deliveries from one address (a backlog flush) is all 2xx', async () => {
    const s = await intake();
    const jobs = await Promise.all(Array.from({ length: 20 }, () => storedJob()));
    const burst = await Promise.all(
      Array.from({ length: 3000 }, (_, k) => {
        const job = jobs[k % jobs.length] as JobRecord;
        return deliver(s, job.id, job.secret, progress(job, Math.floor(k / 30)));
      }),
    );
    expect(codes(burst)).toEqual({ 202: 3000 });
    expect(s.applied).toHaveLength(3000);
    // One store read per job (concurrent first deliveries share it), then authenticated from memory.
    expect(s.reads()).toBe(jobs.length);
  });

  it('jobs this process created are authenticated without any store read', async () => {
    const s = await intake();
    const job = await storedJob();
    s.keys.remember(job);
    const rs = await Promise.all(
      Array.from({ length: 200 }, (_, k) => deliver(s, job.id, job.secret, progress(job, k % 100))),
    );
    expect(codes(rs)).toEqual({ 202: 200 });
    expect(s.reads()).toBe(0);
  });
});

describe('failed authentications are bounded per source', () => {
  const limit: AuthFailureLimit = { points: 20, durationSec: 60, blockSec: 60 };

  it('a flood of wrong secrets and unknown jobs is bounded, costs no store read once throttled, and valid deliveries in the middle of it all pass', async () => {
    const s = await intake({ limit });
    const known = await storedJob(); // delivered to before: in memory
    const fresh = await storedJob(); // first delivery comes during the flood, from another address
    const own = await storedJob(); // created by this process
    s.keys.remember(own);
    expect((await deliver(s, known.id, known.secret, progress(known, 1))).statusCode).toBe(202);
    const readsBefore = s.reads();

    const attacker = '198.51.100.66';
    const flood: Promise<LightMyRequestResponse>[] = [];
    const valid: Promise<LightMyRequestResponse>[] = [];
    for (let k = 0; k < 600; k++) {
      if (k % 3 === 0) flood.push(deliver(s, randomUUID(), 'x'.repeat(48), progress(known, 5), attacker));
      else if (k % 3 === 1) flood.push(deliver(s, known.id, 'y'.repeat(48), progress(known, 5), attacker));
      else flood.push(deliver(s, randomUUID(), undefined, progress(known, 5), attacker));
      if (k % 20 === 0) {
        // The same address keeps delivering real webhooks meanwhile.
        valid.push(deliver(s, known.id, known.secret, progress(known, 10 + k / 20), attacker));
        valid.push(deliver(s, own.id, own.secret, progress(own, 10 + k / 20), attacker));
      }
    }
    valid.push(deliver(s, fresh.id, fresh.secret, progress(fresh, 50), '203.0.113.8'));
    const [floodRes, validRes] = await Promise.all([Promise.all(flood), Promise.all(valid)]);

    expect(codes(validRes)).toEqual({ 202: validRes.length });
    const c = codes(floodRes);
    // Wrong secrets on a known job and missing secrets are judged from memory: always 401.
    expect(c[401]).toBe(400);
    // Unknown jobs: 404 while within the budget, then 429 without a store read.
    expect((c[404] ?? 0) + (c[429] ?? 0)).toBe(200);
    expect(c[429]).toBeGreaterThan(150);
    // Store reads: the unknown jobs looked up before the source was throttled, plus `fresh` once.
    expect(s.reads() - readsBefore).toBeLessThanOrEqual(limit.points + 1);
    const throttled = floodRes.find((r) => r.statusCode === 429);
    expect(throttled?.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.parse(throttled?.body ?? '{}')).toEqual({
      error: { code: 'WEBHOOK_AUTH_THROTTLED', message: expect.any(String) },
    });

    // Another address is not affected: its unknown job is still looked up and answered 404.
    expect((await deliver(s, randomUUID(), 'z', '{}', '192.0.2.1')).statusCode).toBe(404);
    // A valid first delivery from the throttled address for a job it never delivered to before
    // needs a store read to be judged: 429, which the service may retry (the poll covers it too).
    const unseen = await storedJob();
    expect((await deliver(s, unseen.id, unseen.secret, progress(unseen, 1), attacker)).statusCode).toBe(429);
  });

  it('a throttled source is served again once its block ends', async () => {
    const s = await intake({ limit: { points: 3, durationSec: 1, blockSec: 1 } });
    const from = '198.51.100.9';
    for (let k = 0; k < 6; k++) await deliver(s, randomUUID(), 's', '{}', from);
    expect((await deliver(s, randomUUID(), 's', '{}', from)).statusCode).toBe(429);
    const job = await storedJob();
    await eventually(
      async () => (await deliver(s, job.id, job.secret, progress(job, 1), from)).statusCode === 202,
      5000,
      'source unblocked',
    );
  });
});

describe('TRUST_PROXY decides which address is the source', () => {
  const limit: AuthFailureLimit = { points: 2, durationSec: 60, blockSec: 60 };
  const flood = async (s: Intake, xff: string) => {
    for (let k = 0; k < 5; k++)
      await deliver(s, randomUUID(), 's', '{}', '10.0.0.2', { 'x-forwarded-for': xff });
  };

  it('behind a trusted proxy each forwarded client is its own source', async () => {
    const s = await intake({ limit, trustProxy: ['10.0.0.0/8'] });
    await flood(s, '198.51.100.1');
    expect(
      (await deliver(s, randomUUID(), 's', '{}', '10.0.0.2', { 'x-forwarded-for': '198.51.100.1' }))
        .statusCode,
    ).toBe(429);
    expect(
      (await deliver(s, randomUUID(), 's', '{}', '10.0.0.2', { 'x-forwarded-for': '198.51.100.2' }))
        .statusCode,
    ).toBe(404);
  });

  it('without it X-Forwarded-For is ignored (a client cannot pick its own address)', async () => {
    const s = await intake({ limit });
    await flood(s, '198.51.100.1');
    expect(
      (await deliver(s, randomUUID(), 's', '{}', '10.0.0.2', { 'x-forwarded-for': '198.51.100.2' }))
        .statusCode,
    ).toBe(429);
  });
});
