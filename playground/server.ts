/**
 * `npm run playground`: the real bot, as its own process, wired to a local
 * Discord (test/fake-discord: REST + gateway + CDN) and the media-service
 * emulator, with a page on http://127.0.0.1:5170 that looks and behaves like a
 * Discord server plus an operator panel. No environment, no network.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
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
import {
  DiscordErrors,
  startFakeDiscord,
  type FakeDiscord,
  type InteractionState,
  type JsonObject,
} from '../test/fake-discord/index.js';
import { invitePermissions } from '../src/services/discord/registration/invite.js';
import { freePort } from '../test/helpers/harness.js';
import { botCommand, productionEnv } from '../test/helpers/production-node-flags.js';
import { privateRedis as makePrivateRedis, type PrivateRedis } from '../test/helpers/private-redis.js';
import { stopChild } from '../test/helpers/stop-child.js';
import { postV2Fixture, V2_FIXTURE_NAMES } from './fixtures.js';
import { Timeline } from './timeline.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PUBLIC = fileURLToPath(new URL('./public/', import.meta.url));
// Emoji drawn as Discord draws them: Discord's Twemoji (its parser and SVGs, served from the package;
// graphics CC-BY 4.0), so ⏳ ✅ ❌ 🎧 look the same everywhere, emoji font or not.
const TWEMOJI = join(
  dirname(createRequire(import.meta.url).resolve('@discordapp/twemoji/package.json')),
  'dist',
);
// Japanese drawn on a machine with no CJK font (else boxes): Noto Sans JP from @fontsource, served
// here (split by unicode-range, so the page loads only the slices its text uses; OFL-1.1).
const NOTO_SANS_JP = dirname(createRequire(import.meta.url).resolve('@fontsource/noto-sans-jp/package.json'));
const HOST = '127.0.0.1';
const MANAGE_GUILD = 1n << 5n;
/** What the server's @everyone gives every member: View Channel, Send Messages, Embed Links, Attach Files, Read Message History. */
const MEMBER = (1n << 10n) | (1n << 11n) | (1n << 14n) | (1n << 15n) | (1n << 16n);
const MANAGE_MESSAGES = 1n << 13n;
/** Discord's (and the fake's default) deadline for the first answer to an interaction. */
const ACK_DEADLINE_MS = 3000;
const PENDING_SHOWN_MS = 15 * 60_000;
const APPLICATION_NAME = 'Media bot';

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
  /** Resolves once the playground's setup ran through the bot (the forum gallery is set). */
  ready: Promise<void>;
  restartBot(): Promise<void>;
  close(): Promise<void>;
}

/** The languages a member (and the server) can pick: Discord's locale codes, as Discord names them. */
export const LOCALES = [
  { code: 'en-US', name: 'English, US' },
  { code: 'de', name: 'Deutsch' },
  { code: 'fr', name: 'Français' },
  { code: 'es-ES', name: 'Español' },
  { code: 'pt-BR', name: 'Português do Brasil' },
  { code: 'ja', name: '日本語' },
] as const;
const LOCALE_CODES = LOCALES.map((l) => l.code) as [string, ...string[]];
/** The forum gallery's tags: one per operation the bot tags posts with. */
const GALLERY_TAGS = ['upscale', 'song', 'video'];

/** The page's port is taken: the playground started nothing and left nothing behind. */
export class PortInUseError extends Error {
  constructor(readonly port: number) {
    super(`port ${port} on ${HOST} is in use`);
  }
}

/**
 * Binds the page's port before anything else starts, so a busy port costs no
 * bot, Redis or temp folder to undo. Fastify is handed this server later
 * (`serverFactory`).
 */
