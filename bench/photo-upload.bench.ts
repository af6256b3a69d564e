/**
 * Training-photo upload benchmark: 30 realistic phone JPEGs of ~10 MiB each
 * (5000×3750, quality 92, EXIF with orientation, camera and GPS; made with
 * sharp at start, nothing pre-built) are served by a local HTTP server, then
 * sent the way the bot sends them after consent: each downloaded again and
 * verified, cleaned (oriented, scaled to 2048 px, no metadata; sharp on the
 * thread pool, one photo at a time), spooled, the consent record written, and
 * the upload streamed as base64 through the real MediaClient to a local
 * receiver that decodes and hashes every image without keeping it. Server and
 * receiver run in a child process, so the RSS sampled here (every 10 ms) is
 * the bot's side only; the event loop's longest delay is measured with
 * `perf_hooks.monitorEventLoopDelay` over the same window.
 *
 * Gates: RSS grows by less than LIMIT_MIB during the send; every image the
 * receiver got is a JPEG without EXIF, and its SHA-256 is the one the consent
 * record names. The event-loop delays are printed beside the same measure
 * taken while the process idles for as long (`idle…`): on a shared machine
 * the scheduler's own delays show in both, so they are figures, not a gate;
 * `sendLoopUtilization` (performance.eventLoopUtilization) is the share of the
 * send the main thread was busy at all, and `sendMainThreadCpuS` its CPU time
 * beside the whole process's (`sendCpuS`: libvips works on the thread pool).
 *
 * A small warm-up send runs first: the very first one in a process also pays
 * one-time costs (JIT, libvips start-up, undici's llhttp WASM, pools,
 * allocator arenas), which are not what the gates are about.
 *
 *   npm run bench photo                 (via bench/run.ts)
 *   npx tsx bench/photo-upload.bench.ts (this one; exit code 1 on FAIL)
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pino } from 'pino';
import sharp from 'sharp';
import { MediaClient } from '../src/services/media/client.js';
import { ConsentStore } from '../src/services/training/consent-store.js';
import { PhotoCleaner } from '../src/services/training/clean-photo.js';
import { PhotoSpool } from '../src/services/training/photo-spool.js';
import { TrainingSessions, sessionKey, type PhotoInput } from '../src/services/training/sessions.js';
import { TrainingUploader } from '../src/services/training/upload.js';
import { MemoryKv } from '../test/helpers/memory-kv.js';
import { mediaOperations } from '../src/services/operations/index.js';

const MiB = 1024 * 1024;
const PHOTOS = 30;
const MAX_BYTES = 10 * MiB;
const WARMUP_PHOTOS = 10;
/** Peak RSS growth allowed while 30 × 10 MiB are cleaned and sent. */
const LIMIT_MIB = 128;

// ------------------------------------------------------------ photos (child process)

/** A photo-like 5000×3750 picture (gradients and grain: it compresses like a photo) as a JPEG, no metadata. */
async function bigJpeg(): Promise<Buffer> {
  const w = 5000;
  const h = 3750;
  const raw = Buffer.alloc(w * h * 3);
  const grain = randomBytes(1 << 20);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const o = (y * w + x) * 3;
      const n = ((grain[(o * 7 + y) & ((1 << 20) - 1)] ?? 0) * 40) / 255;
      raw[o] = ((x * 255) / w + n) & 255;
      raw[o + 1] = ((y * 255) / h + n) & 255;
      raw[o + 2] = (((x + y) * 128) / (w + h) + n) & 255;
    }
  }
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } })
    .jpeg({ quality: 92 })
    .toBuffer();
}

/** A phone's EXIF APP1 segment (orientation 6, camera, GPS, photo number `i`). */
async function exifSegment(i: number): Promise<Buffer> {
  const tiny = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
    .jpeg()
    .withMetadata({ orientation: 6 })
    .withExif({
      IFD0: { Make: 'BenchPhone', Model: 'Pro Max', ImageDescription: `photo ${i}` },
      IFD3: {
        GPSLatitudeRef: 'N',
        GPSLatitude: '48/1 51/1 2400/100',
        GPSLongitudeRef: 'E',
        GPSLongitude: '2/1 17/1 4000/100',
      },
    })
    .toBuffer();
  let at = 2;
  while (at + 4 <= tiny.length && tiny[at] === 0xff) {
    const len = tiny.readUInt16BE(at + 2);
    if (tiny[at + 1] === 0xe1) return tiny.subarray(at, at + 2 + len);
    at += 2 + len;
  }
  throw new Error('no EXIF segment');
}

