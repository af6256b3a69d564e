import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { pino } from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MediaClient } from '../src/services/media/client.js';
import { MediaRequestInvalidError } from '../src/services/media/errors.js';
import { ConsentStore } from '../src/services/training/consent-store.js';
import { PhotoCleaner } from '../src/services/training/clean-photo.js';
import { PhotoSpool } from '../src/services/training/photo-spool.js';
import { TrainingSessions, sessionKey, type PhotoInput } from '../src/services/training/sessions.js';
import { TrainingUploader } from '../src/services/training/upload.js';
import { photoFileRoutes } from '../src/webhooks/photo-files.js';
import { startEmulator, type Emulator } from './emulator/server.js';
import { MemoryKv } from './helpers/memory-kv.js';
import { metadataFound, phoneJpeg, pngWithMetadata, uniqueJpeg, uniquePng } from './helpers/photos.js';
import { mediaOperations } from '../src/services/operations/index.js';
import { DEFAULT_MEDIA_PATHS } from './helpers/media-paths.js';

/**
 * Service level: photos added to a session are cleaned, spooled, recorded in a
 * consent record and uploaded through the real MediaClient to the media
 * service emulator, which keeps what it received.
 */

const logger = pino({ level: 'silent' });
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Serves the originals, as Discord's CDN would. */
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

const files = new Files();
let emulator: Emulator;
let spoolDir: string;
let spool: PhotoSpool;
/** Serves the spool's copies (GET /photos/…), as the bot does under PUBLIC_URL. */
const photoServer = Fastify();
let photoBase = '';

function client(photoFormat: 'base64' | 'url'): MediaClient {
  return new MediaClient({
    baseUrl: emulator.url,
    apiKey: emulator.apiKey,
    paths: DEFAULT_MEDIA_PATHS,
    photoFormat,
    timeoutMs: 10_000,
    upscaleTimeoutMs: 10_000,
    operations: mediaOperations,
    logger,
  });
}

/** A mix of formats, each real and unique; the first a phone JPEG with EXIF/GPS/XMP, the second a PNG with text chunks. */
async function makePhoto(i: number): Promise<Buffer> {
  if (i === 0) return phoneJpeg(300, 200, 6);
  if (i === 1) return (await pngWithMetadata(40, 30)).png;
  if (i % 4 === 2) return uniqueJpeg(32, 20);
  if (i % 4 === 3)
    return sharp(await uniquePng(20, 20))
      .webp({ lossless: true })
      .toBuffer();
  return uniquePng(20 + (i % 5), 16);
}

let run = 0;
async function sessionWith(count: number, photoFormat: 'base64' | 'url') {
  run++;
  const kv = new MemoryKv();
  const training = new TrainingSessions({
    kv,
    logger,
    maxBytes: 1024 * 1024,
    ttlMs: 3_600_000,
    refreshUrls: () => Promise.reject(new Error('not expected')),
  });
  const consent = new ConsentStore({ kv, retentionMs: 365 * 86_400_000 });
  const uploader = new TrainingUploader({
    sessions: training,
    cleaner: new PhotoCleaner(),
    spool,
    consent,
    photoFormat,
    publicUrl: photoBase,
    logger,
  });
  const userId = String(1000 + run);
  await training.start({ userId, channelId: '42', ethnicity: 'middle eastern', gender: 'male', age: 41 });
  const photos: (PhotoInput & { body: Buffer })[] = [];
  for (let i = 0; i < count; i++) {
    const body = await makePhoto(i);
    const path = `/r${run}/photo-${i}`;
    files.bodies.set(path, body);
    photos.push({
      id: `${run}${i}`,
      name: `photo-${i}`,
      url: `${files.base}${path}`,
      size: body.length,
      contentType: 'image/png',
      body,
    });
  }
  const key = sessionKey(userId, '42');
  for (let i = 0; i < photos.length; i += 10) {
    const r = await training.add(key, photos.slice(i, i + 10));
    expect(r.refused).toEqual([]);
  }
  const session = (await training.get(key))!;
  const given = { userId, guildId: '7', channelId: '42', at: Date.now(), wording: 'consent-v1' };
  return { training, session, photos, consent, uploader, given };
}

const spooled = async () => readdir(spoolDir).catch(() => [] as string[]);

beforeAll(async () => {
  await files.start();
  spoolDir = await mkdtemp(join(tmpdir(), 'spool-'));
  spool = new PhotoSpool({ dir: spoolDir, logger });
  await spool.start();
  await photoServer.register(photoFileRoutes, { spool });
  photoBase = await photoServer.listen({ host: '127.0.0.1', port: 0 });
  emulator = await startEmulator({ scenario: { steps: [], stepMs: 10, hold: true }, keepUploadBytes: true });
});
afterAll(async () => {
  spool.stop();
  await photoServer.close();
  await emulator.close();
  await files.close();
  await rm(spoolDir, { recursive: true, force: true });
});
beforeEach(() => emulator.reset());

