import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makePng } from './emulator/media/png.js';
import {
  FIXTURE_SONG_IDS,
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
  startEmulator,
  type Emulator,
  type WebhookDelivery,
} from './emulator/server.js';

type Json = Record<string, unknown>;

let emulator: Emulator;

async function call(path: string, body: unknown, key: string | null = emulator.apiKey) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers['authorization'] = key;
  const response = await fetch(`${emulator.url}${path}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

async function submit(path: string, body: Json): Promise<string> {
  const { status, body: reply } = await call(path, body);
  expect(status, JSON.stringify(reply)).toBe(200);
  expect(Object.keys(reply)).toEqual(['task_id']);
  return reply['task_id'] as string;
}

async function fetchTask(taskId: string): Promise<Json> {
  const { status, body } = await call('/fetch', { task_id: taskId });
  expect(status).toBe(200);
  return body;
}

function errorsOf(body: Json): string[] {
  const errors = body['errors'] as { msg: string }[];
  expect(Array.isArray(errors)).toBe(true);
  return errors.map((e) => e.msg);
}

interface Received {
  headers: IncomingHttpHeaders;
  body: Json;
}

/** A local webhook endpoint recording what it gets; `status` is what it answers. */
async function startReceiver() {
  const received: Received[] = [];
  const state = { status: 200 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) as Json });
      res.statusCode = state.status;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

function deliveries(taskId: string): WebhookDelivery[] {
  return emulator.webhookDeliveries.filter((d) => d.taskId === taskId);
}

async function ended(taskId: string): Promise<void> {
  await emulator.waitFor(() => {
    const state = emulator.tasks.get(taskId)?.state;
    return state === 'finished' || state === 'failed';
  });
}

/** Waits until `count` webhooks of the task were sent or dropped. */
async function settled(taskId: string, count: number): Promise<WebhookDelivery[]> {
  await emulator.waitFor(() => deliveries(taskId).length >= count);
  return deliveries(taskId);
}

function pngBase64(seed: number): string {
  return makePng(4 + seed, 4).toString('base64');
}
const images = (count: number) => Array.from({ length: count }, (_, i) => pngBase64(i));
const uploadBody = (extra: Json = {}): Json => ({
  images: images(12),
  ethnicity: 'middle eastern',
  gender: 'female',
  age: 30,
  ...extra,
});
const songBody = (extra: Json = {}): Json => ({
  parent_task_id: FIXTURE_SONG_TASK_ID,
  song_id: FIXTURE_SONG_IDS[0],
  continue_at: 12.5,
  ...extra,
});
const videoBody = (extra: Json = {}): Json => ({
  parent_task_id: FIXTURE_VIDEO_TASK_ID,
  prompt: 'the camera pans left',
  aspect_ratio: '16:9',
  ...extra,
});

let receiver: Receiver;

beforeAll(async () => {
  emulator = await startEmulator({ scenario: { stepMs: 10 }, keepUploadBytes: true });
  receiver = await startReceiver();
});
afterAll(async () => {
  await emulator.close();
  await receiver.close();
});
beforeEach(() => {
  emulator.reset(); // back to the start options' scenario (stepMs 10)
  receiver.received.length = 0;
  receiver.state.status = 200;
});

describe('image-upscale', () => {
  it('answers synchronously with four served image URLs and the given seed', async () => {
    const { status, body } = await call('/image-upscale', {
      image_url: 'https://cdn.example/cat.png',
      prompt: 'a cat',
      resemblance: 80,
      detail: 50,
      seed: 1234,
      magic_prompt_option: 'OFF',
    });
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['image_urls', 'seed', 'status', 'task_id', 'task_type']);
    expect(body).toMatchObject({ status: 'finished', task_type: 'image-upscale', seed: 1234 });
    const urls = body['image_urls'] as string[];
    expect(urls).toHaveLength(4);
    for (const url of urls)
      expect(url.startsWith(`${emulator.url}/files/${String(body['task_id'])}-`)).toBe(true);
    expect(await fetchTask(body['task_id'] as string)).toEqual(body);
  });

  it('picks a random integer seed when none is given', async () => {
    const { body } = await call('/image-upscale', {
      image_url: 'http://x/a.png',
      prompt: 'p',
      resemblance: 1,
    });
    expect(Number.isInteger(body['seed'])).toBe(true);
  });

  it('rejects each invalid field with its own message', async () => {
    const cases: [Json, string][] = [
      [{ resemblance: 0 }, 'resemblance must be an integer between 1 and 100'],
      [{ resemblance: 101 }, 'resemblance must be an integer between 1 and 100'],
      [{ resemblance: 50.5 }, 'resemblance must be an integer between 1 and 100'],
      [{ resemblance: '50' }, 'resemblance must be an integer between 1 and 100'],
      [{ resemblance: undefined }, 'resemblance is required'],
      [{ detail: 0 }, 'detail must be an integer between 1 and 100'],
      [{ prompt: '  ' }, 'prompt must be a non-empty string'],
      [{ image_url: 'file:///etc/passwd' }, 'image_url must be an http(s) URL'],
      [{ seed: 1.5 }, 'seed must be an integer'],
      [{ magic_prompt_option: 'auto' }, 'magic_prompt_option must be one of AUTO, ON, OFF'],
    ];
    for (const [patch, message] of cases) {
      const body = { image_url: 'https://x/a.png', prompt: 'p', resemblance: 50, ...patch };
      const reply = await call('/image-upscale', body);
      expect(reply.status).toBe(400);
      expect(errorsOf(reply.body)).toEqual([message]);
    }
    const all = await call('/image-upscale', {});
    expect(errorsOf(all.body)).toEqual([
      'image_url is required',
      'prompt is required',
      'resemblance is required',
    ]);
  });

  it('waits upscaleDelayMs before answering', async () => {
    const slow = await startEmulator({ upscaleDelayMs: 150 });
    try {
      const started = Date.now();
      const response = await fetch(`${slow.url}/image-upscale`, {
        method: 'POST',
        headers: { authorization: slow.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ image_url: 'https://x/a.png', prompt: 'p', resemblance: 5 }),
      });
      expect(response.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    } finally {
      await slow.close();
    }
  });
});

describe('song-extend', () => {
  it('reports integer progress, then two songs, by webhook and fetch', async () => {
    const taskId = await submit(
      '/song-extend',
      songBody({ webhook_url: receiver.url, webhook_secret: 's3cret' }),
    );
    // The creation state (fetch shows it until the first step): processing at 0 %.
    expect(emulator.tasks.get(taskId)?.history[0]?.body).toEqual({
      task_id: taskId,
      task_type: 'song',
      status: 'processing',
      percentage: 0,
    });
    const sent = await settled(taskId, 5);
    expect(sent.every((d) => d.ok && d.statusCode === 200)).toBe(true);

    const bodies = receiver.received.map((r) => r.body);
    expect(bodies.slice(0, 4)).toEqual(
      [10, 35, 60, 85].map((percentage) => ({
        task_id: taskId,
        task_type: 'song',
        status: 'processing',
        percentage,
      })),
    );
    const final = bodies[4] as Json;
    expect(Object.keys(final).sort()).toEqual(['songs', 'status', 'task_id', 'task_type', 'video_url']);
    expect(final).toMatchObject({ task_id: taskId, task_type: 'song', status: 'finished' });
    const songs = final['songs'] as Json[];
    expect(songs).toHaveLength(2);
    for (const song of songs) {
      expect(Object.keys(song).sort()).toEqual(['audio_url', 'image_url', 'lyrics', 'song_id', 'video_url']);
    }
    for (const { headers } of receiver.received) {
      expect(headers['x-webhook-secret']).toBe('s3cret');
      expect(headers['content-type']).toBe('application/json');
    }
    expect(await fetchTask(taskId)).toEqual(final);
    expect(emulator.tasks.get(taskId)?.params).toMatchObject({
      continue_at: 12.5,
      song_id: FIXTURE_SONG_IDS[0],
    });

    // A finished song task is itself a parent.
    const child = await submit('/song-extend', {
      parent_task_id: taskId,
      song_id: songs[1]?.['song_id'],
    });
    expect(typeof child).toBe('string');
  });

  it('rejects unknown parents, foreign song ids and bad continue_at', async () => {
    const unknown = await call('/song-extend', songBody({ parent_task_id: 'nope' }));
    expect(unknown.status).toBe(400);
    expect(errorsOf(unknown.body)).toEqual(['parent_task_id nope is not a known song task']);

    const videoParent = await call('/song-extend', songBody({ parent_task_id: FIXTURE_VIDEO_TASK_ID }));
    expect(errorsOf(videoParent.body)).toEqual([
      `parent_task_id ${FIXTURE_VIDEO_TASK_ID} is not a known song task`,
    ]);

    const foreign = await call('/song-extend', songBody({ song_id: 'song-z' }));
    expect(errorsOf(foreign.body)).toEqual([
      `song_id must be one of the parent task's songs: ${FIXTURE_SONG_IDS.join(', ')}`,
    ]);

    const negative = await call('/song-extend', songBody({ continue_at: -1 }));
    expect(errorsOf(negative.body)).toEqual(['continue_at must be a number >= 0']);

    const missing = await call('/song-extend', {});
    expect(errorsOf(missing.body)).toEqual(['parent_task_id is required', 'song_id is required']);

    const badHook = await call('/song-extend', songBody({ webhook_url: 'not a url' }));
    expect(errorsOf(badHook.body)).toEqual(['webhook_url must be an http(s) URL']);
  });

  it('refuses to extend a song task that has not finished', async () => {
    emulator.nextScenario({ hold: true });
    const running = await submit('/song-extend', songBody());
    const reply = await call('/song-extend', songBody({ parent_task_id: running }));
    expect(errorsOf(reply.body)).toEqual([`parent_task_id ${running} is not finished`]);
  });
});

