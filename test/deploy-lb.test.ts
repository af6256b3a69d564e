/**
 * The load balancer of `docker compose up --scale bot=N` (deploy/nginx.conf and
 * deploy/bot-proxy.conf), run for real: Debian's nginx with the repository's
 * config, only the Docker-specific parts swapped (the `bot:3000 resolve` upstream
 * becomes three local upstreams, the listen port and include path become local),
 * in front of three recording HTTP servers. Checks what the bot relies on:
 * webhook and interaction bodies arrive byte for byte (Ed25519 covers the raw
 * bytes), headers kept, X-Forwarded-For is the sender, requests spread round
 * robin, a dead replica is skipped, per-instance routes are not exposed, and the
 * body limit; with its limits scaled down, a second nginx shows webhooks past the
 * per-address burst refused (429) and a stalled body dropped at the door. Plus the compose file and the config agree with each other and
 * with the bot's defaults. Skipped where nginx is not installed (CI installs it and skips nothing).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './helpers/harness.js';
import { foundAt, needs } from './helpers/requirements.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Seen {
  upstream: number;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

async function freePort(): Promise<number> {
  const s = createServer();
  const port = await listen(s);
  await new Promise((r) => s.close(r));
  return port;
}

describe('deploy: compose file and load balancer config agree', () => {
  it('the lb publishes 3000, mounts both configs where nginx.conf includes them, the bots publish no port', async () => {
    const compose = await readFile(join(ROOT, 'docker-compose.yml'), 'utf8');
    const nginx = await readFile(join(ROOT, 'deploy/nginx.conf'), 'utf8');
    expect(compose).toContain("- '3000:8080'");
    expect(compose).toContain('./deploy/nginx.conf:/etc/nginx/nginx.conf:ro');
    expect(compose).toContain('./deploy/bot-proxy.conf:/etc/nginx/bot-proxy.conf:ro');
    expect(nginx).toMatch(/listen 8080;/);
    expect(nginx).toContain('include /etc/nginx/bot-proxy.conf;');
    // The bot listens on PORT, 3000 by default; the upstream is the compose service name.
    expect(nginx).toMatch(/server bot:3000 resolve;/);
    const bot = compose.slice(compose.indexOf('  bot:'), compose.indexOf('  lb:'));
    expect(bot).not.toMatch(/^\s+ports:/m); // scaled replicas would fight over a host port
    expect(bot).not.toMatch(/container_name|INSTANCE_ID:/); // each replica its own name
    // Every replica the same DATA_DIR (the Dockerfile's /data): any of them serves /photos/.
    expect(bot).toContain('- bot-data:/data');
    // Redis asks for a password (deploy/redis-start.sh): the replicas' URL carries it.
    expect(bot).toContain('REDIS_URL: redis://:${REDIS_PASSWORD:?set REDIS_PASSWORD in .env}@redis:6379');
    // A memory limit per replica (Node sizes V8's heap from it; docs/performance.md).
    expect(bot).toMatch(/^ {4}mem_limit: 1g$/m);
  });
});

/** A running nginx with the repository's config (Docker's parts swapped), in front of `ports`. */
interface Lb {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts Debian's nginx with deploy/nginx.conf, only what Docker provides swapped (its DNS
 * name for the replicas, the paths and port), plus `adjust` for a test that scales a limit.
 */
