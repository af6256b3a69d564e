/**
 * Seeded fuzzing of `POST /webhooks/media/:jobId` (buildServer + real SQLite store +
 * real JobService + real renderer): whatever arrives, the server answers JSON with an
 * error code, never a 5xx (503 is reserved for a store outage), never crashes, and a
 * rejected request never changes the stored job.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.js';
import { type MessagePayload, createJobRenderer } from '../src/services/discord/render/job-render.js';
import { inProcessJobs, type JobCore } from './helpers/jobs.js';
import type { Operation } from '../src/services/media/types.js';
import { createStores, stateRank, type JobRecord, type Stores } from '../src/services/store/index.js';
import { StoreUnavailableError } from '../src/services/store/errors.js';
import { WEBHOOK_BODY_LIMIT } from '../src/webhooks/media-webhook.js';
import { buildServer, type HttpServer } from '../src/webhooks/server.js';
import { jobOperations, mediaOperations, renderOperations } from '../src/services/operations/index.js';

const { renderJob } = createJobRenderer(renderOperations);

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

const silent = pino({ level: 'silent' });
const OPERATIONS: readonly Operation[] = ['upscale', 'song', 'video', 'upload'];
const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);
const CASES = 400;

/** mulberry32: small, fast, deterministic. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ------------------------------------------------------------------ fixtures

let dataDir: string;
let stores: Stores;
let server: HttpServer;
let jobs: JobCore;
const pushes: { jobId: string; final: boolean }[] = [];
const renderErrors: unknown[] = [];
const processErrors: unknown[] = [];
const onProcessError = (err: unknown): void => {
  processErrors.push(err);
};

function newJob(operation: Operation): JobRecord {
  const now = Date.now();
  return {
    id: randomUUID(),
    secret: randomBytes(24).toString('hex'),
    operation,
    userId: '100000000000000001',
    message: { channelId: '100000000000000002', messageId: '100000000000000003' },
    params: { prompt: 'fuzz' },
    taskId: `${operation}-task-${randomBytes(4).toString('hex')}`,
    state: 'queued',
    percentage: 5,
    createdAt: now,
    updatedAt: now,
    version: 2,
  };
}

async function freshJob(operation: Operation): Promise<JobRecord> {
  const job = newJob(operation);
  await stores.jobs.create(job);
  return job;
}

function progressBody(job: JobRecord, pct: number): Record<string, Json> {
  switch (job.operation) {
    case 'upload':
      return { status: 'processing', message: 'Preparing 12 images…' };
    case 'video':
      return {
        task_id: job.taskId ?? '',
        task_type: 'video-ext',
        status: 'processing',
        percentage: String(pct),
      };
    default:
      return { task_id: job.taskId ?? '', task_type: job.operation, status: 'processing', percentage: pct };
  }
}

function finishedBody(job: JobRecord): Record<string, Json> {
  const t = job.taskId ?? '';
  switch (job.operation) {
    case 'upscale':
      return { task_id: t, status: 'finished', image_urls: ['https://cdn.example/1.png'], seed: 7 };
    case 'song':
      return {
        task_id: t,
        status: 'finished',
        video_url: 'https://cdn.example/s.mp4',
        songs: [
          { song_id: 'a', audio_url: 'https://cdn.example/a.mp3', lyrics: 'la' },
          { song_id: 'b', audio_url: 'https://cdn.example/b.mp3' },
        ],
      };
    case 'video':
      return { task_id: t, task_type: 'video-ext', video_url: 'https://cdn.example/v.mp4' };
    case 'upload':
      return { task_id: t, status: 'finished', message: 'done', expires_at: '2030-01-01T00:00:00Z' };
  }
}

beforeAll(async () => {
  process.on('unhandledRejection', onProcessError);
  process.on('uncaughtException', onProcessError);
  dataDir = await mkdtemp(join(tmpdir(), 'mediabot-fuzz-'));
  stores = await createStores({
    operations: jobOperations,
    dataDir,
    logger: silent,
    namespace: `fz${randomBytes(3).toString('hex')}`,
  });
  const metrics = createMetrics();
  jobs = inProcessJobs({
    store: stores.jobs,
    logger: silent,
    metrics,
    onChanged: (job) => {
      pushes.push({ jobId: job.id, final: job.state === 'finished' || job.state === 'failed' });
      // Render now: a renderer that throws on odd (accepted) data would lose the edit.
      try {
        const p: MessagePayload = renderJob(job, Date.now());
        JSON.stringify(p);
      } catch (err) {
        renderErrors.push(err);
      }
    },
    options: {
      publicUrl: 'http://127.0.0.1:9',
      maxDurationMs: 3_600_000,
      pollInitialMs: 3_600_000,
      pollMaxMs: 3_600_000,
      webhookSilenceMs: 3_600_000,
    },
  });
  server = await buildServer({
    logger: silent,
    webhook: {
      operations: mediaOperations,
      store: stores.jobs,
      applyResult: (jobId, result) => jobs.lifecycle.applyResult(jobId, result, 'webhook'),
      metrics,
    },
    health: { discordReady: () => true, pingStore: () => stores.jobs.ping(), registry: metrics.registry },
  });
});

afterAll(async () => {
  await jobs?.stop();
  await server?.close();
  await stores?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  process.off('unhandledRejection', onProcessError);
  process.off('uncaughtException', onProcessError);
});

// ------------------------------------------------------------------ generators

interface FuzzCase {
  name: string;
  payload: string | Buffer;
  contentType?: string | undefined;
  secret?: 'good' | 'bad' | 'missing' | 'other-job' | 'huge';
  /** Path segment instead of the job id. */
  path?: string;
}

