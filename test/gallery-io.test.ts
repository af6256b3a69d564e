/**
 * The gallery's I/O. Memory: the files of every post of a process are held within one byte
 * budget. A post reserves before it downloads (one reservation per post, shrunk as it
 * learns the real sizes), so concurrent posts wait for each other instead of exceeding
 * the budget; a file that does not fit what is left is linked; a budget that stays full
 * links the files rather than blocking the post forever. Logs: a refused upload is
 * logged without its files or body.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DiscordAPIError } from '@discordjs/rest';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GalleryPoster } from '../src/services/community/gallery.js';
import { GuildSettingsStore } from '../src/services/community/settings.js';
import { createLogger } from '../src/logger.js';
import { compileAllowList } from '../src/services/net/address-policy.js';
import { ByteBudget } from '../src/services/net/byte-budget.js';
import { createSafeDownloader, type SafeDownloader } from '../src/services/net/safe-download.js';
import type { JobRecord } from '../src/services/store/types.js';
import { MemoryKv } from './helpers/memory-kv.js';
import { renderOperations } from '../src/services/operations/index.js';
import { createJobRenderer } from '../src/services/discord/render/job-render.js';

const jobRender = createJobRenderer(renderOperations);

const MIB = 1024 * 1024;
const GUILD = '333333333333333333';
const GALLERY = '444444444444444444';
const logger = pino({ level: 'silent' });

/**
 * Files by path: `/sized/<n>` declares its length, `/chunked/<n>` does not; `n` bytes each,
 * starting like a PNG (the gallery re-hosts only what its bytes show to be an image here).
 */
function fileServer(events: string[]): Server {
  return createServer((req, res) => {
    const [, kind, size, label] = (req.url ?? '').split('/');
    const n = Number(size);
    events.push(`download ${label ?? ''}`);
    const bytes = Buffer.alloc(n, 7);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes);
    if (kind === 'sized') res.writeHead(200, { 'content-length': String(n) });
    else res.writeHead(200, { 'transfer-encoding': 'chunked' });
    res.end(bytes);
  });
}

const finished = (urls: string[]): JobRecord => ({
  id: randomUUID(),
  secret: 's',
  operation: 'upscale',
  userId: '555555555555555555',
  message: { channelId: '666666666666666666', guildId: GUILD, messageId: '777777777777777777' },
  params: { prompt: 'cat' },
  state: 'finished',
  percentage: 100,
  result: { kind: 'upscale', imageUrls: urls },
  createdAt: 0,
  updatedAt: 0,
  version: 1,
});

interface Posted {
  route: string;
  files: { name: string; data: Buffer }[];
  body: unknown;
}

