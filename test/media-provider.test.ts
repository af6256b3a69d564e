/**
 * The real provider's behaviour through the real MediaClient against the emulator (issue 29
 * and the I/O items of issue 26): unknown outcomes, 402, 429, the adaptive submit limit,
 * fetch-many and the TaskReader, body caps, tolerant parsing, and the account monitor.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errors as undiciErrors } from 'undici';
import { pino, type Logger } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../src/metrics.js';
import {
  AccountMonitor,
  type AccountMonitorOptions,
  type AccountReadings,
} from '../src/services/media/account-monitor.js';
import { MediaClient, type Clock, type MediaClientOptions } from '../src/services/media/client.js';
import {
  MediaAuthError,
  MediaBusyError,
  MediaOutOfCreditsError,
  MediaOutcomeUnknownError,
  MediaRequestRejectedError,
  MediaResponseTooLargeError,
  MediaServerError,
  MediaServiceError,
  MediaTaskNotInAnswerError,
  MediaUnavailableError,
} from '../src/services/media/errors.js';
import { retryAfterMs } from '../src/services/media/retry-after.js';
import { normalizeTaskResult } from '../src/services/media/schemas.js';
import { SubmitLimit } from '../src/services/media/submit-limit.js';
import { TaskReader, TaskReaderClosedError } from '../src/services/media/task-batcher.js';
import { certainlyNotSent, transportError } from '../src/services/media/transport.js';
import {
  FIXTURE_SONG_IDS,
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
  startEmulator,
  type Emulator,
} from './emulator/server.js';
import { mediaOperations } from '../src/services/operations/index.js';
import { TimerSchedule } from '../src/services/shared/periodic.js';
import { DEFAULT_MEDIA_PATHS } from './helpers/media-paths.js';

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

function captureLogger(): { logger: Logger; lines: LogLine[]; raw: string[] } {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const logger = pino(
    { level: 'debug' },
    {
      write: (line: string) => {
        raw.push(line);
        lines.push(JSON.parse(line) as LogLine);
      },
    },
  );
  return { logger, lines, raw };
}

const PATHS = DEFAULT_MEDIA_PATHS;

/** Records the waits instead of waiting (the 429 path); `now` stays real. */
function recordingClock(): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  return { sleeps, now: () => Date.now(), sleep: async (ms) => void sleeps.push(ms) };
}

const clients: MediaClient[] = [];
function makeClient(baseUrl: string, overrides: Partial<MediaClientOptions> = {}): MediaClient {
  const client = new MediaClient({
    baseUrl,
    apiKey: 'dev-key',
    paths: PATHS,
    photoFormat: 'url',
    timeoutMs: 5_000,
    upscaleTimeoutMs: 5_000,
    logger: pino({ level: 'silent' }),
    clock: recordingClock(),
    operations: mediaOperations,
    ...overrides,
  });
  clients.push(client);
  return client;
}

async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject, but it resolved');
}

const SONG = { parentTaskId: FIXTURE_SONG_TASK_ID, songId: FIXTURE_SONG_IDS[0] };
const VIDEO = { parentTaskId: FIXTURE_VIDEO_TASK_ID, prompt: 'the camera pans left' };

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

const requestsTo = (path: string) => emulator.requests.filter((r) => r.path === path);
const ownTasks = () => [...emulator.tasks.values()].filter((t) => !t.fixture);

