/**
 * Training-photo upload benchmark: 30 photos of 10 MiB each are served by a
 * local HTTP server (generated on the fly from a 1 MiB block, nothing
 * pre-built), uploaded as base64 through the real MediaClient (streamed body,
 * TrainingSessions.photoSources re-downloading and verifying each photo) to a
 * local receiver that decodes and hashes every image as it streams by without
 * keeping it. Server and receiver run in a child process, so the RSS sampled
 * here (every 10 ms) is the bot's side only. Gate: the upload grows RSS by
 * less than 64 MiB. The add phase (30 × download + magic bytes + SHA-256) is
 * measured too.
 *
 * A small warm-up upload runs first: the very first upload of a process also
 * pays one-time costs (JIT, undici's llhttp WASM, pools, allocator arenas),
 * about the same with 30 × 1 MiB as with 30 × 10 MiB, which are not what the
 * gate is about (how memory scales with the photos).
 *
 *   npm run bench                       (all benchmarks, via bench/run.ts)
 *   npx tsx bench/photo-upload.bench.ts (this one; exit code 1 on FAIL)
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fork, type ChildProcess } from 'node:child_process';
import { pino } from 'pino';
import { MediaClient } from '../src/services/media/client.js';
import type { KeyValueStore } from '../src/services/store/types.js';
import { TrainingSessions, sessionKey, type PhotoInput } from '../src/services/training/sessions.js';

const MiB = 1024 * 1024;
const PHOTOS = 30;
const PHOTO_BYTES = 10 * MiB;
const WARMUP_BYTES = 256 * 1024;
const WARMUP_PHOTOS = 10;
const LIMIT_MIB = 64;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// ------------------------------------------------------------ image server

/** One shared 1 MiB random block; photo i = PNG signature + i + the block repeated, cut at `size`. */
function photoSlices(block: Buffer, i: number, size: number): Buffer[] {
  const head = Buffer.alloc(16);
  PNG.copy(head);
  head.writeUInt32BE(i, 8);
  const out: Buffer[] = [head];
  let left = size - head.length;
  while (left > 0) {
    const n = Math.min(left, block.length);
    out.push(block.subarray(0, n));
    left -= n;
  }
  return out;
}

function expectedSha(block: Buffer, i: number, size: number): string {
  const h = createHash('sha256');
  for (const s of photoSlices(block, i, size)) h.update(s);
  return h.digest('hex');
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** `/photo-{i}.png` (10 MiB) and `/small-{i}.png` (WARMUP_BYTES, for the warm-up upload). */
function imageServer(block: Buffer): Server {
  return createServer((req, res) => {
    const m = /^\/(photo|small)-(\d+)\.png$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    const size = m[1] === 'photo' ? PHOTO_BYTES : WARMUP_BYTES;
    const slices = photoSlices(block, Number(m[2]), size);
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(size) });
    let k = 0;
    const pump = (): void => {
      while (k < slices.length) {
        if (!res.write(slices[k++])) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
}

// ------------------------------------------------------------ receiver

interface Received {
  requestBytes: number;
  images: { sha256: string; bytes: number }[];
  error?: string;
}

/**
 * Streams `{…,"images":["<b64>",…]}`: decodes every base64 string chunk by
 * chunk into a SHA-256, keeping at most 3 pending characters per image.
 */
async function consumeUpload(req: IncomingMessage): Promise<Received> {
  const marker = Buffer.from('"images":[');
  const out: Received = { requestBytes: 0, images: [] };
  let prefix = Buffer.alloc(0);
  let state: 'meta' | 'between' | 'string' | 'done' = 'meta';
  let hash: Hash | undefined;
  let carry = '';
  let bytes = 0;
  const feed = (b64: string): void => {
    const all = carry + b64;
    const usable = all.length - (all.length % 4);
    const decoded = Buffer.from(all.slice(0, usable), 'base64');
    bytes += decoded.length;
    hash?.update(decoded);
    carry = all.slice(usable);
  };
  for await (const raw of req as AsyncIterable<Buffer>) {
    out.requestBytes += raw.length;
    let chunk = raw;
    if (state === 'meta') {
      prefix = Buffer.concat([prefix, chunk]);
      const at = prefix.indexOf(marker);
      if (at < 0) {
        if (prefix.length > 64 * 1024) throw new Error('no "images" array in the first 64 KiB');
        continue;
      }
      chunk = prefix.subarray(at + marker.length);
      prefix = Buffer.alloc(0);
      state = 'between';
    }
    let pos = 0;
    while (pos < chunk.length && state !== 'done') {
      if (state === 'between') {
        const c = chunk[pos++];
        if (c === 0x22) {
          state = 'string';
          hash = createHash('sha256');
          carry = '';
          bytes = 0;
        } else if (c === 0x5d) state = 'done';
        continue;
      }
      const end = chunk.indexOf(0x22, pos);
      const stop = end < 0 ? chunk.length : end;
      feed(chunk.toString('latin1', pos, stop));
      pos = stop;
      if (end >= 0) {
        if (carry !== '') feed('');
        if (carry !== '') out.error = 'base64 length not a multiple of 4';
        out.images.push({ sha256: hash?.digest('hex') ?? '', bytes });
        state = 'between';
        pos = end + 1;
      }
    }
  }
  return out;
}

function receiver(onUpload: (r: Received) => void): Server {
  let n = 0;
  return createServer((req, res) => {
    consumeUpload(req).then(
      (r) => {
        onUpload(r);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ task_id: `bench-${++n}` }));
      },
      (err: unknown) => {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ errors: [{ msg: String(err) }] }));
      },
    );
  });
}

