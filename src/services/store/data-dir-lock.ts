import { chmod, mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * One bot process per DATA_DIR on the embedded store: two processes on one SQLite file
 * would each run every open job's keeper and edits, each believing it is alone.
 *
 * The lock is an operating-system lock, not a file's existence: `DATA_DIR/bot.lock` is a
 * tiny SQLite database on which the holder keeps an EXCLUSIVE transaction open for its
 * whole life (SQLite's POSIX advisory lock). The kernel drops it when the holder dies,
 * however it dies (SIGKILL, OOM), so there is never a stale lock to clean up, and it
 * holds across containers sharing the volume, where a pid says nothing. The holder's
 * pid is written beside it (`bot.pid`) only to name it in the refusal.
 */

export const LOCK_FILE = 'bot.lock';
export const PID_FILE = 'bot.pid';

/** Another process holds the DATA_DIR (start-errors.ts turns it into the one line). */
export class DataDirInUseError extends Error {
  override readonly name = 'DataDirInUseError';
  constructor(
    readonly dataDir: string,
    /** The holder's pid, when it wrote one. */
    readonly pid: number | undefined,
  ) {
    super(`DATA_DIR ${dataDir} is in use by another process${pid ? ` (pid ${pid})` : ''}`);
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * Makes `file` readable by its owner only: created 0600 when absent (SQLite gives its
 * -wal, -shm and -journal files the database's mode), narrowed when an older one is wider.
 * An existing file is never opened here: closing any descriptor of a file drops every
 * POSIX lock this process holds on it, SQLite's included.
 */
export async function createPrivateFile(file: string): Promise<void> {
  try {
    await (await open(file, 'wx', 0o600)).close();
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'EEXIST') throw error;
    await narrowIfPresent(file);
  }
}

/** chmod 0600 when the file exists and others may read it (by path: no descriptor opened). */
export async function narrowIfPresent(file: string): Promise<void> {
  try {
    if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'ENOENT') throw error;
  }
}

/** Takes DATA_DIR for this process, or throws DataDirInUseError at once. */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const dir = path.resolve(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, LOCK_FILE);
  await createPrivateFile(file);
  // Loaded only here: a process on Redis never takes this lock nor loads the driver.
  const { default: KeyvSqlite } = await import('@keyv/sqlite');
  // No busy timeout: a held lock answers SQLITE_BUSY at once.
  const db = new KeyvSqlite({ uri: `sqlite://${file}`, table: 'holder' });
  const ignore = (): void => undefined;
  db.on('error', ignore);
  try {
    await db.query('BEGIN EXCLUSIVE');
  } catch (error) {
    await db.disconnect().catch(() => undefined);
    if ((error as { code?: unknown } | null)?.code !== 'SQLITE_BUSY') throw error;
    throw new DataDirInUseError(dir, await readPid(dir));
  }
  const pidFile = path.join(dir, PID_FILE);
  await rm(pidFile, { force: true });
  await writeFile(pidFile, `${process.pid}\n`, { mode: 0o600, flag: 'wx' });
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      await rm(pidFile, { force: true }).catch(() => undefined);
      await db.query('ROLLBACK').catch(() => undefined);
      await db.disconnect().catch(() => undefined);
    },
  };
}

async function readPid(dir: string): Promise<number | undefined> {
  try {
    const pid = Number((await readFile(path.join(dir, PID_FILE), 'utf8')).trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