describe('training photo upload: cleaned, consent recorded, then sent', () => {
  it.each([10, 30])(
    'base64: the service receives the %i photos cleaned, in order, exactly as the consent record names them',
    async (n) => {
      const { session, photos, consent, uploader, given } = await sessionWith(n, 'base64');
      const media = client('base64');
      try {
        const res = await uploader.send(
          session,
          `job-${run}`,
          given,
          (p, w) => media.submit('upload', p, w),
          undefined,
        );
        const taskId = 'taskId' in res ? res.taskId : '';
        const got = emulator.uploads(taskId);
        expect(got).toHaveLength(n);
        const [record] = await consent.listByMember(given.userId);
        expect(record).toMatchObject({
          jobId: `job-${run}`,
          photoCount: n,
          wording: 'consent-v1',
          guildId: '7',
        });
        expect(got.map((g) => (g.kind === 'base64' ? g.sha256 : g.url))).toEqual(record?.sha256);
        for (const [i, g] of got.entries()) {
          if (g.kind !== 'base64' || !g.bytes) throw new Error('expected kept base64 bytes');
          // Always decodable, in its own format, with no metadata (the first two originals had some).
          if (i < 2) expect(g.sha256).not.toBe(sha(photos[i]!.body));
          expect(metadataFound(g.bytes)).toEqual([]);
          const meta = await sharp(g.bytes).metadata();
          expect(meta.format).toBe((await sharp(photos[i]!.body).metadata()).format);
          expect(meta.exif).toBeUndefined();
        }
        const task = emulator.tasks.get(taskId);
        expect(task?.params).toMatchObject({
          ethnicity: 'middle eastern',
          gender: 'male',
          age: 41,
          images: n,
        });
        // The cleaned copies are gone once the request was sent.
        expect(await spooled()).toEqual([]);
      } finally {
        await media.close();
      }
    },
  );

  it('url: the service gets links to the bot’s cleaned copies (never the originals), served until the job ends', async () => {
    const { session, photos, consent, uploader, given } = await sessionWith(11, 'url');
    const media = client('url');
    try {
      const res = await uploader.send(
        session,
        'job-url',
        given,
        (p, w) => media.submit('upload', p, w),
        undefined,
      );
      const got = emulator.uploads('taskId' in res ? res.taskId : '');
      expect(got).toHaveLength(11);
      const [record] = await consent.listByMember(given.userId);
      for (const [i, g] of got.entries()) {
        if (g.kind !== 'url') throw new Error('expected a link');
        expect(g.url.startsWith(`${photoBase}/photos/`)).toBe(true);
        expect(photos.map((p) => p.url)).not.toContain(g.url);
        const answer = await fetch(g.url);
        expect(answer.status).toBe(200);
        expect(answer.headers.get('cache-control')).toContain('no-store');
        const bytes = Buffer.from(await answer.arrayBuffer());
        expect(sha(bytes)).toBe(record?.sha256[i]);
        expect(metadataFound(bytes)).toEqual([]);
      }
      // A guessed token is the same 404 as an unknown one.
      const first = (got[0] as { url: string }).url;
      const guessed = first.replace(/\/photos\/[^/]+\//, `/photos/${'A'.repeat(43)}/`);
      expect((await fetch(guessed)).status).toBe(404);
      // The job ended: the copies go.
      await uploader.jobEnded('job-url');
      expect((await fetch(first)).status).toBe(404);
      expect(await spooled()).toEqual([]);
    } finally {
      await media.close();
    }
  });

  it('a photo changed since it was added fails the upload naming it: nothing sent, no consent record, no copies left', async () => {
    const { session, photos, consent, uploader, given } = await sessionWith(10, 'base64');
    const changed = photos[3]!;
    files.bodies.set(new URL(changed.url).pathname, await uniquePng());
    const media = client('base64');
    try {
      const err = await uploader
        .send(session, 'job-x', given, (p, w) => media.submit('upload', p, w), undefined)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MediaRequestInvalidError);
      expect((err as MediaRequestInvalidError).userMessage).toBe(
        '“photo-3”: its content changed since it was added (different SHA-256)',
      );
      expect(emulator.requests.filter((r) => r.path === '/ai-photo-upload')).toHaveLength(0);
      expect(await consent.listByMember(given.userId)).toEqual([]);
      expect(await spooled()).toEqual([]);
    } finally {
      await media.close();
    }
  });

  it('a photo that is not a decodable image (right magic bytes, broken data) fails it naming the photo', async () => {
    const { session, photos, uploader, given, training } = await sessionWith(10, 'base64');
    const broken = Buffer.concat([(await uniquePng()).subarray(0, 40), Buffer.alloc(200, 7)]);
    const path = `/r${run}/broken`;
    files.bodies.set(path, broken);
    const key = session.key;
    await training.add(key, [
      {
        id: 'b',
        name: 'broken.png',
        url: `${files.base}${path}`,
        size: broken.length,
        contentType: 'image/png',
      },
    ]);
    const media = client('base64');
    try {
      const err = await uploader
        .send((await training.get(key))!, 'job-y', given, (p, w) => media.submit('upload', p, w), undefined)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MediaRequestInvalidError);
      expect((err as MediaRequestInvalidError).userMessage).toMatch(
        /^“broken\.png”: it could not be read as an image/,
      );
      expect(emulator.requests.filter((r) => r.path === '/ai-photo-upload')).toHaveLength(0);
      expect(photos).toHaveLength(10);
    } finally {
      await media.close();
    }
  });
});
