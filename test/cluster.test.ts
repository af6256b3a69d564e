/**
 * The multi-instance primitives on a real Redis: the gateway lease (fencing token,
 * takeover, a paused holder stops acting), the shared channel budget and job
 * ownership (claim, notify the owner, survivors adopt a dead owner's jobs).
 */
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayLease } from '../src/services/cluster/gateway-lease.js';
import { JobOwnership } from '../src/services/cluster/job-ownership.js';
import { RedisChannelBudget } from '../src/services/cluster/redis-channel-budget.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import type { RedisClient } from '../src/services/store/backend.js';
import { REDIS_URL, eventually } from './helpers/harness.js';
import { redisAnswers } from './helpers/private-redis.js';

const logger = pino({ level: 'silent' });
const hasRedis = await redisAnswers(REDIS_URL);

describe.skipIf(!hasRedis)('multi-instance primitives on Redis', () => {
  let stores: Stores;
  let redis: RedisClient;
  const prefix = () => `t-${randomUUID()}::cluster:`;

  beforeAll(async () => {
    stores = await createStores({
      redisUrl: REDIS_URL,
      dataDir: tmpdir(),
      logger,
      namespace: `t-${randomUUID()}`,
    });
    if (!stores.redis) throw new Error('no redis client');
    redis = stores.redis;
  });
  afterAll(async () => {
    await stores?.close();
  });

  it('gateway lease: one holder; a paused holder stops acting; another takes over with a larger fencing token', async () => {
    const p = prefix();
    let clockA = Date.now();
    const events: string[] = [];
    const opts = { redis, prefix: p, logger, ttlMs: 800, renewMs: 200, tryMs: 100 };
    const a = new GatewayLease({ ...opts, instanceId: 'a', now: () => clockA });
    const b = new GatewayLease({ ...opts, instanceId: 'b' });
    await a.start({ acquired: (t) => void events.push(`a+${t}`), lost: (t) => void events.push(`a-${t}`) });
    await b.start({ acquired: (t) => void events.push(`b+${t}`), lost: (t) => void events.push(`b-${t}`) });
    await eventually(() => events.includes('a+1'), 2000, 'a holds');
    expect(a.holds()).toBe(true);
    expect(await a.verify()).toBe(true);
    expect(b.holds()).toBe(false);

    // a "pauses": its clock jumps past the lease; it must not act, even before Redis says so.
    clockA += 10_000;
    expect(a.holds()).toBe(false);
    expect(await a.verify()).toBe(false);
    await eventually(() => events.includes('a-1'), 3000, 'a drops the gateway');
    // a gave the lease up (and stops trying): b takes it, with a larger token.
    await a.stop();
    await eventually(() => events.includes('b+2'), 5000, 'b takes over');
    expect(b.fencingToken).toBe(2);
    expect(await b.verify()).toBe(true);
    await b.stop();
    await a.stop();
  });

  it('gateway lease: a stopping holder hands the lease back at once', async () => {
    const p = prefix();
    const opts = { redis, prefix: p, logger, ttlMs: 10_000, renewMs: 3000, tryMs: 100 };
    const a = new GatewayLease({ ...opts, instanceId: 'a' });
    const b = new GatewayLease({ ...opts, instanceId: 'b' });
    let bHolds = false;
    await a.start({ acquired: () => undefined, lost: () => undefined });
    await b.start({ acquired: () => void (bHolds = true), lost: () => undefined });
    expect(a.holds()).toBe(true);
    await a.stop();
    await eventually(() => bHolds, 2000, 'b takes over well before the 10 s lease');
    await b.stop();
  });

  it('shared channel budget: instances together stay within 5 per window, finals keep their reserve', async () => {
    const p = prefix();
    const opts = { redis, prefix: p, logger, limit: 5, windowMs: 1000, finalReserve: 2 };
    const one = new RedisChannelBudget(opts);
    const two = new RedisChannelBudget(opts);
    const now = Date.now();
    // Progress may take 3 slots between them; the fourth waits.
    expect(await one.acquire('c1', 'progress', now)).toBe(0);
    expect(await two.acquire('c1', 'progress', now)).toBe(0);
    expect(await one.acquire('c1', 'progress', now)).toBe(0);
    expect(await two.acquire('c1', 'progress', now)).toBeGreaterThan(0);
    // Finals get the two reserved slots, then wait too.
    expect(await two.acquire('c1', 'final', now)).toBe(0);
    expect(await one.acquire('c1', 'final', now)).toBe(0);
    expect(await two.acquire('c1', 'final', now)).toBeGreaterThan(0);
    // Another channel has its own budget.
    expect(await two.acquire('c2', 'progress', now)).toBe(0);
    // Answered: each slot frees windowMs after its answer.
    for (let i = 0; i < 3; i++) one.settled('c1');
    for (let i = 0; i < 2; i++) two.settled('c1');
    const wait = await one.acquire('c1', 'final', Date.now());
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000);
    await eventually(async () => (await one.acquire('c1', 'final', Date.now())) === 0, 3000, 'window passed');
    // A 429 seen by one instance holds the channel for all.
    two.blocked('c3', Date.now() + 500);
    await eventually(async () => (await one.acquire('c3', 'final', Date.now())) > 0, 1000, 'blocked shared');
  });

  it('job ownership: one owner; changes reach the owner; survivors adopt a stopped owner’s jobs', async () => {
    const p = prefix();
    const opts = { redis, prefix: p, logger, ttlMs: 600, renewMs: 150, sweepMs: 100 };
    const a = new JobOwnership({ ...opts, instanceId: 'a' });
    const b = new JobOwnership({ ...opts, instanceId: 'b' });
    const seen: string[] = [];
    await a.start({
      adopt: async (id) => void seen.push(`a adopts ${id}`),
      changed: async (id, source) => void seen.push(`a changed ${id} ${source}`),
    });
    await b.start({
      adopt: async (id) => void seen.push(`b adopts ${id}`),
      changed: async (id, source) => void seen.push(`b changed ${id} ${source}`),
    });
    expect(await a.claim('j1')).toBe('a');
    expect(await b.claim('j1')).toBe('a');
    expect(a.owns('j1')).toBe(true);
    expect(b.owns('j1')).toBe(false);
    // Renewed past its TTL: still a's.
    await new Promise((r) => setTimeout(r, 900));
    expect(await b.claim('j1')).toBe('a');
    // b heard a webhook: a is told.
    expect(await b.route('j1', 'webhook')).toBe(false);
    await eventually(() => seen.includes('a changed j1 webhook'), 2000, 'owner notified');
    // a finished j2 (done): nobody adopts it; j1 it hands back when stopping: b adopts it.
    expect(await a.claim('j2')).toBe('a');
    await a.release('j2', true);
    await a.stop();
    await eventually(() => seen.includes('b adopts j1'), 3000, 'survivor adopts');
    expect(b.owns('j1')).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.filter((s) => s.includes('adopts j2'))).toEqual([]);
    await b.stop();
  });

  // Regression (memory): one renewal script carried every owned lease (10 000 jobs: 20 000
  // strings alive while Redis ran it), leaving megabytes of old-generation garbage each time.
  it('job ownership: leases are renewed in scripts of at most 250, all of them, and a lost one is reported', async () => {
    const p = prefix();
    const renewals: number[] = [];
    const counting: RedisClient = {
      eval: (script, keys, args) => {
        if (script.includes('pexpire')) renewals.push(keys.length);
        return redis.eval(script, keys, args);
      },
      publish: (channel, message) => redis.publish(channel, message),
      subscribe: (channel, onMessage) => redis.subscribe(channel, onMessage),
    };
    const a = new JobOwnership({
      redis: counting,
      prefix: p,
      logger,
      instanceId: 'a',
      ttlMs: 1500,
      renewMs: 300,
    });
    await a.start({ adopt: async () => undefined, changed: async () => undefined });
    const ids = Array.from({ length: 600 }, (_, i) => `job-${i}`);
    for (const id of ids) expect(await a.claim(id)).toBe('a');
    // Another instance holds one lease now (as after a pause past it): reported lost, not renewed.
    await redis.eval(`redis.call('set', KEYS[1], 'b')`, [`${p}owner:job-450`], []);
    await new Promise((r) => setTimeout(r, 2500)); // well past the 1.5 s lease
    const other = new JobOwnership({ redis, prefix: p, logger, instanceId: 'c' });
    for (const id of ids) expect(await other.claim(id)).toBe(id === 'job-450' ? 'b' : 'a');
    expect(a.owns('job-450')).toBe(false);
    expect(a.size()).toBe(599);
    expect(renewals.length).toBeGreaterThan(0);
    expect(Math.max(...renewals)).toBeLessThanOrEqual(250);
    await a.stop();
  });

  // Regression: a takeover found by a webhook (route) before the sweep was not logged,
  // so an operator (and the replicas test) saw no sign of it.
  it('job ownership: a dead owner’s job taken over through a change is logged as a takeover; a new job is not', async () => {
    const p = prefix();
    const lines: { adopted?: number; via?: string; msg?: string }[] = [];
    const recording = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    // Sweeps far apart: the change gets there first.
    const opts = { redis, prefix: p, logger: recording, ttlMs: 300, renewMs: 100, sweepMs: 1000 };
    const dead = new JobOwnership({ ...opts, instanceId: 'dead' });
    const b = new JobOwnership({ ...opts, instanceId: 'b' });
    const handlers = { adopt: async () => undefined, changed: async () => undefined };
    await b.start(handlers);
    expect(await dead.claim('old')).toBe('dead'); // never renewed: as if SIGKILLed
    expect(await b.route('fresh', 'bot')).toBe(true); // a job nobody had: not a takeover
    await new Promise((r) => setTimeout(r, 400));
    expect(await b.route('old', 'webhook')).toBe(true);
    await eventually(
      () => lines.some((l) => l.msg === 'took over jobs left by another instance'),
      3000,
      'takeover logged',
    );
    const logged = lines.filter((l) => l.msg === 'took over jobs left by another instance');
    expect(logged.reduce((n, l) => n + (l.adopted ?? 0), 0)).toBe(1);
    expect(logged[0]?.via).toBe('change');
    await b.stop();
  });

  it('job ownership: a busier instance hands jobs to the least busy live one, not to a dead one, not when an edit waits', async () => {
    const p = prefix();
    const opts = { redis, prefix: p, logger, ttlMs: 600, renewMs: 150, sweepMs: 100_000 };
    const a = new JobOwnership({ ...opts, instanceId: 'a' });
    const b = new JobOwnership({ ...opts, instanceId: 'b' });
    const seen: string[] = [];
    await a.start({ adopt: async () => undefined, changed: async () => undefined });
    await b.start({
      adopt: async () => undefined,
      changed: async (id, source) => void seen.push(`b ${id} ${source}`),
    });
    // Two against none is close enough: a keeps them.
    expect(await a.claim('j1')).toBe('a');
    expect(await a.claim('j0')).toBe('a');
    expect(await a.handOff('j1', () => true)).toBe(false);
    expect(a.owns('j1')).toBe(true);
    // Three against none: one moves, and b is told.
    expect(await a.claim('j2')).toBe('a');
    expect(await a.handOff('j2', () => true)).toBe(true);
    expect(a.owns('j2')).toBe(false);
    await eventually(() => seen.includes('b j2 handoff'), 2000, 'new owner told');
    expect(b.owns('j2')).toBe(true);
    expect(await a.claim('j2')).toBe('b');
    // An edit of the job is waiting here (release says no): kept.
    expect(await a.claim('j3')).toBe('a');
    expect(await a.claim('j4')).toBe('a');
    expect(await a.claim('j5')).toBe('a');
    expect(await a.handOff('j3', () => false)).toBe(false);
    expect(a.owns('j3')).toBe(true);
    // b stops: it leaves the instance list at once and gets nothing more.
    await b.stop();
    expect(await a.handOff('j4', () => true)).toBe(false);
    // A dead instance (heartbeat older than the lease) gets nothing either.
    await redis.eval("redis.call('zadd', KEYS[1], 1, 'ghost') return 1", [`${p}instances`], []);
    expect(await a.handOff('j4', () => true)).toBe(false);
    expect(a.owns('j4')).toBe(true);
    await a.stop();
  });
});