// ------------------------------------------------------------ helpers

class MemoryKv implements KeyValueStore {
  private readonly m = new Map<string, string>();
  get<T>(key: string): Promise<T | undefined> {
    const v = this.m.get(key);
    return Promise.resolve(v === undefined ? undefined : (JSON.parse(v) as T));
  }
  set(key: string, value: unknown, _ttlMs?: number): Promise<void> {
    this.m.set(key, JSON.stringify(value));
    return Promise.resolve();
  }
  delete(key: string): Promise<void> {
    this.m.delete(key);
    return Promise.resolve();
  }
}

/** Peak RSS above the level at start, sampled every 10 ms while `fn` runs. */
async function measured<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; ms: number; peak: number; peakGrowth: number; baseline: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  await new Promise((r) => setTimeout(r, 50));
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const t0 = performance.now();
  try {
    const value = await fn();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { value, ms: performance.now() - t0, peak, peakGrowth: peak - baseline, baseline };
  } finally {
    clearInterval(timer);
  }
}

const mib = (n: number): number => Math.round((n / MiB) * 10) / 10;

// ------------------------------------------------------------ servers (child process)

interface Expected {
  photos: string[];
  small: string[];
}

type ToParent =
  | { type: 'ready'; imagesUrl: string; sinkUrl: string; expected: Expected }
  | { type: 'received'; received: Received };

/**
 * The image server and the receiver run in a child process, so the RSS
 * sampled in the parent is the bot's side alone (downloads, hashing, base64,
 * request body), not the fixtures'.
 */
async function serveForParent(): Promise<void> {
  const block = randomBytes(MiB);
  const expected: Expected = {
    photos: Array.from({ length: PHOTOS }, (_, i) => expectedSha(block, i, PHOTO_BYTES)),
    small: Array.from({ length: WARMUP_PHOTOS }, (_, i) => expectedSha(block, i, WARMUP_BYTES)),
  };
  const images = imageServer(block);
  const sink = receiver((received) => process.send?.({ type: 'received', received } satisfies ToParent));
  const [imagesUrl, sinkUrl] = await Promise.all([listen(images), listen(sink)]);
  process.send?.({ type: 'ready', imagesUrl, sinkUrl, expected } satisfies ToParent);
  process.on('disconnect', () => process.exit(0));
}