const WEIRD_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'fin\u0000ished',
  'finished\u0000',
  '🎵🎶💥',
  '\u202eDEHSINIF\u202c',
  'مرحبا بالعالم',
  '\ud800',
  '\udfff\ud800',
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '@everyone @here <@123456789012345678>',
  '`'.repeat(50) + '**bold** ||spoiler||',
  'a'.repeat(5000),
  'FINISHED',
  ' finished ',
  'Processing',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  '../../etc/passwd',
  'http://',
  'javascript:alert(1)',
];

const WEIRD_NUMBERS: readonly string[] = [
  '1e308',
  '-1e308',
  '1e400',
  '-1e400',
  '-1',
  '-0',
  '0',
  '100',
  '101',
  '1e-400',
  '9007199254740993',
  '123456789012345678901234567890',
  '0.5',
  '99.99999999999999999',
];

const NANISH: readonly Json[] = [
  'NaN',
  'Infinity',
  '-Infinity',
  '1e5',
  '0x10',
  ' 42 ',
  '42%',
  '',
  '-5',
  '1e400',
  '999999999999999999999',
];

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)] as T;
}

function randomJson(rnd: () => number, depth = 0): Json {
  const r = rnd();
  if (depth > 4 || r < 0.35) {
    const k = Math.floor(rnd() * 6);
    if (k === 0) return null;
    if (k === 1) return rnd() < 0.5;
    if (k === 2) return Math.floor(rnd() * 2000) - 1000;
    if (k === 3) return rnd() * 1e6;
    return pick(rnd, WEIRD_STRINGS);
  }
  if (r < 0.6) return Array.from({ length: Math.floor(rnd() * 4) }, () => randomJson(rnd, depth + 1));
  const keys = [
    'status',
    'percentage',
    'task_id',
    'songs',
    'image_urls',
    'video_url',
    'errors',
    'message',
    'x',
  ];
  const out: { [key: string]: Json } = {};
  for (let i = Math.floor(rnd() * 5); i > 0; i--) out[pick(rnd, keys)] = randomJson(rnd, depth + 1);
  return out;
}