/** A plain HTTP server answering every request with `answer` (for what the emulator never sends). */
async function startStub(
  answer: (path: string) => { status: number; body: string | Buffer; type?: string },
): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits.push(req.url ?? '');
      const a = answer(req.url ?? '');
      res.statusCode = a.status;
      res.setHeader('content-type', a.type ?? 'application/json');
      res.end(a.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Submits `n` song tasks held processing (steps `[]`, hold) and returns their ids. */
async function heldSongTasks(client: MediaClient, n: number): Promise<string[]> {
  emulator.setScenario({ hold: true, steps: [] });
  const ids = await Promise.all(Array.from({ length: n }, () => client.extendSong(SONG)));
  return ids.map((s) => s.taskId);
}

// ---------------------------------------------------------------------------
// Submissions: what an answer means
// ---------------------------------------------------------------------------

describe('a submission whose answer was lost is an unknown outcome (never sent twice)', () => {
  it.each([
    ['a proxy 502 HTML page', { mode: 'bad-gateway' as const }],
    ['the connection reset after the request was read', { mode: 'reset' as const }],
    ['an answer later than the timeout', { mode: 'late' as const, delayMs: 3_000 }],
  ])('%s → MediaOutcomeUnknownError while the emulator holds the task', async (_what, lost) => {
    const client = makeClient(emulator.url, { timeoutMs: 1_000 });
    emulator.setScenario({ hold: true, steps: [] });
    emulator.loseNextAnswer(1, lost);
    const err = await rejectionOf(client.extendSong(SONG));
    expect(err).toBeInstanceOf(MediaOutcomeUnknownError);
    if (err instanceof MediaServiceError) {
      expect(err.retryable).toBe(false);
      expect(err.userMessage).toMatch(/did not confirm/);
    }
    const tasks = ownTasks();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]?.state).toBe('processing');
    // Sent once, and no answer seen (the late one is still on its way).
    expect(requestsTo('/song-extend').length).toBeLessThanOrEqual(1);
    expect(requestsTo('/song-extend').filter((r) => r.statusCode === 200)).toHaveLength(0);
  });

  it.each([503, 504, 502] as const)(
    '%s from a gateway → MediaOutcomeUnknownError (not a failure)',
    async (status) => {
      const client = makeClient(emulator.url);
      emulator.failNext(1, { status, path: '/video-extend' });
      const err = await rejectionOf(client.extendVideo(VIDEO));
      expect(err).toBeInstanceOf(MediaOutcomeUnknownError);
      expect((err as MediaServiceError).status).toBe(status);
      expect(requestsTo('/video-extend')).toHaveLength(1);
    },
  );

  it("a 500 that is not the service's JSON (a proxy's page) → unknown; the service's own 500 {} fails at once", async () => {
    const stub = await startStub((path) =>
      path.includes('song')
        ? { status: 500, body: '<html><body>Internal Server Error</body></html>', type: 'text/html' }
        : { status: 500, body: '{}' },
    );
    try {
      const client = makeClient(stub.url);
      expect(await rejectionOf(client.extendSong(SONG))).toBeInstanceOf(MediaOutcomeUnknownError);
      const own = await rejectionOf(client.extendVideo(VIDEO));
      expect(own).toBeInstanceOf(MediaServerError);
      expect(own).not.toBeInstanceOf(MediaOutcomeUnknownError);
      expect(stub.hits).toHaveLength(2);
    } finally {
      await stub.close();
    }
  });

  it('certainly not sent (connection refused) → MediaUnavailableError, a plain failure', async () => {
    const stub = await startStub(() => ({ status: 200, body: '{}' }));
    await stub.close();
    const err = await rejectionOf(makeClient(stub.url).extendSong(SONG));
    expect(err).toBeInstanceOf(MediaUnavailableError);
    expect(err).not.toBeInstanceOf(MediaOutcomeUnknownError);
  });

  it('transport failures: connect-level ones were certainly not sent, the rest may have been', () => {
    const sys = (code: string) => Object.assign(new Error(code), { code });
    for (const notSent of [
      new undiciErrors.ConnectTimeoutError(),
      sys('ECONNREFUSED'),
      sys('ENOTFOUND'),
      sys('EAI_AGAIN'),
      sys('EHOSTUNREACH'),
      new Error('wrapped', { cause: sys('ENETUNREACH') }),
      sys('ERR_TLS_CERT_ALTNAME_INVALID'),
    ]) {
      expect(certainlyNotSent(notSent)).toBe(true);
      expect(transportError(notSent, '/x', 'submit')).toBeInstanceOf(MediaUnavailableError);
    }
    for (const maybeSent of [
      new undiciErrors.HeadersTimeoutError(),
      new undiciErrors.BodyTimeoutError(),
      new undiciErrors.SocketError('other side closed'),
      sys('ECONNRESET'),
      sys('EPIPE'),
      new Error('something else'),
    ]) {
      expect(certainlyNotSent(maybeSent)).toBe(false);
      expect(transportError(maybeSent, '/x', 'submit')).toBeInstanceOf(MediaOutcomeUnknownError);
      // A read can always be asked again: just unavailable.
      expect(transportError(maybeSent, '/x', 'read')).toBeInstanceOf(MediaUnavailableError);
    }
  });
});

describe("the service's documented errors fail at once", () => {
  it.each([
    [400, MediaRequestRejectedError],
    [401, MediaAuthError],
    [403, MediaAuthError],
    [404, MediaRequestRejectedError],
    [409, MediaRequestRejectedError],
    [422, MediaRequestRejectedError],
    [500, MediaServerError],
  ] as const)('%s → %s, one request, nothing created', async (status, type) => {
    const client = makeClient(emulator.url);
    emulator.failNext(1, { status, path: '/song-extend' });
    const err = await rejectionOf(client.extendSong(SONG));
    expect(err).toBeInstanceOf(type);
    expect(err).not.toBeInstanceOf(MediaOutcomeUnknownError);
    expect((err as MediaServiceError).status).toBe(status);
    expect(requestsTo('/song-extend')).toHaveLength(1);
    expect(ownTasks()).toHaveLength(0);
  });

  it('402 (out of credits) → MediaOutOfCreditsError that blames no one; works again once topped up', async () => {
    const client = makeClient(emulator.url);
    emulator.setAccount({ credits: 1 });
    const err = await rejectionOf(client.extendVideo(VIDEO));
    expect(err).toBeInstanceOf(MediaOutOfCreditsError);
    if (err instanceof MediaServiceError) {
      expect(err.status).toBe(402);
      expect(err.userMessage).toBe(
        'The media service is unavailable for now. Nothing was charged; please try again later.',
      );
    }
    expect(requestsTo('/video-extend')).toHaveLength(1);
    expect(ownTasks()).toHaveLength(0);
    emulator.setAccount({ addCredits: 10 });
    await client.extendVideo(VIDEO);
    expect(emulator.account.credits).toBe(5);
  });
});

// ---------------------------------------------------------------------------
// 429 and the adaptive limit
// ---------------------------------------------------------------------------

