/**
 * The gallery: every finished upscale/song/video job posted once to the gallery
 * channel with its result files re-hosted as attachments (byte-equal to the
 * service's), linked when over the guild's upload limit or when the download
 * fails; a gallery the bot cannot post to never fails the job and shows up in
 * /settings show.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { galleryPostName, uploadLimitForTier } from '../src/services/community/gallery.js';
import { oncePerJob } from '../src/services/discord/message-nonce.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, startEmulator } from './emulator/server.js';
import type { Emulator } from './emulator/types.js';
import { DEFAULT_BOT_PERMISSIONS } from './fake-discord/constants.js';
import { DiscordErrors, type FakeMessage } from './fake-discord/index.js';
import { eventually, jobIdInFooter, startHarness, type Harness } from './helpers/harness.js';
import { isCardMessage, walkComponents } from './helpers/message-text.js';
import { renderOperations } from '../src/services/operations/index.js';
import { createJobRenderer } from '../src/services/discord/render/job-render.js';
import sharp from 'sharp';

const jobRender = createJobRenderer(renderOperations);

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const MIB = 1024 * 1024;
const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});

/**
 * The post is a result card (Components V2: no content, no embeds), and every attached
 * file is shown by one of its components (with V2 an attachment no component names is
 * hidden): images and videos in its gallery, other files as File components. Returns
 * the names of the files shown as File components.
 */
function expectCardShowingEveryFile(data: Record<string, unknown> | undefined): string[] {
  const body = data ?? {};
  expect(isCardMessage(body)).toBe(true);
  expect(body['content'] ?? '').toBe('');
  expect(body['embeds'] ?? []).toEqual([]);
  const attached = ((body['attachments'] ?? []) as { id: string; filename: string }[]).map((a) => a.id);
  const shown: string[] = [];
  const fileNames: string[] = [];
  for (const c of walkComponents(body['components'])) {
    if (c['type'] === 12)
      for (const item of c['items'] as { media: { attachment_id?: string } }[])
        if (item.media.attachment_id !== undefined) shown.push(item.media.attachment_id);
    if (c['type'] === 13) {
      const file = c['file'] as { attachment_id?: string };
      if (file.attachment_id !== undefined) shown.push(file.attachment_id);
      fileNames.push(String(c['name']));
    }
  }
  expect(shown.sort()).toEqual([...attached].sort());
  return fileNames;
}

interface Attachment {
  url: string;
  filename: string;
  size: number;
  content_type?: string;
}

