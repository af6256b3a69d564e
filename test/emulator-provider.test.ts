/**
 * The emulator's provider behaviour beyond the seed spec (issue 29): fetch-many, the
 * account and its credits (402), rate limiting (429 + Retry-After), luma-ext and the extra
 * states, expiring result files, lost answers, and `npm run dev:emulator` flags.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  FIXTURE_SONG_IDS,
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
  startEmulator,
  type Emulator,
} from './emulator/server.js';

type Json = Record<string, unknown>;

let emulator: Emulator;

async function call(
  path: string,
  body?: unknown,
  { key = emulator.apiKey, method }: { key?: string | null; method?: string } = {},
) {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key !== null) headers['authorization'] = key;
  const response = await fetch(`${emulator.url}${path}`, {
    method: method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let json: Json | undefined;
  try {
    json = JSON.parse(text) as Json;
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: json ?? {} };
}

const control = (path: string, body?: unknown) => call(`/_emulator${path}`, body, { key: null });

const songBody = (extra: Json = {}): Json => ({
  parent_task_id: FIXTURE_SONG_TASK_ID,
  song_id: FIXTURE_SONG_IDS[0],
  ...extra,
});
const videoBody = (extra: Json = {}): Json => ({
  parent_task_id: FIXTURE_VIDEO_TASK_ID,
  prompt: 'the camera pans left',
  ...extra,
});
const uploadBody = (): Json => ({
  images: Array.from({ length: 10 }, (_, i) => `https://cdn.example.test/${i}.png`),
  ethnicity: 'white',
  gender: 'male',
});

async function submit(path: string, body: Json): Promise<string> {
  const r = await call(path, body);
  expect(r.status, r.text).toBe(200);
  return r.body['task_id'] as string;
}

function ownTasks() {
  return [...emulator.tasks.values()].filter((t) => !t.fixture);
}

/** A local webhook endpoint recording the bodies it gets. */
async function startReceiver() {
  const received: Json[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString()) as Json);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  emulator = await startEmulator({ scenario: { stepMs: 10 } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await emulator.close();
  await receiver.close();
});
beforeEach(() => {
  emulator.reset();
  receiver.received.length = 0;
});

describe('POST /fetch-many', () => {
  it('answers {tasks} in the order asked, as /fetch shows each, unknown ids left out', async () => {
    emulator.setScenario({ hold: true, steps: [] });
    const song = await submit('/song-extend', songBody());
    const upload = await submit('/ai-photo-upload', uploadBody());
    const r = await call('/fetch-many', { task_ids: [FIXTURE_VIDEO_TASK_ID, 'nope', song, upload] });
    expect(r.status).toBe(200);
    const tasks = r.body['tasks'] as Json[];
    expect(tasks).toEqual([
      (await call('/fetch', { task_id: FIXTURE_VIDEO_TASK_ID })).body,
      (await call('/fetch', { task_id: song })).body,
      // The upload's processing result has no task_id (the spec's quirk), here too.
      { status: 'processing', message: 'Preparing 10 images…' },
    ]);
  });

  it('validates 2 to 20 ids with the service error shape; the key is checked first', async () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `t-${i}`);
    for (const [body, msg] of [
      [{ task_ids: ids(1) }, 'task_ids must contain 2 to 20 task ids (got 1)'],
      [{ task_ids: ids(21) }, 'task_ids must contain 2 to 20 task ids (got 21)'],
      [{}, 'task_ids is required'],
      [{ task_ids: 'a,b' }, 'task_ids must be an array of task ids'],
      [{ task_ids: ['a', 7] }, 'task_ids[1] must be a non-empty string'],
    ] as const) {
      const r = await call('/fetch-many', body);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ errors: [{ msg }] });
    }
    expect((await call('/fetch-many', { task_ids: ids(20) })).body).toEqual({ tasks: [] });
    expect((await call('/fetch-many', { task_ids: ids(2) }, { key: 'wrong' })).status).toBe(401);
  });

  it('can be switched off (404, like an endpoint that does not exist), from the API and over HTTP', async () => {
    emulator.setFeatures({ fetchMany: false });
    const r = await call('/fetch-many', { task_ids: [FIXTURE_SONG_TASK_ID, FIXTURE_VIDEO_TASK_ID] });
    expect(r.status).toBe(404);
    expect(emulator.requests.at(-1)).toMatchObject({ path: '/fetch-many', statusCode: 404 });
    expect((await control('/features', { fetchMany: true })).body).toEqual({
      fetchMany: true,
      account: true,
    });
    expect((await call('/fetch-many', { task_ids: [FIXTURE_SONG_TASK_ID, 'x'] })).status).toBe(200);
    expect((await control('/features', { fetchMany: 'no' })).status).toBe(400);
  });
});

