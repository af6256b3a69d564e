/**
 * The emulator's webhook sender (a dev tool too: `npm run dev:emulator`). Regression: every
 * delivery in flight listens on one shared abort signal, so a storm (more than 10 at once)
 * made Node print MaxListenersExceededWarning in test and bench runs, though undici removes
 * each listener when its delivery ends.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookSender } from './emulator/webhooks.js';
import type { TaskRecord, WebhookDelivery } from './emulator/types.js';
import { eventually } from './helpers/harness.js';

const IN_FLIGHT = 25;

describe('emulator WebhookSender', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it(`${IN_FLIGHT} deliveries in flight at once: all recorded, no listener warning; abortAll ends the ones still held`, async () => {
    const held: ServerResponse[] = [];
    const server = createServer((req: IncomingMessage, res) => {
      req.resume();
      req.on('end', () => held.push(res));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    cleanups.push(() => void process.off('warning', onWarning));

    const delivered: WebhookDelivery[] = [];
    const sender = new WebhookSender(10_000, (d) => delivered.push(d));
    cleanups.push(() => sender.close());
    const task = (i: number) => ({ id: `task-${i}`, webhookUrl: url }) as unknown as TaskRecord;
    const body = { task_id: 'x', status: 'processing' } as never;

    // Every delivery in flight at once, the server holding each answer.
    const sent = Array.from({ length: IN_FLIGHT }, (_, i) => sender.send(task(i), 'progress', body, 1));
    await eventually(() => held.length === IN_FLIGHT, 10_000, 'every delivery held by the server');
    for (const res of held.splice(0)) res.end();
    await Promise.all(sent);
    expect(delivered.filter((d) => d.ok)).toHaveLength(IN_FLIGHT);

    // abortAll reaches deliveries still in flight: they end without being recorded.
    const more = Array.from({ length: IN_FLIGHT }, (_, i) => sender.send(task(i), 'progress', body, 1));
    await eventually(() => held.length === IN_FLIGHT, 10_000, 'the second round held');
    sender.abortAll();
    await Promise.all(more);
    expect(delivered).toHaveLength(IN_FLIGHT);
    for (const res of held.splice(0)) res.destroy();

    // Node emits the warning on the next tick: let it come if it would.
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