describe('video-extend', () => {
  it('carries the percentage as a string and finishes without a status field', async () => {
    const taskId = await submit(
      '/video-extend',
      videoBody({ webhook_url: receiver.url, enhance_prompt: true }),
    );
    await settled(taskId, 5);
    const bodies = receiver.received.map((r) => r.body);
    expect(bodies[0]).toEqual({
      task_id: taskId,
      task_type: 'video-ext',
      status: 'processing',
      percentage: '10',
    });
    expect(bodies[3]?.['percentage']).toBe('85');
    const final = bodies[4];
    expect(final).toEqual({
      task_id: taskId,
      task_type: 'video-ext',
      video_url: `${emulator.url}/files/${taskId}.mp4`,
    });
    expect(final).not.toHaveProperty('status');
    expect(receiver.received[0]?.headers['x-webhook-secret']).toBeUndefined();

    // Finished video tasks can be extended again.
    await submit('/video-extend', videoBody({ parent_task_id: taskId }));
  });

  it('rejects bad aspect ratios, unknown parents and a missing prompt', async () => {
    const ratio = await call('/video-extend', videoBody({ aspect_ratio: '2:1' }));
    expect(ratio.status).toBe(400);
    expect(errorsOf(ratio.body)).toEqual([
      'aspect_ratio must be one of 1:1, 16:9, 9:16, 4:3, 3:4, 21:9, 9:21',
    ]);

    const parent = await call('/video-extend', videoBody({ parent_task_id: FIXTURE_SONG_TASK_ID }));
    expect(errorsOf(parent.body)).toEqual([
      `parent_task_id ${FIXTURE_SONG_TASK_ID} is not a known video task`,
    ]);

    const several = await call('/video-extend', {
      parent_task_id: FIXTURE_VIDEO_TASK_ID,
      enhance_prompt: 'yes',
      end_image_url: 'x',
    });
    expect(errorsOf(several.body)).toEqual([
      'prompt is required',
      'end_image_url must be an http(s) URL',
      'enhance_prompt must be a boolean',
    ]);
  });
});