describe('429: waited out per Retry-After, then sent again', () => {
  it('seconds: waits exactly that long each time, tells onWaiting, sends once more per 429', async () => {
    const clock = recordingClock();
    const client = makeClient(emulator.url, { clock });
    emulator.rateLimitNext(2, { retryAfter: 3 });
    const waits: number[] = [];
    const before = Date.now();
    const { taskId } = await client.extendSong(SONG, undefined, { onWaiting: (until) => waits.push(until) });
    expect(clock.sleeps).toEqual([3_000, 3_000]);
    expect(waits).toHaveLength(2);
    for (const until of waits) {
      expect(until).toBeGreaterThanOrEqual(before + 3_000);
      expect(until).toBeLessThanOrEqual(Date.now() + 3_000);
    }
    expect(requestsTo('/song-extend').map((r) => r.statusCode)).toEqual([429, 429, 200]);
    expect(ownTasks().map((t) => t.id)).toEqual([taskId]);
  });

  it('an HTTP date is read as a time; no header → the default wait; each wait capped', async () => {
    const clock = recordingClock();
    const client = makeClient(emulator.url, { clock, busy: { defaultWaitMs: 2_500, maxWaitMs: 20_000 } });
    emulator.rateLimitNext(1, { retryAfter: 5, format: 'date' });
    emulator.rateLimitNext(1, { retryAfter: null });
    emulator.rateLimitNext(1, { retryAfter: 90 });
    await client.upscale({ imageUrl: 'https://cdn.example.test/a.png', prompt: 'x', resemblance: 50 });
    const [dated, bare, capped] = clock.sleeps;
    // An HTTP date has whole seconds: between 4 and 5 s from now.
    expect(dated).toBeGreaterThan(3_900);
    expect(dated).toBeLessThanOrEqual(5_000);
    expect([bare, capped]).toEqual([2_500, 20_000]);
    expect(requestsTo('/image-upscale').map((r) => r.statusCode)).toEqual([429, 429, 429, 200]);
  });

  it('past the total bound → MediaBusyError, nothing created, never sent again after', async () => {
    const clock = recordingClock();
    const client = makeClient(emulator.url, { clock });
    emulator.rateLimitNext(50, { retryAfter: 120 });
    const waits: number[] = [];
    const err = await rejectionOf(client.extendSong(SONG, undefined, { onWaiting: (u) => waits.push(u) }));
    expect(err).toBeInstanceOf(MediaBusyError);
    if (err instanceof MediaServiceError) {
      expect(err.userMessage).toBe('The media service is busy. Nothing was charged; please try again later.');
      expect(err.retryable).toBe(true);
    }
    // Each wait capped at 60 s, 5 min in all: 5 waits, 6 requests.
    expect(clock.sleeps).toEqual([60_000, 60_000, 60_000, 60_000, 60_000]);
    expect(waits).toHaveLength(5);
    expect(requestsTo('/song-extend')).toHaveLength(6);
    expect(ownTasks()).toHaveLength(0);
  });

  it('a streamed training upload is rebuilt for the second send (photos opened again)', async () => {
    const clock = recordingClock();
    const client = makeClient(emulator.url, { clock, photoFormat: 'base64' });
    const { makePng } = await import('./emulator/media/png.js');
    const png = makePng(8, 8);
    let opened = 0;
    const photos = Array.from({ length: 10 }, (_, i) => ({
      url: `https://cdn.example.test/${i}.png`,
      open: async () => {
        opened++;
        return (async function* () {
          yield new Uint8Array(png);
        })();
      },
    }));
    emulator.rateLimitNext(1, { retryAfter: 1, path: '/ai-photo-upload' });
    const { taskId } = await client.uploadTrainingPhotos({ photos, ethnicity: 'asian', gender: 'female' });
    expect(opened).toBe(20);
    expect(emulator.uploads(taskId)).toHaveLength(10);
  });
});

describe('the adaptive submit limit', () => {
  it('shrinks under 429s and 503s, grows back after successes; the gauge follows', async () => {
    const metrics = createMetrics();
    const limit = new SubmitLimit({
      initial: 8,
      max: 10,
      growAfter: 2,
      onChange: (n) => metrics.mediaSubmitConcurrency.set(n),
    });
    const gauge = async () => (await metrics.mediaSubmitConcurrency.get()).values[0]?.value;
    expect(await gauge()).toBe(8);
    const client = makeClient(emulator.url, { submitLimit: limit });
    emulator.rateLimitNext(3, { retryAfter: 0 });
    await client.extendSong(SONG);
    expect(client.submitConcurrency).toBe(1);
    expect(await gauge()).toBe(1);
    await client.extendSong(SONG); // 2nd success in a row
    expect(client.submitConcurrency).toBe(2);
    for (let i = 0; i < 4; i++) await client.extendSong(SONG);
    expect(client.submitConcurrency).toBe(4);
    emulator.failNext(1, { status: 503, path: '/song-extend' });
    expect(await rejectionOf(client.extendSong(SONG))).toBeInstanceOf(MediaOutcomeUnknownError);
    expect(client.submitConcurrency).toBe(2);
    // A documented error is an answer too (not overload); growth is capped at max.
    for (let i = 0; i < 40; i++) await client.extendSong(SONG);
    expect(client.submitConcurrency).toBe(10);
    expect(await gauge()).toBe(10);
  });

  it('never runs more than its limit at once; a burst of 429s from one generation halves once', async () => {
    const limit = new SubmitLimit({ initial: 4, growAfter: 1000 });
    let running = 0;
    let peak = 0;
    const gates: (() => void)[] = [];
    const task = () =>
      limit.run(
        async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise<void>((resolve) => gates.push(resolve));
          running--;
          return 'busy' as const;
        },
        () => 'overloaded',
      );
    const all = Array.from({ length: 10 }, task);
    await vi.waitFor(() => expect(gates).toHaveLength(4));
    expect(limit.waiting).toBe(6);
    // The four started under one limit: their 429s halve it once (4 → 2), not to 1.
    for (const open of gates.splice(0, 4)) open();
    await vi.waitFor(() => expect(gates).toHaveLength(2));
    expect(limit.concurrency).toBe(2);
    expect(running).toBe(2);
    while (gates.length > 0 || limit.waiting > 0 || limit.running > 0) {
      for (const open of gates.splice(0)) open();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    expect(peak).toBe(4);
    expect(limit.concurrency).toBe(1);
  });
});