async function bindPort(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new PortInUseError(port) : err);
    server.once('error', onError);
    server.listen({ host: HOST, port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return server;
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

/**
 * The threads a member follows, which Discord lists in their sidebar: those they created or posted
 * in (a message, or a command run there). The fake Discord keeps no thread members, so this reads
 * what it has. A thread open on the page is listed too, as the client lists the one you view.
 */
function followedThreads(fake: FakeDiscord, userId: string): string[] {
  const threads = fake.channelList().filter((c) => c.type === 10 || c.type === 11 || c.type === 12);
  const ranIn = new Set(
    [...fake.interactions.values()].filter((i) => i.userId === userId).map((i) => i.channelId),
  );
  return threads
    .filter(
      (t) =>
        fake.thread(t.id)?.ownerId === userId ||
        ranIn.has(t.id) ||
        fake
          .channelMessages(t.id)
          .some((m) => (m.data['author'] as JsonObject | undefined)?.['id'] === userId),
    )
    .map((t) => t.id);
}

/** "training-photos start": the command with its subcommand group and subcommand, as Discord shows it. */
function commandLine(interaction: InteractionState | undefined): string | undefined {
  const data = interaction?.payload['data'] as JsonObject | undefined;
  if (!data || typeof data['name'] !== 'string') return undefined;
  const parts = [data['name']];
  let options = data['options'];
  while (Array.isArray(options) && options.length === 1) {
    const o = options[0] as JsonObject | undefined;
    if (!o || (o['type'] !== 1 && o['type'] !== 2) || typeof o['name'] !== 'string') break;
    parts.push(o['name']);
    options = o['options'];
  }
  return parts.join(' ');
}

/** A command interaction's kind: 1 slash command, 2 user command, 3 message command (Apps menu). */
function commandType(interaction: InteractionState | undefined): number | undefined {
  const data = interaction?.payload['data'] as JsonObject | undefined;
  return typeof data?.['type'] === 'number' ? data['type'] : undefined;
}

/**
 * The embeds Discord adds to a member's message for its direct image links (`{ type: 'image' }`, the
 * picture as its thumbnail), up to 5; a link in `<…>` is not unfurled. Discord looks at what the link
 * serves; the playground has no network, so it goes by the file name, as the page's previews do.
 */
export function imageLinkEmbeds(content: string): JsonObject[] {
  const urls = new Set<string>();
  for (const m of content.matchAll(/(<)?(https?:\/\/[^\s<>]+)/g)) {
    const url = m[2] ?? '';
    if (m[1] !== undefined && content[(m.index ?? 0) + m[0].length] === '>') continue;
    try {
      if (/\.(png|jpe?g|gif|webp)$/i.test(new URL(url).pathname)) urls.add(url);
    } catch {
      // not a URL
    }
  }
  return [...urls].slice(0, 5).map((url) => ({ type: 'image', url, thumbnail: { url, proxy_url: url } }));
}

/** Whether a process has ended: gone, or a zombie its parent (init, for a daemon) has not reaped yet. */
async function ended(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // The state follows the command name in parentheses: "1234 (redis-server) Z …".
  return /\)\s+Z/.test(stat);
}

/** Waits until a process id is gone (a daemonized redis-server is not our child: no exit event). */
async function processGone(pid: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await ended(pid)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  // SIGKILL is not instant either: its directory is removed once it is really gone.
  const killedBy = Date.now() + 2000;
  while (Date.now() < killedBy && !(await ended(pid))) await new Promise((r) => setTimeout(r, 20));
}

export async function startPlayground(opts: PlaygroundOptions = {}): Promise<Playground> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const stepMs = opts.stepMs ?? [1000, 3000];
  const failureRate = opts.failureRate ?? 0.08;
  const server = await bindPort(opts.port ?? 5170);

  // Everything started below registers how to undo it; close() (or a failed start) runs them newest first.
  const undo: Array<() => Promise<void>> = [
    async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  ];
  const undoAll = async () => {
    for (const step of undo.splice(0).reverse()) await step().catch(() => undefined);
  };
  try {
    return await start();
  } catch (err) {
    await undoAll();
    throw err;
  }

  async function start(): Promise<Playground> {
    const fake = await startFakeDiscord({
      warmUpValidators: true,
      botUsername: APPLICATION_NAME,
      guild: { name: 'Playground', channels: [{ name: 'general' }] },
    });
    undo.push(() => fake.close());
    // The gallery is a forum, as in today's community servers: one post per finished job, tagged with its operation.
    const gallery = fake.addForumChannel({
      name: 'gallery',
      tags: GALLERY_TAGS,
      topic: 'Every finished result, one post each (set with /settings set gallery).',
    });
    const galleryTags = gallery.tags.map((t) => ({ id: t.id, name: t.name }));
    fake.setRateLimits(true);
    // Added with `npm run invite`'s URL: @everyone's permissions plus the bot role the invite creates,
    // exactly the invite's (Manage Threads among them: /privacy delete and Remove result delete posts).
    fake.setBotPermissions(String(MEMBER | invitePermissions()));
    const members = [
      {
        key: 'admin',
        username: 'ada',
        globalName: 'Ada (admin)',
        permissions: String(MEMBER | MANAGE_GUILD),
      },
      { key: 'alice', username: 'alice', globalName: 'Alice', permissions: String(MEMBER) },
      { key: 'bob', username: 'bob', globalName: 'Bob', permissions: String(MEMBER) },
      // A moderator (Manage Messages): the message commands that ask for it, such as Remove result.
      {
        key: 'mod',
        username: 'mo',
        globalName: 'Mo (moderator)',
        permissions: String(MEMBER | MANAGE_MESSAGES),
      },
    ].map((m) => ({ ...m, id: fake.addUser(m) }));
    /** Each member's Discord client language (the `locale` of their interactions). */
    const locales = new Map<string, string>(members.map((m) => [m.id, 'en-US']));
    // USER_INSTALL: the members installed the app to their own accounts too, so they can try it
    // where no server installed the bot: a server of theirs without it, and a DM with the bot.
    const elsewhere = fake.addGuild({
      name: 'Elsewhere',
      botInstalled: false,
      channels: [
        { name: 'lounge', topic: 'A server that never installed the bot: your own install works here.' },
      ],
    });
    for (const m of members) {
      fake.addMember(elsewhere, m.id, { permissions: m.permissions });
      fake.dmChannelId(m.id);
    }
    /** Which channels a member reaches through their own install (the bot is not there, or it is a DM). */
    const viaOwnInstall = (channelId: string): { userInstall?: true } => {
      const c = fake.channelList().find((x) => x.id === channelId);
      return c && (c.guildId === null || c.guildId === elsewhere) ? { userInstall: true } : {};
    };
    const localeOf = (userId: string) => locales.get(userId) ?? 'en-US';
    // The server's owner, not among the page's members: sets the gallery up as a real admin would.
    const owner = fake.addUser({
      username: 'owner',
      globalName: 'Server owner',
      permissions: String(MEMBER | MANAGE_GUILD),
    });

    const switches = { dropWebhooks: false, discord429: false, discord500: false, storeDown: false };
    const emulator = await startEmulator({ scenario: randomScenario(stepMs, failureRate) });
    undo.push(() => emulator.close());
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

    // The store: SQLite in a temp dir; or Redis (REDIS_URL, else a private redis-server when one is
    // installed, so the "stop the store" switch has something real to stop).
    const dataDir = await mkdtemp(join(tmpdir(), 'mediabot-playground-'));
    undo.push(() => rm(dataDir, { recursive: true, force: true }));
    let privateRedis: PrivateRedis | undefined;
    let redisUrl = opts.redisUrl;
    if (redisUrl === undefined && spawnSync('redis-server', ['--version']).status === 0) {
      const redis = await makePrivateRedis();
      privateRedis = redis;
      undo.push(async () => {
        // Stopped by its pid (SIGTERM: redis-server shuts down; it saves nothing here), not through
        // redis-cli, which a second Ctrl-C to the terminal's process group would kill on the way. It is
        // a daemon, not our child: wait for its pid to end before removing its folder.
        const pid = Number(await readFile(join(redis.dir, 'redis.pid'), 'utf8').catch(() => ''));
        if (pid > 0) {
          try {
            process.kill(pid, 'SIGTERM');
          } catch {
            // already gone (the store switch stopped it)
          }
          await processGone(pid, 5000);
        } else await redis.kill();
        await rm(redis.dir, { recursive: true, force: true });
      });
      await redis.start();
      redisUrl = `redis://127.0.0.1:${redis.port}`;
    }

    const botPort = await freePort();
    const http = opts.interactions === 'http';
    if (http) fake.setInteractionsMode('http', `http://127.0.0.1:${botPort}/interactions`);
    let bot: ChildProcess | undefined;
    // As `npm start` runs it: the same V8 flags, then the bundled bot (built first when stale).
    const command = await botCommand();
    const startBot = () => {
      const child = spawn(process.execPath, command, {
        cwd: ROOT,
        env: {
          ...productionEnv(),
          PATH: process.env['PATH'] ?? '',
          HOME: process.env['HOME'] ?? '',
          DISCORD_TOKEN: fake.token,
          DISCORD_APPLICATION_ID: fake.applicationId,
          DISCORD_GUILD_ID: fake.guildId,
          DISCORD_API_URL: fake.apiUrl,
          // The job commands, /tasks, /privacy and Upscale image also for user installs (global).
          USER_INSTALL: 'true',
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
        for (const line of d.toString().split('\n')) if (line.trim() !== '') timeline.botLine(line);
      };
      child.stdout?.on('data', onLine);
      child.stderr?.on('data', onLine);
      child.once('exit', (code, signal) => timeline.note(`bot process exited (${signal ?? code})`));
      bot = child;
      timeline.note(`bot process started (pid ${child.pid})`);
    };
    const stopBot = async (signal: NodeJS.Signals) => {
      if (bot) await stopChild(bot, { signal, graceMs: 5000 });
    };
    // The bot stops before the fake Discord and the store it talks to (undo runs newest first).
    undo.push(() => stopBot('SIGTERM'));
    startBot();

    // ---------------------------------------------------------------- operator switches
    const faults: { remove(): void }[] = [];
    const EDIT_ROUTES = [
      '/webhooks/{webhook_id}/{webhook_token}/messages/@original',
      '/channels/{channel_id}/messages/{message_id}',
    ];
    // While a switch is on, Discord answers bursts of edits with 429 (retry_after 1 s) or 500, every
    // 3 s: the bot has to wait, retry and still deliver the latest state (the final included).
    let faultTimer: NodeJS.Timeout | undefined;
    undo.push(async () => clearInterval(faultTimer));
    const injectBurst = () => {
      for (const f of faults.splice(0)) f.remove();
      for (const route of EDIT_ROUTES) {
        if (switches.discord429)
          faults.push(
            fake.injectFault({ ...DiscordErrors.rateLimited(1), method: 'PATCH', route, count: 2 }),
          );
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

    const app = Fastify({
      bodyLimit: 64 * 1024 * 1024,
      serverFactory: (handler) => server.on('request', handler),
    });
    undo.push(() => app.close());
    // Bad input is the page's mistake (400); a bot that is not connected (starting, restarting) cannot
    // get an interaction: Discord would time it out, and the page shows "The application did not respond".
    app.setErrorHandler((err, _req, reply) => {
      if (err instanceof z.ZodError) return reply.code(400).send({ error: err.message });
      const message = err instanceof Error ? err.message : String(err);
      if (/cannot dispatch/.test(message))
        return reply
          .code(503)
          .send({ error: 'The bot is not connected to Discord (starting or restarting).' });
      return reply.code(500).send({ error: message });
    });
    await app.register(fastifyStatic, { root: PUBLIC });
    await app.register(fastifyStatic, { root: TWEMOJI, prefix: '/vendor/twemoji/', decorateReply: false });
    await app.register(fastifyStatic, {
      root: NOTO_SANS_JP,
      prefix: '/vendor/noto-sans-jp/',
      decorateReply: false,
    });

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
      applicationName: APPLICATION_NAME,
      // Jump links the page moves inside: Discord's own and the local Discord's.
      discordOrigins: ['https://discord.com', fake.baseUrl],
      users: members.map((m) => ({
        key: m.key,
        id: m.id,
        name: fake.userName(m.id),
        permissions: m.permissions,
        admin: m.key === 'admin',
        locale: localeOf(m.id),
        followed: followedThreads(fake, m.id),
      })),
      locales: LOCALES,
      guildLocale: fake.guildLocale,
      // A forum post carries its tags (the page shows them on top of the post).
      // Each with its place: the playground server, the server without the bot, a member's DM with the bot.
      channels: fake.channelList().map((c) => {
        const post = c.parentId === gallery.id ? fake.thread(c.id) : undefined;
        const dmOf = c.type === 1 ? members.find((m) => fake.dmChannelId(m.id) === c.id)?.id : undefined;
        const place =
          c.guildId === elsewhere
            ? { category: 'Elsewhere · the bot is not here (your own install)' }
            : c.type === 1
              ? { category: 'Direct messages', name: 'DM with the bot', dmOf: dmOf ?? null }
              : { category: 'Text channels' };
        // ownInstall: reached only through the member's own install (the bot is not there).
        const ownInstall = viaOwnInstall(c.id).userInstall === true;
        return { ...c, ...(post ? { appliedTags: post.appliedTags } : {}), ...place, ownInstall };
      }),
      forumTags: { [gallery.id]: galleryTags },
      commands: [...fake.globalCommands, ...fake.guildCommands()],
      store: redisUrl ? (privateRedis ? 'redis (private)' : 'redis') : 'sqlite',
      switches,
      hints: { songTask: FIXTURE_SONG_TASK_ID, videoTask: FIXTURE_VIDEO_TASK_ID },
    }));

    /**
     * A channel as one member sees it: its messages (ephemeral ones only for whom they answer), each
     * with the command line that made it, and that member's commands Discord got no answer to (the
     * client shows them as "Sending command…", then "The application did not respond" after 3 s).
     */
    app.get('/api/messages', async (req) => {
      const { channelId, userId } = z.object({ channelId: z.string(), userId: z.string() }).parse(req.query);
      const now = fake.now();
      const messages = fake
        .channelMessages(channelId)
        .filter((m) => !m.ephemeral || fake.interactionUser(m.interactionId) === userId)
        .map((m) => {
          const meta = m.data['interaction_metadata'] as JsonObject | undefined;
          const interaction =
            meta && meta['type'] === 2 ? fake.interactions.get(String(meta['id'])) : undefined;
          return {
            id: m.id,
            ephemeral: m.ephemeral,
            data: m.data,
            edits: m.edits.length,
            command: commandLine(interaction),
            commandType: commandType(interaction),
          };
        });
      // The client forgets a failed command when reloaded; the page keeps it for an interaction
      // token's lifetime (15 min), then lets it go.
      const mine = [...fake.interactions.values()].filter(
        (i) =>
          i.channelId === channelId &&
          i.userId === userId &&
          i.callbacks.length === 0 &&
          now - i.createdAt < PENDING_SHOWN_MS,
      );
      return {
        now,
        ackDeadlineMs: ACK_DEADLINE_MS,
        messages,
        pending: mine
          .filter((i) => i.type === 2)
          .map((i) => ({
            id: i.id,
            command: commandLine(i) ?? '',
            commandType: commandType(i),
            createdAt: i.createdAt,
            failed: now - i.createdAt > ACK_DEADLINE_MS,
          })),
        // Buttons and selects nobody answered: "This interaction failed" under their message.
        failedComponents: mine
          .filter((i) => i.type === 3 && now - i.createdAt > ACK_DEADLINE_MS)
          .map((i) => ({ id: i.id, messageId: i.sourceMessageId })),
      };
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
        locale: localeOf(b.userId),
        channelId: b.channelId,
        ...viaOwnInstall(b.channelId),
        options: b.options,
        attachments,
        ...(b.subcommand ? { subcommand: b.subcommand } : {}),
      });
      const cb = await h.response(5000).catch(() => undefined);
      return { interactionId: h.id, callbackType: cb?.type ?? null, modal: h.modal ?? null };
    });

    // A message command from a message's Apps menu (right-click, or More): Discord sends the command
    // (type 2, data.type 3) with the message as target_id and in resolved.messages. The fake Discord
    // refuses one the member is not offered (default_member_permissions), as the client would not list it.
    app.post('/api/message-command', async (req, reply) => {
      const b = ref.extend({ name: z.string(), messageId: z.string() }).parse(req.body);
      let h;
      try {
        h = fake.sendMessageCommand({
          name: b.name,
          targetMessageId: b.messageId,
          userId: b.userId,
          locale: localeOf(b.userId),
          ...viaOwnInstall(b.channelId),
        });
      } catch (err) {
        const message = (err as Error).message;
        if (/does not offer/.test(message)) return reply.code(403).send({ error: message });
        throw err;
      }
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
        locale: localeOf(b.userId),
        channelId: b.channelId,
        ...viaOwnInstall(b.channelId),
        options: b.options,
        focused: b.focused,
        ...(b.subcommand ? { subcommand: b.subcommand } : {}),
      });
      await h.response(3000).catch(() => undefined);
      return { choices: h.choices ?? [] };
    });

    // A member's client language (their interactions' `locale`), or the server's (`guild_locale`).
    app.post('/api/locale', async (req, reply) => {
      const b = z.object({ userId: z.string().optional(), locale: z.enum(LOCALE_CODES) }).parse(req.body);
      if (b.userId === undefined) fake.setGuildLocale(fake.guildId, b.locale);
      else if (locales.has(b.userId)) locales.set(b.userId, b.locale);
      else return reply.code(400).send({ error: `${b.userId} is not a member of the playground` });
      return { ok: true };
    });

    /**
     * A forum or media channel as its list of posts (newest first): title, tags, the starter
     * message for the preview, how many messages; deleted posts are gone.
     */
    app.get('/api/forum', async (req) => {
      const { channelId } = z.object({ channelId: z.string() }).parse(req.query);
      const tags = channelId === gallery.id ? galleryTags : [];
      const posts = fake
        .forumPosts(channelId)
        .filter((p) => !p.deleted)
        .reverse()
        .map((p) => ({
          id: p.id,
          name: p.name,
          appliedTags: p.appliedTags,
          archived: p.archived,
          locked: p.locked,
          messageCount: fake.channelMessages(p.id).length,
          first: p.message?.data ?? null,
        }));
      return { now: fake.now(), tags, posts };
    });

    // A member's plain message, with the files attached to it (up to 10, as Discord takes; text,
    // files or both) and the embeds of its image links. The bot reads none (it runs with the Guilds intent only), but its message
    // commands get one in resolved.messages: `Upscale image` on a posted image.
    app.post('/api/say', async (req) => {
      const b = ref
        .extend({ content: z.string().max(2000).default(''), files: z.array(fileSchema).max(10).default([]) })
        .refine((m) => m.content.trim() !== '' || m.files.length > 0, 'a message needs text or a file')
        .parse(req.body);
      const embeds = imageLinkEmbeds(b.content);
      const msg = fake.postUserMessage({
        userId: b.userId,
        channelId: b.channelId,
        content: b.content,
        // A member's own upload: a lasting attachment (the local Discord's default for one).
        ...(b.files.length ? { attachments: b.files.map(toAttachment) } : {}),
        ...(embeds.length ? { embeds } : {}),
      });
      return { id: msg.id };
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
        locale: localeOf(b.userId),
        channelId: b.channelId,
        ...viaOwnInstall(b.channelId),
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
        locale: localeOf(b.userId),
        channelId: b.channelId,
        ...viaOwnInstall(b.channelId),
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

    // Development only, not in the page: posts a Components V2 fixture as the bot (see fixtures.ts).
    app.post('/api/debug/v2-fixture', async (req, reply) => {
      const b = z
        .object({
          channelId: z.string(),
          userId: z.string().default(members[0]?.id ?? ''),
          name: z.enum(V2_FIXTURE_NAMES as [string, ...string[]]).default('song-card'),
        })
        .parse(req.body);
      try {
        const id = await postV2Fixture(fake, b.channelId, b.name as (typeof V2_FIXTURE_NAMES)[number], {
          userId: b.userId,
          mediaUrl: emulator.url,
        });
        return { id };
      } catch (err) {
        return reply.code(502).send({ error: (err as Error).message });
      }
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

    await app.ready();

    // The setup a server's owner does once, through the bot: the forum becomes the gallery (kept in the
    // store, so restarts keep it). Its reply is ephemeral, for the owner, who is not among the page's members.
    let closed = false;
    undo.push(async () => void (closed = true));
    const ready = (async () => {
      const registered = () =>
        [...fake.globalCommands, ...fake.guildCommands()].some((c) => c['name'] === 'settings');
      await fake.waitFor(() => closed || registered(), {
        timeoutMs: 120_000,
        description: 'the bot registering /settings',
      });
      if (!http && !closed) await fake.waitForGatewayReady(120_000);
      if (closed) return;
      // Setting it twice changes nothing: try again if the bot was not listening yet (HTTP interactions).
      for (let attempt = 1; ; attempt++) {
        const set = fake.sendCommand({
          name: 'settings',
          subcommand: 'set',
          userId: owner,
          options: { gallery: gallery.id },
        });
        const answered = await set.message(20_000).then(
          () => true,
          (err: unknown) => {
            if (attempt >= 3 || closed) throw err;
            return false;
          },
        );
        if (answered || closed) break;
      }
      if (closed) return;
      timeline.note(
        `setup: Server owner ran /settings set gallery:#gallery (a forum tagged ${GALLERY_TAGS.join(', ')})`,
      );
    })();
    ready.catch((err: unknown) => timeline.note(`setup failed: ${(err as Error).message}`));
    const url = `http://${HOST}:${(server.address() as AddressInfo).port}`;
    log(
      `Playground: ${url}  (bot on :${botPort}, store ${redisUrl ? 'redis' : 'sqlite'}; Ctrl-C stops everything)`,
    );

    let closing: Promise<void> | undefined;
    return {
      url,
      fake,
      emulator,
      ready,
      restartBot: async () => {
        await stopBot('SIGKILL');
        startBot();
      },
      close() {
        closing ??= undoAll();
        return closing;
      },
    };
  }
}

// Entry point (not when imported by the browser test).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const fail = (line: string): never => {
    process.stderr.write(`${line}\n`);
    process.exit(1);
  };
  const raw = process.env['PLAYGROUND_PORT'] ?? '5170';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`PLAYGROUND_PORT=${raw} is not a port number (0-65535)`);
  // The handlers are in place before anything starts and stay for the whole shutdown: Ctrl-C reaches
  // every process of the terminal's group, a second one (an impatient member, or a wrapper relaying
  // the first) must not end this process with Node's default action halfway through its cleanup,
  // which is what left the temp folders behind. A signal during startup stops once startup is done.
  let stopping: Promise<void> | undefined;
  const started: { pg?: Playground } = {};
  const stop = (pg: Playground) => (stopping ??= pg.close().then(() => process.exit(0)));
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      process.stdout.write(`(${signal}: still stopping; the temp folders are being removed)\n`);
      return;
    }
    signalled = true;
    process.stdout.write('\nstopping the playground…\n');
    if (started.pg) void stop(started.pg);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
  const pg = await startPlayground({
    port,
    ...(process.env['REDIS_URL'] ? { redisUrl: process.env['REDIS_URL'] } : {}),
    ...(process.env['PLAYGROUND_INTERACTIONS'] === 'http' ? { interactions: 'http' as const } : {}),
  }).catch((err: unknown) =>
    signalled
      ? process.exit(0) // stopped while starting: startPlayground undid what it had started
      : err instanceof PortInUseError
        ? fail(
            `PLAYGROUND_PORT=${port}: port ${port} on ${HOST} is in use; set PLAYGROUND_PORT to a free port (PLAYGROUND_PORT=${port + 1} npm run playground)`,
          )
        : fail(`the playground did not start: ${(err as Error).message}`),
  );
  started.pg = pg;
  if (signalled) void stop(pg);
}
