/**
 * The playground in a real browser: Debian's Chromium driven by playwright-core
 * (no browser download), headless. The real bot runs as its own process behind
 * the page. Screenshots of the main states go to .ci/artifacts/playground/ (made
 * here, git-ignored, kept by CI as artifacts), and with UPDATE_SCREENSHOTS=1 the
 * README's to docs/playground.png.
 * Then the playground as a command: a busy PLAYGROUND_PORT, and what SIGINT and
 * SIGTERM leave behind.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlayground, type Playground } from '../playground/server.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import { eventually, percentagesShown } from './helpers/harness.js';
import { foundAt, needs } from './helpers/requirements.js';

const ROOT = new URL('..', import.meta.url).pathname;
const ARTIFACTS = new URL('../.ci/artifacts/playground/', import.meta.url).pathname;
const DOCS = new URL('../docs/', import.meta.url).pathname;

/** 10 distinct small PNGs (the same pixel, distinct trailing bytes, so distinct hashes). */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const photos = Array.from({ length: 10 }, (_, i) =>
  Buffer.concat([PNG, Buffer.from(`photo-${i}`)]).toString('base64'),
);

/** The composer back to an empty line (Escape closes the picker, then drops the command). */
async function clearComposer(page: Page) {
  await page.click('#text');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Escape');
  await page.fill('#text', '');
}

/** Types `/label` in the message box and picks that entry from the picker. */
async function pickCommand(page: Page, label: string) {
  await clearComposer(page);
  await page.fill('#text', `/${label}`);
  await page.locator('.picker-item', { has: page.locator(`.picker-label:text-is("/${label}")`) }).click();
  await expect.poll(() => page.locator('.cmd-chip').innerText()).toBe(`/${label}`);
}

const chip = (page: Page, option: string) => page.locator(`.opt-chip[data-option="${option}"] .opt-value`);

/** Picks an option's suggestion (its choices or the bot's autocomplete) by the text it shows. */
async function choose(page: Page, option: string, shown: string | RegExp) {
  await chip(page, option).click();
  await page.locator('.picker-item', { hasText: shown }).first().click();
}

/** What a reader reads in an element: its text, white space collapsed. */
const read = async (l: Locator) => ((await l.textContent()) ?? '').replace(/\s+/g, ' ').trim();
const messages = (page: Page) => page.locator('#message-list article.msg:not(.pending)');
const lastMessage = (page: Page) => messages(page).last();
/** The DOM the tests read (this project's TypeScript has no DOM lib). */
interface HTMLLike {
  scrollHeight: number;
  scrollTop: number;
  clientHeight: number;
}
const atBottom = (page: Page) =>
  page.locator('#messages').evaluate((s) => {
    const e = s as unknown as HTMLLike;
    return e.scrollHeight - e.scrollTop - e.clientHeight < 2;
  });
/** A computed style property of the element (camelCase). */
const cssOf = (l: Locator, prop: string) =>
  l.evaluate(
    (n, p) =>
      (globalThis as unknown as { getComputedStyle(n: unknown): Record<string, string> }).getComputedStyle(n)[
        p
      ],
    prop,
  );