/** `base` (a JPEG without metadata) with photo `i`'s EXIF right after SOI: 30 distinct files, one encode. */
async function withExif(base: Buffer, i: number): Promise<Buffer> {
  return Buffer.concat([base.subarray(0, 2), await exifSegment(i), base.subarray(2)]);
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** `/photo-{i}.jpg` (~10 MiB) and `/small-{i}.jpg` (the warm-up's). */
function imageServer(photos: Buffer[], small: Buffer[]): Server {
  return createServer((req, res) => {
    const m = /^\/(photo|small)-(\d+)\.jpg$/.exec(req.url ?? '');
    const body = m ? (m[1] === 'photo' ? photos : small)[Number(m[2])] : undefined;
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(body.length) });
    let off = 0;
    const pump = (): void => {
      while (off < body.length) {
        const slice = body.subarray(off, off + 256 * 1024);
        off += slice.length;
        if (!res.write(slice)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
}

// ------------------------------------------------------------ receiver (child process)

interface ReceivedImage {
  sha256: string;
  bytes: number;
  /** The image's first bytes say JPEG, and its header holds no EXIF. */
  cleanJpeg: boolean;
}

interface Received {
  requestBytes: number;
  images: ReceivedImage[];
  error?: string;
}

/**
 * Streams `{…,"images":["<b64>",…]}`: decodes every base64 string chunk by
 * chunk into a SHA-256, keeping at most 3 pending characters and the first
 * 4 KiB of each image (to check its header).
 */
async function consumeUpload(req: IncomingMessage): Promise<Received> {
  const marker = Buffer.from('"images":[');
  const out: Received = { requestBytes: 0, images: [] };
  let prefix = Buffer.alloc(0);
  let state: 'meta' | 'between' | 'string' | 'done' = 'meta';
  let hash: Hash | undefined;
  let carry = '';
  let bytes = 0;
  let head = Buffer.alloc(0);
  const feed = (b64: string): void => {
    const all = carry + b64;
    const usable = all.length - (all.length % 4);
    const decoded = Buffer.from(all.slice(0, usable), 'base64');
    bytes += decoded.length;
    hash?.update(decoded);
    if (head.length < 4096) head = Buffer.concat([head, decoded.subarray(0, 4096 - head.length)]);
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
          head = Buffer.alloc(0);
        } else if (c === 0x5d) state = 'done';
        continue;
      }
      const end = chunk.indexOf(0x22, pos);
      const stop = end < 0 ? chunk.length : end;
      feed(chunk.toString('latin1', pos, stop));
      pos = stop;
      if (end >= 0) {
        if (carry !== '') out.error = 'base64 length not a multiple of 4';
        out.images.push({
          sha256: hash?.digest('hex') ?? '',
          bytes,
          cleanJpeg: head[0] === 0xff && head[1] === 0xd8 && !head.includes(Buffer.from('Exif\0\0')),
        });
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

// ------------------------------------------------------------ measuring

interface Measured<T> {
  value: T;
  ms: number;
  baseline: number;
  peakGrowth: number;
  loopMaxMs: number;
  loopP99Ms: number;
  /** Share of the time the event loop was busy (not waiting for I/O): the main thread's own load. */
  loopUtilization: number;
  /** CPU seconds of the whole process, and of its main (event-loop) thread alone (Linux; else NaN). */
  cpuS: number;
  mainThreadCpuS: number;
}

/** CPU seconds the main thread has used (Linux /proc, clock ticks of 10 ms), NaN elsewhere. */
function mainThreadCpu(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Peak RSS above the level at start (sampled every 10 ms) and the event loop's delays while `fn` runs. */
async function measured<T>(fn: () => Promise<T>): Promise<Measured<T>> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  await new Promise((r) => setTimeout(r, 50));
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 10);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const elu = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpu();
  const t0 = performance.now();
  try {
    const value = await fn();
    peak = Math.max(peak, process.memoryUsage.rss());
    return {
      value,
      ms: performance.now() - t0,
      baseline,
      peakGrowth: peak - baseline,
      loopMaxMs: loop.max / 1e6,
      loopP99Ms: loop.percentile(99) / 1e6,
      loopUtilization: performance.eventLoopUtilization(elu).utilization,
      cpuS: ((u) => (u.user + u.system) / 1e6)(process.cpuUsage(cpu0)),
      mainThreadCpuS: mainThreadCpu() - main0,
    };
  } finally {
    loop.disable();
    clearInterval(timer);
  }
}

const mib = (n: number): number => Math.round((n / MiB) * 10) / 10;
const ms1 = (n: number): number => Math.round(n * 10) / 10;

// ------------------------------------------------------------ servers (child process)

interface Served {
  photos: { sha256: string; bytes: number }[];
  small: { sha256: string; bytes: number }[];
}

type ToParent =
  | { type: 'ready'; imagesUrl: string; sinkUrl: string; served: Served }
  | { type: 'received'; received: Received };

const fingerprint = (b: Buffer) => ({
  sha256: createHash('sha256').update(b).digest('hex'),
  bytes: b.length,
});

async function serveForParent(): Promise<void> {
  const base = await bigJpeg();
  const photos = await Promise.all(Array.from({ length: PHOTOS }, (_, i) => withExif(base, i)));
  const smallBase = await sharp(randomBytes(640 * 480 * 3), { raw: { width: 640, height: 480, channels: 3 } })
    .jpeg()
    .toBuffer();
  const small = await Promise.all(Array.from({ length: WARMUP_PHOTOS }, (_, i) => withExif(smallBase, i)));
  const images = imageServer(photos, small);
  const sink = receiver((received) => process.send?.({ type: 'received', received } satisfies ToParent));
  const [imagesUrl, sinkUrl] = await Promise.all([listen(images), listen(sink)]);
  process.send?.({
    type: 'ready',
    imagesUrl,
    sinkUrl,
    served: { photos: photos.map(fingerprint), small: small.map(fingerprint) },
  } satisfies ToParent);
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
 * 1. warm-up: one send of 10 small photos;
 * 2. measured: the 30 × ~10 MiB photos added (download, magic bytes, SHA-256);
 * 3. measured: the send (download again + verify, clean, spool, consent record, base64 upload).
 */
export async function runPhotoUploadBench(): Promise<Record<string, number | string>> {
  const logger = pino({ level: 'silent' });
  const servers = Servers.start();
  const spoolDir = await mkdtemp(join(tmpdir(), 'photo-bench-'));
  try {
    const ready = await servers.next();
    if (ready.type !== 'ready') throw new Error('bench servers did not start');
    const { imagesUrl, sinkUrl, served } = ready;
    const kv = new MemoryKv();
    const training = new TrainingSessions({
      kv,
      logger,
      maxBytes: MAX_BYTES,
      ttlMs: 3_600_000,
      refreshUrls: () => Promise.reject(new Error('local links never expire')),
    });
    const consent = new ConsentStore({ kv, retentionMs: 365 * 86_400_000 });
    const spool = new PhotoSpool({ dir: spoolDir, logger });
    await spool.start();
    const uploader = new TrainingUploader({
      sessions: training,
      cleaner: new PhotoCleaner(),
      spool,
      consent,
      photoFormat: 'base64',
      logger,
    });
    const media = new MediaClient({
      baseUrl: sinkUrl,
      apiKey: 'bench',
      paths: {
        fetch: '/fetch',
        submit: { upscale: '/u', song: '/s', video: '/v', upload: '/ai-photo-upload' },
      },
      photoFormat: 'base64',
      timeoutMs: 120_000,
      upscaleTimeoutMs: 120_000,
      operations: mediaOperations,
      logger,
    });
    const inputs = (kind: 'photo' | 'small', list: Served['photos']): PhotoInput[] =>
      list.map((f, i) => ({
        id: `${kind}${i}`,
        name: `${kind}-${i}.jpg`,
        url: `${imagesUrl}/${kind}-${i}.jpg`,
        size: f.bytes,
        contentType: 'image/jpeg',
      }));

    const send = async (channelId: string, userId: string) => {
      const key = sessionKey(userId, channelId);
      const session = await training.get(key);
      if (!session) throw new Error('session vanished');
      const m = await measured(() =>
        uploader.send(
          session,
          `job-${channelId}`,
          { userId, at: Date.now(), wording: 'consent-v1' },
          (params, webhook) => media.submit('upload', params, webhook),
          undefined,
        ),
      );
      const got = await servers.next();
      const r = got.type === 'received' ? got.received : undefined;
      const [record] = await consent.listByMember(userId);
      const verified =
        r !== undefined &&
        r.error === undefined &&
        record !== undefined &&
        r.images.length === session.photos.length &&
        r.images.every((img, i) => img.cleanJpeg && img.sha256 === record.sha256[i]);
      return { ...m, verified, requestBytes: r?.requestBytes ?? 0, images: r?.images ?? [] };
    };

    const open = async (userId: string, channelId: string, photos: PhotoInput[]) => {
      await training.start({ userId, channelId, ethnicity: 'white', gender: 'female', age: 30 });
      const key = sessionKey(userId, channelId);
      return measured(async () => {
        let n = 0;
        for (let i = 0; i < photos.length; i += 10)
          n += (await training.add(key, photos.slice(i, i + 10))).added.length;
        return n;
      });
    };

    try {
      await open('1', 'warmup', inputs('small', served.small));
      const warmup = await send('warmup', '1');

      const added = await open('2', 'main', inputs('photo', served.photos));
      const main = await send('main', '2');
      // The control: the same measure while nothing runs, for as long as the send took.
      const idle = await measured(() => new Promise((r) => setTimeout(r, Math.min(main.ms, 20_000))));

      const totalMiB = served.photos.reduce((n, p) => n + p.bytes, 0) / MiB;
      const sentMiB = main.images.reduce((n, i) => n + i.bytes, 0) / MiB;
      const verified = warmup.verified && main.verified && added.value === PHOTOS;
      const pass = verified && main.peakGrowth < LIMIT_MIB * MiB;
      return {
        photos: PHOTOS,
        originalsMiB: Math.round(totalMiB * 10) / 10,
        cleanedSentMiB: Math.round(sentMiB * 10) / 10,
        requestMiB: mib(main.requestBytes),
        rssBeforeMiB: mib(main.baseline),
        sendMs: Math.round(main.ms),
        msPerPhoto: Math.round(main.ms / PHOTOS),
        sendPeakRssGrowthMiB: mib(main.peakGrowth),
        sendLoopDelayMaxMs: ms1(main.loopMaxMs),
        sendLoopDelayP99Ms: ms1(main.loopP99Ms),
        sendLoopUtilization: Math.round(main.loopUtilization * 1000) / 1000,
        sendCpuS: ms1(main.cpuS),
        sendMainThreadCpuS: ms1(main.mainThreadCpuS),
        idleLoopDelayMaxMs: ms1(idle.loopMaxMs),
        idleLoopDelayP99Ms: ms1(idle.loopP99Ms),
        addMs: Math.round(added.ms),
        addPeakRssGrowthMiB: mib(added.peakGrowth),
        addLoopDelayMaxMs: ms1(added.loopMaxMs),
        warmupPeakRssGrowthMiB: mib(warmup.peakGrowth),
        limitMiB: LIMIT_MIB,
        verified: verified
          ? 'every image a JPEG without EXIF, hashed as its consent record says'
          : 'MISMATCH',
        result: pass ? 'PASS' : 'FAIL',
      };
    } finally {
      spool.stop();
      await media.close();
    }
  } finally {
    servers.stop();
    await rm(spoolDir, { recursive: true, force: true });
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
