import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import KeyvRedis, { createClient } from '@keyv/redis';
import { Keyv, type DeserializedData, type Deserialize, type Serialize } from 'keyv';
import type { Logger } from 'pino';
import { createPrivateFile, narrowIfPresent } from './data-dir-lock.js';
import { describeError } from './errors.js';
import { SCRIPTS, type ScriptName } from './lua-scripts.js';

/**
 * The raw key/value backend under the job store: Keyv over @keyv/redis or
 * @keyv/sqlite. Methods here are NOT bounded by a timeout and throw the
 * driver's own errors; ./keyv-store.ts adds timeouts, locking, validation and
 * StoreUnavailableError.
 */

/** Returned by `get` for a value that is not valid JSON (kept apart from "absent"). */
export const CORRUPT: unique symbol = Symbol('store.corrupt');

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
   * Tries to take the cross-process lock `key` for `ttlMs` (Redis: SET NX PX with a
   * random token). Resolves to a release function, or undefined when another holder
   * has it. SQLite serves one process only: the store's in-process mutex is the lock,
   * so this always succeeds there.
   */
  tryLock(key: string, ttlMs: number, token?: string): Promise<(() => Promise<void>) | undefined>;
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
  /** SQLite only: several keys written in one statement (all or none), with their TTLs. */
  setMany?(writes: readonly { key: string; value: unknown; ttlMs: number }[]): Promise<void>;
  /** Deletes the lock `key` if it still holds `token` (a tryLock whose answer never came back). */
  unlock(key: string, token: string): Promise<void>;
  /** Extends the lock `key` to `ttlMs` from now if it still holds `token`; false when it does not. */
  renewLock(key: string, token: string, ttlMs: number): Promise<boolean>;
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
    writes: readonly { key: string; value: unknown; ttlMs: number }[],
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

// Plain JSON, so expired SQLite rows can be swept with json_extract().
const serialize: Serialize = (data) => JSON.stringify(data);
const deserialize: Deserialize = <Value>(data: string): DeserializedData<Value> | undefined => {
  try {
    const parsed: unknown = JSON.parse(data);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return parsed as DeserializedData<Value>;
    }
  } catch {
    // fall through: not JSON
  }
  return { value: CORRUPT as unknown as Value };
};

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
  const client = createClient({
    url,
    // While disconnected, reject commands at once instead of queueing them until
    // the connection comes back (which could be never).
    disableOfflineQueue: true,
    // No per-command `timeout`: it allocates an AbortSignal per command (measurable
    // under a webhook storm); keyv-store.ts bounds every call with its own timer.
    socket: { connectTimeout: opTimeoutMs, reconnectStrategy: redisReconnectDelay },
    scripts: SCRIPTS,
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
    serialize,
    deserialize,
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
  /** Deletes the lock only while it holds `token`: after a pause past its TTL another holder may own it. */
  const unlock = async (key: string, token: string): Promise<void> => {
    await client.lockRelease([prefixed(`lock:${key}`)], [token]);
  };
  const cas: CasOps = {
    async read(key) {
      const raw = await client.get(prefixed(key));
      if (raw === null) return undefined;
      // The same envelope Keyv writes: { value, expires }.
      const data = deserialize(raw) as DeserializedData<unknown> | undefined;
      if (data === undefined) return { value: CORRUPT, raw };
      if (typeof data.expires === 'number' && Date.now() > data.expires) return undefined;
      return { value: data.value, raw };
    },
    async write(key, value, ttlMs, expected) {
      const expires = ttlMs !== undefined && ttlMs > 0 ? Date.now() + ttlMs : undefined;
      const raw = serialize({ value, expires }) as string;
      const done = await client.casSet([prefixed(key)], [expected, raw, expires ? String(ttlMs) : '']);
      return done === 1 ? raw : undefined;
    },
    async readMany(keys) {
      if (keys.length === 0) return [];
      const raws = await client.mGet(keys.map(prefixed));
      const now = Date.now();
      return raws.map((raw) => {
        if (raw === null) return { value: undefined, raw: undefined };
        const data = deserialize(raw) as DeserializedData<unknown> | undefined;
        if (data === undefined) return { value: CORRUPT, raw };
        // Expired but not yet dropped by Redis: absent to the caller, its text still compared.
        const expired = typeof data.expires === 'number' && now > data.expires;
        return { value: expired ? undefined : data.value, raw };
      });
    },
    async writeMany(keys, expected, writes) {
      const args = keys.map((_, i) => expected[i] ?? '');
      for (const w of writes) {
        const at = keys.indexOf(w.key);
        if (at < 0) throw new Error(`writeMany: ${w.key} was not read`);
        const ttl = Math.max(1, Math.ceil(w.ttlMs));
        args.push(
          String(at + 1),
          serialize({ value: w.value, expires: Date.now() + ttl }) as string,
          String(ttl),
        );
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
      for await (const keys of client.scanIterator({ MATCH: `${namespace}::*`, COUNT: 500 })) {
        if (keys.length > 0) await client.unlink(keys);
      }
    },
    async tryLock(key, ttlMs, token = randomBytes(12).toString('hex')) {
      const ok = await client.set(prefixed(`lock:${key}`), token, {
        condition: 'NX',
        expiration: { type: 'PX', value: ttlMs },
      });
      return ok === 'OK' ? () => unlock(key, token) : undefined;
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
    unlock,
    async renewLock(key, token, ttlMs) {
      const renewed = await client.lockRenew([prefixed(`lock:${key}`)], [token, String(ttlMs)]);
      return renewed === 1;
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
  const keyv = new Keyv({ store: adapter, namespace, throwOnErrors: true, serialize, deserialize });
  keyv.on('error', (error: unknown) => onError('sqlite', error));
  const table = adapter.opts.table ?? 'keyv';
  const prefix = `${namespace}:`;

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
      // One statement: SQLite applies every row or none.
      const now = Date.now();
      await adapter.query(
        `INSERT INTO ${table} (key, value) VALUES ${writes.map(() => '(?, ?)').join(', ')} ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
        ...writes.flatMap((w) => [
          prefix + w.key,
          serialize({ value: w.value, expires: now + w.ttlMs }) as string,
        ]),
      );
    },
    async tryLock() {
      return async () => undefined;
    },
    async unlock() {},
    async renewLock() {
      return true;
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