describe('GET /account and credits', () => {
  it('shows email, credits, total_images and plan; submissions spend their cost', async () => {
    const before = await call('/account');
    expect(before.status).toBe(200);
    expect(before.body).toEqual({
      email: 'operator@example.test',
      credits: 1_000_000,
      total_images: 0,
      plan: 'pro',
    });
    await submit('/song-extend', songBody());
    await submit('/video-extend', videoBody());
    await call('/image-upscale', {
      image_url: 'https://cdn.example.test/a.png',
      prompt: 'x',
      resemblance: 5,
    });
    expect((await call('/account')).body).toMatchObject({ credits: 1_000_000 - 2 - 6 - 1, total_images: 4 });
    // A refused request costs nothing.
    expect((await call('/song-extend', songBody({ song_id: 'nope' }))).status).toBe(400);
    expect(emulator.account.credits).toBe(1_000_000 - 9);
    expect((await call('/account', undefined, { key: null })).status).toBe(401);
  });

  it('answers 402 when the credits are short (nothing created), until topped up', async () => {
    emulator.setAccount({ credits: 5 });
    const r = await call('/video-extend', videoBody());
    expect(r.status).toBe(402);
    expect(r.body).toEqual({ errors: [{ msg: 'Insufficient credits' }] });
    expect(ownTasks()).toHaveLength(0);
    // A cheaper operation still fits.
    await submit('/song-extend', songBody());
    expect(emulator.account.credits).toBe(3);
    expect((await control('/account', { addCredits: 10 })).body).toMatchObject({ credits: 13 });
    await submit('/video-extend', videoBody());
    expect((await control('/account', { credits: 0, plan: 'free' })).body).toMatchObject({
      credits: 0,
      plan: 'free',
    });
    expect((await call('/song-extend', songBody())).status).toBe(402);
    expect((await control('/account')).body).toMatchObject({ credits: 0, plan: 'free' });
  });

  it('can be switched off (404)', async () => {
    emulator.setFeatures({ account: false });
    expect((await call('/account')).status).toBe(404);
    await control('/features', { account: true });
    expect((await call('/account')).status).toBe(200);
  });

  it('takes its starting account and costs from the options; reset restores them', async () => {
    const other = await startEmulator({ account: { credits: 3, plan: 'basic' }, creditCosts: { song: 3 } });
    try {
      const r = await fetch(`${other.url}/song-extend`, {
        method: 'POST',
        headers: { authorization: other.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify(songBody()),
      });
      expect(r.status).toBe(200);
      expect(other.account).toMatchObject({ credits: 0, plan: 'basic' });
      other.reset();
      expect(other.account).toMatchObject({ credits: 3, plan: 'basic' });
    } finally {
      await other.close();
    }
  });
});

describe('rate limiting (429 + Retry-After)', () => {
  it('the next N submissions answer 429 with Retry-After in seconds; nothing is created', async () => {
    emulator.rateLimitNext(2, { retryAfter: 7 });
    for (let i = 0; i < 2; i++) {
      const r = await call('/song-extend', songBody());
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBe('7');
      expect(r.body).toEqual({ errors: [{ msg: 'Too many requests' }] });
    }
    expect(ownTasks()).toHaveLength(0);
    expect(emulator.account.credits).toBe(1_000_000);
    // /fetch is not covered by a rule without a path.
    expect((await call('/fetch', { task_id: FIXTURE_SONG_TASK_ID })).status).toBe(200);
    await submit('/song-extend', songBody());
    expect(emulator.requests.filter((r) => r.rateLimited).map((r) => r.statusCode)).toEqual([429, 429]);
  });

  it('as an HTTP date, without the header, and over HTTP for one path', async () => {
    emulator.rateLimitNext(1, { retryAfter: 30, format: 'date' });
    const dated = await call('/video-extend', videoBody());
    const at = Date.parse(dated.headers.get('retry-after') ?? '');
    expect(at - Date.now()).toBeGreaterThan(25_000);
    expect(at - Date.now()).toBeLessThanOrEqual(30_000);

    emulator.rateLimitNext(1, { retryAfter: null });
    const bare = await call('/video-extend', videoBody());
    expect(bare.status).toBe(429);
    expect(bare.headers.get('retry-after')).toBeNull();

    expect((await control('/rate-limit-next', { count: 1, retryAfter: 2, path: '/fetch' })).status).toBe(200);
    expect((await call('/song-extend', songBody())).status).toBe(200);
    const fetched = await call('/fetch', { task_id: FIXTURE_SONG_TASK_ID });
    expect([fetched.status, fetched.headers.get('retry-after')]).toEqual([429, '2']);
    expect((await control('/rate-limit-next', { count: 0 })).status).toBe(400);
  });
});

describe('task types and states', () => {
  it('luma-ext as the video task_type (processing and finished) when the scenario says so', async () => {
    emulator.nextScenario({ videoTaskType: 'luma-ext', steps: [40] });
    const luma = await submit('/video-extend', videoBody({ webhook_url: receiver.url }));
    await emulator.waitFor(() => receiver.received.length === 2);
    expect(receiver.received).toEqual([
      { task_id: luma, task_type: 'luma-ext', status: 'processing', percentage: '40' },
      { task_id: luma, task_type: 'luma-ext', video_url: `${emulator.url}/files/${luma}.mp4` },
    ]);
    // The default stays the seed's.
    expect(emulator.scenario.videoTaskType).toBe('video-ext');
    const seed = await submit('/video-extend', videoBody());
    expect((await call('/fetch', { task_id: seed })).body['task_type']).toBe('video-ext');
  });

  it('plays the provider states a scenario lists, each webhooked in order', async () => {
    emulator.nextScenario({ steps: ['pending', 'staged', 'starting', 40, 'retry', 80], stepMs: 5 });
    // Listening before the submission: with 5 ms steps, the first step can come before its answer.
    // The states the steps lead to (the task's creation, its history's first entry, left out).
    const events: { id: string; state: string }[] = [];
    const off = emulator.onEvent((e) => {
      if (e.type === 'task' && e.change !== e.task.history[0])
        events.push({ id: e.task.id, state: e.task.state });
    });
    const taskId = await submit('/song-extend', songBody({ webhook_url: receiver.url }));
    await emulator.waitFor(() => receiver.received.length === 7);
    off();
    const states = events.filter((e) => e.id === taskId).map((e) => e.state);
    expect(receiver.received.map((b) => b['status'] ?? b['percentage'])).toEqual([
      'pending',
      'staged',
      'starting',
      'processing',
      'retry',
      'processing',
      'finished',
    ]);
    expect(receiver.received[4]).toEqual({ task_id: taskId, task_type: 'song', status: 'retry' });
    expect(states).toEqual([
      'queued',
      'queued',
      'processing',
      'processing',
      'processing',
      'processing',
      'finished',
    ]);
  });

  it('refuses a step that is neither a percentage nor a status', async () => {
    expect((await control('/scenario', { steps: [101] })).status).toBe(400);
    expect((await control('/scenario', { steps: [''] })).status).toBe(400);
    expect(
      (await control('/scenario', { steps: ['starting', 50], videoTaskType: 'luma-ext' })).body,
    ).toMatchObject({ steps: ['starting', 50], videoTaskType: 'luma-ext' });
  });
});

describe('expiring result files', () => {
  const status = async (url: string) => (await fetch(url)).status;

  it('one task expired now: its files answer 404, other tasks and fixtures still serve', async () => {
    const a = await submit('/video-extend', videoBody());
    const b = await submit('/song-extend', songBody());
    await emulator.waitFor(() => ownTasks().every((t) => t.state === 'finished'));
    const aUrl = emulator.tasks.get(a)?.body['video_url'] as string;
    const bSongs = emulator.tasks.get(b)?.body['songs'] as { audio_url: string }[];
    expect(await status(aUrl)).toBe(200);
    emulator.expireResults(a);
    expect(await status(aUrl)).toBe(404);
    expect(await status(bSongs[0]?.audio_url ?? '')).toBe(200);

    expect((await control('/expire-results', {})).status).toBe(200);
    expect(await status(bSongs[1]?.audio_url ?? '')).toBe(404);
    expect(await status(`${emulator.url}/files/${FIXTURE_VIDEO_TASK_ID}.mp4`)).toBe(200);
    expect((await control('/expire-results', { taskId: 'nope' })).status).toBe(404);
    // A task finished after "expire now" serves again.
    const c = await submit('/video-extend', videoBody());
    await emulator.waitFor(() => emulator.tasks.get(c)?.state === 'finished');
    expect(await status(`${emulator.url}/files/${c}.mp4`)).toBe(200);
  });

  it('files of a task that ended longer ago than the TTL answer 404 (default a day)', async () => {
    expect(await status(`${emulator.url}/files/${FIXTURE_SONG_TASK_ID}-1.png`)).toBe(200);
    const a = await submit('/video-extend', videoBody());
    await emulator.waitFor(() => emulator.tasks.get(a)?.state === 'finished');
    expect(await status(`${emulator.url}/files/${a}.mp4`)).toBe(200);
    expect((await control('/result-ttl', { ms: 0 })).status).toBe(200);
    await emulator.waitFor(() => Date.now() > (emulator.tasks.get(a)?.history.at(-1)?.at ?? 0));
    expect(await status(`${emulator.url}/files/${a}.mp4`)).toBe(404);
    // Fixtures (the parents to extend) are never purged by age.
    expect(await status(`${emulator.url}/files/${FIXTURE_SONG_TASK_ID}-1.png`)).toBe(200);
    emulator.reset();
    expect(await status(`${emulator.url}/files/${a}.mp4`)).toBe(200);
  });
});

describe('lost answers: the submission is carried out, its answer is not seen', () => {
  it('bad-gateway: a proxy 502 HTML page, while the task exists and its webhooks follow', async () => {
    emulator.loseNextAnswer(1, { mode: 'bad-gateway' });
    const r = await call('/song-extend', songBody({ webhook_url: receiver.url }));
    expect(r.status).toBe(502);
    expect(r.headers.get('content-type')).toMatch(/text\/html/);
    expect(r.text).toContain('502 Bad Gateway');
    const [task] = ownTasks();
    expect(task?.operation).toBe('song');
    await emulator.waitFor(() => receiver.received.some((b) => b['status'] === 'finished'));
    expect(receiver.received.at(-1)?.['task_id']).toBe(task?.id);
    expect(emulator.requests.at(-1)).toMatchObject({ statusCode: 502, lostAnswer: 'bad-gateway' });
    // Only the next one.
    expect((await call('/song-extend', songBody())).status).toBe(200);
  });

  it('reset: the connection is destroyed after the request was read', async () => {
    emulator.loseNextAnswer(1, { mode: 'reset', path: '/video-extend' });
    expect((await call('/song-extend', songBody())).status).toBe(200);
    await expect(call('/video-extend', videoBody())).rejects.toThrow();
    expect(ownTasks().map((t) => t.operation)).toEqual(['song', 'video']);
    expect(emulator.requests.at(-1)).toMatchObject({
      path: '/video-extend',
      statusCode: 0,
      lostAnswer: 'reset',
    });
  });

  it('late: the answer comes after delayMs, the task exists at once', async () => {
    emulator.loseNextAnswer(1, { mode: 'late', delayMs: 60_000 });
    const aborter = new AbortController();
    const pending = fetch(`${emulator.url}/ai-photo-upload`, {
      method: 'POST',
      headers: { authorization: emulator.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify(uploadBody()),
      signal: aborter.signal,
    });
    await emulator.waitFor(() => ownTasks().length === 1);
    expect(ownTasks()[0]?.operation).toBe('upload');
    aborter.abort();
    await expect(pending).rejects.toThrow();
  });

  it('over HTTP, for submissions only', async () => {
    expect((await control('/lose-next', { mode: 'bad-gateway', count: 2 })).status).toBe(200);
    expect((await call('/video-extend', videoBody())).status).toBe(502);
    expect((await call('/video-extend', videoBody())).status).toBe(502);
    expect((await call('/video-extend', videoBody())).status).toBe(200);
    expect(ownTasks()).toHaveLength(3);
    expect((await control('/lose-next', { mode: 'reset', path: '/fetch' })).status).toBe(400);
    expect(() => emulator.loseNextAnswer(1, { mode: 'reset', path: '/fetch-many' })).toThrow(
      /operation paths/,
    );
  });
});

describe('failNext with the statuses of the real provider and its proxies', () => {
  it.each([
    [402, 'application/json', '{"errors":[{"msg":"Insufficient credits"}]}'],
    [403, 'application/json', '{}'],
    [404, 'application/json', '{"errors":[{"msg":"Injected failure"}]}'],
    [409, 'application/json', '{"errors":[{"msg":"Injected failure"}]}'],
    [422, 'application/json', '{"errors":[{"msg":"Injected failure"}]}'],
    [503, 'application/json', '{}'],
    [502, 'text/html', '502 Bad Gateway'],
    [504, 'text/html', '504 Gateway Time-out'],
  ] as const)('%s → %s', async (code, type, text) => {
    emulator.failNext(1, { status: code, path: '/song-extend' });
    const r = await call('/song-extend', songBody());
    expect(r.status).toBe(code);
    expect(r.headers.get('content-type')).toContain(type);
    expect(r.text).toContain(text);
    expect(ownTasks()).toHaveLength(0);
  });
});

describe('npm run dev:emulator', () => {
  it('--help lists the flags and the control routes (429s, failures, lost answers) and exits 0', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'test/emulator/main.ts', '--help'],
      { timeout: 30_000 },
    );
    for (const flag of ['--credits', '--no-fetch-many', '--steps']) expect(stdout).toContain(flag);
    expect(stdout).toContain('http://127.0.0.1:4010/_emulator/rate-limit-next');
    expect(stdout).toContain('(429, nothing created)');
    expect(stdout).toContain('/_emulator/fail-next');
    expect(stdout).toContain('/_emulator/lose-next');
  }, 40_000);

  it('takes its switches as flags and prints them in its usage text', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/emulator/main.ts',
        '--port',
        '0',
        '--no-fetch-many',
        '--credits',
        '5',
        '--video-task-type',
        'luma-ext',
        '--steps',
        'pending,starting,50',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, EMULATOR_PLAN: 'starter' } },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no start line:\n${out}`)), 30_000);
        child.stdout.on('data', () => {
          if (out.includes('Control (unauthenticated')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
      });
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? '';
      expect(out).toContain(
        'fetch-many off (404), account on, 5 credits (starter), video task_type luma-ext',
      );
      expect(out).toContain('["pending","starting",50]');
      for (const flag of ['--no-fetch-many', '--no-account', '--credits', '--video-task-type', '--steps']) {
        expect(out).toContain(flag);
      }
      expect(out).toContain('/_emulator/rate-limit-next');
      expect(out).toContain('/_emulator/lose-next');
      const headers = { authorization: 'dev-key', 'content-type': 'application/json' };
      const many = await fetch(`${url}/fetch-many`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ task_ids: ['a', 'b'] }),
      });
      expect(many.status).toBe(404);
      const account = (await (await fetch(`${url}/account`, { headers })).json()) as Json;
      expect(account).toMatchObject({ credits: 5, plan: 'starter' });
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  }, 40_000);
});
