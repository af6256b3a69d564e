import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MediaClient } from '../src/services/media/client.js';
import { MediaRequestInvalidError } from '../src/services/media/errors.js';
import type { KeyValueStore } from '../src/services/store/types.js';
import { TrainingSessions, sessionKey, type PhotoInput } from '../src/services/training/sessions.js';
import { startEmulator, type Emulator } from './emulator/server.js';

/**
 * Service level: photos added to a session are uploaded through the real
 * MediaClient to the media-service emulator, which records each received
 * image as sha256 + length (base64) or URL.
 */

const logger = pino({ level: 'silent' });
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

const SIGS: Buffer[] = [
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from([0xff, 0xd8, 0xff, 0xe1]),
  Buffer.from('GIF89a'),
  Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBP')]),
];

/** Sizes chosen so base64 padding (0, 1, 2 leftover bytes) and multi-chunk streams are all exercised. */
function makePhoto(i: number): Buffer {
  const size = 1000 + (i % 30) * 7919 + (i % 3);
  const b = randomBytes(size);
  SIGS[i % SIGS.length]?.copy(b);
  return b;
}

class Files {
  readonly bodies = new Map<string, Buffer>();
  private server: Server | undefined;
  base = '';
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const body = this.bodies.get((req.url ?? '').split('?')[0] ?? '');
      if (!body) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(body.length) }).end(body);
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

class MemoryKv implements KeyValueStore {
  private readonly m = new Map<string, string>();
  get<T>(key: string): Promise<T | undefined> {
    const v = this.m.get(key);
    return Promise.resolve(v === undefined ? undefined : (JSON.parse(v) as T));
  }
  set(key: string, value: unknown): Promise<void> {
    this.m.set(key, JSON.stringify(value));
    return Promise.resolve();
  }
  delete(key: string): Promise<void> {
    this.m.delete(key);
    return Promise.resolve();
  }
}

const files = new Files();
let emulator: Emulator;

function client(photoFormat: 'base64' | 'url'): MediaClient {
  return new MediaClient({
    baseUrl: emulator.url,
    apiKey: emulator.apiKey,
    paths: {
      fetch: '/fetch',
      upscale: '/image-upscale',
      songExtend: '/song-extend',
      videoExtend: '/video-extend',
      photoUpload: '/ai-photo-upload',
    },
    photoFormat,
    timeoutMs: 10_000,
    upscaleTimeoutMs: 10_000,
    logger,
  });
}

let run = 0;
async function sessionWith(count: number) {
  run++;
  const training = new TrainingSessions({
    kv: new MemoryKv(),
    logger,
    maxBytes: 1024 * 1024,
    ttlMs: 3_600_000,
    refreshUrls: () => Promise.reject(new Error('not expected')),
  });
  const userId = String(1000 + run);
  await training.start({ userId, channelId: '42', ethnicity: 'middle eastern', gender: 'male', age: 41 });
  const photos: (PhotoInput & { body: Buffer })[] = [];
  for (let i = 0; i < count; i++) {
    const body = makePhoto(i + run * 100);
    const path = `/r${run}/photo-${i}.bin`;
    files.bodies.set(path, body);
    photos.push({
      id: `${run}${i}`,
      name: `photo-${i}.png`,
      url: `${files.base}${path}`,
      size: body.length,
      contentType: 'image/png',
      body,
    });
  }
  const key = sessionKey(userId, '42');
  // Added over several interactions, like a user would.
  for (let i = 0; i < photos.length; i += 10) {
    const r = await training.add(key, photos.slice(i, i + 10));
    expect(r.refused).toEqual([]);
  }
  const session = (await training.get(key))!;
  return { training, session, photos };
}

beforeAll(async () => {
  await files.start();
  emulator = await startEmulator({ scenario: { steps: [], stepMs: 10, hold: true } });
});
afterAll(async () => {
  await emulator.close();
  await files.close();
});
beforeEach(() => emulator.reset());

describe('training photo upload through MediaClient to the emulator', () => {
  it.each([10, 30])('base64: the service receives exactly the %i photos held, in order', async (n) => {
    const { training, session, photos } = await sessionWith(n);
    const media = client('base64');
    try {
      const { taskId } = await media.uploadTrainingPhotos(
        {
          photos: await training.photoSources(session),
          ethnicity: session.ethnicity,
          gender: session.gender,
          age: 41,
        },
        undefined,
      );
      const got = emulator.uploads(taskId);
      expect(got).toHaveLength(n);
      expect(
        got.map((g) => (g.kind === 'base64' ? { sha256: g.sha256, byteLength: g.byteLength } : g)),
      ).toEqual(photos.map((p) => ({ sha256: sha(p.body), byteLength: p.body.length })));
      const task = emulator.tasks.get(taskId);
      expect(task?.params).toMatchObject({ ethnicity: 'middle eastern', gender: 'male', age: 41, images: n });
    } finally {
      await media.close();
    }
  });

  it('url: the service receives the photo URLs, in order', async () => {
    const { training, session, photos } = await sessionWith(11);
    const media = client('url');
    try {
      const { taskId } = await media.uploadTrainingPhotos(
        {
          photos: await training.photoSources(session),
          ethnicity: session.ethnicity,
          gender: session.gender,
        },
        undefined,
      );
      expect(emulator.uploads(taskId)).toEqual(
        photos.map((p, index) => ({ index, kind: 'url', url: p.url })),
      );
    } finally {
      await media.close();
    }
  });

  it('fewer than 10 photos: no service call', async () => {
    const { training, session } = await sessionWith(9);
    const media = client('base64');
    try {
      const err = await media
        .uploadTrainingPhotos(
          {
            photos: await training.photoSources(session),
            ethnicity: session.ethnicity,
            gender: session.gender,
          },
          undefined,
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MediaRequestInvalidError);
      expect((err as MediaRequestInvalidError).userMessage).toContain('at least 10');
      expect(emulator.requests).toHaveLength(0);
    } finally {
      await media.close();
    }
  });

  it('a photo changed since it was added fails the upload with its name, and no task is created', async () => {
    const { training, session, photos } = await sessionWith(10);
    const changed = photos[3]!;
    files.bodies.set(new URL(changed.url).pathname, makePhoto(999));
    const media = client('base64');
    try {
      const err = await media
        .uploadTrainingPhotos(
          {
            photos: await training.photoSources(session),
            ethnicity: session.ethnicity,
            gender: session.gender,
          },
          undefined,
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MediaRequestInvalidError);
      expect((err as MediaRequestInvalidError).userMessage).toBe(
        'photo 4 could not be read: “photo-3.png”: its content changed since it was added (different SHA-256)',
      );
      expect(emulator.tasks.size).toBe([...emulator.tasks.values()].filter((t) => t.fixture).length);
    } finally {
      await media.close();
    }
  });
});