// ---------------------------------------------------------------------------
// Reads: fetch-many and the TaskReader
// ---------------------------------------------------------------------------

describe('MediaClient.fetchMany', () => {
  it('reads several tasks in one request, matched by task_id; an unknown id is left out', async () => {
    const client = makeClient(emulator.url);
    emulator.nextScenario({ hold: true, steps: [], initialStatus: 'starting' });
    const { taskId } = await client.extendSong(SONG);
    const answer = await client.fetchMany([
      { operation: 'video', taskId: FIXTURE_VIDEO_TASK_ID },
      { operation: 'song', taskId: 'no-such-task' },
      { operation: 'song', taskId },
    ]);
    expect(requestsTo('/fetch-many')).toHaveLength(1);
    expect(requestsTo('/fetch')).toHaveLength(0);
    expect(client.fetchManySupported).toBe(true);
    expect([...answer.keys()].sort()).toEqual([FIXTURE_VIDEO_TASK_ID, taskId].sort());
    expect(answer.get(FIXTURE_VIDEO_TASK_ID)).toMatchObject({ state: 'finished', operation: 'video' });
    expect(answer.get(taskId)).toMatchObject({ state: 'processing', rawStatus: 'starting', taskId });
  });

  it("an upload's processing result (no task_id) is matched by its position when the answer is in order", async () => {
    const client = makeClient(emulator.url);
    emulator.setScenario({ hold: true, steps: [] });
    const song = await client.extendSong(SONG);
    const upload = await client.uploadTrainingPhotos({
      photos: Array.from({ length: 10 }, (_, i) => ({ url: `https://cdn.example.test/${i}.png` })),
      ethnicity: 'asian',
      gender: 'male',
    });
    const answer = await client.fetchMany([
      { operation: 'upload', taskId: upload.taskId },
      { operation: 'song', taskId: song.taskId },
    ]);
    expect(answer.get(upload.taskId)).toMatchObject({ state: 'processing', taskId: upload.taskId });
    expect(answer.get(song.taskId)).toMatchObject({ state: 'processing', taskId: song.taskId });
    // Not in order (an unknown id left out shifts them): the id-less one cannot be placed.
    const shifted = await client.fetchMany([
      { operation: 'song', taskId: 'gone' },
      { operation: 'upload', taskId: upload.taskId },
      { operation: 'song', taskId: song.taskId },
    ]);
    expect([...shifted.keys()]).toEqual([song.taskId]);
  });

  it('404 means the service has none: detected once (logged once at info), single fetches from then on', async () => {
    const { logger, lines } = captureLogger();
    const client = makeClient(emulator.url, { logger });
    emulator.setFeatures({ fetchMany: false });
    const refs = [
      { operation: 'song' as const, taskId: FIXTURE_SONG_TASK_ID },
      { operation: 'video' as const, taskId: FIXTURE_VIDEO_TASK_ID },
    ];
    const first = await client.fetchMany(refs);
    const second = await client.fetchMany(refs);
    expect(client.fetchManySupported).toBe(false);
    expect(requestsTo('/fetch-many')).toHaveLength(1);
    expect(requestsTo('/fetch')).toHaveLength(4);
    for (const answer of [first, second]) {
      expect(answer.get(FIXTURE_SONG_TASK_ID)).toMatchObject({ state: 'finished' });
      expect(answer.get(FIXTURE_VIDEO_TASK_ID)).toMatchObject({ state: 'finished' });
    }
    const notes = lines.filter((l) => l.msg.includes('no fetch-many endpoint'));
    expect(notes).toHaveLength(1);
    expect(notes[0]?.level).toBe(30);
  });

  it('a batch refused as a whole (400) is read one task at a time, so one bad id hides no other', async () => {
    const client = makeClient(emulator.url);
    emulator.failNext(1, { status: 400, path: '/fetch-many' });
    const answer = await client.fetchMany([
      { operation: 'song', taskId: FIXTURE_SONG_TASK_ID },
      { operation: 'song', taskId: 'no-such-task' },
    ]);
    expect(answer.get(FIXTURE_SONG_TASK_ID)).toMatchObject({ state: 'finished' });
    expect(answer.get('no-such-task')).toBeInstanceOf(MediaRequestRejectedError);
    expect(client.fetchManySupported).toBe(undefined);
  });

  it('is retried on transient failures, like fetch', async () => {
    const client = makeClient(emulator.url);
    emulator.failNext(1, { status: 500, path: '/fetch-many' });
    const answer = await client.fetchMany([
      { operation: 'song', taskId: FIXTURE_SONG_TASK_ID },
      { operation: 'video', taskId: FIXTURE_VIDEO_TASK_ID },
    ]);
    expect(answer.size).toBe(2);
    expect(requestsTo('/fetch-many').map((r) => r.statusCode)).toEqual([500, 200]);
  });
});