describe('playground in Chromium', { timeout: 120_000, ...needs('chromium') }, () => {
  let pg: Playground;
  let browser: Browser;
  let page: Page;
  let general = '';
  let galleryId = '';
  let ada = '';
  let alice = '';

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${pg.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await res.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    pg = await startPlayground({ port: 0, stepMs: [300, 600], failureRate: 0, log: () => undefined });
    browser = await chromium.launch({
      executablePath: foundAt('chromium'),
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // USER_INSTALL: the user-installable commands are global, /settings and Remove result the server's.
    await pg.fake.waitFor(() => pg.fake.globalCommands.length + pg.fake.guildCommands().length >= 9, {
      timeoutMs: 30_000,
    });
    await pg.fake.waitForGatewayReady(30_000);
    general = pg.fake.channelIdByName('general');
    galleryId = pg.fake.channelIdByName('gallery');
    // The playground's own setup: /settings set gallery:#gallery (the forum), through the bot.
    await pg.ready;
    const state = (await (await fetch(`${pg.url}/api/state`)).json()) as {
      users: { key: string; id: string }[];
    };
    ada = state.users.find((u) => u.key === 'admin')?.id ?? '';
    alice = state.users.find((u) => u.key === 'alice')?.id ?? '';
    await page.goto(pg.url);
    await page.waitForSelector('body[data-ready="true"]');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await pg?.close();
  });

  it('markdown and its escapes render as Discord renders them, and nothing injects markup', async () => {
    // The member's own message, typed in the message box.
    await clearComposer(page);
    await page.fill(
      '#text',
      String.raw`\[Verse\] \<b>x\</b> <i>raw</i> **bold** *it* __under__ ~~gone~~ \*\*not bold\*\* snake_case_name <t:1700000000:D> <@${ada}> <#${general}>`,
    );
    await page.keyboard.press('Enter');
    const mine = lastMessage(page).locator('.msg-content');
    await expect.poll(() => mine.innerText(), { timeout: 10_000 }).toContain('[Verse]');
    const text = await mine.innerText();
    expect(text).toContain('[Verse] <b>x</b> <i>raw</i> bold it under gone **not bold** snake_case_name');
    expect(text).not.toContain('\\');
    expect(await mine.locator('b, i').count()).toBe(0); // no markup from the text
    expect(await mine.locator('strong').innerText()).toBe('bold');
    expect(await mine.locator('em').innerText()).toBe('it');
    expect(await mine.locator('u').innerText()).toBe('under');
    expect(await mine.locator('s').innerText()).toBe('gone');
    expect(await mine.locator('time.timestamp').innerText()).toMatch(/November 14, 2023|14 November 2023/);
    expect(await mine.locator('.mention').allInnerTexts()).toEqual(['@Ada (admin)', 'general']);

    // The renderer on the cases that matter, in the page (the module the page uses).
    const cases: [string, string][] = [
      [String.raw`\\ \< \> \# \* \_ \~ \| \` \[x\](y)`, String.raw`\ < > # * _ ~ | ` + '` [x](y)'],
      ['`\\[kept\\]` ``a`b``', '\\[kept\\] a`b'],
      [
        '# Title\n## Sub\n### Small\n-# subtext\n> quoted\nplain',
        'Title\nSub\nSmall\nsubtext\nquoted\nplain',
      ],
      ['[masked](https://example.com/a) <https://example.com/b>', 'masked https://example.com/b'],
      ['[bad](javascript:alert(1))', '[bad](javascript:alert(1))'],
      ['||secret|| <@&1> <:blob:123>', 'secret @unknown-role :blob:'],
      ['```js\nconst a = 1 < 2;\n```', 'const a = 1 < 2;'],
      ['- one\n- two', 'one\ntwo'],
    ];
    // A string, so that the test runner leaves the page's dynamic import alone.
    const rendered = (await page.evaluate(`(async () => {
      const { markdown } = await import('/markdown.js');
      const ctx = { userName: () => 'x', channelName: () => undefined, jumpTarget: () => null };
      return ${JSON.stringify(cases.map(([src]) => src))}.map((src) => {
        const div = document.createElement('div');
        div.append(markdown(src, ctx));
        document.body.append(div); // laid out, so that innerText reads blocks as lines
        const out = { text: div.innerText, html: div.innerHTML };
        div.remove();
        return out;
      });
    })()`)) as { text: string; html: string }[];
    rendered.forEach((r, i) => expect(r.text.replace(/\n+/g, '\n').trim()).toBe(cases[i]?.[1]));
    expect(rendered[2]?.html).toMatch(
      /<h1[^>]*>Title<\/h1>.*<h2[^>]*>Sub<\/h2>.*<h3[^>]*>Small<\/h3>.*<small/s,
    );
    expect(rendered[3]?.html).toContain('href="https://example.com/a"');
    expect(rendered[4]?.html).not.toContain('href="javascript');
    expect(rendered[6]?.html).toContain('<pre class="code-block"><code data-lang="js">');
    await page.screenshot({ path: `${ARTIFACTS}markdown.png` });
  });

  it('the / picker: /ext, pick /extend-song, autocomplete, send; "Ada used /extend-song", then the songs', async () => {
    // Idle, the message box is one line.
    await clearComposer(page);
    expect((await page.locator('.composer-bar').boundingBox())?.height).toBeLessThanOrEqual(48);
    await page.click('#text');
    await page.keyboard.type('/ext');
    await expect
      .poll(() => page.locator('.picker-label').allInnerTexts())
      .toEqual(['/extend-song', '/extend-video']);
    expect(await page.locator('.picker-item').first().innerText()).toContain('Extend a song you generated');
    await page.screenshot({ path: `${ARTIFACTS}picker.png` });
    await page.locator('.picker-item', { hasText: '/extend-song' }).click();
    // Required options first, as chips; the first has the focus and its description shows.
    expect(
      await page.locator('.opt-chip').evaluateAll((n) => n.map((c) => c.getAttribute('data-option'))),
    ).toEqual(['task_id', 'song_id']);
    await expect.poll(() => page.locator('#picker-head').innerText()).toContain('The song task to extend');
    await page.keyboard.type(FIXTURE_SONG_TASK_ID);
    // The bot's autocomplete answers for song_id: the two songs of that task.
    await chip(page, 'song_id').click();
    await expect
      .poll(() => page.locator('.picker-item').allInnerTexts(), { timeout: 10_000 })
      .toEqual([expect.stringContaining(FIXTURE_SONG_IDS[0]), expect.stringContaining(FIXTURE_SONG_IDS[1])]);
    await page.screenshot({ path: `${ARTIFACTS}autocomplete.png` });
    // Held at 40 % until the page shows it: on a busy machine the whole progress phase of
    // a free-running task can fall between two edits, and the final then replaces it.
    pg.emulator.nextScenario({ hold: true, steps: [40], stepMs: 200 });
    const tasksBefore = new Set(pg.emulator.tasks.keys());
    await page.locator('.picker-item', { hasText: FIXTURE_SONG_IDS[0] }).click();
    await page.keyboard.press('Enter');
    // Sent: back to one empty line.
    await expect.poll(() => page.locator('.opt-chip').count()).toBe(0);

    await expect.poll(() => lastMessage(page).innerText(), { timeout: 20_000 }).toMatch(/40%/);
    expect(await read(lastMessage(page).locator('.msg-context.used'))).toBe('Ada (admin) used /extend-song');
    const task = [...pg.emulator.tasks.values()].find((t) => !tasksBefore.has(t.id));
    pg.emulator.finish(task?.id ?? '');
    await expect
      .poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 2' }).count(), {
        timeout: 60_000,
      })
      .toBe(1);
    // The message the page shows went through percentages before the songs (its edit history).
    const shownId = (await lastMessage(page).getAttribute('data-id')) ?? '';
    const edits = pg.fake.messages.get(shownId)?.edits ?? [];
    expect(percentagesShown(edits.map((e) => JSON.stringify(e.after))).length).toBeGreaterThan(0);
    // The result is a Components V2 card: a container with its heading, the audio as links,
    // lyrics showing [Verse], not \[Verse\], and the two covers in one gallery; no content, no embeds.
    const card = lastMessage(page).locator('.v2-container');
    expect(await card.locator('h3.md-h3').innerText()).toContain('Song extension');
    expect(await card.locator('a', { hasText: 'Audio' }).count()).toBe(2);
    expect(await card.innerText()).toContain('AI-generated');
    expect(await lastMessage(page).innerText()).toContain('[Verse]');
    expect(await lastMessage(page).innerText()).not.toContain('\\[');
    expect(await card.locator('.mosaic.n2 img').count()).toBe(2);
    expect(await lastMessage(page).locator('.msg-content, .embed').count()).toBe(0);
    expect(await atBottom(page)).toBe(true);
    // Beside the channel, the operator panel has the job's timeline: webhooks, edits, finished.
    const job = page.locator('#timeline .job').first();
    await expect.poll(() => job.locator('.job-status').textContent(), { timeout: 10_000 }).toBe('finished');
    expect(await job.locator('li.webhook').allTextContents()).toContainEqual(
      expect.stringContaining('final'),
    );
    await page.screenshot({ path: `${ARTIFACTS}extend-song.png` });
    // The README's screenshot, refreshed on demand (UPDATE_SCREENSHOTS=1 npm test).
    if (process.env['UPDATE_SCREENSHOTS'] === '1') {
      await mkdir(DOCS, { recursive: true });
      // The finished job from its "Ada used /extend-song" header down, beside the operator panel,
      // with its post in the forum gallery listed under #gallery.
      await expect
        .poll(() => page.locator(`.thread`).allInnerTexts(), { timeout: 20_000 })
        .toContainEqual(expect.stringContaining('extend-song'));
      await page.setViewportSize({ width: 1280, height: 960 });
      await lastMessage(page).evaluate((n) =>
        (n as unknown as { scrollIntoView(o: object): void }).scrollIntoView({ block: 'start' }),
      );
      await page.mouse.move(0, 0);
      await page.screenshot({ path: `${DOCS}playground.png` });
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.locator('#messages').evaluate((s) => {
        const e = s as unknown as HTMLLike;
        e.scrollTop = e.scrollHeight;
      });
    }

    const before = await messages(page).count();
    await lastMessage(page).locator('button', { hasText: 'Extend song 2' }).click();
    await expect.poll(() => messages(page).count(), { timeout: 10_000 }).toBeGreaterThan(before);
    await expect
      .poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 1' }).count(), {
        timeout: 30_000,
      })
      .toBe(1);
  });

  it('/upscale with an image: the four results once, as one gallery in the card; the input image is not a result', async () => {
    await pickCommand(page, 'upscale');
    await chip(page, 'prompt').fill('a cat');
    await page.setInputFiles('#file-input', { name: 'input-cat.png', mimeType: 'image/png', buffer: PNG });
    await expect
      .poll(() => page.locator('.opt-chip[data-option="image"]').innerText())
      .toContain('input-cat.png');
    await page.click('#text');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => lastMessage(page).locator('button', { hasText: 'Upscale again' }).count(), {
        timeout: 30_000,
      })
      .toBe(1);
    const shown = await lastMessage(page)
      .locator('img:not(.emoji)')
      .evaluateAll((imgs) => imgs.map((i) => i.getAttribute('src') ?? ''));
    expect(shown).toHaveLength(4);
    expect(new Set(shown).size).toBe(4);
    expect(shown.some((s) => s.includes('input-cat'))).toBe(false);
    // One gallery of the four images inside the card; the input image is a parameter link.
    const card = lastMessage(page).locator('.v2-container');
    expect(await card.locator('.mosaic.n4 img').count()).toBe(4);
    expect(await card.locator('a', { hasText: 'input-cat.png' }).count()).toBe(1);
    expect(await card.innerText()).toContain('Image URL:');
  });

  it('the forum gallery: a post per finished job, tagged with its operation; a post opens on its card', async () => {
    await page.click(`[data-channel="${galleryId}"]`);
    // A forum has no message box: its posts, newest first.
    await expect.poll(() => page.locator('#composer').isVisible()).toBe(false);
    const post = (tag: string) =>
      page.locator('.forum-post', { has: page.locator(`.forum-tag[data-tag="${tag}"]`) });
    await expect.poll(() => post('upscale').count(), { timeout: 30_000 }).toBe(1);
    await expect.poll(() => post('song').count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
    // The filters are the forum's tags; each post shows the tag the bot applied (as the fake recorded it).
    expect(
      await page
        .locator('.forum-filters .forum-tag')
        .evaluateAll((n) => n.map((b) => b.getAttribute('data-tag'))),
    ).toEqual(['upscale', 'song', 'video']);
    const forum = (await (await fetch(`${pg.url}/api/forum?channelId=${galleryId}`)).json()) as {
      tags: { id: string; name: string }[];
    };
    const posts = pg.fake.forumPosts(galleryId);
    const upscalePost = posts.find((p) => p.name.startsWith('upscale'));
    expect(upscalePost?.appliedTags).toEqual([forum.tags.find((t) => t.name === 'upscale')?.id]);
    const upscaleCard = post('upscale');
    expect(await upscaleCard.getAttribute('data-post')).toBe(upscalePost?.id);
    expect(await read(upscaleCard.locator('.forum-post-title'))).toBe('upscale · a cat');
    expect(await read(upscaleCard.locator('.forum-post-preview'))).toMatch(/^Media bot: \S/);
    expect(await upscaleCard.locator('img.forum-thumb').count()).toBe(1);
    expect(await read(post('song').first().locator('.forum-post-title'))).toContain('extend-song');
    // A tag filters the list.
    await page.click('.forum-filters .forum-tag[data-tag="upscale"]');
    await expect.poll(() => page.locator('.forum-post').count()).toBe(1);
    await page.screenshot({ path: `${ARTIFACTS}forum.png` });
    await page.click('.forum-filters .forum-tag[data-tag="upscale"]');
    await expect.poll(() => post('song').count()).toBeGreaterThanOrEqual(1);

    // Opening a post: its title and tag on top, then the bot's card with the four images attached.
    await upscaleCard.click();
    await expect.poll(() => read(page.locator('#channel-title'))).toBe('gallery › upscale · a cat');
    expect(await page.locator('.channel-welcome .forum-tag').allInnerTexts()).toEqual(['upscale']);
    await expect
      .poll(() => lastMessage(page).locator('img:not(.emoji)').count(), { timeout: 10_000 })
      .toBe(4);
    expect(await lastMessage(page).getAttribute('data-id')).toBe(upscalePost?.id);
    // The post is the result card: the four attached images in its media gallery, one 2×2 mosaic.
    expect(await lastMessage(page).locator('.v2-container .mosaic.n4 img').count()).toBe(4);
    expect(await page.locator('#composer').isVisible()).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}forum-post.png` });
    await page.click(`[data-channel="${general}"]`);
    await expect.poll(() => page.locator('#composer').isVisible()).toBe(true);
  });

  it('a Components V2 card (fixture): container, gallery, files with players, section with a button', async () => {
    const { id } = (await post('/api/debug/v2-fixture', { channelId: general, userId: ada })) as {
      id: string;
    };
    expect(pg.fake.messages.get(id)?.flags ?? 0).toBe(1 << 15);
    const card = page.locator(`article[data-id="${id}"]`);
    await expect.poll(() => card.count(), { timeout: 10_000 }).toBe(1);
    const container = card.locator('.v2-container');
    expect(await cssOf(container, 'borderLeftColor')).toBe('rgb(87, 242, 135)');
    expect(await container.locator('h2.md-h2').innerText()).toBe('Song extension');
    expect(await container.innerText()).toContain('[Verse] Emulated lyrics');
    expect(await container.locator('.v2-section .v2-thumbnail img').count()).toBe(1);
    expect(await container.locator('.mosaic.n2 .mosaic-item img').count()).toBe(2);
    const audio = container.locator('.audio-card');
    expect(await audio.locator('.file-name').innerText()).toBe('song-1.wav');
    expect(await audio.locator('.file-size').innerText()).toMatch(/KB$/);
    expect(await audio.locator('audio').count()).toBe(1);
    expect(await container.locator('.file-video video').count()).toBe(1);
    expect(await container.locator('.v2-section .v2-accessory button.btn.primary').innerText()).toBe(
      'Extend song 1',
    );
    expect(await container.locator('.v2-separator.divider').count()).toBe(1);
    expect(await container.locator('button.btn.secondary[disabled]').innerText()).toBe('Retry');
    expect(await card.locator('.msg-content, .embed').count()).toBe(0);
    // Tall enough for the whole card in one piece.
    await page.setViewportSize({ width: 1280, height: 1500 });
    await card.scrollIntoViewIfNeeded();
    await card.screenshot({ path: `${ARTIFACTS}v2-card.png` });
    await page.setViewportSize({ width: 1280, height: 800 });

    const gallery = (await post('/api/debug/v2-fixture', { channelId: general, name: 'gallery' })) as {
      id: string;
    };
    const ten = page.locator(`article[data-id="${gallery.id}"]`);
    await expect.poll(() => ten.locator('.mosaic.n10 .mosaic-item').count(), { timeout: 10_000 }).toBe(10);
    // The first image has the top row to itself, then rows of three.
    const widths = await ten
      .locator('.mosaic-item')
      .evaluateAll((items) =>
        items.map((i) =>
          Math.round(
            (i as unknown as { getBoundingClientRect(): { width: number } }).getBoundingClientRect().width,
          ),
        ),
      );
    expect(widths[0]).toBeGreaterThan(2.5 * (widths[1] ?? 0));
    const spoiler = ten.locator('.spoiler-media');
    expect(await spoiler.getAttribute('class')).not.toContain('revealed');
    await spoiler.click();
    expect(await spoiler.getAttribute('class')).toContain('revealed');
    await ten.screenshot({ path: `${ARTIFACTS}v2-gallery.png` });
  });

  it('the channel opens at the bottom and follows new messages, unless the member scrolled up ("Jump to present")', async () => {
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    await expect.poll(() => atBottom(page)).toBe(true);
    expect(
      await page.locator('#messages').evaluate((s) => (s as unknown as HTMLLike).scrollTop),
    ).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++)
      pg.fake.postUserMessage({ content: `line ${i}`, channelId: general, userId: alice });
    await expect.poll(() => lastMessage(page).innerText()).toContain('line 2');
    await expect.poll(() => atBottom(page)).toBe(true);
    // Scrolled up: new messages do not move the view, and the bar offers the way back.
    await page.locator('#messages').evaluate((s) => ((s as unknown as HTMLLike).scrollTop = 0));
    pg.fake.postUserMessage({ content: 'while you were away', channelId: general, userId: alice });
    await expect.poll(() => page.locator('#jump-present').isVisible()).toBe(true);
    expect(await page.locator('#messages').evaluate((s) => (s as unknown as HTMLLike).scrollTop)).toBe(0);
    await page.click('#jump-present-button');
    await expect.poll(() => atBottom(page)).toBe(true);
    expect(await page.locator('#jump-present').isVisible()).toBe(false);
  });

  it('/tasks: ephemeral, with Discord message links that move inside the page; Dismiss message', async () => {
    await pickCommand(page, 'tasks');
    await page.keyboard.press('Enter');
    const reply = page.locator('article.msg.ephemeral').last();
    await expect
      .poll(() => read(reply.locator('.ephemeral-note')), { timeout: 10_000 })
      .toBe('Only you can see this · Dismiss message');
    expect(await read(reply.locator('.msg-context.used'))).toBe('Ada (admin) used /tasks');
    // Its string select, drawn as a select menu with the bot's placeholder.
    expect(await reply.locator('select.select option').first().textContent()).toMatch(/^Open a job/);
    const link = reply.locator('a[data-jump-message]').first();
    const target = (await link.getAttribute('data-jump-message')) ?? '';
    expect(await link.getAttribute('href')).toMatch(/^https:\/\/discord\.com\/channels\/\d+\/\d+\/\d+$/);
    await link.click();
    await expect
      .poll(() => page.locator(`article[data-id="${target}"]`).getAttribute('class'))
      .toContain('highlight');
    // Dispatched on the button itself: a click at its coordinates can land elsewhere when the list
    // moves under it (images loading while the view follows the bottom).
    await reply.locator('button', { hasText: 'Dismiss message' }).dispatchEvent('click');
    await expect.poll(() => page.locator('article.msg.ephemeral').count()).toBe(0);
  });

  it('a member switched to German: the / picker and the replies speak German; the server language too', async () => {
    await page.selectOption('#locale', 'de');
    try {
      await clearComposer(page);
      await page.fill('#text', '/ext');
      await expect
        .poll(() => page.locator('.picker-item').first().innerText())
        .toContain('Einen von dir erzeugten Song verlängern');
      await pickCommand(page, 'privacy show');
      await page.keyboard.press('Enter');
      const reply = page.locator('article.msg.ephemeral').last();
      await expect
        .poll(() => reply.innerText(), { timeout: 10_000 })
        .toContain('Was der Bot über dich speichert');
      const sent = [...pg.fake.interactions.values()].at(-1);
      expect(sent?.payload['locale']).toBe('de');
      await page.screenshot({ path: `${ARTIFACTS}locale-de.png` });
      await reply.locator('button', { hasText: 'Dismiss message' }).dispatchEvent('click');
      await expect.poll(() => page.locator('article.msg.ephemeral').count()).toBe(0);
      // The server's language is the guild_locale of every interaction from it.
      await page.selectOption('#guild-locale', 'ja');
      await expect.poll(() => pg.fake.guildLocale).toBe('ja');
    } finally {
      await page.selectOption('#guild-locale', 'en-US');
      await page.selectOption('#locale', 'en-US');
    }
    await expect.poll(() => pg.fake.guildLocale).toBe('en-US');
    await clearComposer(page);
    await page.fill('#text', '/ext');
    await expect
      .poll(() => page.locator('.picker-item').first().innerText())
      .toContain('Extend a song you generated');
    await clearComposer(page);
  });

  it('a command with no answer: "Sending command…", then "The application did not respond" after 3 s', async () => {
    const fault = pg.fake.injectFault({
      method: 'POST',
      route: '/interactions/{interaction_id}/{interaction_token}/callback',
      status: 500,
      count: Infinity,
    });
    try {
      await pickCommand(page, 'tasks');
      await page.keyboard.press('Enter');
      const pending = page.locator('article.msg.pending').last();
      await expect
        .poll(() => read(pending.locator('.msg-context.used')), { timeout: 5_000 })
        .toBe('Ada (admin) used /tasks');
      expect(await read(pending.locator('.msg-body'))).toMatch(
        /^(Sending command…|The application did not respond)$/,
      );
      await expect
        .poll(() => pending.locator('.no-response').innerText(), { timeout: 10_000 })
        .toBe('The application did not respond');
      expect(await cssOf(pending.locator('.no-response'), 'color')).toBe('rgb(242, 63, 67)');
    } finally {
      fault.remove();
    }
  });

  it('commands hidden by default_member_permissions are hidden: /settings only for Manage Server', async () => {
    await page.selectOption('#user', alice);
    await clearComposer(page);
    await page.fill('#text', '/');
    await expect.poll(() => page.locator('.picker-label').allInnerTexts()).not.toContain('/settings show');
    expect(await page.locator('.picker-label').allInnerTexts()).toContain('/extend-song');
    await page.fill('#text', '/sett');
    await expect.poll(() => page.locator('.picker-empty').innerText()).toContain('No commands match');
    await page.selectOption('#user', ada);
    await page.fill('#text', '/sett');
    await expect
      .poll(() => page.locator('.picker-label').allInnerTexts())
      .toEqual(['/settings reset', '/settings set', '/settings show']);
    await clearComposer(page);
  });

  it('10 photos dropped on the channel, then submit a training set', async () => {
    await pickCommand(page, 'training-photos start');
    await choose(page, 'ethnicity', /./);
    await chip(page, 'gender').click();
    await page.keyboard.type('fem');
    await page.locator('.picker-item', { hasText: 'Female' }).click();
    const dataTransfer = await page.evaluateHandle((list: string[]) => {
      // Runs in the page (DOM types are not in this project's lib).
      const w = globalThis as unknown as {
        DataTransfer: new () => { items: { add(file: unknown): void } };
        File: new (parts: Uint8Array[], name: string, opts: { type: string }) => unknown;
        atob(s: string): string;
      };
      const dt = new w.DataTransfer();
      list.forEach((b64, i) => {
        const bytes = Uint8Array.from(w.atob(b64), (c) => c.charCodeAt(0));
        dt.items.add(new w.File([bytes], `photo-${i + 1}.png`, { type: 'image/png' }));
      });
      return dt;
    }, photos);
    await page.dispatchEvent('#chat', 'drop', { dataTransfer });
    await expect.poll(() => page.locator('#composer-status').innerText()).toContain('10 file(s) added');
    expect(await page.locator('.opt-chip.filled').count()).toBe(10);
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#messages').innerText(), { timeout: 20_000 })
      .toMatch(/10 \/ 30|10\/30|10 of 30/);
    await pickCommand(page, 'training-photos submit');
    await page.keyboard.press('Enter');
    // Nothing is sent before the member confirms consent (an ephemeral prompt).
    await page.locator('#messages button', { hasText: 'I confirm' }).last().click({ timeout: 20_000 });
    await expect
      .poll(() => page.locator('#messages').innerText(), { timeout: 40_000 })
      .toContain('The prepared images expire');
    // The emulator received the ten dropped photos (cleaned of their metadata first).
    const upload = [...pg.emulator.tasks.values()].find((t) => t.operation === 'upload');
    expect(upload?.params['images']).toBe(10);
    await page.screenshot({ path: `${ARTIFACTS}training.png` });
  });

  it('Discord answering 429s: the final still arrives', async () => {
    await page.check('[data-switch="discord429"]');
    try {
      await pickCommand(page, 'extend-song');
      await chip(page, 'task_id').fill(FIXTURE_SONG_TASK_ID);
      await chip(page, 'song_id').fill(FIXTURE_SONG_IDS[1]);
      await page.keyboard.press('Enter');
      await expect
        .poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 2' }).count(), {
          timeout: 80_000,
        })
        .toBe(1);
      expect(pg.fake.count429).toBeGreaterThan(0);
    } finally {
      await page.uncheck('[data-switch="discord429"]');
    }
  });

  it('restart the bot from the panel: a job started before finishes after it', async () => {
    pg.emulator.nextScenario({ hold: true, steps: [30], stepMs: 200 });
    const tasksBefore = new Set(pg.emulator.tasks.keys());
    await pickCommand(page, 'extend-song');
    await chip(page, 'task_id').fill(FIXTURE_SONG_TASK_ID);
    await chip(page, 'song_id').fill(FIXTURE_SONG_IDS[0]);
    await page.keyboard.press('Enter');
    await expect.poll(() => lastMessage(page).innerText(), { timeout: 20_000 }).toMatch(/30%/);
    const task = [...pg.emulator.tasks.values()].find((t) => !tasksBefore.has(t.id));
    await page.click('#restart');
    await expect
      .poll(() => page.locator('#notes').innerText(), { timeout: 10_000 })
      .toMatch(/exited \(SIGKILL\)[^]*started \(pid/);
    // The task ends only now, while the old process is gone: the new one must pick the job up.
    pg.emulator.finish(task?.id ?? '');
    await expect
      .poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 2' }).count(), {
        timeout: 60_000,
      })
      .toBe(1);
    await page.screenshot({ path: `${ARTIFACTS}after-restart.png` });
    // A SIGKILLed instance's gateway lease and jobs are taken over only once they expire
    // (~15 s with Redis), so this test needs more than the default 30 s on a loaded machine.
  }, 60_000);

  it('is usable at phone width (channels and operator panel behind buttons)', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await expect.poll(() => page.locator('#toggle-channels').isVisible()).toBe(true);
    expect(await page.locator('#channels').isVisible()).toBe(false);
    await page.click('#toggle-ops');
    await expect.poll(() => page.locator('#ops').isVisible()).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}phone.png` });
    await page.click('#toggle-ops');
    await page.click('#toggle-channels');
    await expect.poll(() => page.locator('#channels').isVisible()).toBe(true);
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});

