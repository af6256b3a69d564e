import { join } from 'node:path';

/**
 * Makes `dir/bot.sqlite` as another process would while it creates the file: a new
 * database in rollback-journal mode whose exclusive lock is held, so no other
 * connection can even read it until `release` commits.
 */
export async function holdNewSqliteFile(dir: string): Promise<{ release: () => Promise<void> }> {
  const { default: KeyvSqlite } = await import('@keyv/sqlite');
  const other = new KeyvSqlite({ uri: `sqlite://${join(dir, 'bot.sqlite')}` });
  await other.query('BEGIN EXCLUSIVE');
  await other.query('INSERT INTO keyv (key, value) VALUES (?, ?)', 'held', '1');
  return {
    release: async () => {
      await other.query('COMMIT');
      await other.disconnect();
    },
  };
}