describe('TaskReader', () => {
  const readers: TaskReader[] = [];
  afterEach(() => {
    for (const r of readers.splice(0)) r.close();
  });
  function makeReader(
    client: ConstructorParameters<typeof TaskReader>[0]['media'],
    opts: { requestsPerSecond?: number; maxInFlight?: number } = {},
  ) {
    const reader = new TaskReader({ media: client, requestsPerSecond: 1_000, ...opts });
    readers.push(reader);
    return reader;
  }

  it('500 concurrent reads go out in at most 25 fetch-many requests, each read answered right', async () => {
    const client = makeClient(emulator.url, { submitLimit: new SubmitLimit({ initial: 32 }) });
    const ids = await heldSongTasks(client, 500);
    const reader = makeReader(client);
    const results = await Promise.all(ids.map((id) => reader.read('song', id)));
    expect(requestsTo('/fetch')).toHaveLength(0);
    expect(requestsTo('/fetch-many').length).toBeLessThanOrEqual(25);
    results.forEach((r, i) => expect(r).toMatchObject({ taskId: ids[i], state: 'processing' }));
  });

  it('falls back to single fetches when fetch-many is absent (detected once)', async () => {
    const client = makeClient(emulator.url);
    const ids = await heldSongTasks(client, 45);
    emulator.setFeatures({ fetchMany: false });
    const reader = makeReader(client);
    const results = await Promise.all(ids.map((id) => reader.read('song', id)));
    expect(requestsTo('/fetch-many')).toHaveLength(1);
    expect(requestsTo('/fetch')).toHaveLength(45);
    expect(results.map((r) => r.taskId)).toEqual(ids);
    // Later reads go straight to /fetch.
    await Promise.all(ids.slice(0, 5).map((id) => reader.read('song', id)));
    expect(requestsTo('/fetch-many')).toHaveLength(1);
    expect(requestsTo('/fetch')).toHaveLength(50);
  });

  it('a lone read is a plain fetch; reads of one task waiting together share one slot', async () => {
    const client = makeClient(emulator.url);
    const reader = makeReader(client);
    const lone = await reader.read('video', FIXTURE_VIDEO_TASK_ID);
    expect(lone.state).toBe('finished');
    expect(requestsTo('/fetch')).toHaveLength(1);
    const [a, b] = await Promise.all([
      reader.read('song', FIXTURE_SONG_TASK_ID),
      reader.read('song', FIXTURE_SONG_TASK_ID),
    ]);
    expect(a).toBe(b);
    expect(requestsTo('/fetch')).toHaveLength(2);
    expect(requestsTo('/fetch-many')).toHaveLength(0);
  });

  it('a task the batch answer does not contain fails that read only, with a clear error', async () => {
    const client = makeClient(emulator.url);
    const reader = makeReader(client);
    const [found, missing] = await Promise.allSettled([
      reader.read('song', FIXTURE_SONG_TASK_ID),
      reader.read('song', 'no-such-task'),
    ]);
    expect(found).toMatchObject({ status: 'fulfilled', value: { state: 'finished' } });
    expect(missing.status).toBe('rejected');
    if (missing.status === 'rejected') {
      expect(missing.reason).toBeInstanceOf(MediaTaskNotInAnswerError);
      expect(String(missing.reason)).toContain('did not include task no-such-task');
    }
  });

  it('paces requests: never more than the rate in any window', async () => {
    // On the reader's own clock (p-queue's Date.now and setTimeout, faked): a real clock read where
    // the request is recorded also counts the process being descheduled between the pace's start and
    // that read, which on a loaded machine put two requests 39 ms apart for a 50 ms pace.
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    try {
      const left: number[] = [];
      const media: ConstructorParameters<typeof TaskReader>[0]['media'] = {
        fetchManySupported: true,
        fetchTask: () => Promise.reject(new Error('a lone read was not expected')),
        fetchMany: (refs) => {
          left.push(Date.now());
          return Promise.resolve(
            new Map(
              refs.map((r) => [
                r.taskId,
                { operation: r.operation, taskId: r.taskId, state: 'processing' as const, raw: {} },
              ]),
            ),
          );
        },
      };
      const reader = makeReader(media, { requestsPerSecond: 20 });
      const reads = Promise.all(Array.from({ length: 160 }, (_, i) => reader.read('song', `paced-${i}`)));
      await vi.advanceTimersByTimeAsync(1_000);
      await reads;
      expect(left).toHaveLength(8);
      // One request per 50 ms at 20/s (unpaced, four leave at once), and no slower than that.
      for (let i = 1; i < left.length; i++)
        expect((left[i] ?? 0) - (left[i - 1] ?? 0)).toBeGreaterThanOrEqual(50);
      expect((left.at(-1) ?? 0) - (left[0] ?? 0)).toBeLessThanOrEqual(7 * 50);
    } finally {
      vi.useRealTimers();
    }
  });

  it('an urgent read (a member waiting) goes before a background backlog', async () => {
    const client = makeClient(emulator.url);
    const ids = await heldSongTasks(client, 100);
    const reader = makeReader(client, { requestsPerSecond: 20, maxInFlight: 1 });
    const order: string[] = [];
    const background = ids.map((id) => reader.read('song', id).then(() => order.push('background')));
    await new Promise((r) => setTimeout(r, 20));
    const urgent = reader
      .read('video', FIXTURE_VIDEO_TASK_ID, { urgent: true })
      .then(() => order.push('urgent'));
    await Promise.all([...background, urgent]);
    // Five background batches; the urgent read leaves right after the first.
    expect(order.indexOf('urgent')).toBeLessThanOrEqual(40);
  });

  it('close() rejects the reads still waiting', async () => {
    const client = makeClient(emulator.url);
    const reader = new TaskReader({ media: client, requestsPerSecond: 1, windowMs: 50 });
    const pending = reader.read('song', FIXTURE_SONG_TASK_ID);
    reader.close();
    await expect(pending).rejects.toBeInstanceOf(TaskReaderClosedError);
    await expect(reader.read('song', FIXTURE_SONG_TASK_ID)).rejects.toBeInstanceOf(TaskReaderClosedError);
  });
});

