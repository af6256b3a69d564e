import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MediaClient, type MediaClientOptions } from '../src/services/media/client.js';
import {
  MediaAuthError,
  MediaOutcomeUnknownError,
  MediaProtocolError,
  MediaRequestInvalidError,
  MediaRequestRejectedError,
  MediaServerError,
  MediaServiceError,
  MediaUnavailableError,
} from '../src/services/media/errors.js';
import { normalizeTaskResult, ResultShapeError } from '../src/services/media/schemas.js';
import type {
  PhotoSource,
  PhotoUploadParams,
  SongExtendParams,
  TaskResult,
  UpscaleParams,
  VideoExtendParams,
} from '../src/services/media/types.js';
import { makePng } from './emulator/media/png.js';
import {
  FIXTURE_SONG_IDS,
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
  startEmulator,
  type Emulator,
  type RequestLogEntry,
  type TaskRecord,
} from './emulator/server.js';
import { mediaOperations } from '../src/services/operations/index.js';
import { DEFAULT_MEDIA_PATHS } from './helpers/media-paths.js';

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

interface Captured {
  logger: Logger;
  lines: Record<string, unknown>[];
}

function captureLogger(): Captured {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

const PATHS = DEFAULT_MEDIA_PATHS;

const clients: MediaClient[] = [];

function makeClient(baseUrl: string, overrides: Partial<MediaClientOptions> = {}): MediaClient {
  const client = new MediaClient({
    baseUrl,
    apiKey: overrides.apiKey ?? 'dev-key',
    paths: PATHS,
    photoFormat: 'base64',
    timeoutMs: 5_000,
    upscaleTimeoutMs: 5_000,
    logger: pino({ level: 'silent' }),
    operations: mediaOperations,
    ...overrides,
  });
  clients.push(client);
  return client;
}

/** Resolves with the rejection of `p` (fails the test when it resolves). */
async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

const PNG = makePng(8, 8);

function pngPhotos(count: number): PhotoSource[] {
  return Array.from({ length: count }, (_, i) => ({
    url: `https://cdn.example.test/p${i}.png`,
    open: async () =>
      (async function* () {
        yield new Uint8Array(PNG);
      })(),
  }));
}

function urlPhotos(count: number): PhotoSource[] {
  return Array.from({ length: count }, (_, i) => ({ url: `https://cdn.example.test/p${i}.png` }));
}

const UPSCALE: UpscaleParams = {
  imageUrl: 'https://cdn.example.test/in.png',
  prompt: 'a cat on a sofa',
  resemblance: 60,
};

/** Starts a tiny HTTP server answering every request with `handler`'s status/body, recording requests. */
async function startStub(
  handler: (req: { path: string; body: string }) => { status: number; body: string; contentType?: string },
): Promise<{
  url: string;
  requests: { path: string; headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}> {
  const requests: { path: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '';
      requests.push({ path, headers: req.headers, body });
      const answer = handler({ path, body });
      res.statusCode = answer.status;
      res.setHeader('content-type', answer.contentType ?? 'application/json');
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({ scenario: { stepMs: 20 } });
});

afterAll(async () => {
  await emulator.close();
});

beforeEach(() => {
  emulator.reset();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function taskOf(id: string): Readonly<TaskRecord> {
  const task = emulator.tasks.get(id);
  if (!task) throw new Error(`emulator has no task ${id}`);
  return task;
}

function requestsTo(path: string): RequestLogEntry[] {
  return emulator.requests.filter((r) => r.path === path);
}

/** The single request to `path`, checked for the documented headers. */
function expectOneWellFormedRequest(path: string): void {
  const reqs = requestsTo(path);
  expect(reqs).toHaveLength(1);
  const [req] = reqs;
  expect(req?.authorized).toBe(true);
  expect(req?.headers['content-type']).toBe('application/json');
  expect(req?.statusCode).toBe(200);
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

describe('MediaClient operations against the emulator', () => {
  it('upscale: normalized finished result with image urls and seed; documented body only', async () => {
    const client = makeClient(emulator.url);
    const result = await client.upscale({ ...UPSCALE, detail: 30, seed: 1234, magicPromptOption: 'OFF' });
    expect(result.operation).toBe('upscale');
    expect(result.state).toBe('finished');
    expect(result.percentage).toBe(100);
    expect(result.outputs?.kind).toBe('upscale');
    if (result.outputs?.kind !== 'upscale') throw new Error('not an upscale output');
    expect(result.outputs.imageUrls).toHaveLength(4);
    for (const u of result.outputs.imageUrls) expect(u.startsWith(emulator.url)).toBe(true);
    expect(result.outputs.seed).toBe(1234);
    expect(typeof result.taskId).toBe('string');
    const task = taskOf(result.taskId ?? '');
    expect(task.params).toEqual({
      image_url: UPSCALE.imageUrl,
      prompt: UPSCALE.prompt,
      resemblance: 60,
      detail: 30,
      seed: 1234,
      magic_prompt_option: 'OFF',
    });
    expectOneWellFormedRequest('/image-upscale');
  });

  it('upscale: optional fields left out are not sent at all', async () => {
    const client = makeClient(emulator.url);
    const result = await client.upscale(UPSCALE);
    const task = taskOf(result.taskId ?? '');
    expect(Object.keys(task.params).sort()).toEqual(['image_url', 'prompt', 'resemblance']);
    // The emulator picks a seed when none is given; the client reports it.
    if (result.outputs?.kind !== 'upscale') throw new Error('not an upscale output');
    expect(typeof result.outputs.seed).toBe('number');
  });

  it('extendSong returns the task id; body has exactly the documented fields', async () => {
    const client = makeClient(emulator.url);
    const params: SongExtendParams = {
      parentTaskId: FIXTURE_SONG_TASK_ID,
      songId: FIXTURE_SONG_IDS[1],
      continueAt: 12.5,
    };
    const submitted = await client.extendSong(params, {
      url: 'http://127.0.0.1:9/webhooks/media/x',
      secret: 's3cret',
    });
    expect(Object.keys(submitted)).toEqual(['taskId']);
    const task = taskOf(submitted.taskId);
    expect(task.operation).toBe('song');
    expect(task.params).toEqual({
      parent_task_id: FIXTURE_SONG_TASK_ID,
      song_id: FIXTURE_SONG_IDS[1],
      continue_at: 12.5,
      webhook_url: 'http://127.0.0.1:9/webhooks/media/x',
      webhook_secret: 's3cret',
    });
    expectOneWellFormedRequest('/song-extend');
  });

  it('extendSong without webhook / continue_at sends only the required fields', async () => {
    const client = makeClient(emulator.url);
    const submitted = await client.extendSong({
      parentTaskId: FIXTURE_SONG_TASK_ID,
      songId: FIXTURE_SONG_IDS[0],
    });
    expect(taskOf(submitted.taskId).params).toEqual({
      parent_task_id: FIXTURE_SONG_TASK_ID,
      song_id: FIXTURE_SONG_IDS[0],
    });
  });

  it('extendVideo returns the task id; body has exactly the documented fields', async () => {
    const client = makeClient(emulator.url);
    const params: VideoExtendParams = {
      parentTaskId: FIXTURE_VIDEO_TASK_ID,
      prompt: 'the camera pans left',
      imageUrl: 'https://cdn.example.test/start.png',
      endImageUrl: 'https://cdn.example.test/end.png',
      enhancePrompt: false,
      aspectRatio: '16:9',
    };
    const submitted = await client.extendVideo(params);
    const task = taskOf(submitted.taskId);
    expect(task.operation).toBe('video');
    expect(task.params).toEqual({
      parent_task_id: FIXTURE_VIDEO_TASK_ID,
      prompt: 'the camera pans left',
      image_url: 'https://cdn.example.test/start.png',
      end_image_url: 'https://cdn.example.test/end.png',
      enhance_prompt: false,
      aspect_ratio: '16:9',
    });
    expectOneWellFormedRequest('/video-extend');
  });

  it('uploadTrainingPhotos (base64) streams 10 real images; documented fields only', async () => {
    const client = makeClient(emulator.url);
    const params: PhotoUploadParams = {
      photos: pngPhotos(10),
      ethnicity: 'middle eastern',
      gender: 'female',
      age: 31,
    };
    const submitted = await client.uploadTrainingPhotos(params, {
      url: 'http://127.0.0.1:9/hook',
      secret: 'abc',
    });
    const task = taskOf(submitted.taskId);
    expect(task.operation).toBe('upload');
    expect(task.params).toEqual({
      ethnicity: 'middle eastern',
      gender: 'female',
      age: 31,
      webhook_url: 'http://127.0.0.1:9/hook',
      webhook_secret: 'abc',
      images: 10,
    });
    const uploads = emulator.uploads(submitted.taskId);
    expect(uploads).toHaveLength(10);
    for (const u of uploads) {
      expect(u.kind).toBe('base64');
      if (u.kind === 'base64') expect(u.byteLength).toBe(PNG.length);
    }
    expectOneWellFormedRequest('/ai-photo-upload');
  });

  it('uploadTrainingPhotos (url format) sends the URLs as given', async () => {
    const client = makeClient(emulator.url, { photoFormat: 'url' });
    const submitted = await client.uploadTrainingPhotos({
      photos: urlPhotos(30),
      ethnicity: 'white',
      gender: 'male',
    });
    const uploads = emulator.uploads(submitted.taskId);
    expect(uploads.map((u) => (u.kind === 'url' ? u.url : ''))).toEqual(urlPhotos(30).map((p) => p.url));
    expect(Object.keys(taskOf(submitted.taskId).params).sort()).toEqual(['ethnicity', 'gender', 'images']);
  });
});

// ---------------------------------------------------------------------------
// fetchTask: every state, every quirk
// ---------------------------------------------------------------------------

describe('MediaClient.fetchTask normalization', () => {
  it('song processing: integer percentage', async () => {
    const client = makeClient(emulator.url);
    emulator.nextScenario({ steps: [40], stepMs: 10, hold: true });
    const { taskId } = await client.extendSong({
      parentTaskId: FIXTURE_SONG_TASK_ID,
      songId: FIXTURE_SONG_IDS[0],
    });
    await emulator.waitFor(() => taskOf(taskId).history.length >= 2);
    const r = await client.fetchTask('song', taskId);
    expect(r).toMatchObject({
      operation: 'song',
      state: 'processing',
      percentage: 40,
      taskId,
      rawStatus: 'processing',
    });
    expect(r.outputs).toBeUndefined();
  });

  it('song finished: songs and top-level video url', async () => {
    const client = makeClient(emulator.url);
    const r = await client.fetchTask('song', FIXTURE_SONG_TASK_ID);
    expect(r.state).toBe('finished');
    if (r.outputs?.kind !== 'song') throw new Error('not a song output');
    expect(r.outputs.songs.map((s) => s.songId)).toEqual([...FIXTURE_SONG_IDS]);
    expect(r.outputs.songs[0]?.audioUrl).toMatch(/\.wav$/);
    expect(r.outputs.videoUrl).toMatch(/\.mp4$/);
  });

  it("video processing: string percentage ('40') becomes the number 40", async () => {
    const client = makeClient(emulator.url);
    emulator.nextScenario({ steps: [40], stepMs: 10, hold: true });
    const { taskId } = await client.extendVideo({ parentTaskId: FIXTURE_VIDEO_TASK_ID, prompt: 'go' });
    await emulator.waitFor(() => taskOf(taskId).history.length >= 2);
    expect(taskOf(taskId).body['percentage']).toBe('40');
    const r = await client.fetchTask('video', taskId);
    expect(r.state).toBe('processing');
    expect(r.percentage).toBe(40);
    expect(typeof r.percentage).toBe('number');
  });

  it('video finished WITHOUT status: finished with the video url', async () => {
    const client = makeClient(emulator.url);
    expect(taskOf(FIXTURE_VIDEO_TASK_ID).body['status']).toBeUndefined();
    const r = await client.fetchTask('video', FIXTURE_VIDEO_TASK_ID);
    expect(r.state).toBe('finished');
    expect(r.rawStatus).toBeUndefined();
    expect(r.outputs).toEqual({ kind: 'video', videoUrl: taskOf(FIXTURE_VIDEO_TASK_ID).body['video_url'] });
  });

  it('upload processing WITHOUT task_id: taskId filled from the request', async () => {
    const client = makeClient(emulator.url, { photoFormat: 'url' });
    emulator.nextScenario({ steps: [], hold: true });
    const { taskId } = await client.uploadTrainingPhotos({
      photos: urlPhotos(10),
      ethnicity: 'asian',
      gender: 'male',
    });
    expect(taskOf(taskId).body['task_id']).toBeUndefined();
    const r = await client.fetchTask('upload', taskId);
    expect(r.state).toBe('processing');
    expect(r.taskId).toBe(taskId);
    expect(r.message).toMatch(/10 images/);
  });

  it('upload finished: expiresAt and message', async () => {
    const client = makeClient(emulator.url, { photoFormat: 'url' });
    emulator.nextScenario({ steps: [], hold: true });
    const { taskId } = await client.uploadTrainingPhotos({
      photos: urlPhotos(12),
      ethnicity: 'latino',
      gender: 'female',
    });
    emulator.finish(taskId);
    const r = await client.fetchTask('upload', taskId);
    expect(r.state).toBe('finished');
    expect(r.taskId).toBe(taskId);
    if (r.outputs?.kind !== 'upload') throw new Error('not an upload output');
    expect(r.outputs.expiresAt).toBe(taskOf(taskId).body['expires_at']);
    expect(Date.parse(r.outputs.expiresAt ?? '')).toBeGreaterThan(Date.now());
    expect(r.outputs.message).toMatch(/12 images/);
  });

  it.each([
    ['pending', 'queued'],
    ['staged', 'queued'],
    ['starting', 'processing'],
    // The provider retries internally: still under way.
    ['retry', 'processing'],
  ] as const)('status %s → %s', async (status, state) => {
    const client = makeClient(emulator.url);
    emulator.nextScenario({ initialStatus: status, steps: [], hold: true });
    const { taskId } = await client.extendSong({
      parentTaskId: FIXTURE_SONG_TASK_ID,
      songId: FIXTURE_SONG_IDS[0],
    });
    const r = await client.fetchTask('song', taskId);
    expect(r.state).toBe(state);
    expect(r.rawStatus).toBe(status);
  });

  it('failed: errors[].msg kept', async () => {
    const client = makeClient(emulator.url);
    emulator.nextScenario({ steps: [], hold: true });
    const { taskId } = await client.extendVideo({ parentTaskId: FIXTURE_VIDEO_TASK_ID, prompt: 'go' });
    emulator.fail(taskId, 'Content policy: the prompt was refused');
    const r = await client.fetchTask('video', taskId);
    expect(r.state).toBe('failed');
    expect(r.errors).toEqual(['Content policy: the prompt was refused']);
    expect(r.outputs).toBeUndefined();
  });

  it('upload failed: a result with errors is a failed task, not a rejected request', async () => {
    const client = makeClient(emulator.url, { photoFormat: 'url' });
    emulator.nextScenario({ steps: [], hold: true });
    const { taskId } = await client.uploadTrainingPhotos({
      photos: urlPhotos(10),
      ethnicity: 'asian',
      gender: 'male',
    });
    emulator.fail(taskId, 'Faces not detected in 4 images');
    const r = await client.fetchTask('upload', taskId);
    expect(r.state).toBe('failed');
    expect(r.errors).toEqual(['Faces not detected in 4 images']);
  });

  it('fetch of an unknown task → MediaRequestRejectedError with the service text', async () => {
    const client = makeClient(emulator.url);
    const err = await rejectionOf(client.fetchTask('song', 'no-such-task'));
    expect(err).toBeInstanceOf(MediaRequestRejectedError);
    if (err instanceof MediaRequestRejectedError) expect(err.messages).toEqual(['Task not found']);
    expect(requestsTo('/fetch')).toHaveLength(1);
  });

  it('unknown status → processing, logged once per status', async () => {
    const { logger, lines } = captureLogger();
    const client = makeClient(emulator.url, { logger });
    emulator.nextScenario({ initialStatus: 'teleporting', steps: [], hold: true });
    const { taskId } = await client.extendSong({
      parentTaskId: FIXTURE_SONG_TASK_ID,
      songId: FIXTURE_SONG_IDS[0],
    });
    const first = await client.fetchTask('song', taskId);
    const second = await client.fetchTask('song', taskId);
    expect(first.state).toBe('processing');
    expect(second.state).toBe('processing');
    expect(first.rawStatus).toBe('teleporting');
    const warnings = lines.filter((l) => l['status'] === 'teleporting');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.['level']).toBe(40);
  });

  it('fetch sends {"task_id"} only, with the bare key', async () => {
    const stub = await startStub(() => ({
      status: 200,
      body: JSON.stringify({ task_id: 't-1', task_type: 'song', status: 'processing', percentage: 5 }),
    }));
    try {
      const client = makeClient(stub.url, { apiKey: 'key-123' });
      await client.fetchTask('song', 't-1');
      expect(stub.requests).toHaveLength(1);
      const [req] = stub.requests;
      expect(req?.path).toBe('/fetch');
      expect(req?.headers['authorization']).toBe('key-123');
      expect(req?.headers['content-type']).toBe('application/json');
      expect(JSON.parse(req?.body ?? '')).toEqual({ task_id: 't-1' });
    } finally {
      await stub.close();
    }
  });
});

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

describe('MediaClient error classes', () => {
  it('400 {errors:[{msg}]} → MediaRequestRejectedError keeping every msg', async () => {
    // Base64 "photos" that are not images: the emulator reports one msg per image.
    const notImages: PhotoSource[] = Array.from({ length: 10 }, (_, i) => ({
      url: `https://cdn.example.test/${i}`,
      open: async () =>
        (async function* () {
          yield new TextEncoder().encode(`not an image ${i}`);
        })(),
    }));
    const client = makeClient(emulator.url);
    const err = await rejectionOf(
      client.uploadTrainingPhotos({ photos: notImages, ethnicity: 'black', gender: 'male' }),
    );
    expect(err).toBeInstanceOf(MediaRequestRejectedError);
    if (!(err instanceof MediaRequestRejectedError)) return;
    expect(err.status).toBe(400);
    expect(err.retryable).toBe(false);
    expect(err.messages).toHaveLength(10);
    for (let i = 0; i < 10; i++) expect(err.messages[i]).toContain(`images[${i}]`);
    expect(err.userMessage).toContain('images[9]');
  });

  it('400 with several msgs from a stub: all kept, in order', async () => {
    const stub = await startStub(() => ({
      status: 400,
      body: JSON.stringify({
        errors: [{ msg: 'first problem' }, { msg: 'second problem' }, { msg: 'third' }],
      }),
    }));
    try {
      const client = makeClient(stub.url);
      const err = await rejectionOf(client.extendVideo({ parentTaskId: 'abc', prompt: 'p' }));
      expect(err).toBeInstanceOf(MediaRequestRejectedError);
      if (err instanceof MediaRequestRejectedError) {
        expect(err.messages).toEqual(['first problem', 'second problem', 'third']);
      }
    } finally {
      await stub.close();
    }
  });

  it('2xx carrying a bare {errors} on a submission → MediaRequestRejectedError', async () => {
    const stub = await startStub(() => ({
      status: 200,
      body: JSON.stringify({ errors: [{ msg: 'quota exceeded' }] }),
    }));
    try {
      const client = makeClient(stub.url);
      const err = await rejectionOf(client.extendSong({ parentTaskId: 'abc', songId: 'def' }));
      expect(err).toBeInstanceOf(MediaRequestRejectedError);
      if (err instanceof MediaRequestRejectedError) expect(err.messages).toEqual(['quota exceeded']);
    } finally {
      await stub.close();
    }
  });

  it('a photo that cannot be read → MediaRequestInvalidError naming the photo', async () => {
    const client = makeClient(emulator.url);
    const photos = pngPhotos(10);
    photos[3] = {
      url: 'https://cdn.example.test/broken.png',
      open: () => Promise.reject(new Error('attachment gone (404)')),
    };
    const err = await rejectionOf(
      client.uploadTrainingPhotos({ photos, ethnicity: 'white', gender: 'female' }),
    );
    expect(err).toBeInstanceOf(MediaRequestInvalidError);
    if (err instanceof MediaRequestInvalidError)
      expect(err.problems.join(' ')).toMatch(/photo 4.*attachment gone/);
    expect([...emulator.tasks.values()].filter((t) => t.operation === 'upload')).toHaveLength(0);
  });

  it('emulator validation (unknown parent) → MediaRequestRejectedError naming the field', async () => {
    const client = makeClient(emulator.url);
    const err = await rejectionOf(client.extendSong({ parentTaskId: 'nope-123', songId: 'x' }));
    expect(err).toBeInstanceOf(MediaRequestRejectedError);
    if (err instanceof MediaRequestRejectedError) expect(err.messages.join(' ')).toContain('parent_task_id');
  });

  it('401 {} → MediaAuthError (not retryable)', async () => {
    const client = makeClient(emulator.url, { apiKey: 'wrong-key' });
    const err = await rejectionOf(client.upscale(UPSCALE));
    expect(err).toBeInstanceOf(MediaAuthError);
    if (err instanceof MediaServiceError) {
      expect(err.status).toBe(401);
      expect(err.retryable).toBe(false);
    }
    expect(requestsTo('/image-upscale')).toHaveLength(1);
  });

  it('401 on fetch → MediaAuthError, not retried', async () => {
    const client = makeClient(emulator.url, { apiKey: 'wrong-key' });
    const err = await rejectionOf(client.fetchTask('song', FIXTURE_SONG_TASK_ID));
    expect(err).toBeInstanceOf(MediaAuthError);
    expect(requestsTo('/fetch')).toHaveLength(1);
  });

  it('500 {} → MediaServerError (retryable); submissions are NOT retried', async () => {
    const client = makeClient(emulator.url);
    emulator.failNext(1, { status: 500, path: '/song-extend' });
    const err = await rejectionOf(
      client.extendSong({ parentTaskId: FIXTURE_SONG_TASK_ID, songId: FIXTURE_SONG_IDS[0] }),
    );
    expect(err).toBeInstanceOf(MediaServerError);
    if (err instanceof MediaServiceError) {
      expect(err.status).toBe(500);
      expect(err.retryable).toBe(true);
    }
    // Give a would-be retry time to show up.
    await new Promise((r) => setTimeout(r, 700));
    expect(requestsTo('/song-extend')).toHaveLength(1);
    expect([...emulator.tasks.values()].filter((t) => t.operation === 'song' && !t.fixture)).toHaveLength(0);
  });

  it('500 on upscale: exactly one request', async () => {
    const client = makeClient(emulator.url);
    emulator.failNext(1, { status: 500, path: '/image-upscale' });
    expect(await rejectionOf(client.upscale(UPSCALE))).toBeInstanceOf(MediaServerError);
    await new Promise((r) => setTimeout(r, 700));
    expect(requestsTo('/image-upscale')).toHaveLength(1);
  });

  it('fetch is retried on 500: one failure then success', async () => {
    const client = makeClient(emulator.url);
    emulator.failNext(1, { status: 500, path: '/fetch' });
    const r = await client.fetchTask('video', FIXTURE_VIDEO_TASK_ID);
    expect(r.state).toBe('finished');
    const reqs = requestsTo('/fetch');
    expect(reqs.map((q) => q.statusCode)).toEqual([500, 200]);
  });

  it('fetch gives up after its retries with MediaServerError', async () => {
    const client = makeClient(emulator.url, { fetchRetries: 1 });
    emulator.failNext(5, { status: 500, path: '/fetch' });
    const err = await rejectionOf(client.fetchTask('video', FIXTURE_VIDEO_TASK_ID));
    expect(err).toBeInstanceOf(MediaServerError);
    expect(requestsTo('/fetch')).toHaveLength(2);
  });

  it('a submission that times out after sending → MediaOutcomeUnknownError (never resent)', async () => {
    const client = makeClient(emulator.url, { timeoutMs: 1_000 });
    emulator.delayNext(2_500, '/video-extend');
    const started = Date.now();
    const err = await rejectionOf(
      client.extendVideo({ parentTaskId: FIXTURE_VIDEO_TASK_ID, prompt: 'slow' }),
    );
    expect(err).toBeInstanceOf(MediaOutcomeUnknownError);
    if (err instanceof MediaServiceError) expect(err.retryable).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_400);
    // The service carries it out once the delay is over: once, never a second time.
    const videoTasks = () =>
      [...emulator.tasks.values()].filter((t) => t.operation === 'video' && !t.fixture);
    await emulator.waitFor(() => videoTasks().length === 1, 4_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(videoTasks()).toHaveLength(1);
  });

  it('fetch timeout → MediaUnavailableError', async () => {
    const client = makeClient(emulator.url, { timeoutMs: 1_000, fetchRetries: 0 });
    emulator.delayNext(2_500, '/fetch');
    const err = await rejectionOf(client.fetchTask('video', FIXTURE_VIDEO_TASK_ID));
    expect(err).toBeInstanceOf(MediaUnavailableError);
  });

  it('upscale uses its own (longer) timeout', async () => {
    const client = makeClient(emulator.url, { timeoutMs: 1_000, upscaleTimeoutMs: 5_000 });
    emulator.delayNext(1_500, '/image-upscale');
    const r = await client.upscale(UPSCALE);
    expect(r.state).toBe('finished');
  });

  it('non-JSON answer → MediaProtocolError', async () => {
    const stub = await startStub(() => ({
      status: 200,
      body: '<html>gateway</html>',
      contentType: 'text/html',
    }));
    try {
      const client = makeClient(stub.url);
      const err = await rejectionOf(client.extendSong({ parentTaskId: 'abc', songId: 'def' }));
      expect(err).toBeInstanceOf(MediaProtocolError);
      expect(stub.requests).toHaveLength(1);
    } finally {
      await stub.close();
    }
  });

  it('JSON of the wrong shape on submit → MediaProtocolError', async () => {
    const stub = await startStub(() => ({ status: 200, body: JSON.stringify({ id: 5 }) }));
    try {
      const client = makeClient(stub.url);
      expect(await rejectionOf(client.extendSong({ parentTaskId: 'abc', songId: 'def' }))).toBeInstanceOf(
        MediaProtocolError,
      );
    } finally {
      await stub.close();
    }
  });

  it('connection refused → MediaUnavailableError', async () => {
    const stub = await startStub(() => ({ status: 200, body: '{}' }));
    const url = stub.url;
    await stub.close();
    const client = makeClient(url);
    const err = await rejectionOf(client.extendSong({ parentTaskId: 'abc', songId: 'def' }));
    expect(err).toBeInstanceOf(MediaUnavailableError);
  });
});

// ---------------------------------------------------------------------------
// Request validation: nothing is sent
// ---------------------------------------------------------------------------

describe('MediaClient request validation (no request sent)', () => {
  async function expectInvalid(call: (c: MediaClient) => Promise<unknown>, field: string): Promise<void> {
    const client = makeClient(emulator.url, { photoFormat: 'url' });
    const before = emulator.requests.length;
    const err = await rejectionOf(call(client));
    expect(err).toBeInstanceOf(MediaRequestInvalidError);
    if (err instanceof MediaRequestInvalidError) {
      expect(err.problems.length).toBeGreaterThan(0);
      expect(err.problems.join('\n')).toContain(field);
      expect(err.retryable).toBe(false);
    }
    // Let anything that was (wrongly) sent reach the emulator's log.
    await new Promise((r) => setTimeout(r, 50));
    expect(emulator.requests.length).toBe(before);
  }

  it.each([0, 101, 1.5])('resemblance %s', async (resemblance) => {
    await expectInvalid((c) => c.upscale({ ...UPSCALE, resemblance }), 'resemblance');
  });

  it.each([0, 101])('detail %s', async (detail) => {
    await expectInvalid((c) => c.upscale({ ...UPSCALE, detail }), 'detail');
  });

  it('empty prompt (upscale and video)', async () => {
    await expectInvalid((c) => c.upscale({ ...UPSCALE, prompt: '   ' }), 'prompt');
    await expectInvalid((c) => c.extendVideo({ parentTaskId: FIXTURE_VIDEO_TASK_ID, prompt: '' }), 'prompt');
  });

  it('non-http image_url', async () => {
    await expectInvalid((c) => c.upscale({ ...UPSCALE, imageUrl: 'ftp://example.test/a.png' }), 'image_url');
    await expectInvalid((c) => c.upscale({ ...UPSCALE, imageUrl: 'not a url' }), 'image_url');
  });

  it.each([9, 31])('%s images', async (count) => {
    await expectInvalid(
      (c) => c.uploadTrainingPhotos({ photos: urlPhotos(count), ethnicity: 'asian', gender: 'female' }),
      'images',
    );
  });

  it('bad ethnicity', async () => {
    await expectInvalid(
      (c) =>
        c.uploadTrainingPhotos({
          photos: urlPhotos(10),
          ethnicity: 'martian' as PhotoUploadParams['ethnicity'],
          gender: 'female',
        }),
      'ethnicity',
    );
  });

  it('bad gender', async () => {
    await expectInvalid(
      (c) =>
        c.uploadTrainingPhotos({
          photos: urlPhotos(10),
          ethnicity: 'asian',
          gender: 'other' as PhotoUploadParams['gender'],
        }),
      'gender',
    );
  });

  it('bad aspect ratio', async () => {
    await expectInvalid(
      (c) =>
        c.extendVideo({
          parentTaskId: FIXTURE_VIDEO_TASK_ID,
          prompt: 'p',
          aspectRatio: '5:4' as VideoExtendParams['aspectRatio'] & string,
        }),
      'aspect_ratio',
    );
  });

  it('several problems are all reported', async () => {
    const client = makeClient(emulator.url);
    const err = await rejectionOf(client.upscale({ imageUrl: 'x', prompt: '', resemblance: 0, detail: 500 }));
    expect(err).toBeInstanceOf(MediaRequestInvalidError);
    if (err instanceof MediaRequestInvalidError) {
      const text = err.problems.join('\n');
      for (const f of ['image_url', 'prompt', 'resemblance', 'detail']) expect(text).toContain(f);
    }
  });
});

// ---------------------------------------------------------------------------
// Base URL with a path prefix
// ---------------------------------------------------------------------------

describe('MediaClient base URL', () => {
  it('keeps a path prefix (and ignores a trailing slash)', async () => {
    const stub = await startStub(({ path }) =>
      path.endsWith('/fetch')
        ? {
            status: 200,
            body: JSON.stringify({ task_id: 't', task_type: 'video-ext', video_url: 'https://x.test/v.mp4' }),
          }
        : { status: 200, body: JSON.stringify({ task_id: 'new-task' }) },
    );
    try {
      const client = makeClient(`${stub.url}/v1/`);
      await expect(client.extendSong({ parentTaskId: 'abc', songId: 'def' })).resolves.toEqual({
        taskId: 'new-task',
      });
      const r = await client.fetchTask('video', 't');
      expect(r.state).toBe('finished');
      expect(stub.requests.map((q) => q.path)).toEqual(['/v1/song-extend', '/v1/fetch']);
    } finally {
      await stub.close();
    }
  });
});

// ---------------------------------------------------------------------------
// normalizeTaskResult, directly
// ---------------------------------------------------------------------------

describe('normalizeTaskResult edge cases', () => {
  const norm = (op: Parameters<typeof normalizeTaskResult>[0], body: unknown): TaskResult =>
    normalizeTaskResult(op, body, mediaOperations).result;

  it("percentage '40.5' → 41 (rounded integer)", () => {
    const r = norm('video', {
      task_id: 't',
      task_type: 'video-ext',
      status: 'processing',
      percentage: '40.5',
    });
    expect(r.percentage).toBe(41);
    expect(Number.isInteger(r.percentage)).toBe(true);
  });

  it("percentage 'abc' → ResultShapeError", () => {
    expect(() => norm('video', { task_id: 't', status: 'processing', percentage: 'abc' })).toThrow(
      ResultShapeError,
    );
  });

  it('percentage above 100 is clamped, below 0 too', () => {
    expect(norm('song', { task_id: 't', status: 'processing', percentage: 250 }).percentage).toBe(100);
    expect(norm('song', { task_id: 't', status: 'processing', percentage: -5 }).percentage).toBe(0);
  });

  it('finished song without songs → ResultShapeError', () => {
    expect(() =>
      norm('song', { task_id: 't', task_type: 'song', status: 'finished', video_url: 'https://x/v.mp4' }),
    ).toThrow(ResultShapeError);
    expect(() => norm('song', { task_id: 't', status: 'finished', songs: [] })).toThrow(ResultShapeError);
  });

  it('finished upscale without image_urls → ResultShapeError', () => {
    expect(() => norm('upscale', { task_id: 't', status: 'finished', seed: 1 })).toThrow(ResultShapeError);
  });

  it('extra unknown fields are tolerated and kept in raw', () => {
    const body = {
      task_id: 't',
      task_type: 'video-ext',
      video_url: 'https://x.test/v.mp4',
      credits_used: 12,
      nested: { anything: [1, 2] },
    };
    const r = norm('video', body);
    expect(r.state).toBe('finished');
    expect(r.raw).toBe(body);
  });

  it('non-object bodies → ResultShapeError', () => {
    for (const body of [null, 'finished', 42, [1, 2]])
      expect(() => norm('song', body)).toThrow(ResultShapeError);
  });

  it('wrong field types → ResultShapeError', () => {
    expect(() => norm('song', { task_id: 't', status: 5 })).toThrow(ResultShapeError);
    expect(() => norm('song', { task_id: 't', status: 'finished', songs: 'x' })).toThrow(ResultShapeError);
  });

  it('video processing with a status keeps percentage; finished forces 100', () => {
    expect(norm('video', { task_id: 't', status: 'processing', percentage: '7' }).percentage).toBe(7);
    const fin = norm('video', { task_id: 't', video_url: 'https://x.test/v.mp4', percentage: '60' });
    expect(fin.state).toBe('finished');
    expect(fin.percentage).toBe(100);
  });

  it('upload processing without task_id has no taskId (client fills it)', () => {
    const r = norm('upload', { status: 'processing', message: 'Preparing' });
    expect(r.state).toBe('processing');
    expect(r.taskId).toBeUndefined();
    expect(r.message).toBe('Preparing');
  });

  it('upload processing without status and without expires_at stays processing', () => {
    expect(norm('upload', { message: 'Preparing' }).state).toBe('processing');
  });

  it('failed keeps every msg; falls back to error/message', () => {
    expect(
      norm('song', { task_id: 't', status: 'failed', errors: [{ msg: 'a' }, { msg: 'b' }] }).errors,
    ).toEqual(['a', 'b']);
    expect(norm('song', { task_id: 't', status: 'failed', error: 'boom' }).errors).toEqual(['boom']);
  });

  it('unknown status is reported', () => {
    const out = normalizeTaskResult('song', { task_id: 't', status: 'Weird' }, mediaOperations);
    expect(out.result.state).toBe('processing');
    expect(out.unknownStatus).toBe('Weird');
  });
});
