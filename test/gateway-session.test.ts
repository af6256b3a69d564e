/**
 * The gateway's session in the store: saved behind the events, not before each one
 * (@discordjs/ws waits for the save before it hands an event over), one save at a time
 * with the latest sequence, and the last one saved on a graceful leave.
 */
import { REST } from '@discordjs/rest';
import type { APIInteraction } from 'discord-api-types/v10';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../src/services/discord/gateway/gateway.js';
import type { KeyValueStore } from '../src/services/store/types.js';
import { startFakeDiscord, type FakeDiscord } from './fake-discord/index.js';

/** A store whose writes wait until the test lets them through; what each write was. */
function heldStore() {
  const values = new Map<string, unknown>();
  const writes: { key: string; value: unknown }[] = [];
  let held: (() => void)[] = [];
  let holding = false;
  const kv: KeyValueStore = {
    get: <T>(key: string) => Promise.resolve(values.get(key) as T | undefined),
    async set(key, value) {
      writes.push({ key, value });
      if (holding) await new Promise<void>((r) => held.push(r));
      values.set(key, value);
    },
    async delete(key) {
      writes.push({ key, value: undefined });
      if (holding) await new Promise<void>((r) => held.push(r));
      values.delete(key);
    },
  };
  return {
    kv,
    values,
    writes,
    hold: () => (holding = true),
    release: () => {
      holding = false;
      const waiting = held;
      held = [];
      for (const r of waiting) r();
    },
  };
}

const sequenceOf = (v: unknown): number => (v as { sequence: number }).sequence;
const sessionIdOf = (v: unknown): string => (v as { sessionId: string }).sessionId;

describe('gateway session: saved behind the events', () => {
  let fake: FakeDiscord;
  let gateway: Gateway | undefined;

  beforeAll(async () => {
    fake = await startFakeDiscord();
  });
  afterEach(async () => {
    await gateway?.disconnect({ keepSession: false });
    gateway = undefined;
  });
  afterAll(async () => {
    await fake?.close();
  });

  function connect(store: ReturnType<typeof heldStore>, seen: APIInteraction[]): Gateway {
    gateway = new Gateway({
      token: fake.token,
      rest: new REST({ api: fake.apiUrl }).setToken(fake.token),
      kv: store.kv,
      logger: pino({ level: 'silent' }),
      onInteraction: (raw) => seen.push(raw),
    });
    return gateway;
  }

  it('an interaction is handed over while the session save is still waiting on the store; a burst costs a save or two, the latest last', async () => {
    const store = heldStore();
    const seen: APIInteraction[] = [];
    await connect(store, seen).connect();
    await fake.waitFor(() => store.values.size > 0, { description: 'the READY session saved' });
    const savesBefore = store.writes.length;
    store.hold();
    for (let i = 0; i < 20; i++) fake.sendCommand({ name: 'tasks' });
    // Every event arrives although no save has gone through.
    await fake.waitFor(() => seen.length === 20, { description: '20 interactions handed over' });
    expect(store.writes.length - savesBefore).toBe(1); // one save in flight, the rest waits for it
    store.release();
    await fake.waitFor(() => store.writes.length - savesBefore === 2, { description: 'the trailing save' });
    store.release();
    const stored = () => store.values.get('gateway-session:0');
    const last = fake.gateway.sessions.get(sessionIdOf(stored()))?.seq;
    await fake.waitFor(() => sequenceOf(stored()) === last, { description: 'the latest sequence saved' });
    expect(store.writes.length - savesBefore).toBe(2);
  });

  it('leaving with the session kept saves the last sequence seen; a lost lease writes nothing after it', async () => {
    const store = heldStore();
    const seen: APIInteraction[] = [];
    const g = connect(store, seen);
    await g.connect();
    await fake.waitFor(() => store.values.size > 0, { description: 'the READY session saved' });
    store.hold();
    for (let i = 0; i < 5; i++) fake.sendCommand({ name: 'tasks' });
    await fake.waitFor(() => seen.length === 5, { description: '5 interactions handed over' });
    const writesBefore = store.writes.length;
    const leaving = g.disconnect({ keepSession: true });
    // Let the saves through: the one in flight, then the leave's own save of the latest.
    const releasing = setInterval(() => store.release(), 5);
    await leaving.finally(() => clearInterval(releasing));
    gateway = undefined;
    const stored = store.values.get('gateway-session:0');
    expect(sequenceOf(stored)).toBe(fake.gateway.sessions.get(sessionIdOf(stored))?.seq);
    expect(store.writes.length - writesBefore).toBeLessThanOrEqual(2);

    // A lost lease: whatever was not saved before it stays unsaved.
    const other = heldStore();
    const g2 = connect(other, []);
    await g2.connect();
    await fake.waitFor(() => other.values.size > 0, { description: 'the READY session saved' });
    other.hold();
    for (let i = 0; i < 5; i++) fake.sendCommand({ name: 'tasks' });
    await fake.waitFor(() => other.writes.length >= 2, { description: 'a save in flight' });
    const writesThen = other.writes.length;
    const lost = g2.disconnect({ keepSession: false });
    other.release();
    await lost;
    gateway = undefined;
    expect(other.writes.length).toBe(writesThen);
  });

  it('a connect while a leave still saves waits for it: the leave does not clear the new connection’s session', async () => {
    const store = heldStore();
    const g = connect(store, []);
    await g.connect();
    await fake.waitFor(() => store.values.size > 0, { description: 'the READY session saved' });
    store.hold();
    fake.sendCommand({ name: 'tasks' });
    await fake.waitFor(() => store.writes.length >= 2, { description: 'a save in flight' });
    // A lease lost and taken again at once (GatewayLease can): leave and connect overlap.
    const leaving = g.disconnect({ keepSession: true });
    const again = g.connect();
    const releasing = setInterval(() => store.release(), 5);
    await Promise.all([leaving, again]).finally(() => clearInterval(releasing));
    // The new connection still keeps and saves its session: a later event's sequence is stored.
    fake.sendCommand({ name: 'tasks' });
    const stored = () => store.values.get('gateway-session:0');
    await fake.waitFor(
      () => {
        const session = fake.gateway.sessions.get(sessionIdOf(stored()));
        return session !== undefined && !session.ended && sequenceOf(stored()) === session.seq;
      },
      { description: 'the new connection’s latest sequence saved' },
    );
  });
});