class Servers {
  private readonly waiting: ((m: ToParent) => void)[] = [];
  private readonly inbox: ToParent[] = [];
  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: ToParent) => {
      const w = this.waiting.shift();
      if (w) w(m);
      else this.inbox.push(m);
    });
  }

  static start(): Servers {
    const child = fork(fileURLToPath(import.meta.url), [SERVE_FLAG], {
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new Servers(child);
  }

  next(): Promise<ToParent> {
    const m = this.inbox.shift();
    if (m) return Promise.resolve(m);
    return new Promise((resolve, reject) => {
      this.waiting.push(resolve);
      this.child.once('exit', (code) => reject(new Error(`bench servers exited (${code})`)));
    });
  }

  stop(): void {
    if (this.child.connected) this.child.disconnect();
    this.child.kill();
  }
}

// ------------------------------------------------------------ bench

/**
 * 1. warm-up: one upload of 10 small photos (pays one-time costs: JIT,
 *    undici's llhttp WASM, connection pools, allocator arenas);
 * 2. measured: upload of 30 × 10 MiB photos (the < 64 MiB gate); the session
 *    is seeded with the metadata an add stores (hashes from the server);
 * 3. measured: the same 30 photos added through TrainingSessions.add;
 * 4. measured: upload of the session built by those adds.
 */
export async function runPhotoUploadBench(): Promise<Record<string, number | string>> {
  const logger = pino({ level: 'silent' });
  const servers = Servers.start();
  try {
    const ready = await servers.next();
    if (ready.type !== 'ready') throw new Error('bench servers did not start');
    const { imagesUrl, sinkUrl, expected } = ready;
    const kv = new MemoryKv();
    const training = new TrainingSessions({
      kv,
      logger,
      maxBytes: PHOTO_BYTES,
      ttlMs: 3_600_000,
      refreshUrls: () => Promise.reject(new Error('local links never expire')),
    });
    const media = new MediaClient({
      baseUrl: sinkUrl,
      apiKey: 'bench',
      paths: {
        fetch: '/fetch',
        upscale: '/u',
        songExtend: '/s',
        videoExtend: '/v',
        photoUpload: '/ai-photo-upload',
      },
      photoFormat: 'base64',
      timeoutMs: 120_000,
      upscaleTimeoutMs: 120_000,
      logger,
    });
    const inputs = (kind: 'photo' | 'small', n: number, size: number): PhotoInput[] =>
      Array.from({ length: n }, (_, i) => ({
        id: `${kind}${i}`,
        name: `${kind}-${i}.png`,
        url: `${imagesUrl}/${kind}-${i}.png`,
        size,
        contentType: 'image/png',
      }));

    /** A session holding `photos` as an add would have stored them. */
    const seeded = async (channelId: string, photos: PhotoInput[], hashes: string[]): Promise<string> => {
      const { session } = await training.start({
        userId: '1',
        channelId,
        ethnicity: 'white',
        gender: 'female',
        age: 30,
      });
      const stored = photos.map((p, i) => ({
        ...p,
        contentType: 'image/png',
        format: 'png',
        sha256: hashes[i],
        addedAt: 0,
      }));
      await kv.set(session.key, { ...session, photos: stored }, 3_600_000);
      return session.key;
    };

    const upload = async (key: string, hashes: string[], size: number) => {
      const session = await training.get(key);
      if (!session) throw new Error('session vanished');
      const m = await measured(async () =>
        media.uploadTrainingPhotos(
          {
            photos: await training.photoSources(session),
            ethnicity: session.ethnicity,
            gender: session.gender,
            age: 30,
          },
          undefined,
        ),
      );
      const got = await servers.next();
      const r = got.type === 'received' ? got.received : undefined;
      const verified =
        r !== undefined &&
        r.error === undefined &&
        r.images.length === hashes.length &&
        r.images.every((img, i) => img.bytes === size && img.sha256 === hashes[i]);
      return { ...m, verified, requestBytes: r?.requestBytes ?? 0 };
    };

    try {
      const small = inputs('small', WARMUP_PHOTOS, WARMUP_BYTES);
      const warmup = await upload(
        await seeded('warmup', small, expected.small),
        expected.small,
        WARMUP_BYTES,
      );

      const photos = inputs('photo', PHOTOS, PHOTO_BYTES);
      const main = await upload(await seeded('main', photos, expected.photos), expected.photos, PHOTO_BYTES);

      const key = sessionKey('1', 'added');
      await training.start({
        userId: '1',
        channelId: 'added',
        ethnicity: 'white',
        gender: 'female',
        age: 30,
      });
      const added = await measured(async () => {
        let n = 0;
        for (let i = 0; i < PHOTOS; i += 10)
          n += (await training.add(key, photos.slice(i, i + 10))).added.length;
        return n;
      });
      const stored = await training.get(key);
      const addOk =
        added.value === PHOTOS && stored?.photos.every((p, i) => p.sha256 === expected.photos[i]) === true;
      const again = await upload(key, expected.photos, PHOTO_BYTES);

      const totalMiB = (PHOTOS * PHOTO_BYTES) / MiB;
      const verified = warmup.verified && main.verified && addOk && again.verified;
      return {
        photos: PHOTOS,
        photoMiB: PHOTO_BYTES / MiB,
        format: 'base64',
        requestMiB: mib(main.requestBytes),
        rssBeforeMiB: mib(main.baseline),
        uploadMs: Math.round(main.ms),
        uploadMiBps: Math.round(totalMiB / (main.ms / 1000)),
        uploadPeakRssGrowthMiB: mib(main.peakGrowth),
        addMs: Math.round(added.ms),
        addMiBps: Math.round(totalMiB / (added.ms / 1000)),
        addPeakRssGrowthMiB: mib(added.peakGrowth),
        uploadAfterAddMs: Math.round(again.ms),
        uploadAfterAddPeakRssGrowthMiB: mib(again.peakGrowth),
        warmupPeakRssGrowthMiB: mib(warmup.peakGrowth),
        limitMiB: LIMIT_MIB,
        verified: verified ? 'every image received with the served sha256' : 'MISMATCH',
        result: verified && Math.max(main.peakGrowth, again.peakGrowth) < LIMIT_MIB * MiB ? 'PASS' : 'FAIL',
      };
    } finally {
      await media.close();
    }
  } finally {
    servers.stop();
  }
}

const SERVE_FLAG = '--bench-servers';
const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (process.argv.includes(SERVE_FLAG)) {
  void serveForParent();
} else if (invokedDirectly) {
  runPhotoUploadBench().then(
    (r) => {
      console.log('photo-upload bench');
      for (const [k, v] of Object.entries(r)) console.log(`  ${k.padEnd(28)} ${v}`);
      if (r.result !== 'PASS') process.exitCode = 1;
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
