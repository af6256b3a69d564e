/**
 * The gateway's way in (gatewayIntake): fenced by the lease, claimed once per interaction
 * id in the store, and never run without a claim. The store is a real one (SQLite in a
 * temporary directory), closed to make the claim fail.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  InteractionResponseType,
  InteractionType,
  type APIInteraction,
  type APIInteractionResponse,
} from 'discord-api-types/v10';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gatewayIntake } from '../src/services/discord/interactions/gateway-intake.js';
import { createInteractionClaim } from '../src/services/discord/interactions/interaction-claim.js';
import { createStores, type Stores } from '../src/services/store/index.js';
import { jobOperations } from '../src/services/operations/index.js';
import { STORE_DOWN_TEXT } from '../src/services/store/errors.js';
import { t } from '../src/i18n/index.js';
import { eventually } from './helpers/harness.js';

const logger = pino({ level: 'silent' });
let seq = 1_400_000_000_000_000_000n;
const interaction = (type = InteractionType.ApplicationCommand): APIInteraction =>
  ({
    id: String(++seq),
    application_id: '1',
    type,
    token: 'tok',
    version: 1,
    locale: 'fr',
    data: { id: '2', name: 'upscale', type: 1 },
  }) as unknown as APIInteraction;

describe('gateway intake', () => {
  let dir: string;
  let stores: Stores;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'intake-'));
    stores = await createStores({ operations: jobOperations, dataDir: dir, namespace: 'intake', logger });
  });
  afterEach(async () => {
    await stores.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  function intake(opts: { holds?: boolean } = {}) {
    const ran: string[] = [];
    const answered: { id: string; body: APIInteractionResponse }[] = [];
    const accept = gatewayIntake({
      logger,
      claim: createInteractionClaim(stores.kv, Date.now),
      ...(opts.holds !== undefined ? { holdsGateway: async () => opts.holds ?? true } : {}),
      run: (raw) => void ran.push(raw.id),
      answer: async (raw, body) => void answered.push({ id: raw.id, body }),
    });
    return { accept, ran, answered };
  }

  it('runs an interaction once, however often it is delivered (also to another instance on the same store)', async () => {
    const a = intake();
    const b = intake();
    const raw = interaction();
    a.accept(raw);
    a.accept(raw);
    b.accept(raw);
    const other = interaction();
    b.accept(other);
    await eventually(() => a.ran.length + b.ran.length === 2, 5_000, 'the two runs');
    await new Promise((r) => setTimeout(r, 200));
    expect([...a.ran, ...b.ran].sort()).toEqual([raw.id, other.id].sort());
    expect(a.answered).toEqual([]);
  });

  it('an instance that no longer holds the gateway runs nothing and claims nothing', async () => {
    const stale = intake({ holds: false });
    const raw = interaction();
    stale.accept(raw);
    await new Promise((r) => setTimeout(r, 200));
    expect(stale.ran).toEqual([]);
    // The holder can still run it: the stale instance did not take the claim.
    const holder = intake({ holds: true });
    holder.accept(raw);
    await eventually(() => holder.ran.length === 1, 5_000, 'the holder to run it');
  });

  it('no claim (the store is down): nothing runs; the member gets the apology in their language', async () => {
    const i = intake();
    await stores.close();
    const raw = interaction();
    i.accept(raw);
    await eventually(() => i.answered.length === 1, 5_000, 'the apology');
    expect(i.ran).toEqual([]);
    expect(i.answered[0]?.body.type).toBe(InteractionResponseType.ChannelMessageWithSource);
    expect(i.answered[0]?.body).toMatchObject({ data: { content: t('fr', STORE_DOWN_TEXT), flags: 64 } });
  });
});