describe('ai-photo-upload', () => {
  it('has no task_id while processing, and an ISO expires_at when finished', async () => {
    const body = uploadBody({ webhook_url: receiver.url, webhook_secret: 'k' });
    const taskId = await submit('/ai-photo-upload', body);
    expect(emulator.tasks.get(taskId)?.history[0]?.body).toEqual({
      status: 'processing',
      message: 'Preparing 12 images…',
    });
    await settled(taskId, 5);
    const bodies = receiver.received.map((r) => r.body);
    expect(bodies[0]).toEqual({ status: 'processing', message: 'Preparing 12 images…' });
    expect(bodies[0]).not.toHaveProperty('task_id');
    const final = bodies[4] as Json;
    expect(Object.keys(final).sort()).toEqual(['expires_at', 'message', 'status', 'task_id']);
    expect(final).toMatchObject({ task_id: taskId, status: 'finished' });
    expect(final['expires_at']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    const recorded = emulator.uploads(taskId);
    expect(recorded).toHaveLength(12);
    const first = makePng(4, 4);
    expect(recorded[0]).toMatchObject({
      index: 0,
      kind: 'base64',
      format: 'png',
      byteLength: first.length,
      sha256: createHash('sha256').update(first).digest('hex'),
    });
    expect(recorded[0]?.kind === 'base64' && recorded[0].bytes?.equals(first)).toBe(true);
    expect(emulator.tasks.get(taskId)?.params).toMatchObject({ images: 12, ethnicity: 'middle eastern' });
  });

  it('takes a large chunked upload body (30 × 300 KB images)', async () => {
    const big = Buffer.concat([makePng(8, 8), Buffer.alloc(300_000, 7)]);
    const encoded = big.toString('base64');
    // Streamed like the bot does it: no Content-Length, chunked transfer encoding.
    async function* body() {
      yield '{"ethnicity":"asian","gender":"male","images":[';
      for (let i = 0; i < 30; i++) yield `${i > 0 ? ',' : ''}"${encoded}"`;
      yield ']}';
    }
    const response = await request(`${emulator.url}/ai-photo-upload`, {
      method: 'POST',
      headers: { authorization: emulator.apiKey, 'content-type': 'application/json' },
      body: Readable.from(body()),
    });
    expect(response.statusCode).toBe(200);
    const { task_id: taskId } = (await response.body.json()) as { task_id: string };
    const recorded = emulator.uploads(taskId);
    expect(recorded).toHaveLength(30);
    expect(recorded.every((r) => r.kind === 'base64' && r.byteLength === big.length)).toBe(true);
    expect(emulator.requests.at(-1)?.bodyBytes).toBeGreaterThan(30 * encoded.length);
  });

  it('answers 413 with errors above bodyLimit', async () => {
    const small = await startEmulator({ bodyLimit: 1000 });
    try {
      const response = await fetch(`${small.url}/ai-photo-upload`, {
        method: 'POST',
        headers: { authorization: small.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify(uploadBody()),
      });
      expect(response.status).toBe(413);
      expect(await response.json()).toEqual({ errors: [{ msg: 'request body too large' }] });
    } finally {
      await small.close();
    }
  });

  it('accepts http(s) URLs and the other image formats', async () => {
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]).toString('base64');
    const gif = Buffer.from('GIF89a....').toString('base64');
    const webp = Buffer.from('RIFF\0\0\0\0WEBPVP8 ').toString('base64');
    const list = [...images(7), jpeg, gif, webp, 'https://cdn.example/a.jpg'];
    const taskId = await submit('/ai-photo-upload', uploadBody({ images: list }));
    const recorded = emulator.uploads(taskId);
    expect(recorded.map((r) => (r.kind === 'url' ? r.url : r.format))).toEqual([
      ...Array<string>(7).fill('png'),
      'jpeg',
      'gif',
      'webp',
      'https://cdn.example/a.jpg',
    ]);
  });

  it('rejects 9 and 31 images, bad ethnicity and gender, and non-image base64', async () => {
    for (const count of [9, 31]) {
      const reply = await call('/ai-photo-upload', uploadBody({ images: images(count) }));
      expect(reply.status).toBe(400);
      expect(errorsOf(reply.body)).toEqual([`images must contain 10 to 30 images (got ${count})`]);
    }
    const ethnicity = await call('/ai-photo-upload', uploadBody({ ethnicity: 'martian', gender: 'other' }));
    expect(errorsOf(ethnicity.body)).toEqual([
      'ethnicity must be one of asian, black, latino, middle eastern, native american, pacific islander, white',
      'gender must be one of female, male',
    ]);

    const list = images(12);
    list[2] = Buffer.from('just some text, not an image').toString('base64');
    list[5] = `${pngBase64(1).slice(0, 8)}=${pngBase64(1).slice(9)}`; // padding mid-stream: chunked-encoding bug
    list[7] = 'data:image/png;base64,' + pngBase64(1);
    list[9] = '';
    const bad = await call('/ai-photo-upload', uploadBody({ images: list }));
    expect(errorsOf(bad.body)).toEqual([
      'images[2] is not a PNG, JPEG, GIF or WebP image',
      'images[5] is not valid base64',
      'images[7] must be bare base64, not a data: URI',
      'images[9] must be a non-empty string (base64 image or http(s) URL)',
    ]);
  });
});

