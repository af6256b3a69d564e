import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStores, type Stores } from '../src/services/store/index.js';
import { jobOperations } from '../src/services/operations/index.js';
import type { AtomicKeyValueStore, JobState } from '../src/services/store/types.js';
import { MemoryKv as SharedMemoryKv } from './helpers/memory-kv.js';
import { REDIS_URL } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';
import {
  DownloadError,
  cappedBody,
  createHttpDownloader,
  inspectImage,
  downloadVerified,
} from '../src/services/training/download.js';
import { formatOfContentType, sniffImage } from '../src/services/training/image-sniff.js';
import { discordUrlExpiry, refreshExpiring } from '../src/services/training/refresh-urls.js';
import { renderAddResult, renderSessionMessage, renderStatus } from '../src/services/training/render.js';
import {
  CLAIM_STALE_MS,
  MAX_PHOTOS,
  TrainingSessions,
  photoDigest,
  sessionKey,
  type PhotoInput,
  type Refusal,
  type TrainingSessionsOptions,
} from '../src/services/training/sessions.js';
import { publicTranslator, t, translator, type Locale } from '../src/i18n/index.js';

// ------------------------------------------------------------ fixtures

const SIG = {
  png: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
  jpeg: [0xff, 0xd8, 0xff, 0xe0],
  gif: [...Buffer.from('GIF89a')],
  webp: [...Buffer.from('RIFF'), 0, 0, 0, 0, ...Buffer.from('WEBPVP8 ')],
};