// ---------------------------------------------------------------------------
// Bodies: capped, never logged
// ---------------------------------------------------------------------------

describe('response bodies are capped and never logged', () => {
  const MARKER = 'SECRET-RESULT-BYTES';

  it('a fetch answer over the cap → MediaResponseTooLargeError; nothing of the body in any log line', async () => {
    const huge = JSON.stringify({ task_id: 't', status: 'processing', junk: MARKER.repeat(200_000) });
    const stub = await startStub(() => ({ status: 200, body: huge }));
    const { logger, raw } = captureLogger();
    try {
      const client = makeClient(stub.url, { logger, fetchRetries: 0 });
      const err = await rejectionOf(client.fetchTask('song', 't'));
      expect(err).toBeInstanceOf(MediaResponseTooLargeError);
      expect(String(err)).not.toContain(MARKER);
      expect(raw.join('')).not.toContain(MARKER);
    } finally {
      await stub.close();
    }
  });

  it('a submission answered 200 with an oversized body → unknown outcome (the task may exist)', async () => {
    const stub = await startStub(() => ({
      status: 200,
      body: `{"task_id":"${'x'.repeat(2 * 1024 * 1024)}"}`,
    }));
    try {
      const err = await rejectionOf(makeClient(stub.url).extendSong(SONG));
      expect(err).toBeInstanceOf(MediaOutcomeUnknownError);
      expect((err as Error).cause).toBeInstanceOf(MediaResponseTooLargeError);
    } finally {
      await stub.close();
    }
  });

  it('fetch-many has its own (larger) cap', async () => {
    const client = makeClient(emulator.url, { maxBodyBytes: { single: 100_000, many: 300 } });
    const err = await rejectionOf(
      client.fetchMany([
        { operation: 'song', taskId: FIXTURE_SONG_TASK_ID },
        { operation: 'video', taskId: FIXTURE_VIDEO_TASK_ID },
      ]),
    );
    expect(err).toBeInstanceOf(MediaResponseTooLargeError);
    expect((err as MediaResponseTooLargeError).limitBytes).toBe(300);
  });

  it('a malformed answer is logged with its field names only; service messages are bounded', async () => {
    const stub = await startStub((path) =>
      path.includes('video')
        ? { status: 200, body: JSON.stringify({ id: MARKER, url: `https://x.test/${MARKER}` }) }
        : {
            status: 400,
            body: JSON.stringify({ errors: Array.from({ length: 50 }, () => ({ msg: MARKER.repeat(100) })) }),
          },
    );
    const { logger, raw, lines } = captureLogger();
    try {
      const client = makeClient(stub.url, { logger });
      await rejectionOf(client.extendVideo(VIDEO));
      const warning = lines.find((l) => l.msg === 'unexpected media service answer');
      expect(warning?.['fields']).toBe('id,url');
      expect(raw.join('')).not.toContain(MARKER);
      const refused = await rejectionOf(client.extendSong(SONG));
      expect(refused).toBeInstanceOf(MediaRequestRejectedError);
      const messages = (refused as MediaRequestRejectedError).messages;
      expect(messages).toHaveLength(20);
      for (const m of messages) expect(m.length).toBeLessThanOrEqual(501);
      for (const line of raw) expect(line.length).toBeLessThan(2_000);
    } finally {
      await stub.close();
    }
  });
});

// ---------------------------------------------------------------------------
// Tolerant parsing of the provider's results
// ---------------------------------------------------------------------------