describe('fetch', () => {
  it('returns the fixtures, and 400 Task not found for unknown ids', async () => {
    const song = await fetchTask(FIXTURE_SONG_TASK_ID);
    expect((song['songs'] as Json[]).map((s) => s['song_id'])).toEqual([...FIXTURE_SONG_IDS]);
    const unknown = await call('/fetch', { task_id: 'missing' });
    expect(unknown).toEqual({ status: 400, body: { errors: [{ msg: 'Task not found' }] } });
  });

  it('follows the task through its states', async () => {
    emulator.nextScenario({ hold: true, steps: [50] });
    const taskId = await submit('/song-extend', songBody());
    await emulator.waitFor(() => emulator.tasks.get(taskId)?.history.length === 2);
    expect(await fetchTask(taskId)).toMatchObject({ status: 'processing', percentage: 50 });
    emulator.finish(taskId);
    expect(await fetchTask(taskId)).toMatchObject({ status: 'finished' });
  });
});

describe('authentication and request errors', () => {
  it('answers 401 {} for a wrong, missing or Bearer-prefixed key', async () => {
    for (const key of ['wrong', null, `Bearer ${emulator.apiKey}`]) {
      expect(await call('/song-extend', songBody(), key)).toEqual({ status: 401, body: {} });
    }
    expect(emulator.requests.at(-1)?.headers['authorization']).toBe('[redacted]');
  });

  it('answers 400 with errors for non-JSON and non-object bodies', async () => {
    const garbage = await call('/video-extend', '{not json');
    expect(garbage.status).toBe(400);
    expect(errorsOf(garbage.body)[0]).toMatch(/^request body is not valid JSON/);
    const array = await call('/video-extend', []);
    expect(array.body).toEqual({ errors: [{ msg: 'request body must be a JSON object' }] });
  });

  it('injects failures with failNext', async () => {
    emulator.failNext(2, { status: 500 });
    expect(await call('/song-extend', songBody())).toEqual({ status: 500, body: {} });
    // Without a path the rule covers operations only, not /fetch.
    expect((await call('/fetch', { task_id: FIXTURE_SONG_TASK_ID })).status).toBe(200);
    expect(await call('/video-extend', videoBody())).toEqual({ status: 500, body: {} });
    expect((await call('/video-extend', videoBody())).status).toBe(200);

    emulator.failNext(1, { status: 401, path: '/fetch' });
    emulator.failNext(1, { status: 400, path: '/image-upscale' });
    expect(await call('/fetch', { task_id: FIXTURE_SONG_TASK_ID })).toEqual({ status: 401, body: {} });
    const injected = await call('/image-upscale', {
      image_url: 'https://x/a.png',
      prompt: 'p',
      resemblance: 5,
    });
    expect(injected).toEqual({ status: 400, body: { errors: [{ msg: 'Injected failure' }] } });
    expect(emulator.requests.filter((r) => r.injectedStatus !== undefined)).toHaveLength(4);
  });

  it('delays a response with delayNext (client timeouts)', async () => {
    emulator.delayNext(300, '/fetch');
    await expect(
      fetch(`${emulator.url}/fetch`, {
        method: 'POST',
        headers: { authorization: emulator.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ task_id: FIXTURE_SONG_TASK_ID }),
        signal: AbortSignal.timeout(50),
      }),
    ).rejects.toThrow();
    const started = Date.now();
    await call('/fetch', { task_id: FIXTURE_SONG_TASK_ID });
    expect(Date.now() - started).toBeLessThan(250);
  });
});

