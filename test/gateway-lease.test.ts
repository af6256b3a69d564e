/**
 * The gateway lease when its holder is cut off from Redis (a partition: the others still
 * reach Redis). Regression: the holder used to treat "Redis unreachable" as "still mine"
 * and kept the gateway forever, while a standby took the expired lease: two gateways.
 * Real Redis; the holder reaches it through a TCP relay that the test black-holes.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayLease } from '../src/services/cluster/gateway-lease.js';
import { openBackend, type Backend } from '../src/services/store/backend.js';
import { eventually, REDIS_URL } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';

const logger = pino({ level: 'silent' });

interface Holder {
  lease: GatewayLease;
  /** Tokens it was given, in order. */
  acquired: number[];
  lost: number[];
}

describe('gateway lease: a holder cut off from Redis', needs('redis'), () => {
  let proxy: TcpProxy;
  let dataDir: string;
  let backends: Backend[];
  let leases: GatewayLease[];
  let prefix: string;

  beforeEach(async () => {
    const target = new URL(REDIS_URL);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    dataDir = await mkdtemp(join(tmpdir(), 'lease-test-'));
    backends = [];
    leases = [];
    prefix = `lease-${randomBytes(4).toString('hex')}::cluster:`;
  });
  afterEach(async () => {
    await Promise.all(leases.map((l) => l.stop()));
    await Promise.all(backends.map((b) => b.close()));
    await proxy.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function holder(name: string, redisUrl: string, ttlMs: number): Promise<Holder> {
    const backend = await openBackend({ redisUrl, dataDir, namespace: 'lease', opTimeoutMs: 2_000, logger });
    backends.push(backend);
    if (!backend.redis) throw new Error('expected a Redis backend');
    const lease = new GatewayLease({
      redis: backend.redis,
      prefix,
      instanceId: name,
      logger,
      ttlMs,
      renewMs: ttlMs / 4,
      tryMs: ttlMs / 5,
    });
    leases.push(lease);
    const h: Holder = { lease, acquired: [], lost: [] };
    await lease.start({
      acquired: (token) => void h.acquired.push(token),
      lost: (token) => void h.lost.push(token),
    });
    return h;
  }

  it('gives the lease and the gateway up before it expires, never overlaps the standby, and takes it again later', async () => {
    const a = await holder('a', proxy.url('redis'), 1_000);
    expect(a.acquired).toHaveLength(1);
    const b = await holder('b', REDIS_URL, 1_000);
    expect(b.acquired).toHaveLength(0);

    // Sample both holders all along: at no moment may both believe they hold the gateway.
    let overlaps = 0;
    const sampler = setInterval(() => {
      if (a.lease.holds() && b.lease.holds()) overlaps++;
    }, 5);
    try {
      const cutAt = Date.now();
      proxy.blackHole();
      await eventually(() => a.lost.length === 1, 5_000, 'the cut-off holder to drop the gateway');
      // Dropped before its lease could have expired in Redis (renewed at most a lease ago).
      expect(Date.now() - cutAt).toBeLessThan(1_500);
      expect(a.lost).toEqual(a.acquired);
      expect(a.lease.holds()).toBe(false);
      expect(a.lease.fencingToken).toBe(0);
      expect(await a.lease.verify()).toBe(false);

      // The standby takes the expired lease, with a larger fencing token.
      await eventually(() => b.acquired.length === 1, 5_000, 'the standby to take the lease');
      expect(b.acquired[0]).toBeGreaterThan(a.acquired[0] ?? 0);

      // Back on the network, the old holder is a standby like any other: it waits.
      proxy.restore();
      await new Promise((r) => setTimeout(r, 1_500));
      expect(a.acquired).toHaveLength(1);
      expect(b.lease.holds()).toBe(true);
      expect(await b.lease.verify()).toBe(true);

      // ... and takes the gateway normally once the lease is free.
      await b.lease.stop();
      await eventually(() => a.acquired.length === 2, 5_000, 'the old holder to take the lease again');
      expect(a.acquired[1]).toBeGreaterThan(b.acquired[0] ?? 0);
      expect(await a.lease.verify()).toBe(true);
    } finally {
      clearInterval(sampler);
    }
    expect(overlaps).toBe(0);
  });

  it('a cut shorter than the lease keeps the gateway', async () => {
    const a = await holder('a', proxy.url('redis'), 4_000);
    expect(a.acquired).toHaveLength(1);
    proxy.blackHole();
    await new Promise((r) => setTimeout(r, 400));
    expect(a.lease.holds()).toBe(true);
    proxy.restore();
    // Renewed again once the connection is back, well past the lease it held when cut.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(a.lost).toEqual([]);
    expect(a.lease.holds()).toBe(true);
    expect(await a.lease.verify()).toBe(true);
  });
});