/** Values of a type other than what `field` holds in a valid body. */
function wrongValue(rnd: () => number, current: Json | undefined): Json {
  const options: Json[] = [
    null,
    true,
    0,
    -1,
    1e308,
    'x',
    [],
    {},
    [1, 2],
    { status: 'finished' },
    [{ song_id: 1 }],
    pick(rnd, WEIRD_STRINGS),
  ];
  const filtered = options.filter(
    (v) => typeof v !== typeof current || Array.isArray(v) !== Array.isArray(current),
  );
  return pick(rnd, filtered.length > 0 ? filtered : options);
}

function deep(levels: number, open: string, close: string, inner = '1'): string {
  return open.repeat(levels) + inner + close.repeat(levels);
}

function generate(rnd: () => number, job: JobRecord, i: number): FuzzCase {
  const valid = rnd() < 0.5 ? progressBody(job, 40 + Math.floor(rnd() * 50)) : finishedBody(job);
  const kind = i % 14;
  switch (kind) {
    case 0:
      return { name: 'random JSON', payload: JSON.stringify(randomJson(rnd)) };
    case 1: {
      const text = JSON.stringify(valid);
      return { name: 'truncated JSON', payload: text.slice(0, Math.floor(rnd() * (text.length - 1))) };
    }
    case 2: {
      const keys = Object.keys(valid);
      const key = pick(rnd, [...keys, 'songs', 'image_urls', 'errors', 'percentage', 'status']);
      return {
        name: `wrong type for ${key}`,
        payload: JSON.stringify({ ...valid, [key]: wrongValue(rnd, valid[key]) }),
      };
    }
    case 3: {
      const n = pick(rnd, WEIRD_NUMBERS);
      const raw = JSON.stringify({ ...valid, percentage: 0 }).replace('"percentage":0', `"percentage":${n}`);
      return { name: `percentage ${n}`, payload: raw };
    }
    case 4:
      return {
        name: 'NaN-ish percentage string',
        payload: JSON.stringify({ ...valid, status: 'processing', percentage: pick(rnd, NANISH) }),
      };
    case 5: {
      const s = pick(rnd, WEIRD_STRINGS);
      const field = pick(rnd, ['status', 'task_id', 'message', 'video_url', 'expires_at', 'error']);
      return { name: `odd string in ${field}`, payload: JSON.stringify({ ...valid, [field]: s }) };
    }
    case 6: {
      const levels = pick(rnd, [100, 1000, 10_000, 100_000]);
      const shape = Math.floor(rnd() * 3);
      const payload =
        shape === 0
          ? deep(levels, '[', ']')
          : shape === 1
            ? `{"status":"processing","x":${deep(levels, '{"a":', '}')}}`
            : `{"status":"finished","songs":${deep(levels, '[', ']', '{"song_id":"a"}')}}`;
      return { name: `nesting ${levels}`, payload };
    }
    case 7:
      return {
        name: 'top-level non-object',
        payload: pick(rnd, [
          '[]',
          `[${JSON.stringify(valid)}]`,
          '"finished"',
          '42',
          'null',
          'true',
          '""',
          '1e400',
        ]),
      };
    case 8: {
      const over = rnd() < 0.6;
      const size = over ? WEBHOOK_BODY_LIMIT + 1 + Math.floor(rnd() * 2048) : WEBHOOK_BODY_LIMIT - 4096;
      const prefix = JSON.stringify({ ...valid, pad: '' }).slice(0, -2);
      const payload = `${prefix}${'x'.repeat(Math.max(0, size - prefix.length - 2))}"}`;
      return { name: over ? 'body over 1 MiB' : 'body just under 1 MiB', payload };
    }
    case 9:
      return {
        name: 'content type',
        payload: rnd() < 0.7 ? JSON.stringify(valid) : 'status=finished&percentage=100',
        contentType: pick(rnd, [
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=zzz',
          'application/octet-stream',
          'application/xml',
          'application/json; charset=utf-16',
          'application/json;;;',
          'text/html; charset=utf-8',
          '',
          'image/png',
        ]),
      };
    case 10: {
      const text = JSON.stringify(valid).slice(1, -1);
      const dup = pick(rnd, [
        `{${text},"status":"processing","status":"finished"}`,
        `{"status":"finished",${text},"status":"failed"}`,
        `{${text},"percentage":10,"percentage":-5}`,
        `{${text},"task_id":"other","task_id":${JSON.stringify(job.taskId ?? '')}}`,
        `{${text},"task_id":${JSON.stringify(job.taskId ?? '')},"task_id":"other"}`,
      ]);
      return { name: 'duplicate keys', payload: dup };
    }
    case 11: {
      const text = JSON.stringify(valid).slice(1, -1);
      const polluted = pick(rnd, [
        `{"__proto__":{"status":"finished","video_url":"https://x/v.mp4","image_urls":["https://x"]}}`,
        `{${text},"__proto__":{"polluted":true}}`,
        `{${text},"constructor":{"prototype":{"polluted":true}}}`,
        `{"status":"processing","songs":[{"song_id":"a","__proto__":{"audio_url":"https://x"}}]}`,
        `{"__proto__":[],"status":"processing"}`,
        `{"constructor":null,"status":"processing","percentage":99}`,
      ]);
      return {
        name: 'prototype keys',
        payload: polluted,
        ...(rnd() < 0.5 ? { contentType: 'text/plain' } : {}),
      };
    }
    case 12:
      return {
        name: 'bad credentials / path',
        payload: JSON.stringify(finishedBody(job)),
        secret: pick(rnd, ['bad', 'missing', 'other-job', 'huge'] as const),
        ...(rnd() < 0.3
          ? {
              path: pick(rnd, [
                randomUUID(),
                job.id.toUpperCase(),
                '..%2F..%2Fetc%2Fpasswd',
                '%00',
                'x'.repeat(300),
                `${job.id}%20`,
                '%E0%A4%A',
                '%',
                `${job.id}%ZZ`,
              ]),
            }
          : {}),
      };
    default: {
      // Random bytes, sometimes invalid UTF-8.
      return { name: 'random bytes', payload: randomBytesFrom(rnd, Math.floor(rnd() * 512)) };
    }
  }
}