async function startLb(ports: number[], adjust: (conf: string) => string = (c) => c): Promise<Lb> {
  const dir = await mkdtemp(join(tmpdir(), 'mediabot-nginx-'));
  const port = await freePort();
  const original = await readFile(join(ROOT, 'deploy/nginx.conf'), 'utf8');
  const conf = adjust(
    original
      .replace(/server bot:3000 resolve;/, ports.map((p) => `server 127.0.0.1:${p};`).join(' '))
      .replace(/resolver [^;]*;/, '')
      .replace(/listen 8080;/, `listen 127.0.0.1:${port};`)
      .replaceAll('/etc/nginx/bot-proxy.conf', join(ROOT, 'deploy/bot-proxy.conf'))
      .replace(
        /http \{/,
        `http {\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;\n` +
          `  fastcgi_temp_path ${dir}/fastcgi;\n  uwsgi_temp_path ${dir}/uwsgi;\n  scgi_temp_path ${dir}/scgi;`,
      ),
  );
  expect(conf).not.toBe(original);
  await writeFile(
    join(dir, 'nginx.conf'),
    `pid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nuser root;\n${conf}`,
  );
  const test = spawnSync(foundAt('nginx'), ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')], {
    encoding: 'utf8',
  });
  expect(test.status, test.stderr).toBe(0);
  const nginx: ChildProcess = spawn(
    foundAt('nginx'),
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 202,
    10_000,
    'nginx up',
  );
  return {
    url,
    async stop() {
      const exited = new Promise((r) => nginx.once('exit', r));
      nginx.kill('SIGQUIT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Three recording replicas: each answers 202 with its number once it has the whole body. */
async function recordingReplicas(seen: Seen[]): Promise<{ servers: Server[]; ports: number[] }> {
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({
          upstream: i,
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks),
        });
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: true, upstream: i }));
      });
    });
    servers.push(server);
    ports.push(await listen(server));
  }
  return { servers, ports };
}

describe('deploy: nginx load balancer in front of three replicas', needs('nginx'), () => {
  const seen: Seen[] = [];
  let upstreams: Server[] = [];
  let balancer: Lb | undefined;
  let lb: string;

  beforeAll(async () => {
    const replicas = await recordingReplicas(seen);
    upstreams = replicas.servers;
    balancer = await startLb(replicas.ports);
    lb = balancer.url;
    seen.length = 0;
  });

  afterAll(async () => {
    await balancer?.stop();
    await Promise.all(upstreams.map((s) => new Promise((r) => s.close(r))));
  });

  it('passes a webhook through byte for byte with its secret, the sender in X-Forwarded-For, round robin over the three', async () => {
    // Not valid UTF-8 and larger than nginx's in-memory body buffer: it must not be re-encoded.
    const body = Buffer.concat([
      Buffer.from('{"task_id":"t","x":"'),
      Buffer.alloc(300_000, 0xe9),
      Buffer.from('"}'),
    ]);
    const first = seen.length;
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${lb}/webhooks/media/3f6c1f1e-2a47-4a55-9c1b-0d4b7b2f8a10`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-secret': 's3cret' },
        body,
      });
      expect(res.status).toBe(202);
    }
    const got = seen.slice(first);
    expect(got).toHaveLength(6);
    for (const s of got) {
      expect(s.url).toBe('/webhooks/media/3f6c1f1e-2a47-4a55-9c1b-0d4b7b2f8a10');
      expect(s.body.equals(body)).toBe(true);
      expect(s.headers['x-webhook-secret']).toBe('s3cret');
      expect(s.headers['x-forwarded-for']).toBe('127.0.0.1');
    }
    expect([0, 1, 2].map((u) => got.filter((s) => s.upstream === u).length)).toEqual([2, 2, 2]);
  });

  it('passes a signed interaction through with its signature headers and exact bytes', async () => {
    const body = Buffer.from('{"type":1, "id":"1",\n "x":"é"}');
    const first = seen.length;
    const res = await fetch(`${lb}/interactions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-signature-ed25519': 'ab'.repeat(32),
        'x-signature-timestamp': '1700000000',
      },
      body,
    });
    expect(res.status).toBe(202);
    const s = seen[first];
    expect(s?.body.equals(body)).toBe(true);
    expect(s?.headers['x-signature-ed25519']).toBe('ab'.repeat(32));
    expect(s?.headers['x-signature-timestamp']).toBe('1700000000');
  });

  it('passes a training photo fetch (MEDIA_PHOTO_FORMAT=url) to a replica; only GET', async () => {
    const first = seen.length;
    expect((await fetch(`${lb}/photos/tok123/1.jpg`)).status).toBe(202);
    expect(seen[first]?.url).toBe('/photos/tok123/1.jpg');
    expect((await fetch(`${lb}/photos/tok123/1.jpg`, { method: 'POST', body: 'x' })).status).toBe(403);
    expect(seen.length).toBe(first + 1);
  });

  it('does not expose per-instance routes; bodies over 2 MiB are refused at the door', async () => {
    const first = seen.length;
    for (const path of ['/metrics', '/readyz', '/']) {
      expect((await fetch(`${lb}${path}`)).status, path).toBe(404);
    }
    const big = await fetch(`${lb}/webhooks/media/x`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.alloc(3 * 1024 * 1024, 0x20),
    });
    expect(big.status).toBe(413);
    expect(seen.length).toBe(first);
  });

  it('a dead replica is skipped: every delivery still reaches a live one', async () => {
    const dead = upstreams[1];
    await new Promise((r) => dead?.close(r));
    const first = seen.length;
    for (let i = 0; i < 9; i++) {
      const res = await fetch(`${lb}/webhooks/media/3f6c1f1e-2a47-4a55-9c1b-0d4b7b2f8a10`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-secret': 's3cret' },
        body: `{"n":${i}}`,
      });
      expect(res.status).toBe(202);
    }
    const got = seen.slice(first);
    expect(got).toHaveLength(9);
    expect(got.every((s) => s.upstream !== 1)).toBe(true);
    expect(got.map((s) => s.body.toString()).sort()).toEqual(
      Array.from({ length: 9 }, (_, i) => `{"n":${i}}`).sort(),
    );
  });
});

