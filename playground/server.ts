/**
 * `npm run playground`: the real bot, as its own process, wired to a local
 * Discord (test/fake-discord: REST + gateway + CDN) and the media-service
 * emulator, with a page on http://127.0.0.1:5170 that looks and behaves like a
 * Discord server plus an operator panel. No environment, no network.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import Fastify from 'fastify';
import { z } from 'zod';
import {
  FIXTURE_SONG_TASK_ID,
  FIXTURE_VIDEO_TASK_ID,
  startEmulator,
  type Emulator,
} from '../test/emulator/server.js';
import { DiscordErrors, startFakeDiscord, type FakeDiscord } from '../test/fake-discord/index.js';
import { freePort } from '../test/helpers/harness.js';
import { productionEnv, productionNodeFlags } from '../test/helpers/production-node-flags.js';
import { privateRedis as makePrivateRedis, type PrivateRedis } from '../test/helpers/private-redis.js';
import { Timeline } from './timeline.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PUBLIC = fileURLToPath(new URL('./public/', import.meta.url));
const MANAGE_GUILD = 1n << 5n;
const MEMBER = (1n << 10n) | (1n << 11n) | (1n << 14n) | (1n << 15n) | (1n << 16n);

export interface PlaygroundOptions {
  port?: number;
  /** Use this Redis instead of SQLite (env REDIS_URL). */
  redisUrl?: string;
  /** Emulator step length range in ms (default 1000-3000: progress every 1-3 s). */
  stepMs?: [number, number];
  /** Share of jobs the emulator fails (default 0.08); tests that wait for results pass 0. */
  failureRate?: number;
  /**
   * How the bot gets interactions (env PLAYGROUND_INTERACTIONS): over the gateway (default)
   * or `http`: DISCORD_INTERACTIONS=http, the local Discord POSTs signed interactions.
   */
  interactions?: 'gateway' | 'http';
  log?: (line: string) => void;
}

export interface Playground {
  url: string;
  fake: FakeDiscord;
  emulator: Emulator;
  restartBot(): Promise<void>;
  close(): Promise<void>;
}

/** A fresh random scenario for the next task: realistic pace, sometimes duplicated, shuffled or failing. */
function randomScenario(stepMs: [number, number], failureRate: number) {
  const r = Math.random();
  const [lo, hi] = stepMs;
  return {
    stepMs: Math.round(lo + Math.random() * (hi - lo)),
    steps: [5, 20, 40, 60, 80, 95].filter(() => Math.random() > 0.25),
    duplicateWebhooks: r < 0.15,
    shuffleWebhooks: r >= 0.15 && r < 0.25,
    outcome: Math.random() < failureRate ? ('failed' as const) : ('finished' as const),
  };
}