function randomBytesFrom(rnd: () => number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rnd() * 256);
  return b;
}

// ------------------------------------------------------------------ assertions

function post(c: FuzzCase, job: JobRecord, other: JobRecord): Promise<LightMyRequestResponse> {
  const secret =
    c.secret === 'bad'
      ? randomBytes(24).toString('hex')
      : c.secret === 'other-job'
        ? other.secret
        : c.secret === 'huge'
          ? 'a'.repeat(8000)
          : job.secret;
  const headers: Record<string, string> = {};
  if (c.contentType === undefined) headers['content-type'] = 'application/json';
  else if (c.contentType !== '') headers['content-type'] = c.contentType;
  if (c.secret !== 'missing') headers['x-webhook-secret'] = secret;
  return server.inject({
    method: 'POST',
    url: `/webhooks/media/${c.path ?? job.id}`,
    headers,
    payload: c.payload,
  });
}

function expectWellFormed(res: LightMyRequestResponse, what: string): void {
  expect(
    res.statusCode >= 500 && res.statusCode !== 503,
    `${what}: status ${res.statusCode} ${res.body}`,
  ).toBe(false);
  expect(String(res.headers['content-type']), what).toMatch(/^application\/json/);
  const body = JSON.parse(res.body) as { ok?: boolean; error?: { code?: unknown; message?: unknown } };
  if (res.statusCode >= 400) {
    expect(typeof body.error?.code, `${what}: ${res.body}`).toBe('string');
    expect(body.error?.code, what).not.toBe('');
    expect(typeof body.error?.message, what).toBe('string');
  } else {
    expect(res.statusCode, what).toBe(202);
    expect(body.ok, what).toBe(true);
  }
}