describe("the provider's task types and states", () => {
  it('a luma-ext video: processing with its string percentage, then finished with the video', async () => {
    const client = makeClient(emulator.url);
    emulator.nextScenario({ videoTaskType: 'luma-ext', steps: [40], hold: true, stepMs: 5 });
    const { taskId } = await client.extendVideo(VIDEO);
    await emulator.waitFor(() => emulator.tasks.get(taskId)?.history.length === 2);
    const processing = await client.fetchTask('video', taskId);
    expect(processing).toMatchObject({ state: 'processing', percentage: 40 });
    expect((processing.raw as { task_type: string }).task_type).toBe('luma-ext');
    emulator.finish(taskId);
    const finished = await client.fetchTask('video', taskId);
    expect(finished.state).toBe('finished');
    expect(finished.outputs).toEqual({ kind: 'video', videoUrl: `${emulator.url}/files/${taskId}.mp4` });
  });

  it('a failed task keeps its errors[].msg; an unknown task_type does not make a result unreadable', async () => {
    const client = makeClient(emulator.url);
    emulator.nextScenario({ outcome: 'failed', failMessage: 'NSFW content detected', steps: [] });
    const { taskId } = await client.extendSong(SONG);
    await emulator.waitFor(() => emulator.tasks.get(taskId)?.state === 'failed');
    const failed = await client.fetchTask('song', taskId);
    expect(failed).toMatchObject({ state: 'failed', errors: ['NSFW content detected'] });
    for (const status of ['finished', undefined]) {
      const { result } = normalizeTaskResult(
        'video',
        {
          task_id: 'v',
          task_type: 'some-new-model-ext',
          ...(status ? { status } : {}),
          video_url: 'https://cdn.example.test/v.mp4',
        },
        mediaOperations,
      );
      expect(result).toMatchObject({ state: 'finished', outputs: { kind: 'video' } });
    }
  });

  it.each([
    ['pending', 'queued'],
    ['staged', 'queued'],
    ['starting', 'processing'],
    ['processing', 'processing'],
    ['retry', 'processing'],
    ['failed', 'failed'],
  ] as const)('%s → %s', (status, state) => {
    expect(normalizeTaskResult('song', { task_id: 't', status }, mediaOperations).result.state).toBe(state);
  });

  it('a very long unknown status is logged cut short', () => {
    const { unknownStatus } = normalizeTaskResult(
      'song',
      { task_id: 't', status: 'z'.repeat(5_000) },
      mediaOperations,
    );
    expect(unknownStatus).toHaveLength(40);
  });
});