describe('gallery memory budget', () => {
  let server: Server;
  let base: string;
  let downloader: SafeDownloader;
  const events: string[] = [];

  beforeAll(async () => {
    server = fileServer(events);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    downloader = createSafeDownloader();
  });
  afterAll(async () => {
    await downloader?.close();
    server?.close();
  });

  /** A poster on a small budget whose Discord holds each post until `release(label)`. */
  async function setup(
    memory: ByteBudget,
    opts: { memoryWaitMs?: number; logger?: Logger; refuse?: DiscordAPIError } = {},
  ) {
    const { refuse, ...options } = opts;
    const kv = new MemoryKv();
    const settings = new GuildSettingsStore({
      kv,
      defaults: { threads: false, maxActiveJobs: 3, cooldownSeconds: 0, dailyCredits: 0 },
    });
    await settings.set(GUILD, { gallery: GALLERY });
    const posted: Posted[] = [];
    const gates = new Map<string, () => void>();
    /** Bytes of downloaded files inside posts in flight, and the most ever seen at once. */
    let inFlight = 0;
    let peak = 0;
    const rest = {
      get: async (route: string) =>
        route.startsWith('/guilds/') ? { premium_tier: 0 } : { id: GALLERY, type: 0 },
      post: async (route: string, o?: { body?: unknown; files?: { name: string; data: Buffer }[] }) => {
        const files = o?.files ?? [];
        const bytes = files.reduce((n, f) => n + f.data.length, 0);
        inFlight += bytes;
        peak = Math.max(peak, inFlight);
        const label = files[0]?.name ?? 'none';
        events.push(`post ${label}`);
        if (refuse) {
          inFlight -= bytes;
          throw refuse;
        }
        await new Promise<void>((r) => gates.set(label, r));
        inFlight -= bytes;
        posted.push({ route, files, body: o?.body });
        events.push(`posted ${label}`);
        return { id: '888888888888888888', channel_id: GALLERY };
      },
      delete: async () => undefined,
    };
    const poster = new GalleryPoster({
      render: jobRender,
      rest,
      settings,
      recordPost: async () => undefined,
      kv,
      logger,
      now: Date.now,
      downloader,
      allow: compileAllowList({ origins: [base], cidrs: [] }),
      memory,
      ...options,
    });
    const release = async (label: string) => {
      for (let i = 0; i < 500 && !gates.has(label); i++) await new Promise((r) => setTimeout(r, 10));
      gates.get(label)?.();
    };
    return { poster, posted, release, peak: () => peak };
  }

  it('two concurrent posts of large files never hold more than the budget: the second waits for the first', async () => {
    events.length = 0;
    const memory = new ByteBudget(3 * MIB);
    const { poster, posted, release, peak } = await setup(memory);
    const a = finished([`${base}/sized/${MIB}/a1.png`, `${base}/chunked/${MIB}/a2.png`]);
    const b = finished([`${base}/sized/${MIB}/b1.png`, `${base}/chunked/${MIB}/b2.png`]);
    const pa = poster.post(a);
    const pb = poster.post(b);
    await release('a1.png');
    // A's files are held until its upload is done: B has not downloaded anything meanwhile.
    expect(await pa).toBe('posted');
    await release('b1.png');
    expect(await pb).toBe('posted');
    expect(events).toEqual([
      'download a1.png',
      'download a2.png',
      'post a1.png',
      'posted a1.png',
      'download b1.png',
      'download b2.png',
      'post b1.png',
      'posted b1.png',
    ]);
    expect(posted.map((p) => p.files.map((f) => f.data.length))).toEqual([
      [MIB, MIB],
      [MIB, MIB],
    ]);
    expect(peak()).toBeLessThanOrEqual(memory.capacity);
    // Everything given back.
    expect(memory.available).toBe(memory.capacity);
    expect(memory.waiting).toBe(0);
  });

  it('a file that does not fit what is left of the budget is linked with why; the rest attached', async () => {
    events.length = 0;
    const memory = new ByteBudget(3 * MIB);
    const { poster, posted, release } = await setup(memory);
    const job = finished([
      `${base}/chunked/${1.5 * MIB}/c1.png`,
      `${base}/chunked/${1.5 * MIB}/c2.png`,
      `${base}/chunked/${MIB}/c3.png`,
      `${base}/sized/${MIB}/c4.png`,
    ]);
    const p = poster.post(job);
    await release('c1.png');
    expect(await p).toBe('posted');
    expect(posted[0]?.files.map((f) => f.name)).toEqual(['c1.png', 'c2.png']);
    const t = JSON.stringify(posted[0]?.body);
    expect(t).toContain(`<${base}/chunked/${MIB}/c3.png> (no memory left for it in this post)`);
    expect(t).toContain(`<${base}/sized/${MIB}/c4.png> (no memory left for it in this post)`);
    expect(memory.available).toBe(memory.capacity);
  });

  it('a budget that stays full: the post goes out with its files linked, nothing downloaded', async () => {
    events.length = 0;
    const memory = new ByteBudget(3 * MIB);
    const held = await memory.reserve(3 * MIB);
    const { poster, posted, release } = await setup(memory, { memoryWaitMs: 50 });
    const job = finished([`${base}/sized/${MIB}/d1.png`]);
    const p = poster.post(job);
    await release('none');
    expect(await p).toBe('posted');
    expect(posted[0]?.files).toEqual([]);
    expect(JSON.stringify(posted[0]?.body)).toContain(
      `<${base}/sized/${MIB}/d1.png> (the bot’s memory for gallery files stayed busy)`,
    );
    expect(events.filter((e) => e.startsWith('download'))).toEqual([]);
    held.release();
    expect(memory.available).toBe(memory.capacity);
  });

  // Regression (issue 26): the failure line carried the upload's request body, files included.
  it('a refused upload is logged without its files or body, in a short line', async () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'debug', destination: { write: (l: string) => void lines.push(l) } });
    const MARK = 'GALLERY-FILE-BYTES-';
    const refused = new DiscordAPIError(
      { message: 'Missing Permissions', code: 50013 },
      50013,
      403,
      'POST',
      `https://discord.com/api/v10/channels/${GALLERY}/messages`,
      {
        body: { content: 'a private prompt' },
        files: [{ name: 'x.png', data: Buffer.from(MARK.repeat(50_000)) }],
      },
    );
    const memory = new ByteBudget(3 * MIB);
    const { poster } = await setup(memory, { logger: log, refuse: refused });
    expect(await poster.post(finished([`${base}/sized/${MIB}/e1.png`]))).toBe('failed');
    const failure = lines.find((l) => l.includes('gallery post failed'));
    expect(failure).toBeDefined();
    expect(failure).toContain('50013');
    for (const l of lines) {
      expect(l).not.toContain(MARK);
      expect(l).not.toContain('a private prompt');
      expect(Buffer.byteLength(l)).toBeLessThan(4096);
    }
    expect(memory.available).toBe(memory.capacity);
  });
});
