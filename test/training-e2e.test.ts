import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from './emulator/server.js';
import {
  startFakeDiscord,
  type FakeDiscord,
  type FakeMessage,
  type InteractionHandle,
  type JsonObject,
} from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import {
  jpegSegments,
  metadataFound,
  phoneJpeg,
  photoFiles,
  pngChunks,
  pngWithMetadata,
} from './helpers/photos.js';
import { needs } from './helpers/requirements.js';
import { encodeEditKey } from '../src/services/discord/edits/edit-key.js';
import { ETHNICITIES } from '../src/services/media/types.js';
import { translator } from '../src/i18n/index.js';
import { messageText } from './helpers/message-text.js';

/**
 * End to end through the real bot (createApp) with a fake Discord (REST,
 * gateway, CDN with signed expiring links) and the media-service emulator:
 * slash command with attachments → session → modal upload → submit → consent
 * → cleaned photos sent → final message with expires_at. Bot and fake Discord
 * share one clock, so CDN link expiry and session TTL can be moved forward
 * together. The photos are real images made with sharp: they are decoded and
 * re-encoded on the way out.
 */

const asAttachments = (files: { filename: string; bytes: Buffer }[]) =>
  Object.fromEntries(files.map((f, i) => [`photo${i + 1}`, f]));

function customIds(m: FakeMessage | JsonObject): string[] {
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
  const components = 'components' in m && Array.isArray(m.components) ? m.components : [];
  (components as JsonObject[]).forEach(walk);
  return out;
}

function buttonLabels(m: FakeMessage): string[] {
  const out: string[] = [];
  for (const row of m.components)
    for (const c of (row['components'] as JsonObject[] | undefined) ?? [])
      if (typeof c['label'] === 'string') out.push(c['label']);
  return out;
}

/** What a message says (a classic message or a result card). */
const text = (m: FakeMessage): string => messageText(m);

const isFinalUpload = (m: FakeMessage | undefined): boolean =>
  m !== undefined && /expire <t:\d+:R>/.test(text(m));

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
    emulator: { scenario: { stepMs: 30, steps: [20, 60] }, keepUploadBytes: true },
  });
  emulator = h.emulator;
});

afterAll(async () => {
  await h?.close();
  await fake?.close();
});

const uploadRequests = () => emulator.requests.filter((r) => r.path === '/ai-photo-upload');
const lastUploadTask = () => [...emulator.tasks.values()].filter((t) => t.operation === 'upload').at(-1);
const receivedHashes = (taskId: string) =>
  emulator.uploads(taskId).map((u) => (u.kind === 'base64' ? u.sha256 : u.url));
const consentRecords = (userId: string) => h.app.context.consent.records.listByMember(userId);

/** The ephemeral consent prompt a submit answered with, and its two buttons. */
async function consentPrompt(
  submit: InteractionHandle,
  userId: string,
): Promise<{ prompt: FakeMessage; confirm: string; decline: string }> {
  const prompt = await submit.message();
  expect(prompt.ephemeral).toBe(true);
  expect(prompt.content).toContain('18 or older');
  expect(prompt.content).toContain('agreed');
  const ids = customIds(prompt);
  const confirm = ids.find((id) => id.startsWith(`training:confirm:${userId}:`));
  const decline = ids.find((id) => id.startsWith(`training:decline:${userId}:`));
  if (!confirm || !decline) throw new Error(`no consent buttons in ${JSON.stringify(ids)}`);
  expect(buttonLabels(prompt).some((l) => /confirm/i.test(l))).toBe(true);
  return { prompt, confirm, decline };
}

/** Starts a session of `n` photos for a new member; returns the member and the session message. */
async function sessionOf(
  n: number,
  prefix: string,
  options: Record<string, string | number> = { ethnicity: 'asian', gender: 'male' },
): Promise<{ user: string; sessionMsg: FakeMessage }> {
  const user = fake.addUser({ username: prefix });
  const start = fake.sendCommand({
    name: 'training-photos',
    subcommand: 'start',
    userId: user,
    options,
    attachments: asAttachments(await photoFiles(n, prefix)),
  });
  const sessionMsg = await start.waitForMessage((m) => m.content.includes(`${n} / 30 photos`), 10_000);
  return { user, sessionMsg };
}

