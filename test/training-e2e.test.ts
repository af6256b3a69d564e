import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from './emulator/server.js';
import {
  startFakeDiscord,
  type FakeDiscord,
  type FakeMessage,
  type JsonObject,
} from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';

/**
 * End to end through the real bot (createApp) with a fake Discord (REST,
 * gateway, CDN with signed expiring links) and the media-service emulator:
 * slash command with attachments → session → modal upload → submit → final
 * message with expires_at. Bot and fake Discord share one clock, so CDN link
 * expiry and session TTL can be moved forward together.
 */

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** PNG signature + IHDR (64×64), then random bytes: passes the magic-byte check, unique per call. */
function png(size = 3000): Buffer {
  const b = randomBytes(size);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).copy(b);
  b.write('IHDR', 12, 'ascii');
  b.writeUInt32BE(64, 16);
  b.writeUInt32BE(64, 20);
  return b;
}

const photoFiles = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) => ({ filename: `${prefix}-${i + 1}.png`, bytes: png(2000 + i * 97) }));

const asAttachments = (files: { filename: string; bytes: Buffer }[]) =>
  Object.fromEntries(files.map((f, i) => [`photo${i + 1}`, f]));

function customIds(m: FakeMessage): string[] {
  const out: string[] = [];
  const walk = (c: JsonObject): void => {
    if (typeof c['custom_id'] === 'string') out.push(c['custom_id']);
    for (const k of ['components', 'component']) {
      const v = c[k];
      if (Array.isArray(v))
        v.forEach((x) => typeof x === 'object' && x !== null && !Array.isArray(x) && walk(x));
      else if (typeof v === 'object' && v !== null && !Array.isArray(v)) walk(v);
    }
  };
  m.components.forEach(walk);
  return out;
}

function text(m: FakeMessage): string {
  return [
    m.content,
    ...m.embeds.map((e) => `${String(e['title'] ?? '')}\n${String(e['description'] ?? '')}`),
  ].join('\n');
}

let h: Harness;
let fake: FakeDiscord;
let emulator: Emulator;

beforeAll(async () => {
  fake = await startFakeDiscord({ warmUpValidators: true });
  // Bot and fake Discord share one clock: CDN link expiry and session TTL move together.
  h = await startHarness({
    webhooks: true,
    reuse: { fake },
    now: () => fake.now(),
    emulator: { scenario: { stepMs: 30, steps: [20, 60] } },
  });
  emulator = h.emulator;
});

afterAll(async () => {
  await h?.close();
  await fake?.close();
});

const uploadRequests = () => emulator.requests.filter((r) => r.path === '/ai-photo-upload');