describe('Retry-After', () => {
  it('reads seconds and HTTP dates; anything else is unknown', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs('12', now)).toBe(12_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Mon, 31 Dec 2029 23:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(['7', '9'], now)).toBe(7_000);
    for (const bad of [undefined, '', 'soon', '-5', '1.5x']) expect(retryAfterMs(bad, now)).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------
// The operator's balance
// ---------------------------------------------------------------------------

describe('MediaClient.account', () => {
  it('reads credits, plan and images (not the email)', async () => {
    const client = makeClient(emulator.url);
    emulator.setAccount({ credits: 42, plan: 'starter' });
    expect(await client.account()).toEqual({ credits: 42, plan: 'starter', totalImages: 0 });
    expect(requestsTo('/account')).toMatchObject([{ method: 'GET', authorized: true, statusCode: 200 }]);
  });

  it('an absent endpoint is undefined, not an error, logged once at info', async () => {
    const { logger, lines } = captureLogger();
    const client = makeClient(emulator.url, { logger });
    emulator.setFeatures({ account: false });
    expect(await client.account()).toBeUndefined();
    expect(await client.account()).toBeUndefined();
    const notes = lines.filter((l) => l.msg.includes('no account endpoint'));
    expect(notes).toHaveLength(1);
    expect(notes[0]?.level).toBe(30);
    expect(lines.filter((l) => l.level >= 40)).toHaveLength(0);
  });

  it('a wrong key is an error (MediaAuthError)', async () => {
    const client = makeClient(emulator.url, { apiKey: 'wrong' });
    expect(await rejectionOf(client.account())).toBeInstanceOf(MediaAuthError);
  });
});

describe('AccountMonitor', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** The client's account() with the last call's promise kept, so a test awaits the reading a timer started. */
  function tracked(client: MediaClient) {
    const t = {
      calls: 0,
      last: Promise.resolve(undefined) as Promise<unknown>,
      account: () => {
        t.calls++;
        const p = client.account();
        t.last = p.catch(() => undefined);
        return p;
      },
    };
    return t;
  }
  const creditsSeries = async (metrics: ReturnType<typeof createMetrics>) =>
    (await metrics.mediaAccountCredits.get()).values;

  /** The store shared by every instance, as far as readings go (kv in the app). */
  function sharedReadings(): AccountReadings & { saved: number } {
    let kept: unknown;
    const r = {
      saved: 0,
      load: async () => kept,
      save: async (reading: unknown) => {
        r.saved++;
        kept = structuredClone(reading);
      },
    };
    return r;
  }

  /** A monitor with MEDIA_LOW_CREDITS=100 and its own readings unless given. */
  const monitorOf = (o: Pick<AccountMonitorOptions, 'media' | 'logger'> & Partial<AccountMonitorOptions>) =>
    new AccountMonitor({ readings: sharedReadings(), lowCredits: 100, ...o });

  it('on the in-process schedule: read at start and every period, gauge, one warning per fall', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const metrics = createMetrics();
    const { logger, lines } = captureLogger();
    const media = tracked(makeClient(emulator.url));
    const monitor = monitorOf({ media, metrics, logger });
    const schedule = new TimerSchedule(logger);
    schedule.add({ name: 'account-reading', everyMs: 60_000, run: () => monitor.refresh() });
    emulator.setAccount({ credits: 150 });
    await schedule.start();
    await media.last;
    await monitor.refresh(); // joins the reading the start began (one reading at a time)
    expect(media.calls).toBe(1);
    expect(await creditsSeries(metrics)).toEqual([{ value: 150, labels: { plan: 'pro' } }]);
    expect(await monitor.latest()).toMatchObject({ credits: 150, plan: 'pro' });
    const warnings = () => lines.filter((l) => l.msg.includes('running low on credits'));

    for (const [credits, expectedWarnings] of [
      [90, 1],
      [80, 1],
      [200, 1],
      [50, 2],
    ] as const) {
      emulator.setAccount({ credits });
      await vi.advanceTimersByTimeAsync(60_000);
      await media.last;
      await monitor.refresh(); // settles the reading's bookkeeping (joins it if still running)
      expect((await monitor.latest())?.credits).toBe(credits);
      expect(warnings()).toHaveLength(expectedWarnings);
    }
    expect(media.calls).toBe(5);
    expect(warnings()[0]).toMatchObject({ level: 40, credits: 90, lowCredits: 100 });
    expect(await creditsSeries(metrics)).toEqual([{ value: 50, labels: { plan: 'pro' } }]);
    const calls = media.calls;
    await schedule.close();
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(media.calls).toBe(calls);
  });

  it('another instance shows the reading one instance took: /settings show, its gauge at scrape, no second warning', async () => {
    const readings = sharedReadings();
    const { logger, lines } = captureLogger();
    const media = { account: async () => ({ credits: 40, plan: 'starter' }) };
    const reader = monitorOf({ media, readings, logger });
    const otherMetrics = createMetrics();
    const otherMedia = { account: vi.fn(async () => ({ credits: 40, plan: 'starter' })) };
    const other = monitorOf({ media: otherMedia, readings, metrics: otherMetrics, logger });
    otherMetrics.beforeScrape.accountCredits = () => other.showLatest();
    expect(await other.latest()).toBeUndefined();
    expect(await otherMetrics.registry.metrics()).not.toMatch(/^media_account_credits\{/m);

    await reader.refresh();
    expect(await other.latest()).toMatchObject({ credits: 40, plan: 'starter' });
    expect(await otherMetrics.registry.metrics()).toMatch(/^media_account_credits\{plan="starter"\} 40$/m);
    expect(otherMedia.account).not.toHaveBeenCalled();
    // Still low when the other instance takes the next reading: the fall was warned about already.
    await other.refresh();
    expect(lines.filter((l) => l.msg.includes('running low on credits'))).toHaveLength(1);
    expect(readings.saved).toBe(2);
  });

  it('a store that does not answer: the reading is still shown here, latest() keeps the last one seen', async () => {
    const { logger } = captureLogger();
    const metrics = createMetrics();
    let down = false;
    const readings = sharedReadings();
    const flaky: AccountReadings = {
      load: () => (down ? Promise.reject(new Error('store down')) : readings.load()),
      save: (r) => (down ? Promise.reject(new Error('store down')) : readings.save(r)),
    };
    let credits = 500;
    const monitor = monitorOf({
      media: { account: async () => ({ credits }) },
      readings: flaky,
      metrics,
      logger,
    });
    await monitor.refresh();
    down = true;
    credits = 450;
    expect((await monitor.refresh())?.credits).toBe(450);
    expect((await monitor.latest())?.credits).toBe(450);
    expect(await creditsSeries(metrics)).toEqual([{ value: 450, labels: { plan: 'unknown' } }]);
    down = false;
    expect((await monitor.latest())?.credits).toBe(500);
  });

  it('without the account endpoint: no reading, no gauge sample, no warning or error', async () => {
    const metrics = createMetrics();
    const { logger, lines } = captureLogger();
    const client = makeClient(emulator.url, { logger });
    emulator.setFeatures({ account: false });
    const readings = sharedReadings();
    const monitor = monitorOf({ media: client, readings, metrics, logger });
    metrics.beforeScrape.accountCredits = () => monitor.showLatest();
    expect(await monitor.refresh()).toBeUndefined();
    expect(await monitor.latest()).toBeUndefined();
    expect(readings.saved).toBe(0);
    expect(await creditsSeries(metrics)).toEqual([]);
    expect(await metrics.registry.metrics()).not.toMatch(/^media_account_credits\{/m);
    expect(lines.filter((l) => l.level >= 40)).toHaveLength(0);
  });

  it('outOfCredits: gauge 1 and an error line at most once a minute; a succeeded submission sets it back', async () => {
    const metrics = createMetrics();
    const { logger, lines } = captureLogger();
    let now = 1_000_000;
    const media = { account: async () => ({ credits: 0, plan: 'pro' }) };
    const monitor = monitorOf({ media, metrics, logger, now: () => now });
    const outGauge = async () => (await metrics.mediaAccountOutOfCredits.get()).values[0]?.value;
    expect(await outGauge()).toBe(0);
    monitor.outOfCredits();
    monitor.outOfCredits();
    now += 30_000;
    monitor.outOfCredits();
    expect(await outGauge()).toBe(1);
    const errors = () => lines.filter((l) => l.level === 50);
    expect(errors()).toHaveLength(1);
    expect(errors()[0]?.msg).toMatch(/out of credits \(402\)/);
    now += 31_000;
    monitor.outOfCredits();
    expect(errors()).toHaveLength(2);
    monitor.submissionSucceeded();
    expect(await outGauge()).toBe(0);
    expect(await metrics.registry.metrics()).toMatch(/^media_account_out_of_credits 0$/m);
  });
});