export async function startPlayground(opts: PlaygroundOptions = {}): Promise<Playground> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const stepMs = opts.stepMs ?? [1000, 3000];
  const failureRate = opts.failureRate ?? 0.08;
  const fake = await startFakeDiscord({
    warmUpValidators: true,
    guild: { name: 'Playground', channels: [{ name: 'general' }, { name: 'gallery' }] },
  });
  fake.setRateLimits(true);
  const users = {
    admin: fake.addUser({
      username: 'ada',
      globalName: 'Ada (admin)',
      permissions: String(MEMBER | MANAGE_GUILD),
    }),
    alice: fake.addUser({ username: 'alice', globalName: 'Alice', permissions: String(MEMBER) }),
    bob: fake.addUser({ username: 'bob', globalName: 'Bob', permissions: String(MEMBER) }),
  };
  const switches = { dropWebhooks: false, discord429: false, discord500: false, storeDown: false };
  const emulator = await startEmulator({ scenario: randomScenario(stepMs, failureRate) });
  const OPERATION_PATHS = new Set(['/song-extend', '/video-extend', '/ai-photo-upload']);
  emulator.onEvent((e) => {
    // A task takes the scenario set when it is created: prepare a new random one for the next.
    if (e.type === 'request' && e.entry.method === 'POST' && OPERATION_PATHS.has(e.entry.path)) {
      emulator.setScenario({
        ...randomScenario(stepMs, failureRate),
        dropWebhooks: switches.dropWebhooks ? 'all' : 'none',
      });
    }
  });
  const timeline = new Timeline(fake, emulator);

  // The store: SQLite in a temp dir; or Redis (REDIS_URL, else a private redis-server when one is installed,
  // so the "stop the store" switch has something real to stop).
  const dataDir = await mkdtemp(join(tmpdir(), 'mediabot-playground-'));
  let privateRedis: PrivateRedis | undefined;
  let redisUrl = opts.redisUrl;
  if (redisUrl === undefined && spawnSync('redis-server', ['--version']).status === 0) {
    privateRedis = await makePrivateRedis();
    await privateRedis.start();
    redisUrl = `redis://127.0.0.1:${privateRedis.port}`;
  }

  const botPort = await freePort();
  const http = opts.interactions === 'http';
  if (http) fake.setInteractionsMode('http', `http://127.0.0.1:${botPort}/interactions`);
  let bot: ChildProcess | undefined;
  let botLog = '';
  const startBot = () => {
    // As `npm start` runs it: the same V8 flags, then src/main.ts through tsx.
    const child = spawn(process.execPath, [...productionNodeFlags(), '--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        ...productionEnv(),
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '',
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.applicationId,
        DISCORD_GUILD_ID: fake.guildId,
        DISCORD_API_URL: fake.apiUrl,
        MEDIA_API_URL: emulator.url,
        MEDIA_API_KEY: emulator.apiKey,
        PUBLIC_URL: `http://127.0.0.1:${botPort}`,
        HOST: '127.0.0.1',
        PORT: String(botPort),
        DATA_DIR: dataDir,
        LOG_FORMAT: 'json',
        POLL_INITIAL_MS: '2000',
        POLL_MAX_MS: '8000',
        WEBHOOK_SILENCE_MS: '6000',
        REDIS_START_TIMEOUT_SECONDS: '5',
        ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
        ...(http ? { DISCORD_INTERACTIONS: 'http', DISCORD_PUBLIC_KEY: fake.publicKey } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const onLine = (d: Buffer) => {
      botLog = (botLog + d.toString()).slice(-200_000);
      for (const line of d.toString().split('\n')) if (line.trim() !== '') timeline.botLine(line);
    };
    child.stdout?.on('data', onLine);
    child.stderr?.on('data', onLine);
    child.once('exit', (code, signal) => timeline.note(`bot process exited (${signal ?? code})`));
    bot = child;
    timeline.note(`bot process started (pid ${child.pid})`);
  };
  const stopBot = async (signal: NodeJS.Signals) => {
    const child = bot;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  startBot();

  // ------------------------------------------------------------------ operator switches
  const faults: { remove(): void }[] = [];
  const EDIT_ROUTES = [
    '/webhooks/{webhook_id}/{webhook_token}/messages/@original',
    '/channels/{channel_id}/messages/{message_id}',
  ];
  // While a switch is on, Discord answers bursts of edits with 429 (retry_after 1 s) or 500, every
  // 3 s: the bot has to wait, retry and still deliver the latest state (the final included).
  let faultTimer: NodeJS.Timeout | undefined;
  const injectBurst = () => {
    for (const f of faults.splice(0)) f.remove();
    for (const route of EDIT_ROUTES) {
      if (switches.discord429)
        faults.push(fake.injectFault({ ...DiscordErrors.rateLimited(1), method: 'PATCH', route, count: 2 }));
      if (switches.discord500)
        faults.push(
          fake.injectFault({
            status: 500,
            body: { message: '500: Internal Server Error', code: 0 },
            method: 'PATCH',
            route,
            count: 2,
          }),
        );
    }
  };
  const setDiscordFaults = () => {
    clearInterval(faultTimer);
    injectBurst();
    if (switches.discord429 || switches.discord500) faultTimer = setInterval(injectBurst, 3000);
  };

  const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  await app.register(fastifyStatic, { root: PUBLIC });

  const ref = z.object({ userId: z.string(), channelId: z.string() });
  const fileSchema = z.object({ filename: z.string().min(1), contentType: z.string(), base64: z.string() });
  const toAttachment = (f: z.infer<typeof fileSchema>) => ({
    filename: f.filename,
    contentType: f.contentType || 'application/octet-stream',
    bytes: Buffer.from(f.base64, 'base64'),
  });
  const optionValue = z.union([z.string(), z.number(), z.boolean()]);

  app.get('/api/state', async () => ({
    guild: { id: fake.guildId, name: 'Playground' },
    botId: fake.applicationId,
    users: Object.entries(users).map(([key, id]) => ({
      key,
      id,
      name: fake.userName(id),
      admin: key === 'admin',
    })),
    channels: fake.channelList(),
    commands: fake.guildCommands(),
    store: redisUrl ? (privateRedis ? 'redis (private)' : 'redis') : 'sqlite',
    switches,
    hints: { songTask: FIXTURE_SONG_TASK_ID, videoTask: FIXTURE_VIDEO_TASK_ID },
  }));

  app.get('/api/messages', async (req) => {
    const { channelId, userId } = z.object({ channelId: z.string(), userId: z.string() }).parse(req.query);
    return fake
      .channelMessages(channelId)
      .filter((m) => !m.ephemeral || fake.interactionUser(m.interactionId) === userId)
      .map((m) => ({ id: m.id, ephemeral: m.ephemeral, data: m.data, edits: m.edits.length }));
  });

  app.get('/api/events', (req, reply) => {
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    let pending: NodeJS.Timeout | undefined;
    const send = () => {
      pending ??= setTimeout(() => {
        pending = undefined;
        reply.raw.write(`data: ${JSON.stringify({ at: Date.now() })}\n\n`);
      }, 80);
    };
    const off = fake.onChange(send);
    const offEmu = emulator.onEvent(send);
    const ping = setInterval(() => reply.raw.write(': ping\n\n'), 15_000);
    req.raw.on('close', () => {
      off();
      offEmu();
      clearInterval(ping);
      clearTimeout(pending);
    });
  });

  app.post('/api/command', async (req) => {
    const b = ref
      .extend({
        name: z.string(),
        subcommand: z.string().optional(),
        options: z.record(z.string(), optionValue).default({}),
        attachments: z.record(z.string(), fileSchema).default({}),
      })
      .parse(req.body);
    const attachments = Object.fromEntries(
      Object.entries(b.attachments).map(([k, f]) => [k, toAttachment(f)]),
    );
    const h = fake.sendCommand({
      name: b.name,
      userId: b.userId,
      channelId: b.channelId,
      options: b.options,
      attachments,
      ...(b.subcommand ? { subcommand: b.subcommand } : {}),
    });
    const cb = await h.response(5000).catch(() => undefined);
    return { interactionId: h.id, callbackType: cb?.type ?? null, modal: h.modal ?? null };
  });

  app.post('/api/autocomplete', async (req) => {
    const b = ref
      .extend({
        name: z.string(),
        subcommand: z.string().optional(),
        options: z.record(z.string(), optionValue),
        focused: z.string(),
      })
      .parse(req.body);
    const h = fake.sendAutocomplete({
      name: b.name,
      userId: b.userId,
      channelId: b.channelId,
      options: b.options,
      focused: b.focused,
      ...(b.subcommand ? { subcommand: b.subcommand } : {}),
    });
    await h.response(3000).catch(() => undefined);
    return { choices: h.choices ?? [] };
  });

  app.post('/api/button', async (req) => {
    const b = ref
      .extend({ messageId: z.string(), customId: z.string(), values: z.array(z.string()).optional() })
      .parse(req.body);
    // A button, or a string select when `values` are given.
    const h = fake.sendComponent({
      customId: b.customId,
      messageId: b.messageId,
      userId: b.userId,
      channelId: b.channelId,
      ...(b.values ? { componentType: 3, values: b.values } : {}),
    });
    const cb = await h.response(5000).catch(() => undefined);
    return { interactionId: h.id, callbackType: cb?.type ?? null, modal: h.modal ?? null };
  });

  app.post('/api/modal', async (req) => {
    const b = ref
      .extend({
        customId: z.string(),
        messageId: z.string().optional(),
        fields: z.array(
          z.union([
            z.object({ customId: z.string(), value: z.string() }),
            z.object({ customId: z.string(), files: z.array(fileSchema) }),
          ]),
        ),
      })
      .parse(req.body);
    const h = fake.sendModalSubmit({
      customId: b.customId,
      userId: b.userId,
      channelId: b.channelId,
      ...(b.messageId ? { messageId: b.messageId } : {}),
      components: b.fields.map((f) =>
        'files' in f
          ? { customId: f.customId, files: f.files.map(toAttachment) }
          : { customId: f.customId, value: f.value },
      ),
    });
    const cb = await h.response(5000).catch(() => undefined);
    return { interactionId: h.id, callbackType: cb?.type ?? null };
  });

  app.post('/api/switch', async (req) => {
    const b = z
      .object({
        name: z.enum(['dropWebhooks', 'discord429', 'discord500', 'storeDown', 'restartBot']),
        on: z.boolean().default(true),
      })
      .parse(req.body);
    if (b.name === 'restartBot') {
      timeline.note('operator: restart the bot (SIGKILL, then start again)');
      await stopBot('SIGKILL');
      startBot();
      return { ok: true, switches };
    }
    if (b.name === 'storeDown') {
      if (!privateRedis)
        return {
          ok: false,
          error: 'the store can be stopped only on the private Redis (install redis-server)',
          switches,
        };
      if (b.on) await privateRedis.stop();
      else await privateRedis.start();
    }
    switches[b.name] = b.on;
    if (b.name === 'dropWebhooks') emulator.setScenario({ dropWebhooks: b.on ? 'all' : 'none' });
    if (b.name === 'discord429' || b.name === 'discord500') setDiscordFaults();
    timeline.note(`operator: ${b.name} ${b.on ? 'on' : 'off'}`);
    return { ok: true, switches };
  });

  app.get('/api/metrics', async (_req, reply) => {
    try {
      const res = await fetch(`http://127.0.0.1:${botPort}/metrics`);
      reply.header('content-type', 'text/plain; charset=utf-8');
      return await res.text();
    } catch {
      return reply.code(503).send('the bot is not answering (restarting?)');
    }
  });

  app.get('/api/timeline', async () => ({
    jobs: timeline.jobs(),
    notes: timeline.notes(),
    count429: fake.count429,
  }));

  const url = await app.listen({ host: '127.0.0.1', port: opts.port ?? 5170 });
  log(
    `Playground: ${url}  (bot on :${botPort}, store ${redisUrl ? 'redis' : 'sqlite'}; Ctrl-C stops everything)`,
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    fake,
    emulator,
    restartBot: async () => {
      await stopBot('SIGKILL');
      startBot();
    },
    close() {
      closing ??= (async () => {
        await app.close();
        clearInterval(faultTimer);
        await stopBot('SIGTERM');
        await emulator.close();
        await fake.close();
        await privateRedis?.kill();
        await rm(dataDir, { recursive: true, force: true });
        void botLog;
      })();
      return closing;
    },
  };
}

// Entry point (not when imported by the browser test).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number(process.env['PLAYGROUND_PORT'] ?? 5170);
  const pg = await startPlayground({
    port,
    ...(process.env['REDIS_URL'] ? { redisUrl: process.env['REDIS_URL'] } : {}),
    ...(process.env['PLAYGROUND_INTERACTIONS'] === 'http' ? { interactions: 'http' as const } : {}),
  });
  const stop = () => {
    process.stdout.write('\nstopping the playground…\n');
    void pg.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
