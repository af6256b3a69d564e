import { hash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import KeyvRedis from '@keyv/redis';
import { Keyv } from 'keyv';
import type { Logger } from 'pino';
import { CORRUPT, decodeRecord, encodeRecord, keyvDeserialize, keyvSerialize, liveValue } from './codec.js';
import { createPrivateFile, narrowIfPresent } from './data-dir-lock.js';
import { describeError } from './errors.js';
import { type ScriptName } from './lua-scripts.js';
import { redisConnection } from './redis-connection.js';

/**
 * The raw key/value backend under the job store: Keyv over @keyv/redis or
 * @keyv/sqlite. Methods here are NOT bounded by a timeout and throw the
 * driver's own errors; ./keyv-store.ts adds timeouts, in-process ordering, validation
 * and StoreUnavailableError. Every value is stored in the store's own record format
 * (./codec.ts), which Keyv writes through the codec and the compare-and-set and claim
 * paths read through it.
 */

export { CORRUPT };

export type BackendKind = 'redis' | 'sqlite';

/** What the multi-instance coordination needs of the Redis connection (src/services/cluster). */
export interface RedisClient {
  /** Runs one of the bot's Lua scripts (./lua-scripts.ts) on the store's connection. */
  run(script: ScriptName, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
}

export interface Backend {
  readonly kind: BackendKind;
  /** Redis only: the connection (shared with the multi-instance coordination). */
  readonly redis?: RedisClient;
  /**
   * Redis only: optimistic read-modify-write for records that several instances update
   * (job records under a webhook storm). No lock round trips: `read` returns the value
   * with its exact stored text, `write` replaces the key only while it still holds that
   * text (one Lua script) and answers the new text, or undefined when another writer got
   * there first (the caller reads again and re-merges).
   */
  readonly cas?: CasOps;
  /** `undefined` when absent or expired, CORRUPT when unparseable, else the stored JSON value. */
  get(key: string): Promise<unknown>;
  /** `ttlMs` undefined: no expiry. */
  set(key: string, value: unknown, ttlMs: number | undefined): Promise<void>;
  delete(key: string): Promise<void>;
  /** One real round trip to the backend. */
  ping(): Promise<void>;
  /** Stores a raw string under `key`, bypassing serialisation (tests: simulate corruption). */
  writeRaw(key: string, raw: string): Promise<void>;
  /** Deletes every key of this namespace (tests, maintenance). */
  clearNamespace(): Promise<void>;
  /**
   * First caller wins: stores `value` under `key` for `ttlMs` only if the key is absent
   * (or expired, or not JSON), atomically. Redis: SET NX PX in one Lua step that
   * answers the holder on a loss (./lua/claim.lua); SQLite: one INSERT .. ON CONFLICT DO
   * UPDATE .. WHERE the row is expired. A loss answers what holds the key (CORRUPT when
   * unreadable; undefined only when it expired in between, SQLite).
   */
  claim(key: string, value: unknown, ttlMs: number): Promise<{ won: true } | { won: false; holder: unknown }>;
  /**
   * Redis only: a native set (atomic add/remove, no read-modify-write, so no lock): the
   * unfinished-job index every instance updates at once. SQLite keeps a JSON list.
   */
  readonly sets?: {
    add(key: string, member: string, ttlMs: number): Promise<void>;
    remove(key: string, members: readonly string[]): Promise<void>;
    members(key: string): Promise<string[]>;
  };
  /**
   * Sorted indexes (member → score), for what must scale to many thousands of entries and be
   * read in order: every job of a member (by creation), ended jobs (by end, for retention).
   * Redis: sorted sets; SQLite: a table beside Keyv's with an index on (key, score).
   */
  readonly sorted: SortedIndexes;
  /**
   * SQLite only: several keys written in one statement (all or none), with their TTLs; a
   * deletion is written as a record already expired (absent to every read, swept later).
   */
  setMany?(writes: readonly RecordWrite[]): Promise<void>;
  close(): Promise<void>;
}

export interface SortedIndexes {
  /** `ttlMs`: Redis expires the whole index that long after its last add (SQLite keeps it; the sweep and reads prune). */
  add(key: string, member: string, score: number, ttlMs?: number): Promise<void>;
  remove(key: string, members: readonly string[]): Promise<void>;
  /** Members in score order (`rev`: highest first), those scoring below `before`, paged. */
  range(
    key: string,
    opts: { before?: number; rev?: boolean; offset?: number; limit: number },
  ): Promise<string[]>;
  count(key: string): Promise<number>;
}

/** One key of a multi-key write: a value with its TTL, or its deletion. */
export type RecordWrite = { key: string; value: unknown; ttlMs: number } | { key: string; delete: true };

export interface CasOps {
  /** undefined when absent; `value` is CORRUPT when the text is not a stored value. */
  read(key: string): Promise<{ value: unknown; raw: string } | undefined>;
  write(
    key: string,
    value: unknown,
    ttlMs: number | undefined,
    expected: string,
  ): Promise<string | undefined>;
  /** Several keys in one round trip: each value (undefined when absent or expired) and its exact text. */
  readMany(keys: readonly string[]): Promise<{ value: unknown; raw: string | undefined }[]>;
  /**
   * Writes `writes` only if every key of `keys` still holds its text in `expected` (undefined:
   * absent), all in one script (./lua/cas-set-many.lua); false when any changed.
   */
  writeMany(
    keys: readonly string[],
    expected: readonly (string | undefined)[],
    writes: readonly RecordWrite[],
  ): Promise<boolean>;
}

export interface BackendOptions {
  /** `redis://` / `rediss://` URL; absent: SQLite at `${dataDir}/bot.sqlite`. */
  redisUrl?: string | undefined;
  dataDir: string;
  namespace: string;
  /** Connect timeout (Redis), per-command timeout (Redis), busy timeout (SQLite). */
  opTimeoutMs: number;
  logger: Logger;
  /** Backend error events (Keyv `error`, client errors). Defaults to logging at warn. */
  onError?: (source: string, error: unknown) => void;
  /** SQLite only: how often expired rows are swept (Redis expires keys itself). Default 1 h; 0 disables. */
  sweepIntervalMs?: number;
  /** SQLite only: how long opening waits out a file another process holds locked. Default 5 × opTimeoutMs. */
  openWaitMs?: number;
}

export async function openBackend(opts: BackendOptions): Promise<Backend> {
  const onError =
    opts.onError ??
    ((source, error) => opts.logger.warn({ source, error: describeError(error) }, 'store backend error'));
  return opts.redisUrl === undefined ? openSqlite(opts, onError) : openRedis(opts.redisUrl, opts, onError);
}

function redisReconnectDelay(retries: number): number {
  // Exponential backoff capped at 2 s, with jitter; never gives up (the store must
  // come back by itself when Redis does).
  return Math.min(100 * 2 ** Math.min(retries, 10), 2_000) + Math.floor(Math.random() * 100);
}

async function openRedis(
  url: string,
  opts: BackendOptions,
  onError: (source: string, error: unknown) => void,
): Promise<Backend> {
  const { namespace, opTimeoutMs, logger } = opts;
  // The Lua scripts (SCRIPTS) come with the shared client class (./redis-connection.ts).
  const client = redisConnection(url, {
    // While disconnected, reject commands at once instead of queueing them until
    // the connection comes back (which could be never).
    disableOfflineQueue: true,
    // No per-command `timeout`: it allocates an AbortSignal per command (measurable
    // under a webhook storm); keyv-store.ts bounds every call with its own timer.
    socket: { connectTimeout: opTimeoutMs, reconnectStrategy: redisReconnectDelay },
  });
  // throwOnErrors: command failures reach us as exceptions (the default would turn
  // them into `undefined` reads and silent lost writes). The adapter re-emits every
  // client 'error' event; Keyv re-emits the adapter's; we listen on Keyv, so no
  // 'error' event is ever unhandled.
  const adapter = new KeyvRedis(client, { namespace, throwOnConnectError: true, throwOnErrors: true });
  const keyv = new Keyv({
    store: adapter,
    namespace,
    useKeyPrefix: false, // the adapter prefixes `${namespace}::` itself
    throwOnErrors: true,
    serialize: keyvSerialize,
    deserialize: keyvDeserialize,
  });
  keyv.on('error', (error: unknown) => onError('redis', error));

  let wasReady = false;
  client.on('ready', () => {
    if (wasReady) logger.info('store: redis connection restored');
    wasReady = true;
  });

  // Connect in the background (the client retries forever); wait up to opTimeoutMs
  // so the first commands find a ready connection when Redis is up.
  const connecting = client.connect().then(
    () => true,
    (error: unknown) => {
      onError('redis', error);
      return false;
    },
  );
  let timer: NodeJS.Timeout | undefined;
  const connected = await Promise.race([
    connecting,
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), opTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (!connected) logger.warn('store: redis not reachable yet; commands fail until it is (retrying)');

  const prefixed = (key: string): string => `${namespace}::${key}`;
  const cas: CasOps = {
    async read(key) {
      const raw = await client.get(prefixed(key));
      const value = liveValue(raw, Date.now());
      return raw === null || value === undefined ? undefined : { value, raw };
    },
    async write(key, value, ttlMs, expected) {
      const expires = ttlMs !== undefined && ttlMs > 0 ? Date.now() + ttlMs : undefined;
      const raw = encodeRecord(value, expires);
      // The text read is compared by its SHA-1 (lua/cas-set.lua): half the bytes of every write.
      const done = await client.casSet(
        [prefixed(key)],
        [hash('sha1', expected), raw, expires ? String(ttlMs) : ''],
      );
      return done === 1 ? raw : undefined;
    },
    async readMany(keys) {
      if (keys.length === 0) return [];
      const raws = await client.mGet(keys.map(prefixed));
      const now = Date.now();
      // Expired but not yet dropped by Redis: absent to the caller, its text still compared.
      return raws.map((raw) => ({ value: liveValue(raw, now), raw: raw ?? undefined }));
    },
    async writeMany(keys, expected, writes) {
      const args = keys.map((_, i) => expected[i] ?? '');
      for (const w of writes) {
        const at = keys.indexOf(w.key);
        if (at < 0) throw new Error(`writeMany: ${w.key} was not read`);
        if ('delete' in w) {
          args.push(String(at + 1), '', '');
          continue;
        }
        const ttl = Math.max(1, Math.ceil(w.ttlMs));
        args.push(String(at + 1), encodeRecord(w.value, Date.now() + ttl), String(ttl));
      }
      return (await client.casSetMany(keys.map(prefixed), args)) === 1;
    },
  };
  return {
    kind: 'redis',
    cas,
    redis: {
      run: (name, keys, args) => client[name]([...keys], [...args]),
      get: (key) => client.get(key),
    },
    ...keyvOps(keyv),
    async ping() {
      await client.ping();
    },
    async writeRaw(key, raw) {
      await client.set(prefixed(key), raw);
    },
    async clearNamespace() {
      // SCAN walks the whole keyspace whatever MATCH says: on a Redis that holds a million other keys,
      // 500 a call took 2,000 round trips per namespace (a test suite's cleanup timed out).
      for await (const keys of client.scanIterator({ MATCH: `${namespace}::*`, COUNT: 10_000 })) {
        if (keys.length > 0) await client.unlink(keys);
      }
    },
    async claim(key, value, ttlMs) {
      const ttl = Math.max(1, Math.ceil(ttlMs));
      const held = await client.claim([prefixed(key)], [encodeRecord(value, Date.now() + ttl), String(ttl)]);
      if (typeof held !== 'string') return { won: true };
      const record = decodeRecord(held);
      return { won: false, holder: record === CORRUPT ? CORRUPT : record.value };
    },
    sets: {
      async add(key, member, ttlMs) {
        await client.multi().sAdd(prefixed(key), member).pExpire(prefixed(key), ttlMs).exec();
      },
      async remove(key, members) {
        if (members.length > 0) await client.sRem(prefixed(key), [...members]);
      },
      async members(key) {
        return client.sMembers(prefixed(key));
      },
    },
    sorted: {
      async add(key, member, score, ttlMs) {
        if (ttlMs === undefined) await client.zAdd(prefixed(key), { score, value: member });
        else
          await client
            .multi()
            .zAdd(prefixed(key), { score, value: member })
            .pExpire(prefixed(key), Math.max(1, Math.ceil(ttlMs)))
            .exec();
      },
      async remove(key, members) {
        if (members.length > 0) await client.zRem(prefixed(key), [...members]);
      },
      async range(key, o) {
        const max = o.before === undefined ? '+inf' : `(${o.before}`;
        const limit = { offset: o.offset ?? 0, count: o.limit };
        return o.rev
          ? client.zRange(prefixed(key), max, '-inf', { BY: 'SCORE', REV: true, LIMIT: limit })
          : client.zRange(prefixed(key), '-inf', max, { BY: 'SCORE', LIMIT: limit });
      },
      async count(key) {
        return client.zCard(prefixed(key));
      },
    },
    async close() {
      // Every store call has settled or timed out by now: drop the connection (this
      // also stops a reconnect loop). Acknowledged writes are already in Redis.
      if (client.isOpen) client.destroy();
    },
  };
}

/**
 * Opens the file, creates the table (the adapter does on connect) and switches to WAL.
 * Two processes opening a new file at once can each hold a lock the other needs;
 * SQLite then answers SQLITE_BUSY at once instead of waiting busyTimeout, to break the
 * deadlock. So a busy open is tried again, on a new connection, until waitMs is spent.
 */
async function openSqliteFile(file: string, busyTimeoutMs: number, waitMs: number, logger: Logger) {
  // Loaded only here: a process on Redis never loads the SQLite driver and its native addon.
  const { default: KeyvSqlite } = await import('@keyv/sqlite');
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    const adapter = new KeyvSqlite({ uri: `sqlite://${file}`, busyTimeout: busyTimeoutMs });
    // A failed connect is also emitted; the queries below throw it, and a later one is Keyv's to report.
    const ignore = (): void => undefined;
    adapter.on('error', ignore);
    try {
      await adapter.query('PRAGMA journal_mode=WAL');
      await adapter.query('PRAGMA synchronous=NORMAL');
      adapter.off('error', ignore);
      return adapter;
    } catch (error) {
      await adapter.disconnect().catch(() => undefined);
      const busy = (error as { code?: unknown } | null)?.code === 'SQLITE_BUSY';
      if (!busy || Date.now() >= deadline) throw error;
      // A first busy answer is the deadlock above; a second means the file is held.
      if (attempt === 2) {
        logger.warn(
          { file, waitSeconds: waitMs / 1000 },
          'SQLite file is locked by another process; waiting for it',
        );
      }
      await sleep(20 + Math.floor(Math.random() * 80));
    }
  }
}

async function openSqlite(
  opts: BackendOptions,
  onError: (source: string, error: unknown) => void,
): Promise<Backend> {
  const { namespace, opTimeoutMs } = opts;
  const dir = path.resolve(opts.dataDir);
  // Job records, prompts and consent proofs: for the bot's user only (0700, 0600).
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'bot.sqlite');
  await createPrivateFile(file);
  // Left by an older version with its umask's mode: narrowed as well.
  for (const side of ['-wal', '-shm']) await narrowIfPresent(file + side);
  const adapter = await openSqliteFile(file, opTimeoutMs, opts.openWaitMs ?? 5 * opTimeoutMs, opts.logger);
  // Keyv prefixes `${namespace}:` (SQLite has no native TTL: Keyv stores `expires`
  // in the value and drops expired rows when read; sweep() removes the rest).
  const keyv = new Keyv({
    store: adapter,
    namespace,
    throwOnErrors: true,
    serialize: keyvSerialize,
    deserialize: keyvDeserialize,
  });
  keyv.on('error', (error: unknown) => onError('sqlite', error));
  const table = adapter.opts.table ?? 'keyv';
  const prefix = `${namespace}:`;

  // `$.expires`: the record format's expiry (./codec.ts).
  const sweep = async (): Promise<void> => {
    await adapter.query(
      `DELETE FROM ${table} WHERE substr(key, 1, ?) = ? AND json_valid(value) AND json_extract(value, '$.expires') < ?`,
      prefix.length,
      prefix,
      Date.now(),
    );
  };
  const runSweep = (): void => {
    sweep().catch((error: unknown) => onError('sqlite-sweep', error));
  };
  runSweep();
  const interval = opts.sweepIntervalMs ?? 3_600_000;
  const sweeper = interval > 0 ? setInterval(runSweep, interval) : undefined;
  sweeper?.unref();

  // The sorted indexes (see Backend.sorted), keyed with the namespace like Keyv's rows.
  const indexTable = `${table}_index`;
  await adapter.query(
    `CREATE TABLE IF NOT EXISTS ${indexTable} (k TEXT NOT NULL, member TEXT NOT NULL, score REAL NOT NULL, PRIMARY KEY (k, member))`,
  );
  await adapter.query(`CREATE INDEX IF NOT EXISTS ${indexTable}_by_score ON ${indexTable} (k, score)`);
  const sorted: SortedIndexes = {
    async add(key, member, score) {
      await adapter.query(
        `INSERT INTO ${indexTable} (k, member, score) VALUES (?, ?, ?) ON CONFLICT(k, member) DO UPDATE SET score = excluded.score`,
        prefix + key,
        member,
        score,
      );
    },
    async remove(key, members) {
      for (let i = 0; i < members.length; i += 500) {
        const batch = members.slice(i, i + 500);
        await adapter.query(
          `DELETE FROM ${indexTable} WHERE k = ? AND member IN (${batch.map(() => '?').join(',')})`,
          prefix + key,
          ...batch,
        );
      }
    },
    async range(key, o) {
      const rows = (await adapter.query(
        `SELECT member FROM ${indexTable} WHERE k = ? AND score < ? ORDER BY score ${o.rev ? 'DESC' : 'ASC'}, member ${o.rev ? 'DESC' : 'ASC'} LIMIT ? OFFSET ?`,
        prefix + key,
        o.before ?? Number.POSITIVE_INFINITY,
        o.limit,
        o.offset ?? 0,
      )) as { member: string }[];
      return rows.map((r) => r.member);
    },
    async count(key) {
      const rows = (await adapter.query(
        `SELECT COUNT(*) AS n FROM ${indexTable} WHERE k = ?`,
        prefix + key,
      )) as {
        n: number;
      }[];
      return Number(rows[0]?.n ?? 0);
    },
  };

  let closed = false;
  return {
    kind: 'sqlite',
    sorted,
    ...keyvOps(keyv),
    async ping() {
      await adapter.query('SELECT 1');
    },
    async writeRaw(key, raw) {
      await adapter.query(
        `INSERT INTO ${table} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
        prefix + key,
        raw,
      );
    },
    async clearNamespace() {
      await adapter.query(`DELETE FROM ${table} WHERE substr(key, 1, ?) = ?`, prefix.length, prefix);
      await adapter.query(`DELETE FROM ${indexTable} WHERE substr(k, 1, ?) = ?`, prefix.length, prefix);
    },
    async setMany(writes) {
      if (writes.length === 0) return;
      // One statement: SQLite applies every row or none (a deletion: a record already expired).
      const now = Date.now();
      await adapter.query(
        `INSERT INTO ${table} (key, value) VALUES ${writes.map(() => '(?, ?)').join(', ')} ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
        ...writes.flatMap((w) => [
          prefix + w.key,
          'delete' in w ? encodeRecord(null, now - 1) : encodeRecord(w.value, now + w.ttlMs),
        ]),
      );
    },
    async claim(key, value, ttlMs) {
      const now = Date.now();
      // One statement: a new row, or an expired / unreadable one replaced; a live one kept.
      const won = (await adapter.query(
        `INSERT INTO ${table} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value
         WHERE NOT json_valid(${table}.value) OR json_extract(${table}.value, '$.expires') < ? RETURNING key`,
        prefix + key,
        encodeRecord(value, now + ttlMs),
        now,
      )) as unknown[];
      if (won.length > 0) return { won: true };
      const rows = (await adapter.query(`SELECT value FROM ${table} WHERE key = ?`, prefix + key)) as {
        value: string;
      }[];
      return { won: false, holder: liveValue(rows[0]?.value, Date.now()) };
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(sweeper);
      await adapter.disconnect();
    },
  };
}

/** get/set/delete are the same over either adapter. */
function keyvOps(keyv: Keyv): Pick<Backend, 'get' | 'set' | 'delete'> {
  return {
    async get(key) {
      return keyv.get<unknown>(key);
    },
    async set(key, value, ttlMs) {
      await keyv.set(key, value, ttlMs);
    },
    async delete(key) {
      await keyv.delete(key);
    },
  };
}