describe('deploy: nginx refuses floods and stalled senders at the door', needs('nginx'), () => {
  const seen: Seen[] = [];
  let upstreams: Server[] = [];
  let balancer: Lb | undefined;

  beforeAll(async () => {
    const replicas = await recordingReplicas(seen);
    upstreams = replicas.servers;
    // The repository's directives with their numbers scaled down so a test reaches them
    // (200 a second after a burst of 4000, 10 s pauses): each must be there to be scaled.
    const scale = (conf: string, from: RegExp, to: string) => {
      expect(conf).toMatch(from);
      return conf.replace(from, to);
    };
    balancer = await startLb(replicas.ports, (conf) =>
      scale(
        scale(scale(conf, /rate=200r\/s;/, 'rate=1r/s;'), /burst=4000 nodelay;/, 'burst=20 nodelay;'),
        /client_body_timeout 10s;/,
        'client_body_timeout 1s;',
      ),
    );
    seen.length = 0;
  });
  afterAll(async () => {
    await balancer?.stop();
    await Promise.all(upstreams.map((s) => new Promise((r) => s.close(r))));
  });

  it('a body that stalls is dropped after client_body_timeout and never reaches a replica', async () => {
    const url = new URL(balancer?.url ?? '');
    const started = Date.now();
    const said = await new Promise<string>((resolve) => {
      let text = '';
      const s = connect(Number(url.port), url.hostname, () => {
        s.write(
          'POST /webhooks/media/3f6c1f1e-2a47-4a55-9c1b-0d4b7b2f8a10 HTTP/1.1\r\nHost: lb\r\n' +
            'content-type: application/json\r\nx-webhook-secret: s3cret\r\ncontent-length: 1000\r\n\r\n{"task_id":',
        );
      });
      s.on('data', (d: Buffer) => (text += d.toString('latin1')));
      s.on('error', () => undefined);
      s.on('close', () => resolve(text));
    });
    const ms = Date.now() - started;
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(8_000);
    // nginx answers 408, or simply closes: either way the request ends at the door.
    expect(said === '' || said.startsWith('HTTP/1.1 408')).toBe(true);
    expect(seen).toHaveLength(0);
  });

  it('webhooks from one address past the burst are 429 and never reach a replica; other routes are not limited', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const res = await fetch(`${balancer?.url}/webhooks/media/3f6c1f1e-2a47-4a55-9c1b-0d4b7b2f8a10`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-webhook-secret': 's3cret' },
          body: `{"n":${i}}`,
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    const passed = statuses.filter((s) => s === 202).length;
    const limited = statuses.filter((s) => s === 429).length;
    expect(passed + limited).toBe(40);
    // The burst (20, plus what drained at 1 a second meanwhile) and not more.
    expect(passed).toBeGreaterThanOrEqual(20);
    expect(passed).toBeLessThanOrEqual(25);
    expect(seen.filter((r) => r.url.startsWith('/webhooks/'))).toHaveLength(passed);
    for (const path of ['/healthz', '/interactions']) {
      const res = await fetch(`${balancer?.url}${path}`, {
        method: path === '/healthz' ? 'GET' : 'POST',
        body: path === '/healthz' ? null : '{}',
      });
      expect(res.status, path).toBe(202);
    }
  });
});
