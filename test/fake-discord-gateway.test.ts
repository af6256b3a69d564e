import { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents, type SessionInfo } from '@discordjs/ws';
import { GatewayIntentBits } from 'discord.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startFakeDiscord, type FakeDiscord } from './fake-discord/index.js';

const GATEWAY_PROCESS = fileURLToPath(new URL('./helpers/gateway-process.mjs', import.meta.url));
const RESUME_WINDOW_MS = 90_000;

/** What a bot process printed: its stored session info and the dispatches it got. */
interface ProcessLine {
  type: 'session' | 'dispatch';
  info?: SessionInfo | null;
  t?: string;
  s?: number;
}

/** An in-process @discordjs/ws 2.x client whose session store starts with `stored`. */
function manager(fake: FakeDiscord, stored: SessionInfo | null) {
  const seen: { t: string; s: number }[] = [];
  const store = { info: stored, last: stored, resumed: 0 };
  const m = new WebSocketManager({
    token: fake.token,
    intents: GatewayIntentBits.Guilds,
    rest: new REST({ api: fake.apiUrl }).setToken(fake.token),
    retrieveSessionInfo: () => store.info,
    updateSessionInfo: (_shardId, info) => {
      store.info = info;
      if (info) store.last = info; // what a crash would have left in a shared store
    },
  });
  m.on(WebSocketShardEvents.Dispatch, (payload) => seen.push({ t: payload.t, s: payload.s }));
  m.on(WebSocketShardEvents.Resumed, () => {
    store.resumed += 1;
  });
  return { m, seen, store };
}

