/**
 * Black-box: the bundled bot (what `npm start` runs) with DISCORD_INTERACTIONS=http,
 * configured only through the design's environment: no gateway, PING answered,
 * bad signatures refused, a command run end to end, no secret in the logs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnBot, type BotProcess } from '../bench/common.js';
import { FIXTURE_VIDEO_TASK_ID, startEmulator, type Emulator } from './emulator/server.js';
import { startFakeDiscord, type FakeDiscord } from './fake-discord/index.js';
import { eventually } from './helpers/harness.js';
import { messageText } from './helpers/message-text.js';

describe('bot process in http interactions mode', () => {
  let fake: FakeDiscord;
  let emulator: Emulator;
  let dataDir: string;
  let bot: BotProcess | undefined;

  beforeAll(async () => {
    fake = await startFakeDiscord({ warmUpValidators: true });
    emulator = await startEmulator({ scenario: { stepMs: 100 } });
    dataDir = await mkdtemp(join(tmpdir(), 'mediabot-http-proc-'));
    bot = await spawnBot({
      fake,
      emulator,
      redisUrl: '', // empty = unset: the embedded SQLite store under DATA_DIR
      env: {
        DISCORD_INTERACTIONS: 'http',
        DISCORD_PUBLIC_KEY: fake.publicKey,
        DATA_DIR: dataDir,
        POLL_INITIAL_MS: '200',
        POLL_MAX_MS: '500',
      },
    });
    fake.setInteractionsMode('http', `${bot.url}/interactions`);
    const url = bot.url;
    await eventually(async () => (await fetch(`${url}/readyz`)).ok, 40_000, 'ready');
  }, 60_000);
  afterAll(async () => {
    await bot?.stop();
    await emulator?.close();
    await fake?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers PING, refuses a bad signature, runs a command, never connects to the gateway', async () => {
    expect((await fake.sendPing()).body).toEqual({ type: 1 });
    expect((await fake.sendPing({ signature: 'bad' })).status).toBe(401);
    expect((await fake.sendPing({ signature: 'missing' })).status).toBe(401);
    expect(fake.guildCommands()).toHaveLength(9);

    const cmd = fake.sendCommand({
      name: 'extend-video',
      options: { task_id: FIXTURE_VIDEO_TASK_ID, prompt: 'a process over http' },
    });
    const msg = await cmd.waitForMessage((m) => messageText(m).includes('.mp4'), 30_000);
    expect(msg.ephemeral).toBe(false);
    expect(fake.gateway.connections).toHaveLength(0);
    const out = bot?.output() ?? '';
    expect(out).toMatch(/interactions arrive over HTTP/);
    expect(out).not.toContain(fake.token);
    expect(out).not.toContain(cmd.token);
    fake.assertNoViolations();
  }, 60_000);
});
