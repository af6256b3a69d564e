/**
 * Black-box start failures: the bot as a real process (what `npm start` runs),
 * each way start can fail ends with ONE human line naming the cause and the
 * variable to check, exit code 1, and no stack trace at the default log level.
 * Also: LOG_FORMAT both ways, `npm run invite`, and `npm run register` with the
 * Discord variables only.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from './fake-discord/index.js';
import { eventually, freePort, REDIS_URL } from './helpers/harness.js';
import { holdNewSqliteFile } from './helpers/held-sqlite.js';
import { privateRedis } from './helpers/private-redis.js';
import { needs } from './helpers/requirements.js';
import { botCommand, productionEnv } from './helpers/production-node-flags.js';
import { runNode, type NodeRun } from './helpers/run-node.js';

const ROOT = new URL('..', import.meta.url).pathname;

function run(args: string[], env: Record<string, string>, timeoutMs = 45_000): Promise<NodeRun> {
  return runNode(args, {
    cwd: ROOT,
    // Only what the test gives: no .env, no inherited configuration.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    timeoutMs,
  });
}

/** What `npm start` runs (the bundled bot and its flags), without npm's own lines around it. */
let command: string[] = [];
beforeAll(async () => {
  command = await botCommand();
});

const startBot = (env: Record<string, string>, timeoutMs?: number) =>
  run(command, { ...productionEnv(), ...env }, timeoutMs);
const startBotProcess = startBot;

interface RunningBot {
  pid: number;
  exitCode(): number | null;
  /** Sends `signal` and resolves with the exit code once it exited. */
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** The bot as a process that started and is ready (GET /readyz 200). */
async function runningBot(env: Record<string, string>): Promise<RunningBot> {
  const child = spawn(process.execPath, command, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...productionEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const kill = async (signal: NodeJS.Signals): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`the bot exited (${child.exitCode}): ${output}`);
        const res = await fetch(`http://127.0.0.1:${env.PORT}/readyz`).catch(() => undefined);
        return res?.status === 200;
      },
      90_000,
      'the bot to be ready',
    );
  } catch (err) {
    await kill('SIGKILL');
    throw err;
  }
  return { pid: child.pid ?? 0, exitCode: () => child.exitCode, kill };
}

/** The messages of the warn-level JSON log lines (LOG_FORMAT=json) in `stdout`. */
function warningsIn(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; msg: string })
    .filter((x) => x.level === 'warn')
    .map((x) => x.msg);
}

/** The one human line, and no stack anywhere. */
function expectOneLine(r: NodeRun, ...patterns: RegExp[]): string {
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(1);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  expect(lines, r.stderr).toHaveLength(1);
  const line = lines[0] ?? '';
  expect(line.startsWith('Cannot start: ')).toBe(true);
  for (const p of patterns) expect(line).toMatch(p);
  const all = r.stdout + r.stderr;
  expect(all).not.toMatch(/\n\s+at .+:\d+:\d+/);
  expect(all).not.toContain('"stack"');
  return line;
}