describe('fake gateway: a session resumed by another process (@discordjs/ws 2.x)', () => {
  let fake: FakeDiscord;
  let child: ChildProcess | undefined;
  const managers: WebSocketManager[] = [];

  beforeAll(async () => {
    fake = await startFakeDiscord();
  });

  afterEach(async () => {
    for (const m of managers.splice(0)) await Promise.resolve(m.destroy()).catch(() => undefined);
  });

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await fake?.close();
  });

  it('a new process resumes the dead one’s session: missed dispatches are replayed, nothing is identified', async () => {
    const lines: ProcessLine[] = [];
    child = spawn(process.execPath, [GATEWAY_PROCESS], {
      env: {
        ...process.env,
        FAKE_API: fake.apiUrl,
        FAKE_TOKEN: fake.token,
        INTENTS: String(GatewayIntentBits.Guilds),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<void>((resolve) => child?.once('exit', () => resolve()));
    createInterface({ input: child.stdout! }).on('line', (line) =>
      lines.push(JSON.parse(line) as ProcessLine),
    );
    const lastInfo = (): SessionInfo | null | undefined =>
      lines.filter((l) => l.type === 'session').at(-1)?.info;

    await fake.waitFor(() => lines.some((l) => l.t === 'GUILD_CREATE'), {
      description: 'the process is READY',
    });
    const session = fake.gateway.currentSession;
    expect(lastInfo()).toMatchObject({ sessionId: session?.id, resumeURL: fake.gatewayUrl });
    fake.addGuild({ name: 'seen before the crash' });
    await fake.waitFor(() => lastInfo()?.sequence === session?.seq, {
      description: 'the process stored the sequence',
    });

    // the process dies without closing its socket (no close frame: the session stays resumable)
    child.kill('SIGKILL');
    await exited;
    await fake.waitFor(() => !fake.gateway.connected, { description: 'the socket to close' });
    const stored = lastInfo() ?? null;
    const missed = [fake.addGuild({ name: 'missed 1' }), fake.addGuild({ name: 'missed 2' })];
    expect(missed).toHaveLength(2);

    const next = manager(fake, stored);
    managers.push(next.m);
    await next.m.connect();
    await fake.waitFor(() => next.store.resumed === 1, { description: 'RESUMED' });
    expect(fake.identifyCount).toBe(1);
    expect(fake.resumeCount).toBe(1);
    expect(fake.gateway.connections.at(-1)?.received[0]).toMatchObject({
      op: 6,
      d: { session_id: stored?.sessionId },
    });
    // the two GUILD_CREATEs it missed, in order, then RESUMED
    expect(next.seen.map((e) => e.t)).toEqual(['GUILD_CREATE', 'GUILD_CREATE', 'RESUMED']);
    expect(next.seen.map((e) => e.s)).toEqual([
      (stored?.sequence ?? 0) + 1,
      (stored?.sequence ?? 0) + 2,
      (stored?.sequence ?? 0) + 3,
    ]);
    // and it keeps the session: new dispatches reach it
    fake.addGuild({ name: 'after the resume' });
    await fake.waitFor(() => next.seen.length === 4, { description: 'a live dispatch' });
    expect(next.store.info).toMatchObject({
      sessionId: stored?.sessionId,
      sequence: (stored?.sequence ?? 0) + 4,
    });
  });

  it('past the resume window the session is gone: op 9 d:false, and the client identifies anew', async () => {
    const first = manager(fake, null);
    managers.push(first.m);
    await first.m.connect();
    await fake.waitFor(() => first.seen.some((e) => e.t === 'READY'), { description: 'READY' });
    const identifies = fake.identifyCount;
    // leave without ending the session (not 1000/1001), as a crash would
    await first.m.destroy({ code: 4000 });
    await fake.waitFor(() => !fake.gateway.connected, { description: 'the socket to close' });
    fake.advanceTime(RESUME_WINDOW_MS + 1_000);

    const late = manager(fake, first.store.last);
    managers.push(late.m);
    const refusals = fake.resumeRefusalCount;
    await late.m.connect();
    await fake.waitFor(() => late.seen.some((e) => e.t === 'READY'), { description: 'READY after op 9' });
    expect(fake.resumeRefusalCount).toBe(refusals + 1);
    expect(fake.identifyCount).toBe(identifies + 1);
    expect(late.store.resumed).toBe(0);
    expect(late.store.info?.sessionId).not.toBe(first.store.last?.sessionId);
  });

  it('a session whose client closed with 1000 cannot be resumed, even at once', async () => {
    const first = manager(fake, null);
    managers.push(first.m);
    await first.m.connect();
    await fake.waitFor(() => first.seen.some((e) => e.t === 'READY'), { description: 'READY' });
    await first.m.destroy(); // 1000: Discord ends the session
    await fake.waitFor(() => !fake.gateway.connected, { description: 'the socket to close' });
    const refusals = fake.resumeRefusalCount;
    const again = manager(fake, first.store.last);
    managers.push(again.m);
    await again.m.connect();
    await fake.waitFor(() => again.seen.some((e) => e.t === 'READY'), { description: 'READY after op 9' });
    expect(fake.resumeRefusalCount).toBe(refusals + 1);
    expect(again.store.resumed).toBe(0);
  });

  it('a RESUME with a sequence the session never sent, or after expireGatewaySessions, answers op 9 d:false', async () => {
    const first = manager(fake, null);
    managers.push(first.m);
    await first.m.connect();
    await fake.waitFor(() => first.seen.some((e) => e.t === 'READY'), { description: 'READY' });
    const session = fake.gateway.currentSession;
    await first.m.destroy({ code: 4000 });
    await fake.waitFor(() => !fake.gateway.connected, { description: 'the socket to close' });

    const resume = async (seq: number): Promise<unknown> => {
      const ws = new WebSocket(`${fake.gatewayUrl}/?v=10&encoding=json`);
      const answer = new Promise<unknown>((resolve) => {
        ws.on('message', (data: Buffer) => {
          const p = JSON.parse(data.toString()) as { op: number; d: unknown; t: string | null };
          if (p.op === 10)
            ws.send(JSON.stringify({ op: 6, d: { token: fake.token, session_id: session?.id, seq } }));
          else if (p.op === 9 || p.t === 'RESUMED') resolve(p);
        });
      });
      const out = await answer;
      ws.close(4000);
      return out;
    };
    expect(await resume((session?.seq ?? 0) + 5)).toMatchObject({ op: 9, d: false });
    fake.expireGatewaySessions();
    expect(await resume(session?.seq ?? 0)).toMatchObject({ op: 9, d: false });
  });
});
