/**
 * The gallery: every finished upscale/song/video job posted once to the gallery
 * channel with its result files re-hosted as attachments (byte-equal to the
 * service's), linked when over the guild's upload limit or when the download
 * fails; a gallery the bot cannot post to never fails the job and shows up in
 * /settings show.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadLimitForTier } from '../src/services/community/gallery.js';
import { oncePerJob } from '../src/services/discord/message-nonce.js';
import { DiscordErrors, type FakeMessage } from './fake-discord/index.js';
import { eventually, jobIdInFooter, startHarness, type Harness } from './helpers/harness.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const MIB = 1024 * 1024;
const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});

interface Attachment {
  url: string;
  filename: string;
  size: number;
}

async function startWithGallery(opts: { gallerySend?: boolean } = {}) {
  const h = await startHarness({
    webhooks: true,
    fake: {
      guild: {
        channels: [{ name: 'general' }, { name: 'gallery', botCanSend: opts.gallerySend ?? true }],
      },
    },
  });
  const admin = h.fake.addUser({ username: 'admin', permissions: String((1n << 5n) | (1n << 11n)) });
  const galleryId = h.fake.channelIdByName('gallery');
  const set = h.fake.sendCommand({
    name: 'settings',
    subcommand: 'set',
    userId: admin,
    options: { gallery: galleryId },
  });
  expect(text(await set.message(10_000))).toContain(`<#${galleryId}>`);
  return { h, admin, galleryId };
}

const upscale = (h: Harness, userId: string) =>
  h.fake.sendCommand({
    name: 'upscale',
    userId,
    options: { prompt: 'a gallery cat', resemblance: 60 },
    attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: PNG } },
  });

function latestUpscaleUrls(h: Harness): string[] {
  const tasks = [...h.emulator.tasks.values()].filter((t) => t.operation === 'upscale');
  return (tasks[tasks.length - 1]?.body as { image_urls: string[] }).image_urls;
}

describe('gallery', () => {
  let h: Harness;
  let admin: string;
  let galleryId: string;
  beforeAll(async () => {
    ({ h, admin, galleryId } = await startWithGallery());
  });
  afterAll(async () => {
    await h?.close();
  });

  it('posts a finished job once, files attached byte-equal to the service’s, who ran it without a ping, a jump link', async () => {
    const cmd = upscale(h, admin);
    const job = await cmd.waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const post = await eventually(() => h.fake.channelMessages(galleryId)[0], 10_000, 'gallery post');
    const attachments = post.data['attachments'] as unknown as Attachment[];
    const urls = latestUpscaleUrls(h);
    expect(attachments).toHaveLength(urls.length);
    for (const [i, a] of attachments.entries()) {
      const fromService = Buffer.from(await (await fetch(urls[i] ?? '')).arrayBuffer());
      const fromDiscord = Buffer.from(await (await fetch(a.url)).arrayBuffer());
      expect(fromDiscord.equals(fromService)).toBe(true);
    }
    const t = text(post);
    expect(t).toContain(`<@${admin}>`);
    expect(post.data['allowed_mentions'] ?? { parse: [] }).toEqual({ parse: [] });
    expect(t).toContain(`/channels/${h.fake.guildId}/${job.channelId}/${job.id}`);
    expect(t).toContain('a gallery cat');
    // Once: nothing else arrives.
    await new Promise((r) => setTimeout(r, 300));
    expect(h.fake.channelMessages(galleryId)).toHaveLength(1);
    h.fake.assertNoViolations();
  });

  it('a file over the 10 MiB limit and a failed download are linked instead; the rest attached', async () => {
    h.emulator.setFileFault('-2.png', { sizeBytes: 11 * MIB });
    h.emulator.setFileFault('-3.png', { status: 500 });
    try {
      const before = h.fake.channelMessages(galleryId).length;
      await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
      const post = await eventually(
        () => h.fake.channelMessages(galleryId)[before],
        15_000,
        'second gallery post',
      );
      const urls = latestUpscaleUrls(h);
      const attachments = post.data['attachments'] as unknown as Attachment[];
      expect(attachments.map((a) => a.filename)).toEqual(
        urls.filter((u) => !u.includes('-2.png') && !u.includes('-3.png')).map((u) => u.split('/').pop()),
      );
      const t = text(post);
      expect(t).toContain(`${urls.find((u) => u.includes('-2.png'))} (over the 10 MiB upload limit)`);
      expect(t).toContain(`${urls.find((u) => u.includes('-3.png'))} (download failed (HTTP 500))`);
      h.fake.assertNoViolations();
    } finally {
      h.emulator.setFileFault('-2.png', undefined);
      h.emulator.setFileFault('-3.png', undefined);
    }
  });

  // Regression: Discord took the post but answered 502 (its answer lost); REST's retry
  // posted the result a second time.
  it('a post Discord took but answered 502: REST retries with the same nonce, one post in the gallery', async () => {
    const before = h.fake.channelMessages(galleryId).length;
    const lost = h.fake.injectFault({
      method: 'POST',
      route: `/channels/${galleryId}/messages`,
      ...DiscordErrors.answerLost,
    });
    try {
      await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
      await eventually(() => lost.hits === 1, 10_000, 'the lost answer');
      const post = await eventually(() => h.fake.channelMessages(galleryId)[before], 15_000, 'gallery post');
      await new Promise((r) => setTimeout(r, 500));
      expect(h.fake.channelMessages(galleryId)).toHaveLength(before + 1);
      // Both attempts carried the job's nonce, enforced.
      const attempts = h.fake.requests
        .filter((r) => r.method === 'POST' && r.path === `/channels/${galleryId}/messages`)
        .slice(-2)
        .map((r) => r.body as { nonce?: unknown; enforce_nonce?: unknown });
      const once = oncePerJob('gallery', jobIdInFooter(post));
      expect(attempts).toEqual([expect.objectContaining(once), expect.objectContaining(once)]);
      expect(post.data['nonce']).toBe(once.nonce);
      h.fake.assertNoViolations();
    } finally {
      lost.remove();
    }
  });

  it('upload limits by boost tier', () => {
    expect([0, 1, 2, 3].map(uploadLimitForTier)).toEqual([10 * MIB, 10 * MIB, 50 * MIB, 100 * MIB]);
  });
});

describe('gallery on a boosted server', () => {
  it('attaches an 11 MiB file when Discord says the guild allows 50 MiB', async () => {
    const { h, admin, galleryId } = await startWithGallery();
    try {
      h.fake.setGuildPremiumTier(2);
      h.emulator.setFileFault('-1.png', { sizeBytes: 11 * MIB });
      await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
      const post = await eventually(() => h.fake.channelMessages(galleryId)[0], 15_000, 'gallery post');
      const attachments = post.data['attachments'] as unknown as Attachment[];
      expect(attachments).toHaveLength(4);
      expect(attachments[0]?.size).toBe(11 * MIB);
    } finally {
      await h.close();
    }
  });
});

describe('gallery the bot cannot post to', () => {
  it('403 50013: the job still finishes, nothing is posted, /settings show tells the error', async () => {
    const { h, admin, galleryId } = await startWithGallery({ gallerySend: false });
    try {
      const job = await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
      expect(text(job)).toContain('Upscale again');
      await eventually(
        async () => {
          const show = h.fake.sendCommand({ name: 'settings', subcommand: 'show', userId: admin });
          const t = text(await show.message(10_000));
          return t.includes('Gallery: last post failed') && t.includes('50013') ? t : false;
        },
        10_000,
        'gallery error in /settings show',
      );
      expect(h.fake.channelMessages(galleryId)).toHaveLength(0);
    } finally {
      await h.close();
    }
  });
});