/** A file starting with the format's magic bytes, then random bytes. */
function image(format: keyof typeof SIG, size = 2048): Buffer {
  const b = randomBytes(size);
  Buffer.from(SIG[format]).copy(b);
  return b;
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

interface Served {
  body: Buffer;
  /** Omit Content-Length (chunked), or lie about it. */
  length?: number | 'none';
  status?: number;
  /** Wait before sending the headers. */
  delayMs?: number;
}

/** Local file server: `files` by path; counts hits and bytes actually sent. */
class FileServer {
  readonly files = new Map<string, Served>();
  readonly hits = new Map<string, number>();
  private server: Server | undefined;
  base = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
      const f = this.files.get(path);
      if (!f) {
        res.writeHead(404).end();
        return;
      }
      const send = () => {
        const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
        if (f.length !== 'none') headers['content-length'] = String(f.length ?? f.body.length);
        res.writeHead(f.status ?? 200, headers);
        // In slices so a reader can stop in the middle.
        let off = 0;
        const pump = () => {
          while (off < f.body.length) {
            const slice = f.body.subarray(off, off + 16 * 1024);
            off += slice.length;
            if (!res.write(slice)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        pump();
      };
      if (f.delayMs) setTimeout(send, f.delayMs);
      else send();
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  put(path: string, f: Served): PhotoInput & { body: Buffer } {
    this.files.set(path, f);
    return {
      id: String(Math.floor(Math.random() * 1e15)),
      name: path.slice(1),
      url: `${this.base}${path}`,
      size: f.body.length,
      contentType: 'image/png',
      body: f.body,
    };
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

/** The shared in-memory store (../helpers/memory-kv.ts) with a random latency per call and a count of writes. */
class MemoryKv extends SharedMemoryKv {
  sets = 0;
  constructor(
    now: () => number,
    private readonly latencyMs = 0,
  ) {
    super(now);
  }
  private async tick(): Promise<void> {
    await new Promise((r) => setTimeout(r, this.latencyMs * Math.random()));
  }
  override async get<T>(key: string): Promise<T | undefined> {
    await this.tick();
    return super.get<T>(key);
  }
  override async set(key: string, value: unknown, ttlMs: number): Promise<void> {
    await this.tick();
    this.sets++;
    return super.set(key, value, ttlMs);
  }
  override async delete(key: string): Promise<void> {
    await this.tick();
    return super.delete(key);
  }
}

const logger = pino({ level: 'silent' });
const MiB = 1024 * 1024;
const files = new FileServer();
let clock = 1_700_000_000_000;
const now = () => clock;

function sessions(over: Partial<TrainingSessionsOptions> = {}) {
  const kv = (over.kv as MemoryKv | undefined) ?? new MemoryKv(now);
  const s = new TrainingSessions({
    kv,
    logger,
    maxBytes: 64 * 1024,
    ttlMs: 24 * 3_600_000,
    refreshUrls: () => Promise.reject(new Error('no refresh expected')),
    now,
    ...over,
  });
  return { s, kv };
}

async function opened(s: TrainingSessions, userId = '100', channelId = '200'): Promise<string> {
  await s.start({ userId, channelId, ethnicity: 'asian', gender: 'female', age: 30 });
  return sessionKey(userId, channelId);
}

let seq = 0;
const newImage = (format: keyof typeof SIG = 'png', size = 2048) =>
  files.put(`/p${++seq}.${format}`, { body: image(format, size) });

beforeAll(() => files.start());
afterAll(() => files.close());
beforeEach(() => {
  clock = 1_700_000_000_000;
});

// ------------------------------------------------------------ sniffing

/** Refusals as a member of `locale` reads them. */
const inWords = (refused: Refusal[], locale: Locale = 'en-US') =>
  refused.map((r) => ({ name: r.name, reason: r.reason(translator(locale)) }));

describe('image sniffing', () => {
  it('recognises PNG, JPEG, GIF (87a/89a) and WebP by their magic bytes', () => {
    expect(sniffImage(image('png'))).toBe('png');
    expect(sniffImage(image('jpeg'))).toBe('jpeg');
    expect(sniffImage(image('gif'))).toBe('gif');
    expect(sniffImage(Buffer.from('GIF87a......'))).toBe('gif');
    expect(sniffImage(image('webp'))).toBe('webp');
  });

  it('refuses other files and truncated signatures', () => {
    expect(sniffImage(Buffer.from('%PDF-1.7\n%âãÏÓ'))).toBeUndefined();
    expect(sniffImage(Buffer.from('RIFF\0\0\0\0WAVEfmt '))).toBeUndefined();
    expect(sniffImage(Buffer.from([0x89, 0x50, 0x4e]))).toBeUndefined();
    expect(sniffImage(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined();
    expect(sniffImage(new Uint8Array(0))).toBeUndefined();
  });

  it('maps declared content types', () => {
    expect(formatOfContentType('image/PNG; charset=binary')).toBe('png');
    expect(formatOfContentType('image/jpg')).toBe('jpeg');
    expect(formatOfContentType('image/svg+xml')).toBeUndefined();
    expect(formatOfContentType(null)).toBeUndefined();
  });
});

// ------------------------------------------------------------ download

describe('streaming download', () => {
  const download = createHttpDownloader();
  const limits = (maxBytes: number) => ({ maxBytes, headersTimeoutMs: 2000, bodyTimeoutMs: 2000 });

  it('hashes while streaming and reports size and format', async () => {
    const p = newImage('webp', 100_000);
    const r = await inspectImage(download, p.url, limits(MiB));
    expect(r).toEqual({ sha256: sha(p.body), size: 100_000, format: 'webp' });
  });

  it('refuses a declared Content-Length over the cap before reading the body', async () => {
    const p = files.put('/declared-big.png', { body: image('png', 200_000) });
    const err = await inspectImage(download, p.url, limits(100_000)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as DownloadError).kind).toBe('too_large');
    expect((err as DownloadError).message).toMatch(/195\.3 KiB|over the 98 KiB limit/);
  });

  it('enforces the cap while reading when no length is declared, and stops the transfer', async () => {
    const p = files.put('/chunked-big.png', { body: image('png', 4 * MiB), length: 'none' });
    const res = await download(p.url, { headersTimeoutMs: 2000, bodyTimeoutMs: 2000 });
    let read = 0;
    const err = await (async () => {
      for await (const c of cappedBody(res, 256 * 1024)) read += c.byteLength;
    })().catch((e: unknown) => e);
    expect((err as DownloadError).kind).toBe('too_large');
    expect(read).toBeLessThanOrEqual(256 * 1024);
  });

  it('accepts a file of exactly the cap', async () => {
    const p = files.put('/exact.png', { body: image('png', 50_000), length: 'none' });
    await expect(inspectImage(download, p.url, limits(50_000))).resolves.toMatchObject({ size: 50_000 });
  });

  it('stops at the magic bytes of a non-image', async () => {
    const body = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(2 * MiB)]);
    const p = files.put('/doc.png', { body });
    const err = await inspectImage(download, p.url, limits(4 * MiB)).catch((e: unknown) => e);
    expect((err as DownloadError).kind).toBe('not_image');
  });

  it('refuses non-http(s) URLs, HTTP errors and slow servers with a reason', async () => {
    await expect(inspectImage(download, 'file:///etc/passwd', limits(MiB))).rejects.toMatchObject({
      kind: 'invalid_url',
    });
    await expect(inspectImage(download, `${files.base}/missing.png`, limits(MiB))).rejects.toMatchObject({
      kind: 'http',
      message: expect.stringContaining('404') as unknown,
    });
    const slow = files.put('/slow.png', { body: image('png'), delayMs: 1500 });
    await expect(
      inspectImage(download, slow.url, { maxBytes: MiB, headersTimeoutMs: 200, bodyTimeoutMs: 200 }),
    ).rejects.toMatchObject({ kind: 'timeout' });
  });

  it('verifies the size and SHA-256 of a re-download', async () => {
    const p = newImage('png', 30_000);
    const got = await downloadVerified(download, p.url, limits(MiB), sha(p.body), p.body.length);
    expect(got.equals(p.body)).toBe(true);
    await expect(
      downloadVerified(download, p.url, limits(MiB), 'f'.repeat(64), p.body.length),
    ).rejects.toMatchObject({ kind: 'mismatch' });
    // A different length is a different photo, whatever it hashes to; a longer one is not read past its size.
    for (const size of [p.body.length - 1, p.body.length + 1]) {
      await expect(downloadVerified(download, p.url, limits(MiB), sha(p.body), size)).rejects.toMatchObject({
        kind: 'mismatch',
      });
    }
  });
});

// ------------------------------------------------------------ sessions

describe('TrainingSessions', () => {
  it('opens one session per user per channel and keeps an open one untouched', async () => {
    const { s } = sessions();
    const first = await s.start({ userId: '1', channelId: '2', ethnicity: 'white', gender: 'male' });
    expect(first.created).toBe(true);
    expect(first.session.key).toBe('training:1:2');
    const again = await s.start({ userId: '1', channelId: '2', ethnicity: 'black', gender: 'female' });
    expect(again.created).toBe(false);
    expect(again.session.ethnicity).toBe('white');
    expect(
      (await s.start({ userId: '1', channelId: '3', ethnicity: 'black', gender: 'female' })).created,
    ).toBe(true);
  });

  it('adds valid photos and refuses each bad one with its reason, keeping the rest', async () => {
    const { s, kv } = sessions();
    const key = await opened(s);
    const good1 = newImage('png');
    const good2 = newImage('jpeg');
    const pdf = { ...newImage('png'), name: 'cv.pdf', contentType: 'application/pdf' };
    const big = { ...newImage('png'), name: 'huge.png', size: 5 * MiB };
    const disguised = files.put('/fake.png', {
      body: Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(500)]),
    });
    const dupOfGood1 = files.put('/copy.png', { body: good1.body });
    const r = await s.add(key, [good1, pdf, big, disguised, good2, dupOfGood1]);

    expect(r.added.map((p) => p.name)).toEqual([good1.name, good2.name]);
    expect(inWords(r.refused)).toEqual([
      { name: 'cv.pdf', reason: 'it is not an image (application/pdf); send PNG, JPEG, GIF or WebP' },
      { name: 'huge.png', reason: 'it is 5 MiB, over the 64 KiB limit' },
      { name: 'fake.png', reason: expect.stringContaining('not a PNG, JPEG, GIF or WebP image') as unknown },
      { name: 'copy.png', reason: `it is the same picture as “${good1.name}”, already in the session` },
    ]);
    // Declared-size refusals are not downloaded.
    expect(files.hits.get(`/${big.name}`) ?? 0).toBe(0);
    // Only metadata is stored.
    const stored = await kv.get<{ photos: Record<string, unknown>[] }>(key);
    expect(stored?.photos[0]).toEqual({
      id: good1.id,
      name: good1.name,
      url: good1.url,
      size: good1.body.length,
      contentType: 'image/png',
      format: 'png',
      sha256: sha(good1.body),
      addedAt: clock,
    });
    expect(JSON.stringify(stored).length).toBeLessThan(2000);

    // Duplicates are also found across adds.
    const later = await s.add(key, [files.put('/again.jpg', { body: good2.body })]);
    expect(later.added).toEqual([]);
    expect(inWords(later.refused)[0]?.reason).toContain('same picture');
    // A German member reads the reason in German.
    expect(inWords(later.refused, 'de')[0]?.reason).toBe(
      t('de', 'training.reason.duplicate', { name: `“${good2.name}”` }),
    );
  });

  it('keeps a batch up to 30 and refuses the 31st and beyond by name', async () => {
    const { s } = sessions();
    const key = await opened(s);
    const first = Array.from({ length: 25 }, () => newImage());
    for (let i = 0; i < 25; i += 10) await s.add(key, first.slice(i, i + 10));
    const batch = Array.from({ length: 8 }, () => newImage());
    const r = await s.add(key, batch);
    expect(r.added.map((p) => p.name)).toEqual(batch.slice(0, 5).map((p) => p.name));
    expect(inWords(r.refused)).toEqual(
      batch
        .slice(5)
        .map((p) => ({ name: p.name, reason: 'the session already holds 30 photos, the maximum' })),
    );
    expect(r.session.photos).toHaveLength(MAX_PHOTOS);
    expect(renderAddResult(r)).toContain('Refused 3:');

    // Full: refused at once, nothing downloaded.
    const extra = newImage();
    const full = await s.add(key, [extra]);
    expect(full.refused).toHaveLength(1);
    expect(files.hits.get(`/${extra.name}`) ?? 0).toBe(0);
  });

  it('serialises concurrent adds to one session so no photo is lost', async () => {
    const { s } = sessions({ kv: new MemoryKv(now, 5) });
    const key = await opened(s);
    const batches = Array.from({ length: 5 }, () => Array.from({ length: 6 }, () => newImage()));
    const results = await Promise.all(batches.map((b) => s.add(key, b)));
    expect(results.flatMap((r) => r.refused)).toEqual([]);
    const session = await s.get(key);
    expect(session?.photos).toHaveLength(30);
    expect(new Set(session?.photos.map((p) => p.name))).toEqual(new Set(batches.flat().map((p) => p.name)));
  });

  it('concurrent adds of the same picture keep one copy', async () => {
    const { s } = sessions({ kv: new MemoryKv(now, 5) });
    const key = await opened(s);
    const body = image('png');
    const a = files.put('/same-a.png', { body });
    const b = files.put('/same-b.png', { body });
    const [ra, rb] = await Promise.all([s.add(key, [a]), s.add(key, [b])]);
    expect((ra?.added.length ?? 0) + (rb?.added.length ?? 0)).toBe(1);
    expect((await s.get(key))?.photos).toHaveLength(1);
  });

  it('expires after the TTL (shown to the user) and every add renews it', async () => {
    const { s, kv } = sessions();
    const key = await opened(s);
    const ttl = 24 * 3_600_000;
    expect((await s.get(key))?.expiresAt).toBe(clock + ttl);
    expect(renderSessionMessage((await s.get(key))!).content).toContain(
      `<t:${Math.floor((clock + ttl) / 1000)}:R>`,
    );
    // In a German server the public session message, its buttons included, is German.
    const german = renderSessionMessage((await s.get(key))!, {}, publicTranslator('de'));
    expect(german.content).toContain(
      t('de', 'training.session.header_public', { user: '<@u1>' }).slice(0, 10),
    );
    expect(german.content).toContain(
      t('de', 'training.count.not_ready', { count: 0, max: 30, missing: 10, min: 10 }),
    );
    expect(JSON.stringify(german.components)).toContain(t('de', 'buttons.add_photos'));

    clock += ttl - 1000;
    const r = await s.add(key, [newImage()]);
    expect(r.session.expiresAt).toBe(clock + ttl);
    expect(kv.data.get(key)?.expiresAt).toBe(clock + ttl);

    clock += ttl;
    expect(await s.get(key)).toBeUndefined();
    await expect(s.add(key, [newImage()])).rejects.toMatchObject({ code: 'no_session' });
  });

  it('drops an unreadable stored session', async () => {
    const { s, kv } = sessions();
    await kv.set('training:9:9', { v: 1, photos: 'nope' }, 1000);
    expect(await s.get('training:9:9')).toBeUndefined();
    expect(kv.data.has('training:9:9')).toBe(false);
  });

  it('reads a message stored in the flat shape of before as the one MessageRef, and writes that back', async () => {
    const { s, kv } = sessions();
    const key = await opened(s);
    const stored = (id: string, personal: boolean) => ({
      id,
      channelId: '2',
      applicationId: 'app',
      token: 'tok',
      createdAt: 1000,
      ...(personal ? { personal: true } : {}),
    });
    const interaction = (id: string) => ({
      applicationId: 'app',
      token: 'tok',
      createdAt: 1000,
      messageId: id,
    });
    const raw = (await kv.get<Record<string, unknown>>(key)) ?? {};
    await kv.set(key, { ...raw, message: stored('300', false) }, 60_000);
    expect((await s.get(key))?.message).toEqual({
      channelId: '2',
      messageId: '300',
      interaction: interaction('300'),
    });
    // A personal place's message: only its interaction can edit it, so no bot-token message id.
    await kv.set(key, { ...raw, message: stored('301', true) }, 60_000);
    const personal = await s.get(key);
    expect(personal?.message).toEqual({ channelId: '2', interaction: interaction('301') });
    await s.setMessage(key, personal?.message);
    expect((await kv.get<{ message?: unknown }>(key))?.message).toEqual({
      channelId: '2',
      interaction: interaction('301'),
    });
  });

  it('claims a submission once: a second claim, adds and cancel are refused until it ends', async () => {
    const { s } = sessions();
    const key = await opened(s);
    await s.add(
      key,
      Array.from({ length: 10 }, () => newImage()),
    );
    const session = (await s.get(key))!;
    const claimed = await s.claim(key, 'claim-1', photoDigest(session));
    expect(claimed.submission).toMatchObject({ claimId: 'claim-1', at: clock });
    await expect(s.claim(key, 'claim-2')).rejects.toMatchObject({ code: 'submitting' });
    await expect(s.add(key, [newImage()])).rejects.toMatchObject({ code: 'submitting' });
    await expect(s.cancel(key)).rejects.toMatchObject({ code: 'submitting' });
    // Nothing was sent (fair use refused, say): open again, the same photos.
    const open = await s.endClaim(key, 'claim-1', 'not_sent');
    expect(open?.submission).toBeUndefined();
    expect(open?.photos).toHaveLength(10);
    expect((await s.claim(key, 'claim-3')).submission?.claimId).toBe('claim-3');
  });

  it('refuses a claim for photos other than those consented to, or too few', async () => {
    const { s } = sessions();
    const key = await opened(s);
    await s.add(
      key,
      Array.from({ length: 9 }, () => newImage()),
    );
    await expect(s.claim(key, 'c')).rejects.toMatchObject({ code: 'not_ready' });
    await s.add(key, [newImage()]);
    const digest = photoDigest((await s.get(key))!);
    await s.add(key, [newImage()]);
    await expect(s.claim(key, 'c', digest)).rejects.toMatchObject({ code: 'changed' });
    expect((await s.get(key))?.submission).toBeUndefined();
  });

  it('a failed upload keeps the photos for its Retry; an accepted one waits for the job, then closes', async () => {
    const states = new Map<string, JobState>();
    const { s } = sessions({ jobState: (id) => Promise.resolve(states.get(id)) });
    const key = await opened(s);
    await s.add(
      key,
      Array.from({ length: 10 }, () => newImage()),
    );
    await s.claim(key, 'c1');
    await s.attachJob(key, 'c1', 'job-1');
    states.set('job-1', 'failed');
    const failed = await s.endClaim(key, 'c1', 'failed');
    expect(failed).toMatchObject({ failedJobId: 'job-1' });
    expect(failed?.submission).toBeUndefined();
    expect((await s.forRetry('job-1'))?.photos).toHaveLength(10);
    expect(await s.forRetry('job-other')).toBeUndefined();

    // The retry is accepted: adds are refused while it runs, cancel only drops the session.
    await s.claim(key, 'c2');
    await s.attachJob(key, 'c2', 'job-2');
    states.set('job-2', 'queued');
    await s.endClaim(key, 'c2', 'accepted');
    await expect(s.add(key, [newImage()])).rejects.toMatchObject({ code: 'submitted' });
    expect((await s.current(key))?.submission).toMatchObject({ jobId: 'job-2', accepted: true });
    // It finishes: the session goes.
    await s.jobEnded('job-2', 'finished');
    expect(await s.get(key)).toBeUndefined();
  });

  it('an upload job that fails after the service accepted it reopens the session, reported or read lazily', async () => {
    const states = new Map<string, JobState>();
    const { s } = sessions({ jobState: (id) => Promise.resolve(states.get(id)) });
    const key = await opened(s);
    await s.add(
      key,
      Array.from({ length: 10 }, () => newImage()),
    );
    await s.claim(key, 'c1');
    await s.attachJob(key, 'c1', 'job-1');
    states.set('job-1', 'processing');
    await s.endClaim(key, 'c1', 'accepted');
    await s.jobEnded('job-1', 'failed');
    expect(await s.get(key)).toMatchObject({ failedJobId: 'job-1' });
    expect((await s.get(key))?.submission).toBeUndefined();

    // Not reported (the final ran on an instance that died): the next read settles it from the job.
    await s.claim(key, 'c2');
    await s.attachJob(key, 'c2', 'job-2');
    states.set('job-2', 'processing');
    await s.endClaim(key, 'c2', 'accepted');
    expect((await s.current(key))?.submission?.jobId).toBe('job-2');
    states.set('job-2', 'failed');
    const reopened = await s.current(key);
    expect(reopened?.submission).toBeUndefined();
    expect(reopened?.failedJobId).toBe('job-2');
    expect((await s.add(key, [newImage()])).added).toHaveLength(1);
  });

  it('a claim left by an instance that died before making its job lapses', async () => {
    const { s } = sessions({ jobState: () => Promise.resolve(undefined) });
    const key = await opened(s);
    await s.add(
      key,
      Array.from({ length: 10 }, () => newImage()),
    );
    await s.claim(key, 'dead');
    clock += CLAIM_STALE_MS - 1000;
    await expect(s.claim(key, 'next')).rejects.toMatchObject({ code: 'submitting' });
    clock += 2000;
    expect((await s.claim(key, 'next')).submission?.claimId).toBe('next');
  });

  it('an add still downloading when the submission is claimed is refused, not silently dropped', async () => {
    const { s } = sessions();
    const key = await opened(s);
    await s.add(
      key,
      Array.from({ length: 10 }, () => newImage()),
    );
    const slow = files.put('/slow-add.png', { body: image('png'), delayMs: 300 });
    const adding = s.add(key, [slow]);
    await new Promise((r) => setTimeout(r, 50));
    const claimed = await s.claim(key, 'c');
    expect(claimed.photos).toHaveLength(10);
    await expect(adding).rejects.toMatchObject({ code: 'submitting' });
    expect((await s.get(key))?.photos).toHaveLength(10);
  });

  it('lists and deletes a member’s sessions in every channel, no one else’s', async () => {
    const states = new Map<string, JobState>();
    const { s, kv } = sessions({ jobState: (id) => Promise.resolve(states.get(id)) });
    const a = await opened(s, '500', '1');
    const b = await opened(s, '500', '2');
    const other = await opened(s, '501', '1');
    await s.add(
      b,
      Array.from({ length: 10 }, () => newImage()),
    );
    await s.claim(b, 'c');
    await s.attachJob(b, 'c', 'job-b');
    states.set('job-b', 'failed');
    await s.endClaim(b, 'c', 'failed');
    expect((await s.listByMember('500')).map((x) => x.key).sort()).toEqual([a, b].sort());
    expect(await s.deleteForMember('500')).toBe(2);
    expect(await s.listByMember('500')).toEqual([]);
    expect(await s.get(a)).toBeUndefined();
    expect(await s.forRetry('job-b')).toBeUndefined();
    expect([...kv.data.keys()].filter((k) => k.includes('500'))).toEqual([]);
    expect((await s.listByMember('501')).map((x) => x.key)).toEqual([other]);
  });

  it('status lists names and counts', async () => {
    const { s } = sessions();
    const key = await opened(s);
    const photos = Array.from({ length: 12 }, () => newImage());
    await s.add(key, photos);
    const st = await s.status(key);
    expect(st).toMatchObject({ count: 12, ready: true, missing: 0, room: 18 });
    const text = renderStatus(st!.session);
    expect(text).toContain('12 / 30 photos — ready to submit');
    expect(text).toContain(`12. “${photos[11]?.name}”`);
  });
});

// ------------------------------------------------------------ submit-time sources

describe('originals for submit', () => {
  const exHex = (ms: number) => Math.floor(ms / 1000).toString(16);

  it('reads the expiry of Discord CDN links', () => {
    expect(discordUrlExpiry('https://cdn.discordapp.com/attachments/1/2/a.png?ex=65a1b2c3&is=1&hm=2')).toBe(
      0x65a1b2c3 * 1000,
    );
    expect(discordUrlExpiry('https://example.com/a.png')).toBeUndefined();
  });

  it('keeps Discord links unsigned and signs them again at submit, then downloads and verifies each photo', async () => {
    const calls: string[][] = [];
    const { s } = sessions({
      refreshUrls: (urls) => {
        calls.push(urls);
        return Promise.resolve({
          refreshed_urls: urls.map((u) => ({
            original: u,
            refreshed: `${u}?ex=${exHex(clock + 86_400_000)}&is=0&hm=ef`,
          })),
        });
      },
    });
    const key = await opened(s);
    const expired = newImage();
    const fresh = newImage();
    const plain = newImage();
    await s.add(key, [
      { ...expired, url: `${expired.url}?ex=${exHex(clock + 60_000)}&is=0&hm=ab` },
      { ...fresh, url: `${fresh.url}?ex=${exHex(clock + 20 * 3_600_000)}&is=0&hm=cd` },
      plain,
    ]);
    clock += 3_600_000; // the first link has expired, the second is still good for hours
    const session = (await s.get(key))!;
    // Discord links are stored without their signature: no working link to an original is kept.
    expect(session.photos.map((p) => p.url)).toEqual([expired.url, fresh.url, plain.url]);
    const originals = await s.originals(session);
    // Both are signed again for the submission (the other link is no Discord one).
    expect(calls).toEqual([[expired.url, fresh.url]]);
    expect(originals[0]?.url).toMatch(/\?ex=[0-9a-f]+&is=0&hm=ef$/);
    expect(originals[1]?.url).toMatch(/\?ex=[0-9a-f]+&is=0&hm=ef$/);
    expect(originals[2]?.url).toBe(plain.url);
    for (const [i, o] of originals.entries()) expect(sha(await o.read())).toBe(session.photos[i]?.sha256);
  });

  it('fails a photo whose content changed since it was added, naming it', async () => {
    const { s } = sessions();
    const key = await opened(s);
    const p = newImage();
    await s.add(key, [p]);
    files.files.set(`/${p.name}`, { body: image('png') });
    const [o] = await s.originals((await s.get(key))!);
    await expect(o!.read()).rejects.toThrow(`“${p.name}”: its content changed since it was added`);
  });

  it('refuses to submit expired links that Discord did not renew', async () => {
    const { s } = sessions({ refreshUrls: () => Promise.resolve({ refreshed_urls: [] }) });
    const key = await opened(s);
    const p = newImage();
    await s.add(key, [{ ...p, url: `${p.url}?ex=${exHex(clock + 1000)}&is=0&hm=ab` }]);
    clock += 10_000;
    await expect(s.originals((await s.get(key))!)).rejects.toMatchObject({ code: 'refresh_failed' });
  });

  it('parses the refresh answer with a schema', async () => {
    await expect(
      refreshExpiring(
        [`https://cdn.discordapp.com/a.png?ex=1&is=0&hm=0`],
        () => Promise.resolve({ nope: 1 }),
        clock,
        0,
      ),
    ).rejects.toThrow(/unexpected shape/);
  });
});

// ------------------------------------------------------------ on the real stores

for (const backend of ['sqlite', 'redis'] as const)
  describe(
    `sessions on ${backend} shared by two instances`,
    backend === 'redis' ? needs('redis') : {},
    () => {
      const opened: Stores[] = [];
      const dirs: string[] = [];
      afterAll(async () => {
        for (const st of opened) await st.close();
        for (const d of dirs) await rm(d, { recursive: true, force: true });
      });

      /** Two TrainingSessions on one store namespace (Redis: two connections, as two instances have). */
      async function twoInstances(): Promise<[TrainingSessions, TrainingSessions]> {
        const namespace = `ts${randomBytes(4).toString('hex')}`;
        const dataDir = await mkdtemp(join(tmpdir(), 'sessions-'));
        dirs.push(dataDir);
        const open = async () => {
          const st = await createStores({
            operations: jobOperations,
            ...(backend === 'redis' ? { redisUrl: REDIS_URL } : {}),
            dataDir,
            namespace,
            logger,
          });
          opened.push(st);
          return st;
        };
        const first = await open();
        // SQLite is one process's file: both "instances" share its store (and its lock).
        const second = backend === 'redis' ? await open() : first;
        const make = (kv: AtomicKeyValueStore) =>
          new TrainingSessions({
            kv,
            logger,
            maxBytes: 64 * 1024,
            ttlMs: 120_000,
            refreshUrls: () => Promise.reject(new Error('no refresh expected')),
          });
        return [make(first.kv), make(second.kv)];
      }

      it('adds from both at once are all kept', async () => {
        const [a, b] = await twoInstances();
        await a.start({ userId: '71', channelId: '72', ethnicity: 'white', gender: 'male', age: 40 });
        const key = sessionKey('71', '72');
        const batches = Array.from({ length: 6 }, () => Array.from({ length: 4 }, () => newImage()));
        const results = await Promise.all(batches.map((batch, i) => (i % 2 === 0 ? a : b).add(key, batch)));
        expect(results.flatMap((r) => r.refused)).toEqual([]);
        const names = (await a.get(key))?.photos.map((p) => p.name);
        expect(new Set(names)).toEqual(new Set(batches.flat().map((p) => p.name)));
        expect(names).toHaveLength(24);
      });

      it('sessions opened on both in several channels are all listed by member', async () => {
        const [a, b] = await twoInstances();
        await Promise.all(
          ['1', '2', '3', '4'].map((channelId, i) =>
            (i % 2 === 0 ? a : b).start({ userId: '91', channelId, ethnicity: 'black', gender: 'male' }),
          ),
        );
        expect((await a.listByMember('91')).map((x) => x.channelId).sort()).toEqual(['1', '2', '3', '4']);
        expect(await b.deleteForMember('91')).toBe(4);
        expect(await a.listByMember('91')).toEqual([]);
      });

      it('claims from both at once: exactly one wins', async () => {
        const [a, b] = await twoInstances();
        await a.start({ userId: '81', channelId: '82', ethnicity: 'asian', gender: 'female' });
        const key = sessionKey('81', '82');
        await a.add(
          key,
          Array.from({ length: 10 }, () => newImage()),
        );
        const outcomes = await Promise.allSettled(
          Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).claim(key, `claim-${i}`)),
        );
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        expect(won).toHaveLength(1);
        for (const o of outcomes.filter((x) => x.status === 'rejected'))
          expect((o as PromiseRejectedResult).reason).toMatchObject({ code: 'submitting' });
        const winner = (won[0] as PromiseFulfilledResult<{ submission?: { claimId: string } }>).value;
        expect((await b.get(key))?.submission?.claimId).toBe(winner.submission?.claimId);
      });
    },
  );
