/** A private redis-server (own port, own directory) a test can stop and start under the code it tests. */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually, freePort } from './harness.js';

const run = promisify(execFile);

export interface PrivateRedis {
  port: number;
  dir: string;
  start(): Promise<void>;
  up(): Promise<boolean>;
  /** SHUTDOWN SAVE: the data survives the next start. */
  stop(): Promise<void>;
  /** SHUTDOWN NOSAVE, ignoring errors. */
  kill(): Promise<void>;
  /** SHUTDOWN NOSAVE and its directory removed: nothing left behind (cleanup). */
  remove(): Promise<void>;
}

export async function privateRedis(opts: { maxmemoryPolicy?: string } = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'mediabot-redis-'));
  const cli = (...args: string[]) => run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args]);
  const ping = async (): Promise<boolean> => {
    try {
      return (await cli('ping')).stdout.trim() === 'PONG';
    } catch {
      return false;
    }
  };
  return {
    port,
    dir,
    async start() {
      await run('redis-server', [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'yes',
        '--dir',
        dir,
        '--dbfilename',
        'dump.rdb',
        '--pidfile',
        join(dir, 'redis.pid'),
        '--logfile',
        join(dir, 'redis.log'),
        ...(opts.maxmemoryPolicy ? ['--maxmemory-policy', opts.maxmemoryPolicy] : []),
      ]);
      await eventually(ping, 5000, `redis-server on port ${port}`);
    },
    up: ping,
    async stop() {
      await cli('shutdown', 'save').catch(() => undefined); // the connection drops: an "error" is normal
      await eventually(async () => !(await ping()), 5000, 'redis-server to stop');
    },
    async kill() {
      await cli('shutdown', 'nosave').catch(() => undefined);
    },
    async remove() {
      await cli('shutdown', 'nosave').catch(() => undefined);
      await eventually(async () => !(await ping()), 5000, 'redis-server to stop').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