// ---------------------------------------------------------------------------- the command

/** Runs `playground/server.ts` as `npm run playground` does, in a temp dir of its own (TMPDIR). */
function runPlayground(env: Record<string, string>) {
  const { REDIS_URL: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'playground/server.ts'], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}

/** What is left in a temp dir, but tsx's compile cache (`tsx-<uid>`, kept on purpose like `npm run playground` keeps it). */
const leftIn = async (dir: string) => (await readdir(dir)).filter((d) => !/^tsx-\d+$/.test(d));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** A process's children: pid and command line. */
const childrenOf = (pid: number) =>
  spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l))
    .filter((m) => m !== null)
    .map((m) => ({ pid: Number(m[1]), args: m[2] ?? '' }));

describe('npm run playground as a command', { timeout: 90_000 }, () => {
  it('a busy PLAYGROUND_PORT: one line naming PLAYGROUND_PORT, exit code 1, nothing started or left', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as AddressInfo).port;
    const tmp = await mkdtemp(join(tmpdir(), 'playground-test-'));
    try {
      const run = runPlayground({ PLAYGROUND_PORT: String(port), TMPDIR: tmp });
      expect(await run.exited).toBe(1);
      const lines = run.output().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`PLAYGROUND_PORT=${port}`);
      expect(lines[0]).toContain('in use');
      expect(await leftIn(tmp)).toEqual([]);
    } finally {
      busy.close();
      await rm(tmp, { recursive: true, force: true });
    }
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} stops the bot and its redis-server and removes its temp folders`, async () => {
      const tmp = await mkdtemp(join(tmpdir(), 'playground-test-'));
      try {
        const run = runPlayground({ PLAYGROUND_PORT: '0', TMPDIR: tmp });
        await eventually(() => run.output().includes('Playground: http'), 60_000, 'the playground to start');
        const pid = run.child.pid ?? 0;
        const children = childrenOf(pid);
        const bot = children.find((c) => c.args.includes('src/main.ts'));
        if (!bot) throw new Error(`no bot process among ${JSON.stringify(children)}`);
        const left = await readdir(tmp);
        expect(left.some((d) => d.startsWith('mediabot-playground-'))).toBe(true);
        // The private Redis (when redis-server is installed) is a daemon: found by its pid file.
        const redisDir = left.find((d) => d.startsWith('mediabot-redis-'));
        const redisPid = redisDir ? Number(await readFile(join(tmp, redisDir, 'redis.pid'), 'utf8')) : 0;
        if (redisDir) expect(alive(redisPid)).toBe(true);
        run.child.kill(signal);
        expect(await run.exited).toBe(0);
        // The bot was stopped before the playground exited; tsx's esbuild service follows on its own.
        expect(alive(bot.pid)).toBe(false);
        await eventually(() => children.every((c) => !alive(c.pid)), 10_000, 'the children to exit');
        if (redisPid) expect(alive(redisPid)).toBe(false);
        expect(await leftIn(tmp)).toEqual([]);
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
    });
  }
});
