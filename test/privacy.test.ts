/**
 * `/privacy` through the real bot, the fake Discord and the emulator: what a member
 * sees, exports and deletes, from a server and from a DM; only their own data, in
 * every server; their gallery posts go, their running jobs stop being tracked but keep
 * their fair-use slots; another member's data is untouched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import type { FakeMessage } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { controls } from './helpers/message-text.js';
import { uniquePng } from './helpers/photos.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';

const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});
const MANAGE = String((1n << 5n) | (1n << 10n) | (1n << 11n));
const MEMBER = String((1n << 10n) | (1n << 11n));

/** The buttons (and other controls) of a message with a custom id: label and id. */
function buttons(m: FakeMessage): { label: string; id: string }[] {
  return controls<{ label?: string; custom_id?: string }>(m).flatMap((c) =>
    typeof c.custom_id === 'string' ? [{ label: String(c.label ?? ''), id: c.custom_id }] : [],
  );
}

describe('/privacy', () => {
  let h: Harness;
  let alice: string;
  let bob: string;
  let galleryId: string;
  let secondGuild: string;
  let png: Buffer;

  const upscale = (userId: string, guildId?: string) =>
    h.fake.sendCommand({
      name: 'upscale',
      userId,
      ...(guildId ? { guildId } : {}),
      options: { prompt: 'a private cat', resemblance: 60 },
      attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: png } },
    });
  const privacy = (userId: string, subcommand: string, where: { dm?: boolean; locale?: string } = {}) =>
    h.fake.sendCommand({ name: 'privacy', subcommand, userId, ...where });

  beforeAll(async () => {
    png = await uniquePng();
    h = await startHarness({
      webhooks: true,
      env: { DEFAULT_MAX_ACTIVE_JOBS: '2', DISCORD_GUILD_ID: '' },
      fake: { guild: { channels: [{ name: 'general' }, { name: 'gallery' }] } },
    });
    alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
    bob = h.fake.addUser({ username: 'bob', permissions: MEMBER });
    const admin = h.fake.addUser({ username: 'admin', permissions: MANAGE });
    galleryId = h.fake.channelIdByName('gallery');
    const set = h.fake.sendCommand({
      name: 'settings',
      subcommand: 'set',
      userId: admin,
      options: { gallery: galleryId },
    });
    await set.message(10_000);
    secondGuild = h.fake.addGuild({ name: 'elsewhere' });
    h.fake.addMember(secondGuild, alice, { permissions: MEMBER });

    // Alice: two finished upscales (gallery posts) here, one in another server; Bob: one.
    for (const cmd of [upscale(alice), upscale(alice), upscale(alice, secondGuild), upscale(bob)])
      await cmd.waitForMessage((m) => text(m).includes('Upscale again'), 20_000);
    await eventually(() => h.fake.channelMessages(galleryId).length === 3, 15_000, 'three gallery posts');
    await eventually(
      async () =>
        (await h.app.store.listByUser(alice)).filter((j) => j.galleryPost !== undefined).length === 2,
      10_000,
      'the posts recorded on the jobs',
    );
  }, 90_000);
  afterAll(async () => {
    await h?.close();
  });

  it('is offered in servers and in DMs', () => {
    const registered = h.fake.globalCommands.find((c) => c['name'] === 'privacy');
    expect(registered?.['contexts']).toEqual([0, 1]);
  });

  it('show: counts what is kept and for how long, ephemerally, in a DM too', async () => {
    for (const where of [{}, { dm: true }]) {
      const m = await privacy(alice, 'show', where).message(10_000);
      expect(m.ephemeral).toBe(true);
      expect(m.content).toContain('3 job records');
      expect(m.content).toContain('30 days after its job ended');
      expect(m.content).toContain('No open photo sessions');
      expect(m.content).toContain('No consent records');
    }
  });

  it('show speaks the member’s language', async () => {
    const m = await privacy(alice, 'show', { locale: 'de' }).message(10_000);
    expect(m.content).toContain('3 Auftr');
  });

  it('export: a JSON file of every job in every server, without secrets or tokens', async () => {
    const m = await privacy(alice, 'export', { dm: true }).message(10_000);
    expect(m.ephemeral).toBe(true);
    const [file] = m.attachments;
    expect(String(file?.['filename'])).toMatch(/^media-bot-data-\d{4}-\d{2}-\d{2}\.json\.gz$/);
    const res = await fetch(String(file?.['url']));
    const body = gunzipSync(Buffer.from(await res.arrayBuffer())).toString();
    const data = JSON.parse(body) as {
      member: string;
      jobs: { id: string; server?: string; command: string }[];
    };
    expect(data.member).toBe(alice);
    expect(data.jobs).toHaveLength(3);
    expect(new Set(data.jobs.map((j) => j.server))).toEqual(new Set([h.fake.guildId, secondGuild]));
    expect(data.jobs.every((j) => j.command === 'upscale')).toBe(true);
    for (const job of await h.app.store.listByUser(alice)) {
      expect(body).not.toContain(job.secret);
      if (job.message.interaction) expect(body).not.toContain(job.message.interaction.token);
    }
    expect(body).not.toContain(bob);
    // The input images' Discord links are kept, without their signature (ex, is, hm).
    const jobs = await h.app.store.listByUser(alice);
    const signed = jobs.map((j) => String(j.params['image_url'] ?? '')).filter((u) => u.includes('hm='));
    expect(signed).toHaveLength(3);
    for (const url of signed) {
      expect(body).not.toContain(url);
      const bare = new URL(url);
      for (const p of ['ex', 'is', 'hm']) bare.searchParams.delete(p);
      expect(body).toContain(bare.toString());
    }
    expect(body).not.toMatch(/[?&](ex|is|hm)=/);
  });

  it('export: once per member per 10 minutes; the refusal says when to try again', async () => {
    const before = Date.now();
    const m = await privacy(alice, 'export').message(10_000);
    expect(m.ephemeral).toBe(true);
    expect(m.attachments).toEqual([]);
    expect(m.content).toContain('once every 10 minutes');
    const at = Number(/<t:(\d+):R>/.exec(m.content)?.[1]) * 1000;
    expect(at).toBeGreaterThan(before + 8 * 60_000);
    expect(at).toBeLessThanOrEqual(before + 10 * 60_000 + 1000);
    // Another member is not held back by Alice's export.
    const other = await privacy(bob, 'export').message(10_000);
    expect(other.attachments).toHaveLength(1);
  });

  it('delete: only the member can confirm; Cancel deletes nothing', async () => {
    const ask = await privacy(alice, 'delete').message(10_000);
    expect(ask.content).toContain('3 job records');
    const confirm = buttons(ask).find((b) => b.label === 'Confirm: delete my data');
    const cancel = buttons(ask).find((b) => b.label === 'Cancel');
    expect(confirm && cancel).toBeTruthy();
    // Bob presses Alice's confirmation (a forged click): refused, nothing deleted.
    const forged = h.fake.sendButton({ customId: confirm!.id, messageId: ask.id, userId: bob });
    const refusal = await eventually(() => forged.followUps[0] ?? forged.originalMessage, 10_000);
    expect(text(refusal)).toContain('Only the member who asked');
    const press = h.fake.sendButton({ customId: cancel!.id, messageId: ask.id, userId: alice });
    const cancelled = await press.waitForMessage((m) => m.content.includes('Nothing was deleted'), 10_000);
    expect(buttons(cancelled)).toEqual([]);
    expect(await h.app.store.listByUser(alice)).toHaveLength(3);
  });

  it('delete: jobs, gallery posts and running jobs in every server go; running jobs keep their slots; Bob keeps his', async () => {
    // A running job of Alice's (held by the service), holding one of her two slots.
    h.emulator.setScenario({ hold: true });
    const running = h.fake.sendCommand({
      name: 'extend-song',
      userId: alice,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    await running.message(10_000);
    const runningJob = await eventually(
      async () => (await h.app.store.listByUser(alice)).find((j) => j.state === 'processing'),
      10_000,
      'the song job processing',
    );
    const bobPosts = h.fake.channelMessages(galleryId).filter((m) => text(m).includes(bob));
    expect(bobPosts).toHaveLength(1);

    const ask = await privacy(alice, 'delete', { dm: true }).message(10_000);
    expect(ask.content).toContain('4 job records');
    const confirm = buttons(ask).find((b) => b.label === 'Confirm: delete my data');
    const press = h.fake.sendButton({ customId: confirm!.id, messageId: ask.id, userId: alice, dm: true });
    const done = await press.waitForMessage((m) => m.content.startsWith('Deleted:'), 20_000);
    expect(done.content).toContain('4 job records');
    expect(done.content).toContain('2 gallery posts');
    expect(done.content).toContain('Stopped tracking 1 running job');
    expect(buttons(done)).toEqual([]);

    expect(await h.app.store.listByUser(alice)).toEqual([]);
    expect(await h.app.store.get(runningJob!.id)).toBeUndefined();
    const left = h.fake.channelMessages(galleryId);
    expect(left.map((m) => m.id)).toEqual(bobPosts.map((m) => m.id));
    expect((await h.app.store.listByUser(bob)).length).toBe(1);

    // Regression: the deletion freed the running job's slot, so delete-then-start gave any number
    // of paid jobs at once past max_active_jobs. The deleted job still counts (2 allowed): one more
    // job starts beside it, the next is refused before any service call.
    const beside = h.fake.sendCommand({
      name: 'extend-song',
      userId: alice,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    expect((await beside.message(10_000)).ephemeral).toBe(false);
    const besideJob = await eventually(
      async () => (await h.app.store.listByUser(alice)).find((j) => j.state === 'processing'),
      10_000,
      'the second song job processing',
    );
    const tasksBefore = h.emulator.tasks.size;
    const past = await upscale(alice).message(10_000);
    expect(past.ephemeral).toBe(true);
    expect(past.content).toContain('2 unfinished jobs');
    expect(h.emulator.tasks.size).toBe(tasksBefore);

    // The service finishes both later: the deleted one's webhook finds no job (its message is left
    // alone, its slot held until it would have ended); the other's final frees its slot.
    h.emulator.setScenario({ hold: false });
    h.emulator.finish(runningJob!.taskId!);
    h.emulator.finish(besideJob!.taskId!);
    await beside.waitForMessage((m) => text(m).includes('Extend song 1'), 20_000);
    await eventually(
      async () => (await h.app.store.get(besideJob!.id))?.settledAt !== undefined,
      10_000,
      'its slot freed',
    );
    await upscale(alice).waitForMessage((m) => text(m).includes('Upscale again'), 20_000);

    const show = await privacy(alice, 'show').message(10_000);
    expect(show.content).toContain('2 job records');
  });

  it('delete with nothing kept says so', async () => {
    const carol = h.fake.addUser({ username: 'carol', permissions: MEMBER });
    const m = await privacy(carol, 'delete').message(10_000);
    expect(m.content).toContain('keeps nothing about you');
    expect(buttons(m)).toEqual([]);
  });
});