describe('/training-photos end to end', () => {
  it('start with attachments → add → modal upload → submit button → final message with expires_at', async () => {
    const userId = fake.defaultUserId;
    const first = photoFiles(6, 'start');
    const notImage = { filename: 'notes.txt', bytes: Buffer.from('not a picture at all') };

    // start: 6 photos + a text file
    const start = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'start',
      options: { ethnicity: 'latino', gender: 'female', age: 28 },
      attachments: asAttachments([...first, notImage]),
    });
    const sessionMsg = await start.waitForMessage((m) => m.content.includes('6 / 30 photos'));
    expect(sessionMsg.ephemeral).toBe(false);
    expect(sessionMsg.content).toContain('latino · female · age 28');
    expect(sessionMsg.content).toMatch(/Session expires <t:\d+:R>/);
    expect(customIds(sessionMsg)).toEqual([`training:add:${userId}`, `training:submit:${userId}`]);
    const refusal = await eventually(() => start.followUps[0], 5000, 'refusal follow-up');
    expect(refusal.ephemeral).toBe(true);
    expect(refusal.content).toContain(
      '“notes.txt”: it is not an image (text/plain); send PNG, JPEG, GIF or WebP',
    );

    // start again: says a session is open, ephemeral
    const again = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'start',
      options: { ethnicity: 'white', gender: 'male' },
    });
    const open = await again.message();
    expect(open.ephemeral).toBe(true);
    expect(open.content).toContain('You already have a training-photo session in this channel');
    expect(open.content).toContain('/training-photos cancel');

    // add: 3 more, one a duplicate of a start photo
    const more = photoFiles(2, 'add');
    const add = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'add',
      attachments: asAttachments([...more, { filename: 'copy.png', bytes: first[0]!.bytes }]),
    });
    const added = await add.waitForMessage((m) => m.content.startsWith('Added'));
    expect(added.ephemeral).toBe(true);
    expect(added.content).toContain(
      'Added 2 photos. Session: **8 / 30 photos — 2 more needed (minimum 10)**',
    );
    expect(added.content).toContain(
      '“copy.png”: it is the same picture as “start-1.png”, already in the session',
    );
    await eventually(
      () => fake.messages.get(sessionMsg.id)?.content.includes('8 / 30 photos'),
      5000,
      'session message update',
    );

    // submit with 8: refused with the count and the minimum, no service call
    const early = fake.sendCommand({ name: 'training-photos', subcommand: 'submit' });
    const refused = await early.message();
    expect(refused.ephemeral).toBe(true);
    expect(refused.content).toContain(
      'The session holds 8 photos; at least 10 are needed to submit (2 more)',
    );
    expect(uploadRequests()).toHaveLength(0);

    // status
    const status = await fake.sendCommand({ name: 'training-photos', subcommand: 'status' }).message();
    expect(status.ephemeral).toBe(true);
    expect(status.content).toContain('8 / 30 photos');
    expect(status.content).toContain('8. “add-2.png”');

    // Another member pressing the buttons is told whose session it is.
    const other = fake.addUser({ username: 'someone-else' });
    const foreign = await fake
      .sendButton({ customId: `training:add:${userId}`, messageId: sessionMsg.id, userId: other })
      .message();
    expect(foreign.ephemeral).toBe(true);
    expect(foreign.content).toContain(`belongs to <@${userId}>`);

    // Add photos button → modal with file-upload fields
    const button = fake.sendButton({ customId: `training:add:${userId}`, messageId: sessionMsg.id });
    const cb = await button.response();
    expect(cb.type).toBe(9);
    const modal = button.modal!;
    expect(modal['custom_id']).toBe(`training:modal:${userId}`);
    const labels = modal['components'] as JsonObject[];
    expect(labels.map((l) => l['type'])).toEqual([18, 18, 18]);
    const uploads = labels.map((l) => l['component'] as JsonObject);
    expect(uploads.map((u) => [u['type'], u['custom_id'], u['max_values']])).toEqual([
      [19, 'photos1', 10],
      [19, 'photos2', 10],
      [19, 'photos3', 2],
    ]);

    // modal submit from the session message: 5 photos over two fields
    const viaModal = photoFiles(5, 'modal');
    const submitModal = fake.sendModalSubmit({
      customId: `training:modal:${userId}`,
      messageId: sessionMsg.id,
      components: [
        { customId: 'photos1', files: viaModal.slice(0, 3) },
        { customId: 'photos2', files: viaModal.slice(3) },
      ],
    });
    expect((await submitModal.response()).type).toBe(6);
    await eventually(
      () => fake.messages.get(sessionMsg.id)?.content.includes('13 / 30 photos — ready to submit'),
      5000,
      '13 photos',
    );
    const summary = await eventually(() => submitModal.followUps[0], 5000, 'modal summary');
    expect(summary.ephemeral).toBe(true);
    expect(summary.content).toContain('Added 5 photos');

    // Submit button: the session message becomes the live job message
    const submitBtn = fake.sendButton({ customId: `training:submit:${userId}`, messageId: sessionMsg.id });
    expect((await submitBtn.response()).type).toBe(6);
    const final = await eventually(
      () => {
        const m = fake.messages.get(sessionMsg.id);
        return m && /expire <t:\d+:R>/.test(text(m)) ? m : undefined;
      },
      15_000,
      'final job message',
    );
    expect(text(final)).toMatch(/\(<t:\d+:F>, `\d{4}-\d\d-\d\dT[\d:.]+Z`\)/);
    expect(customIds(final)).not.toContain(`training:submit:${userId}`);

    // The service received exactly the 13 photos held, in order.
    expect(uploadRequests()).toHaveLength(1);
    const task = [...emulator.tasks.values()].find((t) => t.operation === 'upload')!;
    expect(task.params).toMatchObject({ ethnicity: 'latino', gender: 'female', age: 28, images: 13 });
    const held = [...first, ...more, ...viaModal];
    expect(emulator.uploads(task.id).map((u) => (u.kind === 'base64' ? u.sha256 : u.url))).toEqual(
      held.map((f) => sha(f.bytes)),
    );

    // The session is gone once the service accepted it.
    const after = await fake.sendCommand({ name: 'training-photos', subcommand: 'status' }).message();
    expect(after.content).toContain('no open training-photo session');

    fake.assertNoViolations();
  });

  it('session message updates go through the edit queue and its routing rules', async () => {
    const channelId = fake.defaultChannelId;
    const user = fake.addUser({ username: 'queued-sessions' });
    const pushed: { key: string; route: string }[] = [];
    const edits = h.app.edits.sessions;
    const push = edits.push.bind(edits);
    edits.push = (req) => {
      pushed.push({ key: req.jobId, route: req.ref.interaction ? 'interaction' : 'channel' });
      push(req);
    };
    try {
      const start = fake.sendCommand({
        name: 'training-photos',
        subcommand: 'start',
        userId: user,
        channelId,
        options: { ethnicity: 'asian', gender: 'female' },
      });
      const sessionMsg = await start.waitForMessage((m) => m.content.includes('0 / 30 photos'));
      const key = `training-message:${sessionMsg.id}`;

      // Token fresh: the add's update is queued and sent through the interaction webhook, without the bot token.
      const add = fake.sendCommand({
        name: 'training-photos',
        subcommand: 'add',
        userId: user,
        attachments: asAttachments(photoFiles(2, 'q1')),
      });
      await add.waitForMessage((m) => m.content.startsWith('Added 2 photos'));
      await eventually(
        () => text(fake.messages.get(sessionMsg.id)!).includes('2 / 30 photos'),
        5000,
        'update',
      );
      expect(pushed.map((p) => p.key)).toContain(key);
      const viaWebhook = fake.requests.filter(
        (r) => r.method === 'PATCH' && r.path.endsWith(`/messages/${sessionMsg.id}`),
      );
      expect(viaWebhook.length).toBeGreaterThan(0);
      for (const r of viaWebhook) {
        expect(r.path).toMatch(/^\/webhooks\//);
        expect(r.auth).not.toBe('bot');
      }

      // 20 min later the token is stale (the queue's rule: 14 min): the channel edit with the bot token.
      fake.advanceTime(20 * 60_000);
      const add2 = fake.sendCommand({
        name: 'training-photos',
        subcommand: 'add',
        userId: user,
        attachments: asAttachments(photoFiles(1, 'q2')),
      });
      await add2.waitForMessage((m) => m.content.startsWith('Added 1 photo'));
      await eventually(
        () => text(fake.messages.get(sessionMsg.id)!).includes('3 / 30 photos'),
        5000,
        'update',
      );
      const last = fake.requests
        .filter((r) => r.method === 'PATCH' && r.path.endsWith(`/messages/${sessionMsg.id}`))
        .at(-1);
      expect(last?.path).toBe(`/channels/${channelId}/messages/${sessionMsg.id}`);
      expect(add2.followUps.filter((m) => !m.ephemeral)).toEqual([]);

      // Cancel closes the message through the queue as a final: nothing may overwrite it after.
      const cancel = fake.sendCommand({ name: 'training-photos', subcommand: 'cancel', userId: user });
      await cancel.message();
      await eventually(() => /cancel/i.test(text(fake.messages.get(sessionMsg.id)!)), 5000, 'closed');
      expect(pushed.filter((p) => p.key === key).length).toBeGreaterThanOrEqual(3);
      fake.assertNoViolations();
    } finally {
      edits.push = push;
    }
  });

  it('renews expired CDN links through /attachments/refresh-urls before submitting', async () => {
    const channelId = fake.defaultChannelId;
    const user = fake.addUser({ username: 'late-submitter' });
    const first = photoFiles(10, 'old');
    const start = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'start',
      userId: user,
      channelId,
      options: { ethnicity: 'asian', gender: 'male' },
      attachments: asAttachments(first),
    });
    await start.waitForMessage((m) => m.content.includes('10 / 30 photos'));
    fake.advanceTime(12 * 3_600_000);
    const late = photoFiles(1, 'new');
    const add = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'add',
      userId: user,
      attachments: asAttachments(late),
    });
    await add.waitForMessage((m) => m.content.startsWith('Added 1 photo'));
    // The start reply is 12 h old (no longer editable): the session message is posted afresh, publicly.
    const reposted = await eventually(
      () => add.followUps.find((m) => !m.ephemeral),
      5000,
      'new session message',
    );
    expect(reposted.content).toContain('11 / 30 photos — ready to submit');
    expect(customIds(reposted)).toEqual([`training:add:${user}`, `training:submit:${user}`]);
    // 25 h after the start: its links have expired (24 h), the session (renewed by the add) has not.
    fake.advanceTime(13 * 3_600_000);

    const before = uploadRequests().length;
    const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const job = await submit.message();
    expect(job.ephemeral).toBe(false);
    await eventually(
      () => /expire <t:\d+:R>/.test(text(fake.messages.get(job.id)!)),
      15_000,
      'final job message',
    );

    const refresh = fake.requests.filter((r) => r.path === '/attachments/refresh-urls');
    expect(refresh).toHaveLength(1);
    expect(((refresh[0]?.body as JsonObject)['attachment_urls'] as string[]).length).toBe(10);
    expect(uploadRequests().length).toBe(before + 1);
    const task = [...emulator.tasks.values()].filter((t) => t.operation === 'upload').at(-1)!;
    expect(emulator.uploads(task.id).map((u) => (u.kind === 'base64' ? u.sha256 : ''))).toEqual(
      [...first, ...late].map((f) => sha(f.bytes)),
    );
    // No edit was attempted on messages Discord would refuse to edit (30046).
    expect(fake.requests.filter((r) => r.path.includes('/messages/') && r.status >= 400)).toEqual([]);
    fake.assertNoViolations();
  });

  it('a failed submission keeps the session for a retry; cancel discards it', async () => {
    const user = fake.addUser({ username: 'retrier' });
    const photos = photoFiles(10, 'retry');
    const start = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'start',
      userId: user,
      options: { ethnicity: 'pacific islander', gender: 'female' },
      attachments: asAttachments(photos),
    });
    const sessionMsg = await start.waitForMessage((m) =>
      m.content.includes('10 / 30 photos — ready to submit'),
    );

    emulator.failNext(1, { status: 500, path: '/ai-photo-upload' });
    const submitBtn = fake.sendButton({
      customId: `training:submit:${user}`,
      messageId: sessionMsg.id,
      userId: user,
    });
    const kept = await eventually(() => submitBtn.followUps[0], 10_000, 'kept notice');
    expect(kept.ephemeral).toBe(true);
    expect(kept.content).toContain('Your 10 photos are still in the session');
    const status = await fake
      .sendCommand({ name: 'training-photos', subcommand: 'status', userId: user })
      .message();
    expect(status.content).toContain('10 / 30 photos — ready to submit');

    // The session message became the failed job message; it keeps showing that failure.
    const failed = await eventually(
      () => {
        const m = fake.messages.get(sessionMsg.id);
        return m && customIds(m).length === 0 && m.embeds.length > 0 ? m : undefined;
      },
      10_000,
      'failed job message',
    );
    const failedText = text(failed);

    const cancel = await fake
      .sendCommand({ name: 'training-photos', subcommand: 'cancel', userId: user })
      .message();
    expect(cancel.ephemeral).toBe(true);
    expect(cancel.content).toBe('Session discarded (10 photos).');
    const none = await fake
      .sendCommand({ name: 'training-photos', subcommand: 'cancel', userId: user })
      .message();
    expect(none.content).toContain('no open training-photo session');
    expect(text(fake.messages.get(sessionMsg.id)!)).toBe(failedText);
    fake.assertNoViolations();
  });
});