describe('webhook scenarios', () => {
  const hook = { webhook_url: '', webhook_secret: 'x' };
  beforeEach(() => {
    hook.webhook_url = receiver.url;
  });

  it('sends every webhook twice with duplicateWebhooks', async () => {
    emulator.nextScenario({ duplicateWebhooks: true, steps: [50] });
    const taskId = await submit('/video-extend', videoBody(hook));
    const sent = await settled(taskId, 4);
    expect(sent.map((d) => `${d.kind}#${d.copy}`)).toEqual([
      'progress#1',
      'progress#2',
      'final#1',
      'final#2',
    ]);
    expect(receiver.received[0]?.body).toEqual(receiver.received[1]?.body);
    expect(receiver.received[2]?.body).toEqual(receiver.received[3]?.body);
  });

  it('delivers out of order with shuffleWebhooks, after the task ends', async () => {
    const inOrder = () => 0.999; // Fisher-Yates with r≈1 keeps the identity; the emulator must still reorder.
    const seeded = await startEmulator({ scenario: { stepMs: 5, shuffleWebhooks: true }, random: inOrder });
    try {
      const response = await fetch(`${seeded.url}/song-extend`, {
        method: 'POST',
        headers: { authorization: seeded.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify(songBody(hook)),
      });
      const { task_id: taskId } = (await response.json()) as { task_id: string };
      await seeded.waitFor(() => seeded.webhookDeliveries.length === 5);
      const order = seeded.webhookDeliveries.map((d) => d.body['percentage'] ?? d.body['status']);
      expect(order).toEqual(['finished', 10, 35, 60, 85]);
      expect(seeded.tasks.get(taskId)?.state).toBe('finished');
    } finally {
      await seeded.close();
    }

    emulator.nextScenario({ shuffleWebhooks: true });
    const taskId = await submit('/song-extend', songBody(hook));
    const sent = await settled(taskId, 5);
    expect(sent.map((d) => d.kind).sort()).toEqual(['final', 'progress', 'progress', 'progress', 'progress']);
    expect(sent.map((d) => d.body['percentage'] ?? 'final')).not.toEqual([10, 35, 60, 85, 'final']);
  });

  it.each([
    ['all', []],
    ['progress', ['final']],
    ['final', ['progress', 'progress', 'progress', 'progress']],
  ] as const)('drops %s webhooks', async (drop, expected) => {
    emulator.nextScenario({ dropWebhooks: drop });
    const taskId = await submit('/ai-photo-upload', uploadBody(hook));
    const logged = await settled(taskId, 5);
    expect(logged.filter((d) => !d.dropped).map((d) => d.kind)).toEqual(expected);
    expect(receiver.received).toHaveLength(expected.length);
    expect(emulator.tasks.get(taskId)?.state).toBe('finished');
  });

  it('records failed deliveries without retrying', async () => {
    receiver.state.status = 503;
    emulator.nextScenario({ steps: [] });
    const taskId = await submit('/video-extend', videoBody(hook));
    const [delivery] = await settled(taskId, 1);
    expect(delivery).toMatchObject({ ok: false, statusCode: 503, dropped: false, kind: 'final' });

    const closed = await startReceiver();
    await closed.close(); // its port now refuses connections
    emulator.nextScenario({ steps: [] });
    const refused = await submit('/video-extend', videoBody({ webhook_url: closed.url }));
    const [failure] = await settled(refused, 1);
    expect(failure?.ok).toBe(false);
    expect(failure?.error).toMatch(/ECONNREFUSED/);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(deliveries(taskId)).toHaveLength(1);
    expect(deliveries(refused)).toHaveLength(1);
  });

  it('reports and webhooks an initialStatus before the first step', async () => {
    emulator.nextScenario({ initialStatus: 'pending', steps: [40], stepMs: 200 });
    const taskId = await submit('/song-extend', songBody(hook));
    expect(await fetchTask(taskId)).toEqual({ task_id: taskId, task_type: 'song', status: 'pending' });
    expect(emulator.tasks.get(taskId)?.state).toBe('queued');
    await settled(taskId, 3);
    expect(receiver.received.map((r) => r.body['status'])).toEqual(['pending', 'processing', 'finished']);
  });

  it('holds a task until finish() or fail(), and reports failures per operation', async () => {
    emulator.setScenario({ hold: true, steps: [20] });
    const song = await submit('/song-extend', songBody(hook));
    const upload = await submit('/ai-photo-upload', uploadBody(hook));
    await emulator.waitFor(() => deliveries(song).length === 1 && deliveries(upload).length === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(emulator.tasks.get(song)?.state).toBe('processing');

    emulator.fail(song, 'Copyrighted lyrics');
    emulator.fail(upload);
    await ended(song);
    expect(await fetchTask(song)).toEqual({
      task_id: song,
      task_type: 'song',
      status: 'failed',
      errors: [{ msg: 'Copyrighted lyrics' }],
    });
    expect(await fetchTask(upload)).toEqual({
      task_id: upload,
      status: 'failed',
      errors: [{ msg: 'Generation failed' }],
    });
    expect(() => emulator.finish(song)).toThrow(/already failed/);
    expect(() => emulator.finish('nope')).toThrow(/unknown task/);
  });

  it('fails tasks with outcome failed', async () => {
    emulator.nextScenario({ outcome: 'failed', failMessage: 'GPU on fire', steps: [] });
    const taskId = await submit('/video-extend', videoBody());
    await ended(taskId);
    expect(await fetchTask(taskId)).toEqual({
      task_id: taskId,
      task_type: 'video-ext',
      status: 'failed',
      errors: [{ msg: 'GPU on fire' }],
    });
    // nextScenario applied once only.
    const next = await submit('/video-extend', videoBody());
    await ended(next);
    expect(emulator.tasks.get(next)?.state).toBe('finished');
  });
});

describe('result files', () => {
  it.each([
    ['x-1.png', 'image/png', '89504e470d0a1a0a'],
    ['x-1.wav', 'audio/wav', '52494646'],
  ])('serves %s as %s', async (name, type, magicHex) => {
    const response = await fetch(`${emulator.url}/files/${name}`);
    expect(response.headers.get('content-type')).toBe(type);
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.subarray(0, magicHex.length / 2).toString('hex')).toBe(magicHex);
    if (type === 'audio/wav') expect(bytes.subarray(8, 12).toString()).toBe('WAVE');
  });

  it('serves an MP4 (ftyp, avc1) and honours byte ranges', async () => {
    const whole = Buffer.from(await (await fetch(`${emulator.url}/files/abc.mp4`)).arrayBuffer());
    expect(whole.subarray(4, 12).toString()).toBe('ftypisom');
    expect(whole.includes(Buffer.from('avc1'))).toBe(true);
    // Top-level boxes tile the file exactly, moov first so players can start before the end.
    const boxes: string[] = [];
    for (let offset = 0; offset < whole.length; offset += whole.readUInt32BE(offset)) {
      boxes.push(whole.subarray(offset + 4, offset + 8).toString());
    }
    expect(boxes).toEqual(['ftyp', 'moov', 'mdat']);
    const part = await fetch(`${emulator.url}/files/abc.mp4`, { headers: { range: 'bytes=4-11' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await part.arrayBuffer()).toString()).toBe('ftypisom');
    expect((await fetch(`${emulator.url}/files/abc.exe`)).status).toBe(404);
  });
});

describe('control', () => {
  it('exposes tasks, scenario and finishing over HTTP', async () => {
    const control = (path: string, body?: unknown) =>
      fetch(`${emulator.url}/_emulator${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
    const tasks = (await (await control('/tasks')).json()) as Json[];
    expect(tasks.map((t) => t['id'])).toEqual([FIXTURE_SONG_TASK_ID, FIXTURE_VIDEO_TASK_ID]);

    expect((await control('/scenario', { hold: true, initialStatus: 'staged' })).status).toBe(200);
    expect(emulator.scenario).toMatchObject({ hold: true, initialStatus: 'staged' });
    expect((await control('/scenario', { bogus: 1 })).status).toBe(400);
    await control('/scenario', { initialStatus: null });
    expect(emulator.scenario.initialStatus).toBeUndefined();

    const taskId = await submit('/video-extend', videoBody());
    expect((await control(`/tasks/${taskId}/finish`, {})).status).toBe(200);
    expect(emulator.tasks.get(taskId)?.state).toBe('finished');
    expect((await control(`/tasks/${taskId}/finish`, {})).status).toBe(409);
    expect((await control('/tasks/nope/fail', {})).status).toBe(404);

    await control('/fail-next', { status: 500, path: '/fetch' });
    expect((await call('/fetch', { task_id: taskId })).status).toBe(500);
  });

  it('reset forgets tasks and logs but keeps the fixtures', async () => {
    await submit('/video-extend', videoBody());
    emulator.reset();
    expect([...emulator.tasks.keys()]).toEqual([FIXTURE_SONG_TASK_ID, FIXTURE_VIDEO_TASK_ID]);
    expect(emulator.requests).toHaveLength(0);
  });
});