async function startWithGallery(opts: { gallerySend?: boolean; locale?: string } = {}) {
  const h = await startHarness({
    webhooks: true,
    fake: {
      guild: {
        ...(opts.locale !== undefined ? { locale: opts.locale } : {}),
        channels: [{ name: 'general' }, { name: 'gallery' }],
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
  // Taken away after the gallery was set (set with it, the setting is refused: see below).
  if (opts.gallerySend === false) h.fake.setBotCanSend(galleryId, false);
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
    // The result card, the four images in its gallery.
    expect(expectCardShowingEveryFile(post.data)).toEqual([]);
    const t = text(post);
    expect(t).toContain(`<@${admin}>`);
    expect(t).toContain('AI-generated');
    expect(t).toContain('Jump to the job');
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
      expectCardShowingEveryFile(post.data);
      const t = text(post);
      expect(t).toContain('Not attached:');
      expect(t).toContain(`<${urls.find((u) => u.includes('-2.png'))}> (over the 10 MiB upload limit)`);
      expect(t).toContain(`<${urls.find((u) => u.includes('-3.png'))}> (download failed (HTTP 500))`);
      h.fake.assertNoViolations();
    } finally {
      h.emulator.setFileFault('-2.png', undefined);
      h.emulator.setFileFault('-3.png', undefined);
    }
  });

  // Regression: `/settings set gallery` accepted a channel the manager (or the bot) could not see or post in.
  it('a manager cannot aim the gallery at a channel they cannot see or post in (ephemeral, in their language)', async () => {
    const hidden = h.fake.channelIdByName('general');
    const manager = h.fake.addUser({ username: 'manager-hidden', permissions: String(1n << 5n) });
    const attempt = async (permissions: string, locale?: string) => {
      h.fake.setChannelPermissions(hidden, manager, permissions);
      const cmd = h.fake.sendCommand({
        name: 'settings',
        subcommand: 'set',
        userId: manager,
        options: { gallery: hidden },
        ...(locale !== undefined ? { locale } : {}),
      });
      return cmd.message(10_000);
    };
    const view = 1n << 10n;
    const send = 1n << 11n;
    for (const [perms, locale, phrase] of [
      [String(send | (1n << 5n)), undefined, 'you need View Channel and Send Messages there yourself'],
      [String(view | (1n << 5n)), 'de', '„Kanal ansehen“ und „Nachrichten senden“'],
    ] as const) {
      const refused = await attempt(perms, locale);
      expect(refused.ephemeral).toBe(true);
      expect(refused.content).toContain(`<#${hidden}>`);
      expect(refused.content).toContain(phrase);
      expect((await h.app.context.settings.get(h.fake.guildId)).gallery).toBe(galleryId);
    }
    // The manager may, but the bot may not send there: refused too, saying what the bot needs.
    h.fake.setBotCanSend(hidden, false);
    const botRefused = await attempt(String(view | send | (1n << 5n)));
    expect(botRefused.ephemeral).toBe(true);
    expect(botRefused.content).toContain(`I cannot post in <#${hidden}>`);
    expect((await h.app.context.settings.get(h.fake.guildId)).gallery).toBe(galleryId);
    h.fake.setBotCanSend(hidden, true);
    // With both (or as an administrator) it is taken; then set back for the other tests.
    for (const perms of [String(view | send | (1n << 5n)), String(1n << 3n)]) {
      const ok = await attempt(perms);
      expect(ok.content).not.toContain('you need View Channel');
      expect((await h.app.context.settings.get(h.fake.guildId)).gallery).toBe(hidden);
      await h.app.context.settings.set(h.fake.guildId, { gallery: galleryId });
    }
    h.fake.assertNoViolations();
  });

  // Regression: the gallery re-hosted whatever bytes a result URL served, under the URL's
  // extension (an HTML page as `…png`), and printed the links it could not attach as raw markdown.
  it('files are judged by their bytes: an HTML page under .png is linked, a JPEG under .png attached as .jpg', async () => {
    const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#808' } })
      .jpeg()
      .toBuffer();
    h.emulator.setFileFault('-2.png', {
      body: Buffer.from('<html><body>[click](https://phish.example) @everyone</body></html>'),
      contentType: 'image/png',
    });
    h.emulator.setFileFault('-4.png', { body: jpeg, contentType: 'image/png' });
    try {
      const before = h.fake.channelMessages(galleryId).length;
      await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
      const post = await eventually(() => h.fake.channelMessages(galleryId)[before], 15_000, 'gallery post');
      const urls = latestUpscaleUrls(h);
      const stem = (u: string | undefined) =>
        (u ?? '')
          .split('/')
          .pop()
          ?.replace(/\.png$/, '');
      const attachments = post.data['attachments'] as unknown as Attachment[];
      expect(attachments.map((a) => a.filename)).toEqual([
        `${stem(urls[0])}.png`,
        `${stem(urls[2])}.png`,
        `${stem(urls[3])}.jpg`,
      ]);
      const jpg = attachments[2];
      expect(jpg?.content_type).toBe('image/jpeg');
      expect(Buffer.from(await (await fetch(jpg?.url ?? '')).arrayBuffer()).equals(jpeg)).toBe(true);
      expectCardShowingEveryFile(post.data);
      expect(text(post)).toContain(`<${urls[1]}> (its bytes are not a file of this job's kind)`);
      h.fake.assertNoViolations();
    } finally {
      h.emulator.setFileFault('-2.png', undefined);
      h.emulator.setFileFault('-4.png', undefined);
    }
  });

  it('a link it could not attach is printed inert: no markdown, link or mention can come out of it', () => {
    const hostile = 'https://files.example/a.png?x=)[click](https://phish.example)<@&123>`@everyone`*b*';
    const job = {
      id: 'j1',
      secret: 's',
      operation: 'upscale',
      userId: '5',
      message: { channelId: '6', guildId: '7', messageId: '8' },
      params: { prompt: 'cat' },
      state: 'finished',
      percentage: 100,
      result: { kind: 'upscale', imageUrls: [hostile] },
      createdAt: 0,
      updatedAt: 0,
      version: 1,
    } as const;
    const post = jobRender.renderGalleryPost(
      job as unknown as Parameters<typeof jobRender.renderGalleryPost>[0],
      [],
      [
        { url: hostile, reason: () => 'download failed' },
        { url: 'javascript:alert(1)//[x](y)', reason: () => 'no' },
      ],
    );
    const shown = JSON.stringify(post);
    const line = /Not attached:\\n• (<[^>]*>) \(download failed\)/.exec(shown)?.[1] ?? '';
    expect(line.startsWith('<https://files.example/a.png?x=')).toBe(true);
    // Inside the autolink nothing closes it early or opens markdown, a mention or a masked link.
    expect(line.slice(1, -1)).not.toMatch(/[<>[\]`\s]/);
    expect(shown).not.toContain('<@&123>');
    expect(shown).not.toContain('[click](');
    expect(shown).toContain('javascript:alert(1)//\\\\[x\\\\](y)');
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

  it('a forum post’s title: the command and the first words of the prompt (≤ 100), neutral when the job’s text is withheld', () => {
    const job = {
      id: 'abcdef12-3456',
      operation: 'upscale' as const,
      params: { prompt: 'a cat '.repeat(40) },
    };
    const name = galleryPostName(job, jobRender);
    expect(name.startsWith('upscale · a cat a cat')).toBe(true);
    expect(name.length).toBeLessThanOrEqual(100);
    expect(galleryPostName({ ...job, textWithheld: true }, jobRender)).toBe('upscale · abcdef12');
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

const extendSong = (h: Harness, userId: string) =>
  h.fake.sendCommand({
    name: 'extend-song',
    userId,
    options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
  });

/** Every file of the latest song task, as the service linked them. */
function latestSongFiles(h: Harness): string[] {
  const tasks = [...h.emulator.tasks.values()].filter((t) => t.operation === 'song');
  const body = tasks[tasks.length - 1]?.body as {
    video_url: string;
    songs: { audio_url: string; image_url: string; video_url: string }[];
  };
  return [...body.songs.flatMap((s) => [s.audio_url, s.image_url, s.video_url]), body.video_url];
}
const names = (urls: string[]) => urls.map((u) => decodeURIComponent(u.split('/').pop() ?? '')).sort();

describe('gallery: song jobs', () => {
  // Regression: only the two audio files and the top-level video were posted.
  it('a text gallery gets every file of a song job: both audio files, both covers, each song’s video, the top-level video', async () => {
    const { h, admin, galleryId } = await startWithGallery();
    try {
      await extendSong(h, admin).waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
      const post = await eventually(() => h.fake.channelMessages(galleryId)[0], 15_000, 'gallery post');
      const attachments = post.data['attachments'] as unknown as Attachment[];
      const files = latestSongFiles(h);
      expect(files).toHaveLength(7);
      expect(attachments.map((a) => a.filename).sort()).toEqual(names(files));
      // Covers and videos in the card's gallery; the audio files, which a gallery cannot show, as File components.
      const fileParts = expectCardShowingEveryFile(post.data);
      expect(fileParts.sort()).toEqual(
        names(files).filter((n) => !/\.(png|jpe?g|gif|webp|mp4|webm|mov)$/i.test(n)),
      );
      expect(fileParts.length).toBeGreaterThan(0);
      h.fake.assertNoViolations();
    } finally {
      await h.close();
    }
  });
});

describe('gallery: languages', () => {
  it('a German server’s gallery post is its result card in German, the reason a file is linked too', async () => {
    const { h, admin, galleryId } = await startWithGallery({ locale: 'de' });
    h.emulator.setFileFault('-3.png', { status: 500 });
    try {
      await upscale(h, admin).waitForMessage((m) => text(m).includes('Erneut hochskalieren'), 15_000);
      const post = await eventually(() => h.fake.channelMessages(galleryId)[0], 15_000, 'gallery post');
      expectCardShowingEveryFile(post.data);
      const t = text(post);
      expect(t).toContain('Hochskalierte Bilder');
      expect(t).toContain(`von <@${admin}>`);
      expect(t).toContain('Zum Auftrag springen');
      expect(t).toContain('Nicht angehängt:');
      expect(t).toContain(
        `<${latestUpscaleUrls(h).find((u) => u.includes('-3.png'))}> (Download fehlgeschlagen (HTTP 500))`,
      );
      expect(t).not.toContain('Jump to the job');
      h.fake.assertNoViolations();
    } finally {
      h.emulator.setFileFault('-3.png', undefined);
      await h.close();
    }
  });
});

describe('gallery in forum and media channels', () => {
  let h: Harness;
  let admin: string;
  let forum: { id: string; tagIds: Record<string, string> };
  let media: { id: string; tagIds: Record<string, string> };
  const useGallery = async (channelId: string) => {
    const set = h.fake.sendCommand({
      name: 'settings',
      subcommand: 'set',
      userId: admin,
      options: { gallery: channelId },
    });
    expect(text(await set.message(10_000))).toContain(`<#${channelId}>`);
  };
  const threadPosts = (channelId: string) =>
    h.fake.requests.filter((r) => r.method === 'POST' && r.path === `/channels/${channelId}/threads`);

  beforeAll(async () => {
    h = await startHarness({ webhooks: true });
    admin = h.fake.addUser({ username: 'admin', permissions: String((1n << 5n) | (1n << 11n)) });
    // Tag names match the operation whatever their case; a tag of another name is left alone.
    forum = h.fake.addForumChannel({ name: 'forum-gallery', tags: ['Upscale', 'SONG', 'staff pick'] });
    media = h.fake.addForumChannel({ name: 'media-gallery', tags: ['favourites'], media: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a forum gallery: one post per job, named after the command and prompt, tagged with its operation, files attached, recorded with its thread', async () => {
    await useGallery(forum.id);
    const job = await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const post = await eventually(() => h.fake.forumPosts(forum.id)[0], 15_000, 'forum post');
    expect(post.name).toBe('upscale · a gallery cat');
    expect(post.appliedTags).toEqual([forum.tagIds['Upscale']]);
    expect(post.message?.attachments.map((a) => a['filename'])).toEqual(names(latestUpscaleUrls(h)));
    // The post's first message is the result card, showing every file.
    expectCardShowingEveryFile(post.message?.data);
    const t = JSON.stringify(post.message?.data ?? {});
    expect(t).toContain(`<@${admin}>`);
    expect(t).toContain(`/channels/${h.fake.guildId}/${job.channelId}/${job.id}`);
    const record = await eventually(async () => {
      const j = await h.app.store.getByMessageId(job.id);
      return j?.galleryPost !== undefined ? j : undefined;
    }, 10_000);
    expect(record.galleryPost).toEqual({ channelId: forum.id, messageId: post.id, threadId: post.id });
    // One post, and nothing sent as a plain message to the forum.
    await new Promise((r) => setTimeout(r, 300));
    expect(h.fake.forumPosts(forum.id)).toHaveLength(1);
    expect(h.fake.requests.filter((r) => r.path === `/channels/${forum.id}/messages`)).toEqual([]);
    h.fake.assertNoViolations();
  });

  it('a song job in the forum: tagged song, every file attached', async () => {
    await useGallery(forum.id);
    const before = h.fake.forumPosts(forum.id).length;
    await extendSong(h, admin).waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    const post = await eventually(() => h.fake.forumPosts(forum.id)[before], 15_000, 'song post');
    // Titled by the song's first lyric line (the emulator's), not by a task id.
    expect(post.name).toBe('extend-song · Emulated lyrics, take 1');
    expect(post.appliedTags).toEqual([forum.tagIds['SONG']]);
    expect(post.message?.attachments.map((a) => String(a['filename'])).sort()).toEqual(
      names(latestSongFiles(h)),
    );
    expectCardShowingEveryFile(post.message?.data);
    h.fake.assertNoViolations();
  });

  it('a media gallery without a tag of the operation: a post with no applied_tags', async () => {
    await useGallery(media.id);
    await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const post = await eventually(() => h.fake.forumPosts(media.id)[0], 15_000, 'media post');
    expect(post.appliedTags).toEqual([]);
    const [sent] = threadPosts(media.id);
    expect(sent?.body).not.toHaveProperty('applied_tags');
    expect(post.message?.attachments).toHaveLength(4);
    h.fake.assertNoViolations();
  });

  it('AutoMod refuses the post’s title: posted once more under a neutral name', async () => {
    await useGallery(forum.id);
    const before = h.fake.forumPosts(forum.id).length;
    const blocked = h.fake.injectFault({
      method: 'POST',
      route: `/channels/${forum.id}/threads`,
      status: 400,
      body: { message: 'Title was blocked by automatic moderation', code: 200001 },
    });
    try {
      const job = await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
      const post = await eventually(() => h.fake.forumPosts(forum.id)[before], 15_000, 'forum post');
      expect(blocked.hits).toBe(1);
      const record = await eventually(() => h.app.store.getByMessageId(job.id), 10_000);
      expect(post.name).toBe(`upscale · ${record.id.slice(0, 8)}`);
      expect(post.appliedTags).toEqual([forum.tagIds['Upscale']]);
      expect(post.message?.attachments).toHaveLength(4);
    } finally {
      blocked.remove();
    }
  });

  it('taken down with the member’s data (/privacy delete): the forum post’s thread is deleted', async () => {
    h.fake.setBotPermissions(String(BigInt(DEFAULT_BOT_PERMISSIONS) | (1n << 34n)));
    const member = h.fake.addUser({ username: 'poster' });
    await useGallery(forum.id);
    const before = h.fake.forumPosts(forum.id).length;
    await upscale(h, member).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
    const post = await eventually(() => h.fake.forumPosts(forum.id)[before], 15_000, 'forum post');
    await eventually(
      async () => (await h.app.store.listByUser(member)).some((j) => j.galleryPost !== undefined),
      10_000,
      'the post recorded',
    );
    const ask = await h.fake
      .sendCommand({ name: 'privacy', subcommand: 'delete', userId: member })
      .message(10_000);
    const confirm = (
      ask.data['components'] as unknown as { components: { label?: string; custom_id?: string }[] }[]
    )
      .flatMap((row) => row.components)
      .find((b) => b.label?.startsWith('Confirm'));
    const done = await h.fake
      .sendButton({ customId: confirm?.custom_id ?? '', messageId: ask.id, userId: member })
      .waitForMessage((m) => m.content.startsWith('Deleted:'), 20_000);
    expect(done.content).toContain('1 gallery post');
    expect(h.fake.thread(post.id)?.deleted).toBe(true);
    const others = h.fake.forumPosts(forum.id).filter((p) => p.id !== post.id);
    expect(others.every((p) => !p.deleted)).toBe(true);
  });
});

describe('gallery: result links to private addresses', () => {
  // The service's origin (MEDIA_API_URL) is trusted; its files are linked from another
  // origin on a loopback address, as a misbehaving or compromised service could.
  const start = (emulator: Emulator, allow?: string) =>
    startHarness({
      webhooks: true,
      fake: { guild: { channels: [{ name: 'general' }, { name: 'gallery' }] } },
      reuse: { emulator },
      env: {
        MEDIA_API_URL: emulator.url.replace('//127.0.0.1:', '//localhost:'),
        ...(allow !== undefined ? { OUTBOUND_ALLOW: allow } : {}),
      },
    });

  it('refused and linked with the reason unless OUTBOUND_ALLOW trusts the address', async () => {
    for (const allow of [undefined, '127.0.0.1/32']) {
      const emulator = await startEmulator({ scenario: { stepMs: 40 } });
      const h = await start(emulator, allow);
      try {
        const admin = h.fake.addUser({ username: 'admin', permissions: String((1n << 5n) | (1n << 11n)) });
        const galleryId = h.fake.channelIdByName('gallery');
        await h.fake
          .sendCommand({
            name: 'settings',
            subcommand: 'set',
            userId: admin,
            options: { gallery: galleryId },
          })
          .message(10_000);
        await upscale(h, admin).waitForMessage((m) => text(m).includes('Upscale again'), 15_000);
        const post = await eventually(() => h.fake.channelMessages(galleryId)[0], 15_000, 'gallery post');
        const urls = latestUpscaleUrls(h);
        expect(urls[0]).toMatch(/^http:\/\/127\.0\.0\.1:/);
        const attachments = post.data['attachments'] as unknown as Attachment[];
        if (allow === undefined) {
          expect(attachments).toEqual([]);
          for (const url of urls)
            expect(text(post)).toContain(
              `<${url}> (refused: the link points to a non-public address (loopback))`,
            );
        } else {
          expect(attachments.map((a) => a.filename)).toEqual(names(urls));
        }
        h.fake.assertNoViolations();
      } finally {
        await h.close();
        await emulator.close();
      }
    }
  });
});
