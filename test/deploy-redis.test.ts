/**
 * docker-compose.yml's Redis asks for a password, and the bot replicas' REDIS_URL carries
 * it. The service's start script (deploy/redis-start.sh, what the compose file runs) is run
 * here for real with the redis-server binary: without the password a client gets NOAUTH,
 * with it everything works; noeviction and the append-only file stay; the password is on
 * no command line (`ps`) and in a file only the server's user reads.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRedisAuthError } from '../src/services/store/redis-errors.js';
import { eventually, freePort } from './helpers/harness.js';
import { foundAt, needs } from './helpers/requirements.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'deploy/redis-start.sh');

describe('compose: Redis with a password', () => {
  it('the redis service runs deploy/redis-start.sh with REDIS_PASSWORD; the replicas’ REDIS_URL carries it', async () => {
    const compose = await readFile(join(ROOT, 'docker-compose.yml'), 'utf8');
    const bot = compose.slice(compose.indexOf('  bot:'), compose.indexOf('  lb:'));
    const redis = compose.slice(compose.indexOf('  redis:'), compose.indexOf('\nvolumes:'));
    expect(bot).toMatch(/REDIS_URL: redis:\/\/:\$\{REDIS_PASSWORD:\?[^}]*\}@redis:6379/);
    expect(redis).toContain('./deploy/redis-start.sh:/usr/local/etc/redis/redis-start.sh:ro');
    expect(redis).toContain("command: ['sh', '/usr/local/etc/redis/redis-start.sh']");
    expect(redis).toMatch(/REDIS_PASSWORD: \$\{REDIS_PASSWORD:\?[^}]*\}/);
    // The healthcheck authenticates too (an unauthenticated PING is refused), by environment, not argv.
    expect(redis).toMatch(/REDISCLI_AUTH="\$\$REDIS_PASSWORD" redis-cli ping \| grep -q PONG/);
    expect(redis).not.toMatch(/--requirepass|-a /);
  });
});

describe('deploy/redis-start.sh run for real', needs('redisServer'), () => {
  const password = randomBytes(24).toString('hex');
  let dir: string;
  let port: number;
  let server: ChildProcess;
  let output = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'redis-start-'));
    port = await freePort();
    server = spawn(
      'sh',
      [SCRIPT, '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''],
      {
        env: {
          PATH: `${dirname(foundAt('redisServer'))}:${process.env.PATH ?? ''}`,
          REDIS_PASSWORD: password,
          REDIS_CONF_FILE: join(dir, 'redis.conf'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    server.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    server.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(
      async () => {
        if (server.exitCode !== null) throw new Error(`redis-start.sh exited: ${output}`);
        const c = createClient({ url: `redis://:${password}@127.0.0.1:${port}` });
        c.on('error', () => undefined);
        try {
          await c.connect();
          return (await c.ping()) === 'PONG';
        } finally {
          c.destroy();
        }
      },
      15_000,
      'the compose Redis to answer',
    );
  });
  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses a client without the password (the bot’s one line names the credentials)', async () => {
    const anonymous = createClient({ url: `redis://127.0.0.1:${port}` });
    anonymous.on('error', () => undefined);
    await anonymous.connect();
    try {
      const err = await anonymous.ping().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(err)).toMatch(/NOAUTH/);
      expect(isRedisAuthError(err)).toBe(true);
    } finally {
      anonymous.destroy();
    }
  });

  it('with the password in REDIS_URL: noeviction, append-only; the password in no command line, its file 0600', async () => {
    const c = createClient({ url: `redis://:${password}@127.0.0.1:${port}` });
    c.on('error', () => undefined);
    await c.connect();
    try {
      expect(await c.configGet('maxmemory-policy')).toEqual({ 'maxmemory-policy': 'noeviction' });
      expect(await c.configGet('appendonly')).toEqual({ appendonly: 'yes' });
    } finally {
      c.destroy();
    }
    // The script exec'd the server: its pid is the server's.
    const ps = spawnSync('ps', ['-o', 'args=', '-p', String(server.pid)], { encoding: 'utf8' });
    expect(ps.stdout).toContain('redis-server');
    expect(ps.stdout).not.toContain(password);
    expect(spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).stdout).not.toContain(password);
    expect(((await stat(join(dir, 'redis.conf'))).mode & 0o777).toString(8)).toBe('600');
  });

  it('refuses to start without a password, or with one that would need escaping', () => {
    for (const bad of ['', 'has space', 'a@b', 'quote"d']) {
      const r = spawnSync('sh', [SCRIPT, '--port', '1'], {
        env: { PATH: process.env.PATH ?? '', REDIS_PASSWORD: bad, REDIS_CONF_FILE: join(dir, 'never.conf') },
        encoding: 'utf8',
      });
      expect(r.status, bad).toBe(1);
      expect(r.stderr).toMatch(/REDIS_PASSWORD/);
    }
  });
});