describe('/training-photos end to end', () => {
  it('start with attachments → add → modal upload → Submit → consent → final message with expires_at', async () => {
    const userId = fake.defaultUserId;
    const first = await photoFiles(6, 'start');
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
    // The subject's ethnicity, gender and age are the member's alone.
    expect(sessionMsg.content).not.toMatch(/latino|female|\bage\b|(?<![\d:])28(?!\d)/i);
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
    const more = await photoFiles(2, 'add');
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

    // submit with 8: refused with the count and the minimum, no consent asked, no service call
    const early = fake.sendCommand({ name: 'training-photos', subcommand: 'submit' });
    const refused = await early.message();
    expect(refused.ephemeral).toBe(true);
    expect(refused.content).toContain(
      'The session holds 8 photos; at least 10 are needed to submit (2 more)',
    );
    expect(uploadRequests()).toHaveLength(0);

    // status: ephemeral, with the subject
    const status = await fake.sendCommand({ name: 'training-photos', subcommand: 'status' }).message();
    expect(status.ephemeral).toBe(true);
    expect(status.content).toContain('8 / 30 photos');
    expect(status.content).toContain('Latino · Female · age 28');
    expect(status.content).toContain('8. “add-2.png”');
    // The same status to the member's German client: German, the subject in the registered choice names.
    const statusDe = await fake
      .sendCommand({ name: 'training-photos', subcommand: 'status', locale: 'de' })
      .message();
    const de = translator('de');
    expect(statusDe.content).toContain(
      de.t('training.count.not_ready', { count: 8, max: 30, missing: 2, min: 10 }),
    );
    expect(statusDe.content).toContain(
      de.t('training.subject_age', {
        ethnicity: de.t('commands.training-photos.start.options.ethnicity.choices.latino'),
        gender: de.t('commands.training-photos.start.options.gender.choices.female'),
        age: 28,
      }),
    );

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
    const viaModal = await photoFiles(5, 'modal');
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

    // Submit button: nothing is sent yet; the owner is asked, ephemerally, to confirm consent.
    const submitBtn = fake.sendButton({ customId: `training:submit:${userId}`, messageId: sessionMsg.id });
    expect((await submitBtn.response()).type).toBe(4);
    const { prompt, confirm } = await consentPrompt(submitBtn, userId);
    expect(prompt.content).toContain('Latino · Female · age 28');
    // Asked from a German client, the same step speaks German (its statements, its buttons); nothing is sent.
    const promptDe = await fake
      .sendCommand({ name: 'training-photos', subcommand: 'submit', locale: 'de' })
      .message();
    expect(promptDe.ephemeral).toBe(true);
    expect(promptDe.content).toContain(de.t('training.consent.v1.adult'));
    expect(promptDe.content).toContain(de.t('training.consent.heading', { count: 13 }));
    expect(JSON.stringify(promptDe.data['components'])).toContain(de.t('buttons.confirm_consent'));
    await new Promise((r) => setTimeout(r, 200));
    expect(uploadRequests()).toHaveLength(0);

    // Another member cannot confirm it: an ephemeral refusal, nothing sent.
    const foreignConfirm = await fake
      .sendButton({ customId: confirm, messageId: prompt.id, userId: other })
      .message();
    expect(foreignConfirm.ephemeral).toBe(true);
    expect(foreignConfirm.content).toContain(`Only <@${userId}>`);
    // Nor with the prompt's id under their own name (a forged custom id).
    const forged = confirm.replace(`:${userId}:`, `:${other}:`);
    const forgedConfirm = await fake
      .sendButton({ customId: forged, messageId: prompt.id, userId: other })
      .message();
    expect(forgedConfirm.ephemeral).toBe(true);
    expect(forgedConfirm.content).toContain('nothing was sent');
    expect(uploadRequests()).toHaveLength(0);
    expect(await consentRecords(other)).toEqual([]);

    // The owner confirms: the public job message is the reply, it ends on the prepared images.
    const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id });
    const jobMsg = await confirmed.message();
    expect(jobMsg.ephemeral).toBe(false);
    const final = await confirmed.waitForMessage(isFinalUpload, 15_000);
    // The expiry as Discord timestamps (shown in the reader's time zone), no raw ISO time beside them.
    expect(text(final)).toMatch(/expire <t:\d+:R> \(<t:\d+:F>\)\./);
    expect(text(final)).not.toMatch(/\d{4}-\d\d-\d\dT/);

    // The service received the 13 photos held, once, exactly as the consent record names them.
    expect(uploadRequests()).toHaveLength(1);
    const task = lastUploadTask()!;
    expect(task.params).toMatchObject({ ethnicity: 'latino', gender: 'female', age: 28, images: 13 });
    const [record] = await consentRecords(userId);
    expect(record).toMatchObject({
      userId,
      guildId: fake.guildId,
      wording: 'consent-v1',
      // Confirmed on the prompt shown in English (the German prompt asked for above was not used).
      language: 'en-US',
      photoCount: 13,
    });
    expect(receivedHashes(task.id)).toEqual(record?.sha256);

    // The session message is closed; the session goes once the upload finished.
    await eventually(
      () => text(fake.messages.get(sessionMsg.id)!).includes('submitted (13 photos)'),
      5000,
      'session message closed',
    );
    await eventually(
      async () =>
        (
          await fake.sendCommand({ name: 'training-photos', subcommand: 'status' }).message()
        ).content.includes('no open training-photo session'),
      10_000,
      'session closed',
    );
    fake.assertNoViolations();
  });

  it('photos arrive cleaned: a phone JPEG turned upright without EXIF/GPS/XMP, a PNG without its text chunks and with its pixels, a 3000×2000 photo at 2048×1365', async () => {
    const user = fake.addUser({ username: 'cleaned' });
    const jpeg = await phoneJpeg(300, 200, 6);
    const { png, pixels } = await pngWithMetadata(64, 48);
    const big = await sharp({
      create: { width: 3000, height: 2000, channels: 3, background: { r: 30, g: 90, b: 160 } },
    })
      .jpeg({ quality: 90 })
      .toBuffer();
    const rest = await photoFiles(7, 'plain');
    const start = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'start',
      userId: user,
      options: { ethnicity: 'black', gender: 'female', age: 33 },
      attachments: asAttachments([
        { filename: 'phone.jpg', bytes: jpeg },
        { filename: 'edited.png', bytes: png },
        { filename: 'big.jpg', bytes: big },
        ...rest,
      ]),
    });
    await start.waitForMessage((m) => m.content.includes('10 / 30 photos'), 10_000);
    const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const { prompt, confirm } = await consentPrompt(submit, user);
    const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    await confirmed.waitForMessage(isFinalUpload, 15_000);

    const task = lastUploadTask()!;
    const got = emulator.uploads(task.id);
    expect(got).toHaveLength(10);
    const bytes = got.map((u) => {
      if (u.kind !== 'base64' || !u.bytes) throw new Error('expected the received bytes');
      return u.bytes;
    });
    // The phone JPEG: upright (stored 300×200, orientation 6 → 200×300), no metadata at all, decodable.
    const j = bytes[0]!;
    expect(metadataFound(j)).toEqual([]);
    expect(jpegSegments(j).filter((s) => s.marker === 0xe1 || s.marker === 0xe2)).toEqual([]);
    const jm = await sharp(j).metadata();
    expect([jm.format, jm.width, jm.height, jm.orientation, jm.exif, jm.xmp]).toEqual([
      'jpeg',
      200,
      300,
      undefined,
      undefined,
      undefined,
    ]);
    const { data: jr, info: ji } = await sharp(j).raw().toBuffer({ resolveWithObject: true });
    expect(jr[(20 * ji.width + 100) * 3]).toBeGreaterThan(180); // the stored left half (red) is on top
    // The PNG: its text and eXIf chunks gone, the same pixels.
    const p = bytes[1]!;
    const chunks = pngChunks(p);
    for (const c of ['tEXt', 'iTXt', 'zTXt', 'eXIf']) expect(chunks).not.toContain(c);
    expect(metadataFound(p)).toEqual([]);
    expect((await sharp(p).raw().toBuffer()).equals(pixels)).toBe(true);
    // The big one: 2048 on its long edge.
    const bm = await sharp(bytes[2]!).metadata();
    expect([bm.format, bm.width, bm.height]).toEqual(['jpeg', 2048, 1365]);
    // The consent record names exactly what arrived.
    const [record] = await consentRecords(user);
    expect(receivedHashes(task.id)).toEqual(record?.sha256);
    fake.assertNoViolations();
  });

  it('submit without confirming sends nothing; Cancel sends nothing; two Confirm clicks at once send once', async () => {
    const { user } = await sessionOf(10, 'double');
    const before = uploadRequests().length;

    const first = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const declined = await consentPrompt(first, user);
    await new Promise((r) => setTimeout(r, 300));
    expect(uploadRequests()).toHaveLength(before);
    const cancel = fake.sendButton({
      customId: declined.decline,
      messageId: declined.prompt.id,
      userId: user,
    });
    expect((await cancel.response()).type).toBe(7);
    await eventually(() => fake.messages.get(declined.prompt.id)?.content.startsWith('Nothing was sent'));
    expect(customIds(fake.messages.get(declined.prompt.id)!)).toEqual([]);
    expect(uploadRequests()).toHaveLength(before);
    expect(await consentRecords(user)).toEqual([]);

    const second = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const { prompt, confirm } = await consentPrompt(second, user);
    const a = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    const b = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    const [ma, mb] = await Promise.all([a.message(), b.message()]);
    const job = [ma, mb].filter((m) => !m.ephemeral);
    const refusals = [ma, mb].filter((m) => m.ephemeral);
    expect(job).toHaveLength(1);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]?.content).toMatch(/already being submitted|were submitted/);
    await eventually(() => isFinalUpload(fake.messages.get(job[0]!.id)), 15_000, 'final');
    await new Promise((r) => setTimeout(r, 300));
    expect(uploadRequests()).toHaveLength(before + 1);
    expect(await consentRecords(user)).toHaveLength(1);
    fake.assertNoViolations();
  });

  it('once the photos are sent the prompt closes; a late Cancel or a second confirm says they were sent', async () => {
    const { user } = await sessionOf(10, 'closer');
    const before = uploadRequests().length;
    const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const { prompt, confirm, decline } = await consentPrompt(submit, user);
    const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    const job = await confirmed.message();
    expect(job.ephemeral).toBe(false);
    // The prompt is edited: its buttons gone, saying the photos were sent.
    const sent = 'Consent confirmed: 10 photos were sent for training preparation.';
    const closed = await eventually(() => {
      const m = fake.messages.get(prompt.id);
      return m?.content.startsWith(sent) ? m : undefined;
    }, 10_000);
    expect(customIds(closed)).toEqual([]);
    expect(closed.ephemeral).toBe(true);
    // A late click (a client that still shows the buttons) answers the same, never "Nothing was sent".
    for (const customId of [decline, confirm]) {
      const late = fake.sendButton({ customId, messageId: prompt.id, userId: user });
      expect((await late.response()).type).toBe(7);
      const m = await late.message();
      expect(m.content).toContain(sent);
      expect(m.content).not.toMatch(/Nothing was sent|failed/);
      expect(customIds(m)).toEqual([]);
    }
    // In the member's language too.
    const de = translator('de');
    const lateDe = fake.sendButton({ customId: decline, messageId: prompt.id, userId: user, locale: 'de' });
    expect((await lateDe.message()).content).toBe(de.t('training.consent.sent', { count: 10 }));
    await eventually(() => isFinalUpload(fake.messages.get(job.id)), 15_000, 'final');
    expect(uploadRequests()).toHaveLength(before + 1);
    expect(await consentRecords(user)).toHaveLength(1);
    fake.assertNoViolations();
  });

  it('a failed upload closes its prompt saying so: a late Cancel does not claim nothing was sent', async () => {
    const { user } = await sessionOf(10, 'closer-failed');
    emulator.failNext(1, { status: 400, path: '/ai-photo-upload' });
    const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const { prompt, confirm, decline } = await consentPrompt(submit, user);
    const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    await confirmed.waitForMessage((m) => /failed/.test(text(m)), 10_000);
    const closed = await eventually(() => {
      const m = fake.messages.get(prompt.id);
      return m?.content.startsWith('Consent confirmed, but the job failed.') ? m : undefined;
    }, 10_000);
    expect(customIds(closed)).toEqual([]);
    const late = fake.sendButton({ customId: decline, messageId: prompt.id, userId: user });
    const m = await late.message();
    expect(m.content).toContain('Consent confirmed, but the job failed.');
    expect(m.content).not.toContain('Nothing was sent');
    fake.assertNoViolations();
  });

  it('a failed upload keeps the session: Retry goes through consent again and sends the same photos', async () => {
    const { user } = await sessionOf(10, 'retrier', { ethnicity: 'pacific islander', gender: 'female' });
    emulator.failNext(1, { status: 400, path: '/ai-photo-upload' });
    const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const { prompt, confirm } = await consentPrompt(submit, user);
    const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    const failed = await confirmed.waitForMessage((m) => /failed/.test(text(m)), 10_000);
    expect(failed.ephemeral).toBe(false);
    const kept = await eventually(() => confirmed.followUps[0], 10_000, 'kept notice');
    expect(kept.ephemeral).toBe(true);
    expect(kept.content).toContain('Your 10 photos are still in the session');
    const status = await fake
      .sendCommand({ name: 'training-photos', subcommand: 'status', userId: user })
      .message();
    expect(status.content).toContain('10 / 30 photos — ready to submit');
    expect(status.content).toContain('The last upload of these photos failed');

    // Retry on the failed job message: the consent step again, then the same photos.
    const retryId = customIds(failed).find((id) => id.startsWith('next:retry:'));
    expect(retryId).toBeDefined();
    const before = uploadRequests().length;
    const retry = fake.sendButton({ customId: retryId!, messageId: failed.id, userId: user });
    const again = await consentPrompt(retry, user);
    await new Promise((r) => setTimeout(r, 200));
    expect(uploadRequests()).toHaveLength(before);
    const reconfirmed = fake.sendButton({
      customId: again.confirm,
      messageId: again.prompt.id,
      userId: user,
    });
    const final = await reconfirmed.waitForMessage(isFinalUpload, 15_000);
    expect(final.id).not.toBe(failed.id);
    expect(uploadRequests()).toHaveLength(before + 1);
    const records = await consentRecords(user);
    expect(records).toHaveLength(2);
    expect(records[1]?.sha256).toEqual(records[0]?.sha256);
    expect(receivedHashes(lastUploadTask()!.id)).toEqual(records[1]?.sha256);
    fake.assertNoViolations();
  });

  it('an upload the service accepted and then failed also keeps the session for Retry', async () => {
    const { user } = await sessionOf(10, 'late-failure');
    emulator.nextScenario({ outcome: 'failed', failMessage: 'could not prepare the images', steps: [] });
    const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const { prompt, confirm } = await consentPrompt(submit, user);
    const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    const failed = await confirmed.waitForMessage(
      (m) => text(m).includes('could not prepare the images'),
      10_000,
    );
    const retryId = customIds(failed).find((id) => id.startsWith('next:retry:'))!;
    const retried = await eventually(
      async () => {
        const r = fake.sendButton({ customId: retryId, messageId: failed.id, userId: user });
        const m = await r.message();
        return m.content.includes('18 or older') ? r : undefined;
      },
      10_000,
      'retry offered',
    );
    const again = await consentPrompt(retried, user);
    const reconfirmed = fake.sendButton({
      customId: again.confirm,
      messageId: again.prompt.id,
      userId: user,
    });
    await reconfirmed.waitForMessage(isFinalUpload, 15_000);
    const records = await consentRecords(user);
    expect(records).toHaveLength(2);
    expect(records[1]?.sha256).toEqual(records[0]?.sha256);
    fake.assertNoViolations();
  });

  it('a credits refusal at submit stays ephemeral and keeps the session', async () => {
    const { user } = await sessionOf(10, 'over-budget');
    const settings = h.app.context.settings;
    await settings.set(fake.guildId, { dailyCredits: 1 });
    try {
      const before = uploadRequests().length;
      const publicBefore = [...fake.messages.values()].filter((m) => !m.ephemeral).length;
      const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
      const { prompt, confirm } = await consentPrompt(submit, user);
      const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
      const answer = await confirmed.message();
      expect(answer.ephemeral).toBe(true);
      expect(answer.content).toMatch(/credit/i);
      // Nothing was sent, so the prompt still confirms (once the refusal settled): a second click is
      // weighed again, never answered about a "failed job".
      const again = await eventually(
        async () => {
          const m = await fake
            .sendButton({ customId: confirm, messageId: prompt.id, userId: user })
            .message();
          return /already used/.test(m.content) ? undefined : m;
        },
        10_000,
        'the prompt confirms again',
      );
      expect(again.ephemeral).toBe(true);
      expect(again.content).toMatch(/credit/i);
      expect(again.content).not.toMatch(/failed job/);
      await new Promise((r) => setTimeout(r, 300));
      expect([...fake.messages.values()].filter((m) => !m.ephemeral)).toHaveLength(publicBefore);
      expect(uploadRequests()).toHaveLength(before);
      expect(await consentRecords(user)).toEqual([]);
      // Nothing was sent: the session is open again as it was.
      const status = await fake
        .sendCommand({ name: 'training-photos', subcommand: 'status', userId: user })
        .message();
      expect(status.content).toContain('10 / 30 photos — ready to submit');
      expect(status.content).not.toContain('being submitted');
    } finally {
      await settings.set(fake.guildId, { dailyCredits: 0 });
    }
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
      const key = encodeEditKey({ kind: 'session', messageId: sessionMsg.id });

      // Token fresh: the add's update is queued and sent through the interaction webhook, without the bot token.
      const add = fake.sendCommand({
        name: 'training-photos',
        subcommand: 'add',
        userId: user,
        attachments: asAttachments(await photoFiles(2, 'q1')),
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
        attachments: asAttachments(await photoFiles(1, 'q2')),
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

  // Regression: a session kept the signed CDN links of the un-cleaned originals (EXIF, GPS) for
  // its whole life (24 h), beside the member's ethnicity, gender and age.
  it('a stored session holds no working link to an original: the links are kept unsigned', async () => {
    const user = fake.addUser({ username: 'unsigned-links' });
    const start = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'start',
      userId: user,
      options: { ethnicity: 'asian', gender: 'female' },
      attachments: asAttachments(await photoFiles(2, 'kept')),
    });
    await start.waitForMessage((m) => m.content.includes('2 / 30 photos'));
    const [session] = await h.app.context.training.listByMember(user);
    expect(session?.photos).toHaveLength(2);
    for (const p of session?.photos ?? []) {
      expect(new URL(p.url).search).toBe('');
      // Without its signature the CDN serves nothing.
      expect((await fetch(p.url)).status).toBe(404);
    }
    fake.assertNoViolations();
  });

  it('renews expired CDN links through /attachments/refresh-urls before submitting', async () => {
    const channelId = fake.defaultChannelId;
    const user = fake.addUser({ username: 'late-submitter' });
    const first = await photoFiles(10, 'old');
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
    const add = fake.sendCommand({
      name: 'training-photos',
      subcommand: 'add',
      userId: user,
      attachments: asAttachments(await photoFiles(1, 'new')),
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
    const refreshesBefore = fake.requests.filter((r) => r.path === '/attachments/refresh-urls').length;
    const submit = fake.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const { prompt, confirm } = await consentPrompt(submit, user);
    const confirmed = fake.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    const job = await confirmed.message();
    expect(job.ephemeral).toBe(false);
    await confirmed.waitForMessage(isFinalUpload, 15_000);

    const refresh = fake.requests
      .filter((r) => r.path === '/attachments/refresh-urls')
      .slice(refreshesBefore);
    expect(refresh).toHaveLength(1);
    // Every photo's link was kept without its signature (no working link to an original is
    // stored): all 11 are signed again at submit.
    const asked = (refresh[0]?.body as JsonObject)['attachment_urls'] as string[];
    expect(asked).toHaveLength(11);
    for (const url of asked) expect(new URL(url).search).toBe('');
    expect(uploadRequests().length).toBe(before + 1);
    const [record] = await consentRecords(user);
    expect(receivedHashes(lastUploadTask()!.id)).toEqual(record?.sha256);
    // No edit was attempted on messages Discord would refuse to edit (30046).
    expect(fake.requests.filter((r) => r.path.includes('/messages/') && r.status >= 400)).toEqual([]);
    fake.assertNoViolations();
  });

  it('an underage subject opens no session', async () => {
    const user = fake.addUser({ username: 'too-young' });
    const start = await fake
      .sendCommand({
        name: 'training-photos',
        subcommand: 'start',
        userId: user,
        options: { ethnicity: 'white', gender: 'female', age: 16 },
      })
      .message();
    expect(start.ephemeral).toBe(true);
    expect(start.content).toContain('under 18');
    const status = await fake
      .sendCommand({ name: 'training-photos', subcommand: 'status', userId: user })
      .message();
    expect(status.content).toContain('no open training-photo session');
  });

  // Last: looks at every message the tests above made.
  it('ethnicity, gender and age never appear in a public message, in any of its versions', () => {
    const subject = new RegExp(`\\b(${ETHNICITIES.join('|')}|female|male|age \\d+)\\b`, 'i');
    const publicMessages = [...fake.messages.values()].filter((m) => !m.ephemeral);
    expect(publicMessages.length).toBeGreaterThan(10);
    for (const m of publicMessages) {
      for (const version of [m.data, ...m.edits.flatMap((e) => [e.before, e.after])]) {
        const json = JSON.stringify(version);
        expect(json, `public message ${m.id}`).not.toMatch(subject);
      }
    }
    // The ephemeral replies did show them to their member (the check above can fail).
    expect([...fake.messages.values()].some((m) => m.ephemeral && subject.test(JSON.stringify(m.data)))).toBe(
      true,
    );
  });
});

/** Two instances on one Redis, interactions over HTTP: each click may land on either. */
describe('/training-photos on two instances sharing Redis', needs('redis'), () => {
  let h1: Harness;
  let h2: Harness;
  beforeAll(async () => {
    h1 = await startHarness({ interactions: 'http', redis: true, webhooks: true });
    h2 = await startHarness({
      interactions: 'http',
      redis: true,
      webhooks: true,
      reuse: { fake: h1.fake, emulator: h1.emulator, namespace: h1.namespace },
    });
  });
  afterAll(async () => {
    await h2?.close();
    await h1?.close();
  });

  it('adds on both at once are all kept; two Confirm clicks on both at once upload once', async () => {
    const f = h1.fake;
    const to = (h: Harness) => f.setInteractionsMode('http', `${h.baseUrl}/interactions`);
    const user = f.addUser({ username: 'two-instances' });
    to(h1);
    await f
      .sendCommand({
        name: 'training-photos',
        subcommand: 'start',
        userId: user,
        options: { ethnicity: 'white', gender: 'male' },
      })
      .waitForMessage((m) => m.content.includes('0 / 30 photos'));

    // Two adds at once, one on each instance.
    const [one, two] = [await photoFiles(5, 'left'), await photoFiles(5, 'right')];
    to(h1);
    const addA = f.sendCommand({
      name: 'training-photos',
      subcommand: 'add',
      userId: user,
      attachments: asAttachments(one),
    });
    to(h2);
    const addB = f.sendCommand({
      name: 'training-photos',
      subcommand: 'add',
      userId: user,
      attachments: asAttachments(two),
    });
    await Promise.all([
      addA.waitForMessage((m) => m.content.startsWith('Added 5 photos')),
      addB.waitForMessage((m) => m.content.startsWith('Added 5 photos')),
    ]);
    to(h1);
    const status = await f
      .sendCommand({ name: 'training-photos', subcommand: 'status', userId: user })
      .message();
    expect(status.content).toContain('10 / 30 photos — ready to submit');
    for (const p of [...one, ...two]) expect(status.content).toContain(`“${p.filename}”`);

    // One prompt, Confirm pressed on both instances at once.
    const uploadsBefore = h1.emulator.requests.filter((r) => r.path === '/ai-photo-upload').length;
    const submit = f.sendCommand({ name: 'training-photos', subcommand: 'submit', userId: user });
    const prompt = await submit.message();
    const confirm = customIds(prompt).find((id) => id.startsWith(`training:confirm:${user}:`))!;
    to(h1);
    const a = f.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    to(h2);
    const b = f.sendButton({ customId: confirm, messageId: prompt.id, userId: user });
    const [ma, mb] = await Promise.all([a.message(), b.message()]);
    const job = [ma, mb].filter((m) => !m.ephemeral);
    expect(job).toHaveLength(1);
    expect([ma, mb].find((m) => m.ephemeral)?.content).toMatch(/already being submitted|were submitted/);
    await eventually(() => isFinalUpload(f.messages.get(job[0]!.id)), 20_000, 'final');
    await new Promise((r) => setTimeout(r, 300));
    expect(h1.emulator.requests.filter((r) => r.path === '/ai-photo-upload')).toHaveLength(uploadsBefore + 1);
    expect(await h2.app.context.consent.records.listByMember(user)).toHaveLength(1);
    f.assertNoViolations();
  });
});