function expectMonotonic(before: JobRecord, after: JobRecord, what: string): void {
  expect(stateRank(after.state), what).toBeGreaterThanOrEqual(stateRank(before.state));
  expect(after.percentage, what).toBeGreaterThanOrEqual(before.percentage);
  expect(Number.isInteger(after.percentage) && after.percentage <= 100, what).toBe(true);
  expect(after.taskId, what).toBe(before.taskId);
  expect(after.secret, what).toBe(before.secret);
  if (before.state === 'finished' || before.state === 'failed') expect(after, what).toEqual(before);
}

// ------------------------------------------------------------------ tests

describe('webhook fuzzing (seeded)', () => {
  it(`${CASES} random / malformed deliveries: JSON errors, no 5xx, rejected ones change nothing`, async () => {
    const rnd = prng(SEED);
    const pool = new Map<Operation, JobRecord>();
    for (const op of OPERATIONS) pool.set(op, await freshJob(op));
    const outcomes = new Map<string, Map<number, number>>();
    let accepted = 0;
    for (let i = 0; i < CASES; i++) {
      const op = pick(rnd, OPERATIONS);
      const job = pool.get(op) as JobRecord;
      const other = pool.get(
        pick(
          rnd,
          OPERATIONS.filter((o) => o !== op),
        ),
      ) as JobRecord;
      const c = generate(rnd, job, i);
      const what = `case #${i} (${c.name}, ${op}, seed ${SEED})`;
      const before = await stores.jobs.get(job.id);
      const pushesBefore = pushes.length;
      const res = await post(c, job, other);
      expectWellFormed(res, what);
      const after = await stores.jobs.get(job.id);
      expect(before, what).toBeDefined();
      expect(after, what).toBeDefined();
      if (!before || !after) continue;
      const byStatus = outcomes.get(c.name.split(' ')[0] ?? c.name) ?? new Map<number, number>();
      byStatus.set(res.statusCode, (byStatus.get(res.statusCode) ?? 0) + 1);
      outcomes.set(c.name.split(' ')[0] ?? c.name, byStatus);
      if (res.statusCode !== 202) {
        expect(after, what).toEqual(before);
        expect(pushes.length, what).toBe(pushesBefore);
      } else {
        accepted++;
        expectMonotonic(before, after, what);
        // Keep the pool unfinished so later cases still have something to break.
        if (after.state === 'finished' || after.state === 'failed' || after.percentage > 90)
          pool.set(op, await freshJob(op));
      }
    }
    if (process.env.FUZZ_VERBOSE)
      console.log(Object.fromEntries([...outcomes].map(([k, v]) => [k, Object.fromEntries(v)])), {
        accepted,
      });
    expect(renderErrors).toEqual([]);
    expect(processErrors).toEqual([]);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(({} as Record<string, unknown>)['status']).toBeUndefined();
    // The corpus exercises both sides.
    expect(accepted).toBeGreaterThan(10);
    expect(accepted).toBeLessThan(CASES - 100);

    // Valid deliveries are still accepted afterwards, and move each job to finished.
    for (const op of OPERATIONS) {
      const job = await freshJob(op);
      if (op !== 'upscale') {
        const p = await post(
          { name: 'valid progress', payload: JSON.stringify(progressBody(job, 50)) },
          job,
          job,
        );
        expect(p.statusCode, `${op} progress`).toBe(202);
      }
      const f = await post({ name: 'valid final', payload: JSON.stringify(finishedBody(job)) }, job, job);
      expect(f.statusCode, `${op} final`).toBe(202);
      const stored = await stores.jobs.get(job.id);
      expect(stored?.state, op).toBe('finished');
      expect(stored?.result?.kind, op).toBe(op);
    }
  });

  it('specific nasties: deep nesting, 1 MiB, __proto__, duplicate keys, null bytes', async () => {
    const job = await freshJob('song');
    const send = (payload: string, contentType = 'application/json') =>
      server.inject({
        method: 'POST',
        url: `/webhooks/media/${job.id}`,
        headers: { 'content-type': contentType, 'x-webhook-secret': job.secret },
        payload,
      });
    const expectations: [string, string, number][] = [
      ['10k arrays', deep(10_000, '[', ']'), 400],
      ['10k objects', `{"status":"processing","x":${deep(10_000, '{"a":', '}')}}`, 202],
      ['1 MiB + 1', `{"status":"processing","pad":"${'x'.repeat(WEBHOOK_BODY_LIMIT)}"}`, 413],
      ['__proto__ finished', `{"__proto__":{"status":"finished","songs":[{"song_id":"a"}]}}`, 400],
      ['duplicate status', `{"status":"processing","status":"finished"}`, 400],
      // An unknown status counts as processing: never as finished.
      ['null byte status', JSON.stringify({ status: 'finished\u0000', songs: [] }), 202],
      ['percentage 1e400', `{"status":"processing","percentage":1e400}`, 400],
      ['top-level array', `[{"status":"finished","songs":[{"song_id":"a"}]}]`, 400],
      ['task of another job', JSON.stringify({ task_id: 'someone-else', status: 'failed' }), 400],
    ];
    for (const [name, payload, status] of expectations) {
      const before = await stores.jobs.get(job.id);
      const res = await send(payload);
      expectWellFormed(res, name);
      // 202 cases are valid (if silly) processing bodies; deep nesting may also be refused.
      if (status === 202) expect([202, 400, 413], name).toContain(res.statusCode);
      else expect(res.statusCode, `${name}: ${res.body}`).toBe(status);
      if (res.statusCode !== 202) expect(await stores.jobs.get(job.id), name).toEqual(before);
    }
    // The same through the any-content-type parser.
    for (const [name, payload] of expectations) {
      const res = await send(payload, 'text/plain');
      expectWellFormed(res, `${name} (text/plain)`);
    }
    const after = await stores.jobs.get(job.id);
    expect(after?.state).not.toBe('finished');
    expect(processErrors).toEqual([]);
  });

  // Regression: router-level errors (over-long path parameter, broken %-encoding) were answered by
  // Fastify's default `{error: 'Bad Request', code, statusCode}` shape, outside setErrorHandler.
  it('router errors keep the `{error: {code, message}}` shape', async () => {
    const cases: [string, number, string][] = [
      [`/webhooks/media/${'x'.repeat(300)}`, 414, 'FST_ERR_MAX_PARAM_LENGTH'],
      ['/webhooks/media/%E0%A4%A', 400, 'FST_ERR_BAD_URL'],
    ];
    for (const [url, status, code] of cases) {
      const res = await server.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json', 'x-webhook-secret': 'x' },
        payload: '{}',
      });
      expect(res.statusCode, url).toBe(status);
      expectWellFormed(res, url);
      expect(JSON.parse(res.body)).toEqual({ error: { code, message: 'invalid URL' } });
    }
  });

  it('answers 503 (JSON) when the store is down and changes nothing', async () => {
    const job = await freshJob('video');
    const down = new StoreUnavailableError('store get failed: simulated');
    const metrics = createMetrics();
    const failing = await buildServer({
      logger: silent,
      webhook: {
        operations: mediaOperations,
        store: { get: () => Promise.reject(down) },
        applyResult: () => Promise.reject(down),
        metrics,
      },
      health: { discordReady: () => true, pingStore: () => Promise.reject(down), registry: metrics.registry },
    });
    try {
      const res = await failing.inject({
        method: 'POST',
        url: `/webhooks/media/${job.id}`,
        headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
        payload: JSON.stringify(finishedBody(job)),
      });
      expect(res.statusCode).toBe(503);
      expectWellFormed(res, '503');
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'STORE_UNAVAILABLE' } });
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      await failing.close();
    }
  });
});
