/**
 * The bot and @discordjs/rest share one undici. With two (the bot on undici 7, REST on its
 * own undici 6), whichever loaded first set the process's global dispatcher for both, and
 * when the bot's came first every upload through REST (a gallery post's files, a reply
 * with a file) failed inside undici ("action is not a function"): its FormData body went
 * to a dispatcher of the other major. Whether it worked hung on import order.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runNode } from './helpers/run-node.js';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const require = createRequire(`${ROOT}/package.json`);

/** A fresh process (a fresh global dispatcher): undici loaded before REST, then one upload. */
const UPLOAD_AFTER_UNDICI = `
import { createServer } from 'node:http';
await import('undici');
const { REST } = await import('@discordjs/rest');
const server = createServer((req, res) => {
  let bytes = 0;
  req.on('data', (d) => (bytes += d.length));
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ type: req.headers['content-type']?.split(';')[0], bytes }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const rest = new REST({ api: 'http://127.0.0.1:' + server.address().port }).setToken('t');
try {
  const answer = await rest.post('/channels/1/messages', {
    body: { content: 'a result' },
    files: [{ name: 'result.png', data: Buffer.from('png bytes') }],
  });
  console.log(JSON.stringify(answer));
} finally {
  server.close();
}
`;

describe('one undici', () => {
  it('@discordjs/rest resolves the same undici as the bot', () => {
    const fromRest = createRequire(require.resolve('@discordjs/rest')).resolve('undici');
    expect(fromRest).toBe(require.resolve('undici'));
  });

  it('an upload through REST works with undici loaded first', async () => {
    const { code, stdout, stderr } = await runNode(['--input-type=module', '-e', UPLOAD_AFTER_UNDICI], {
      cwd: ROOT,
      env: process.env,
      timeoutMs: 15_000,
    });
    const out = stdout + stderr;
    expect(out).not.toContain('action is not a function');
    expect(code).toBe(0);
    const answer = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { type?: string; bytes?: number };
    expect(answer.type).toBe('multipart/form-data');
    expect(answer.bytes).toBeGreaterThan('png bytes'.length);
  }, 20_000);
});
