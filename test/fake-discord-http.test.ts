import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDiscord, type FakeDiscord } from './fake-discord/index.js';
import {
  ed25519PublicKey,
  verifyInteractionSignature,
} from '../src/services/discord/interactions/signature.js';

/**
 * The fake Discord's http mode on its own: a minimal endpoint (not the bot) checks
 * the signature with the bot's verifier and answers as each test says.
 */
describe('fake Discord: interactions over HTTP', () => {
  let fake: FakeDiscord;
  let server: Server;
  let answer: (body: Record<string, unknown>) => { status: number; body?: unknown; delayMs?: number };
  const verdicts: boolean[] = [];

  beforeAll(async () => {
    fake = await startFakeDiscord({ interactions: 'http' });
    const key = ed25519PublicKey(fake.publicKey);
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const rawBody = Buffer.concat(chunks);
        const header = (n: string) => (typeof req.headers[n] === 'string' ? req.headers[n] : undefined);
        const check = verifyInteractionSignature(
          key,
          { signature: header('x-signature-ed25519'), timestamp: header('x-signature-timestamp'), rawBody },
          Date.now(),
        );
        verdicts.push(check.ok);
        if (!check.ok) {
          res.writeHead(401).end();
          return;
        }
        const a = answer(JSON.parse(rawBody.toString()) as Record<string, unknown>);
        setTimeout(() => {
          if (a.body === undefined) res.writeHead(a.status).end();
          else res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
        }, a.delayMs ?? 0);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    fake.setInteractionsMode(
      'http',
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/interactions`,
    );
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await fake.close();
  });

  it('signs what the application key verifies; bad, missing, foreign and tampered signatures do not verify', async () => {
    answer = () => ({ status: 200, body: { type: 1 } });
    verdicts.length = 0;
    expect((await fake.sendPing()).body).toEqual({ type: 1 });
    for (const signature of ['bad', 'missing', 'wrong-key', 'tampered'] as const) {
      expect((await fake.sendPing({ signature })).status).toBe(401);
    }
    expect(verdicts).toEqual([true, false, false, false, false]);
    expect(fake.publicKey).toMatch(/^[0-9a-f]{64}$/);
  });

  it('an HTTP response body is the initial response (message created, callback recorded)', async () => {
    answer = () => ({ status: 200, body: { type: 4, data: { content: 'inline hello' } } });
    const cmd = fake.sendCommand({ name: 'anything' });
    const msg = await cmd.message();
    expect(msg.content).toBe('inline hello');
    expect(cmd.callback?.type).toBe(4);
    const d = await fake.waitFor(() => fake.httpDeliveries.find((x) => x.interactionId === cmd.id), {
      timeoutMs: 5000,
      description: 'delivery',
    });
    expect(d.problem).toBeUndefined();
    fake.assertNoViolations();
  });

  it('202 without a prior callback is a failed interaction; an invalid body is a spec violation', async () => {
    answer = () => ({ status: 202 });
    const a = fake.sendCommand({ name: 'anything' });
    const da = await fake.waitFor(() => fake.httpDeliveries.find((x) => x.interactionId === a.id), {
      timeoutMs: 5000,
      description: 'delivery',
    });
    expect(da.problem).toMatch(/202 without a callback/);

    answer = () => ({ status: 200, body: { type: 4, data: { content: 42 } } });
    const b = fake.sendCommand({ name: 'anything' });
    const db = await fake.waitFor(() => fake.httpDeliveries.find((x) => x.interactionId === b.id), {
      timeoutMs: 5000,
      description: 'delivery',
    });
    expect(db.problem).toMatch(/not a valid interaction response/);
    expect(fake.takeViolations().some((v) => v.path.includes('(HTTP response)'))).toBe(true);
  });

  it('an HTTP answer after the acknowledgement deadline is refused like a late callback', async () => {
    answer = () => ({ status: 200, body: { type: 5 }, delayMs: 300 });
    const cmd = fake.sendCommand({ name: 'anything' });
    // Past Discord's 3 s on the fake's clock before the answer arrives (no real waiting).
    fake.advanceTime(5000);
    const d = await fake.waitFor(() => fake.httpDeliveries.find((x) => x.interactionId === cmd.id), {
      timeoutMs: 5000,
      description: 'delivery',
    });
    expect(d.problem).toMatch(/10062/);
    expect(cmd.callback).toBeUndefined();
  });
});