describe('start failures: one line, the variable to check, exit 1, no stack', { timeout: 60_000 }, () => {
  let fake: FakeDiscord;
  let dataDir: string;
  let base: Record<string, string>;
  let busy: Server;
  let busyPort: number;
  // One bot process per DATA_DIR: each start here gets its own (unless the test names one).
  const startBot = async (env: Record<string, string>, timeoutMs?: number): Promise<NodeRun> =>
    startBotProcess({ DATA_DIR: await mkdtemp(join(dataDir, 'run-')), ...env }, timeoutMs);

  beforeAll(async () => {
    fake = await startFakeDiscord({ warmUpValidators: false });
    dataDir = await mkdtemp(join(tmpdir(), 'mediabot-start-'));
    base = {
      DISCORD_TOKEN: fake.token,
      DISCORD_APPLICATION_ID: fake.applicationId,
      DISCORD_GUILD_ID: fake.guildId,
      DISCORD_API_URL: fake.apiUrl,
      MEDIA_API_KEY: 'test-key',
      MEDIA_API_URL: 'http://127.0.0.1:9',
      HOST: '127.0.0.1',
      LOG_FORMAT: 'json',
    };
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const addr = busy.address();
    busyPort = typeof addr === 'object' && addr ? addr.port : 0;
  });
  afterAll(async () => {
    await new Promise((r) => busy?.close(r));
    await fake?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it.concurrent('a bot token Discord rejects (401)', async () => {
    const r = await startBot({
      ...base,
      DISCORD_TOKEN: 'not-the-right-token',
      PORT: String(await freePort()),
    });
    expectOneLine(r, /Discord rejected the bot token/, /DISCORD_TOKEN/);
  });

  it.concurrent('Discord unreachable (closed port)', async () => {
    const closed = await freePort();
    const r = await startBot({
      ...base,
      DISCORD_API_URL: `http://127.0.0.1:${closed}/api`,
      PORT: String(await freePort()),
    });
    expectOneLine(
      r,
      /Cannot reach Discord at http:\/\/127\.0\.0\.1:\d+\/api \(ECONNREFUSED\)/,
      /DISCORD_API_URL/,
    );
  });

  it('http interactions: a bot token Discord rejects (checked over REST, no gateway)', async () => {
    const r = await startBot({
      ...base,
      DISCORD_INTERACTIONS: 'http',
      DISCORD_PUBLIC_KEY: fake.publicKey,
      DISCORD_TOKEN: 'not-the-right-token',
      PORT: String(await freePort()),
    });
    expectOneLine(r, /Discord rejected the bot token/, /DISCORD_TOKEN/);
  });

  it('http interactions: Discord unreachable', async () => {
    const closed = await freePort();
    const r = await startBot({
      ...base,
      DISCORD_INTERACTIONS: 'http',
      DISCORD_PUBLIC_KEY: fake.publicKey,
      DISCORD_API_URL: `http://127.0.0.1:${closed}/api`,
      PORT: String(await freePort()),
    });
    expectOneLine(
      r,
      /Cannot reach Discord at http:\/\/127\.0\.0\.1:\d+\/api \(ECONNREFUSED\)/,
      /DISCORD_API_URL/,
    );
  });

  it.concurrent('the HTTP port is already in use', async () => {
    const r = await startBot({ ...base, PORT: String(busyPort) });
    expectOneLine(r, new RegExp(`Port ${busyPort} on 127\\.0\\.0\\.1 is already in use`), /check PORT/);
  });

  it.concurrent('Redis unreachable: waits the bounded time, then one line (after one warning)', async () => {
    const closed = await freePort();
    const r = await startBot({
      ...base,
      REDIS_URL: `redis://127.0.0.1:${closed}`,
      REDIS_START_TIMEOUT_SECONDS: '1',
      PORT: String(await freePort()),
    });
    expectOneLine(
      r,
      /Cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\) after waiting 1 s/,
      /REDIS_URL/,
    );
    // JSON logs (LOG_FORMAT=json): the one warning says what it waits for; no "retrying" then crash.
    expect(warningsIn(r.stdout)).toEqual(['Redis does not answer yet; waiting for it before starting']);
    expect(r.stdout).not.toMatch(/retrying|registered|HTTP server listening/);
  });

  it.concurrent(
    'Redis refuses the credentials: no waiting, one line without the password',
    needs('redis'),
    async () => {
      const url = new URL(REDIS_URL);
      url.username = 'no-such-user';
      url.password = 'hunter2-wrong';
      const r = await startBot({ ...base, REDIS_URL: url.toString(), PORT: String(await freePort()) });
      const line = expectOneLine(r, /refused the credentials/, /REDIS_URL/);
      expect(line).not.toContain('hunter2-wrong');
    },
  );

  // BullMQ's production rule and ours: an evicted lock, budget or job would lose work or money.
  it.concurrent(
    'Redis with an evicting maxmemory-policy is refused at once, in one line',
    needs('redisServer'),
    async () => {
      const redis = await privateRedis({ maxmemoryPolicy: 'allkeys-lru' });
      await redis.start();
      try {
        const started = Date.now();
        const r = await startBot({
          ...base,
          REDIS_URL: `redis://127.0.0.1:${redis.port}`,
          REDIS_START_TIMEOUT_SECONDS: '300',
          PORT: String(await freePort()),
        });
        expectOneLine(
          r,
          /maxmemory-policy allkeys-lru/,
          /noeviction/,
          /redis-cli CONFIG SET maxmemory-policy noeviction/,
        );
        // Refused at the check, not after waiting REDIS_START_TIMEOUT_SECONDS (300 s) for a "better"
        // answer: the bound is far below that wait and far above a start on a loaded machine.
        expect(Date.now() - started).toBeLessThan(120_000);
        expect(r.stdout).not.toMatch(/HTTP server listening|registered/);
      } finally {
        await redis.remove();
      }
    },
  );

  it.concurrent('DATA_DIR is not a usable directory', async () => {
    const file = join(dataDir, 'a-file');
    await writeFile(file, 'x');
    const r = await startBot({ ...base, DATA_DIR: join(file, 'sub'), PORT: String(await freePort()) });
    expectOneLine(r, /DATA_DIR .*a-file\/sub is not usable \(ENOTDIR\)/, /check DATA_DIR/);
  });

  it.concurrent(
    'DATA_DIR whose database another process keeps locked: waited for, then one line',
    async () => {
      const lockedDir = await mkdtemp(join(tmpdir(), 'mediabot-locked-'));
      // A new file held exclusively, as by a bot that never lets go of it.
      const lock = await holdNewSqliteFile(lockedDir);
      try {
        const started = Date.now();
        // It waits 10 s by design, after a start that is slow when the suite loads both cores.
        const r = await startBot({ ...base, DATA_DIR: lockedDir, PORT: String(await freePort()) }, 50_000);
        expectOneLine(
          r,
          /another process keeps locked \(SQLITE_BUSY\)/,
          /no other bot runs on this DATA_DIR/,
          /REDIS_URL/,
        );
        // It waited (5 × the 2 s store timeout) before giving up, instead of failing on the
        // first busy answer, and said so once in the logs.
        expect(Date.now() - started).toBeGreaterThanOrEqual(9_000);
        expect(warningsIn(r.stdout)).toEqual(['SQLite file is locked by another process; waiting for it']);
      } finally {
        await lock.release();
        await rm(lockedDir, { recursive: true, force: true });
      }
    },
    90_000,
  );

  it.concurrent(
    'a second bot on the DATA_DIR another bot runs on: one line naming it; a killed holder leaves no stale lock',
    async () => {
      const shared = await mkdtemp(join(dataDir, 'shared-'));
      const first = await runningBot({ ...base, DATA_DIR: shared, PORT: String(await freePort()) });
      try {
        const r = await startBot({ ...base, DATA_DIR: shared, PORT: String(await freePort()) });
        expectOneLine(
          r,
          new RegExp(
            `DATA_DIR ${shared.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by another bot process \\(pid ${first.pid}\\)`,
          ),
          /REDIS_URL/,
        );
        expect(first.exitCode()).toBeNull();
      } finally {
        await first.kill('SIGKILL');
      }
      // The kernel dropped the dead holder's lock: the next bot starts and stops as usual.
      const next = await runningBot({ ...base, DATA_DIR: shared, PORT: String(await freePort()) });
      expect(await next.kill('SIGTERM')).toBe(0);
    },
    180_000,
  );

  it.concurrent(
    'what the bot keeps in DATA_DIR is readable by its user only (0600 files, 0700 directory)',
    async () => {
      const dir = join(await mkdtemp(join(dataDir, 'modes-')), 'data');
      const bot = await runningBot({ ...base, DATA_DIR: dir, PORT: String(await freePort()) });
      try {
        expect(((await stat(dir)).mode & 0o777).toString(8)).toBe('700');
        const files = await readdir(dir);
        expect(files).toEqual(
          expect.arrayContaining(['bot.sqlite', 'bot.sqlite-wal', 'bot.sqlite-shm', 'bot.lock', 'bot.pid']),
        );
        for (const f of files) {
          const st = await stat(join(dir, f));
          expect(`${f} ${(st.mode & 0o777).toString(8)}`).toBe(`${f} ${st.isDirectory() ? '700' : '600'}`);
        }
      } finally {
        await bot.kill('SIGTERM');
      }
    },
    120_000,
  );

  it.concurrent('LOG_LEVEL=debug adds the details (stack) to the logs, still one human line', async () => {
    const r = await startBot({
      ...base,
      DISCORD_TOKEN: 'not-the-right-token',
      LOG_LEVEL: 'debug',
      PORT: String(await freePort()),
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toContain('start failure details');
    expect(r.stdout).toContain('"stack"');
  });
});

describe('LOG_FORMAT', () => {
  const env = async (format: string) => ({
    DISCORD_TOKEN: 'x'.repeat(30),
    DISCORD_APPLICATION_ID: '123456789012345678',
    MEDIA_API_KEY: 'k',
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    REDIS_START_TIMEOUT_SECONDS: '1',
    LOG_FORMAT: format,
  });

  it.concurrent('json: one JSON object per line with level names and ISO times', async () => {
    const r = await startBot(await env('json'));
    const first = r.stdout.split('\n')[0] ?? '';
    const rec = JSON.parse(first) as Record<string, unknown>;
    expect(rec['level']).toBe('warn');
    expect(String(rec['time'])).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it.concurrent('pretty: a readable line, not JSON (even when stdout is not a terminal)', async () => {
    const r = await startBot(await env('pretty'));
    const first = r.stdout.split('\n')[0] ?? '';
    expect(first).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: Redis does not answer yet/);
    expect(r.stdout).not.toContain('{"level"');
  });

  it('an unknown LOG_FORMAT is a config error', async () => {
    const r = await startBot({ ...(await env('xml')) });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('LOG_FORMAT: must be one of auto, json, pretty');
  });
});

describe('npm run invite / register', () => {
  it.concurrent(
    'invite: the URL with scopes bot + applications.commands and exactly the bits used',
    async () => {
      const r = await run(['scripts/run.mjs', 'invite'], { DISCORD_APPLICATION_ID: '123456789012345678' });
      expect(r.code, r.stderr).toBe(0);
      const url = new URL(/https:\/\/discord\.com\/oauth2\/authorize\S+/.exec(r.stdout)?.[0] ?? '');
      expect(url.searchParams.get('client_id')).toBe('123456789012345678');
      expect(url.searchParams.get('scope')).toBe('bot applications.commands');
      // Send Messages, Embed Links, Attach Files, Read Message History, Create Public Threads,
      // Send Messages in Threads, Manage Threads.
      const bits = [1n << 11n, 1n << 14n, 1n << 15n, 1n << 16n, 1n << 35n, 1n << 38n, 1n << 34n].reduce(
        (a, b) => a | b,
      );
      expect(url.searchParams.get('permissions')).toBe(bits.toString());
      for (const name of [
        'Send Messages',
        'Attach Files',
        'Create Public Threads',
        'Send Messages in Threads',
        'Manage Threads',
      ]) {
        expect(r.stdout).toContain(name);
      }
      // The user-install link too: commands only, installed to the member's account (integration_type 1).
      const links = [...r.stdout.matchAll(/https:\/\/discord\.com\/oauth2\/authorize\S+/g)].map(
        (m) => new URL(m[0]),
      );
      const user = links.find((u) => u.searchParams.get('integration_type') === '1');
      expect(user?.searchParams.get('client_id')).toBe('123456789012345678');
      expect(user?.searchParams.get('scope')).toBe('applications.commands');
      expect(user?.searchParams.get('permissions')).toBeNull();
      expect(r.stdout).toContain('Installation Contexts');
      // Results are Components V2 cards: Embed Links is for the waiting and running messages.
      const embedLinks = r.stdout.split('\n').find((l) => l.includes('Embed Links')) ?? '';
      expect(embedLinks).toContain('waiting and running job messages');
      expect(embedLinks).not.toContain('result embeds');
    },
  );

  it.concurrent('invite without DISCORD_APPLICATION_ID: one clear error', async () => {
    const r = await run(['scripts/run.mjs', 'invite'], {});
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('DISCORD_APPLICATION_ID: required');
  });

  it.concurrent('register with Discord unreachable: one line naming DISCORD_API_URL', async () => {
    const closed = await freePort();
    const r = await run(['scripts/run.mjs', 'register-commands'], {
      DISCORD_TOKEN: 'x'.repeat(30),
      DISCORD_APPLICATION_ID: '123456789012345678',
      DISCORD_API_URL: `http://127.0.0.1:${closed}/api`,
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      `Cannot register: Cannot reach Discord at http://127.0.0.1:${closed}/api (ECONNREFUSED): check DISCORD_API_URL and this machine's network.`,
    ]);
  });

  it('register needs only the Discord variables (no MEDIA_API_KEY)', async () => {
    const fake = await startFakeDiscord({ warmUpValidators: false });
    try {
      const r = await run(['scripts/run.mjs', 'register-commands'], {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.applicationId,
        DISCORD_GUILD_ID: fake.guildId,
        DISCORD_API_URL: fake.apiUrl,
        LOG_LEVEL: 'warn',
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toContain('MEDIA_API_KEY');
      expect(fake.guildCommands().length).toBeGreaterThan(0);
      expect(r.stdout).toMatch(/guild commands/);
    } finally {
      await fake.close();
    }
  });
});
