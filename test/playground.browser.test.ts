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
  await poll(() => page.locator('.cmd-chip').innerText()).toBe(`/${label}`);
}

const chip = (page: Page, option: string) => page.locator(`.opt-chip[data-option="${option}"] .opt-value`);

/** Picks an option's suggestion (its choices or the bot's autocomplete) by the text it shows. */
async function choose(page: Page, option: string, shown: string | RegExp) {
  await chip(page, option).click();
  await page.locator('.picker-item', { hasText: shown }).first().click();
}

/**
 * expect.poll with a timeout for a loaded 2-core machine (its default is 1 s): a condition the page
 * reaches, waited for; a shorter or longer one where a test says so.
 */
const poll = <T>(fn: () => T | Promise<T>, options: { timeout?: number; interval?: number } = {}) =>
  expect.poll(fn, { timeout: 15_000, ...options });

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
  let bob = '';
  let mod = '';

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
    bob = state.users.find((u) => u.key === 'bob')?.id ?? '';
    mod = state.users.find((u) => u.key === 'mod')?.id ?? '';
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
    await poll(() => mine.innerText(), { timeout: 10_000 }).toContain('[Verse]');
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
    await poll(() => page.locator('.picker-label').allInnerTexts()).toEqual([
      '/extend-song',
      '/extend-video',
    ]);
    expect(await page.locator('.picker-item').first().innerText()).toContain('Extend a song you generated');
    await page.screenshot({ path: `${ARTIFACTS}picker.png` });
    await page.locator('.picker-item', { hasText: '/extend-song' }).click();
    // Required options first, as chips; the first has the focus and its description shows.
    expect(
      await page.locator('.opt-chip').evaluateAll((n) => n.map((c) => c.getAttribute('data-option'))),
    ).toEqual(['task_id', 'song_id']);
    await poll(() => page.locator('#picker-head').innerText()).toContain('The song task to extend');
    await page.keyboard.type(FIXTURE_SONG_TASK_ID);
    // The bot's autocomplete answers for song_id: the two songs of that task.
    await chip(page, 'song_id').click();
    await poll(() => page.locator('.picker-item').allInnerTexts(), { timeout: 10_000 }).toEqual([
      expect.stringContaining(FIXTURE_SONG_IDS[0]),
      expect.stringContaining(FIXTURE_SONG_IDS[1]),
    ]);
    await page.screenshot({ path: `${ARTIFACTS}autocomplete.png` });
    // Held at 40 % until the page shows it: on a busy machine the whole progress phase of
    // a free-running task can fall between two edits, and the final then replaces it.
    pg.emulator.nextScenario({ hold: true, steps: [40], stepMs: 200 });
    const tasksBefore = new Set(pg.emulator.tasks.keys());
    await page.locator('.picker-item', { hasText: FIXTURE_SONG_IDS[0] }).click();
    await page.keyboard.press('Enter');
    // Sent: back to one empty line.
    await poll(() => page.locator('.opt-chip').count()).toBe(0);

    await poll(() => lastMessage(page).innerText(), { timeout: 20_000 }).toMatch(/40%/);
    expect(await read(lastMessage(page).locator('.msg-context.used'))).toBe('Ada (admin) used /extend-song');
    const task = [...pg.emulator.tasks.values()].find((t) => !tasksBefore.has(t.id));
    pg.emulator.finish(task?.id ?? '');
    await poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 2' }).count(), {
      timeout: 60_000,
    }).toBe(1);
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
    await poll(() => job.locator('.job-status').textContent(), { timeout: 10_000 }).toBe('finished');
    expect(await job.locator('li.webhook').allTextContents()).toContainEqual(
      expect.stringContaining('final'),
    );
    await page.screenshot({ path: `${ARTIFACTS}extend-song.png` });
    // The README's screenshot, refreshed on demand (UPDATE_SCREENSHOTS=1 npm test).
    if (process.env['UPDATE_SCREENSHOTS'] === '1') {
      await mkdir(DOCS, { recursive: true });
      // The finished job from its "Ada used /extend-song" header down, beside the operator panel.
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
    await poll(() => messages(page).count(), { timeout: 10_000 }).toBeGreaterThan(before);
    await poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 1' }).count(), {
      timeout: 30_000,
    }).toBe(1);
  });

  it('/upscale with an image: the four results once, as one gallery in the card; the input image is not a result', async () => {
    await pickCommand(page, 'upscale');
    await chip(page, 'prompt').fill('a cat');
    await page.setInputFiles('#file-input', { name: 'input-cat.png', mimeType: 'image/png', buffer: PNG });
    await poll(() => page.locator('.opt-chip[data-option="image"]').innerText()).toContain('input-cat.png');
    await page.click('#text');
    await page.keyboard.press('Enter');
    await poll(() => lastMessage(page).locator('button', { hasText: 'Upscale again' }).count(), {
      timeout: 30_000,
    }).toBe(1);
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
    await poll(() => page.locator('#composer').isVisible()).toBe(false);
    const post = (tag: string) =>
      page.locator('.forum-post', { has: page.locator(`.forum-tag[data-tag="${tag}"]`) });
    await poll(() => post('upscale').count(), { timeout: 30_000 }).toBe(1);
    await poll(() => post('song').count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
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
    await poll(() => page.locator('.forum-post').count()).toBe(1);
    await page.screenshot({ path: `${ARTIFACTS}forum.png` });
    await page.click('.forum-filters .forum-tag[data-tag="upscale"]');
    await poll(() => post('song').count()).toBeGreaterThanOrEqual(1);

    // Opening a post: its title and tag on top, then the bot's card with the four images attached.
    await upscaleCard.click();
    await poll(() => read(page.locator('#channel-title'))).toBe('gallery › upscale · a cat');
    // The title comes first; the post's welcome (its tags) with its messages, a moment later.
    await poll(() => page.locator('.channel-welcome .forum-tag').allInnerTexts()).toEqual(['upscale']);
    await poll(() => lastMessage(page).locator('img:not(.emoji)').count(), { timeout: 10_000 }).toBe(4);
    expect(await lastMessage(page).getAttribute('data-id')).toBe(upscalePost?.id);
    // The post is the result card: the four attached images in its media gallery, one 2×2 mosaic.
    expect(await lastMessage(page).locator('.v2-container .mosaic.n4 img').count()).toBe(4);
    expect(await page.locator('#composer').isVisible()).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}forum-post.png` });
    await page.click(`[data-channel="${general}"]`);
    await poll(() => page.locator('#composer').isVisible()).toBe(true);
  });

  it('a Components V2 card (fixture): container, gallery, files with players, section with a button', async () => {
    // In #general whatever the test before left open (a failure there left a forum post open
    // and failed this test too).
    await page.click(`[data-channel="${general}"]`);
    await poll(() => page.locator(`.channel-welcome[data-welcome="${general}"]`).count()).toBe(1);
    const { id } = (await post('/api/debug/v2-fixture', { channelId: general, userId: ada })) as {
      id: string;
    };
    expect(pg.fake.messages.get(id)?.flags ?? 0).toBe(1 << 15);
    const card = page.locator(`article[data-id="${id}"]`);
    await poll(() => card.count(), { timeout: 10_000 }).toBe(1);
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
    await poll(() => ten.locator('.mosaic.n10 .mosaic-item').count(), { timeout: 10_000 }).toBe(10);
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
    await poll(() => atBottom(page)).toBe(true);
    expect(
      await page.locator('#messages').evaluate((s) => (s as unknown as HTMLLike).scrollTop),
    ).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++)
      pg.fake.postUserMessage({ content: `line ${i}`, channelId: general, userId: alice });
    await poll(() => lastMessage(page).innerText()).toContain('line 2');
    await poll(() => atBottom(page)).toBe(true);
    // Scrolled up: new messages do not move the view, and the bar offers the way back.
    await page.locator('#messages').evaluate((s) => ((s as unknown as HTMLLike).scrollTop = 0));
    pg.fake.postUserMessage({ content: 'while you were away', channelId: general, userId: alice });
    await poll(() => page.locator('#jump-present').isVisible()).toBe(true);
    expect(await page.locator('#messages').evaluate((s) => (s as unknown as HTMLLike).scrollTop)).toBe(0);
    await page.click('#jump-present-button');
    await poll(() => atBottom(page)).toBe(true);
    expect(await page.locator('#jump-present').isVisible()).toBe(false);
  });

  it('/tasks: ephemeral, with Discord message links that move inside the page; Dismiss message', async () => {
    await pickCommand(page, 'tasks');
    await page.keyboard.press('Enter');
    const reply = page.locator('article.msg.ephemeral').last();
    await poll(() => read(reply.locator('.ephemeral-note')), { timeout: 10_000 }).toBe(
      'Only you can see this · Dismiss message',
    );
    expect(await read(reply.locator('.msg-context.used'))).toBe('Ada (admin) used /tasks');
    // Its string select, drawn as a select menu with the bot's placeholder.
    expect(await reply.locator('select.select option').first().textContent()).toMatch(/^Open a job/);
    const link = reply.locator('a[data-jump-message]').first();
    const target = (await link.getAttribute('data-jump-message')) ?? '';
    expect(await link.getAttribute('href')).toMatch(/^https:\/\/discord\.com\/channels\/\d+\/\d+\/\d+$/);
    await link.click();
    await poll(() => page.locator(`article[data-id="${target}"]`).getAttribute('class')).toContain(
      'highlight',
    );
    // Dispatched on the button itself: a click at its coordinates can land elsewhere when the list
    // moves under it (images loading while the view follows the bottom).
    await reply.locator('button', { hasText: 'Dismiss message' }).dispatchEvent('click');
    await poll(() => page.locator('article.msg.ephemeral').count()).toBe(0);
  });

  it('a member switched to German: the / picker and the replies speak German; the server language too', async () => {
    await page.selectOption('#locale', 'de');
    try {
      await clearComposer(page);
      await page.fill('#text', '/ext');
      await poll(() => page.locator('.picker-item').first().innerText()).toContain(
        'Einen von dir erzeugten Song verlängern',
      );
      await pickCommand(page, 'privacy show');
      await page.keyboard.press('Enter');
      const reply = page.locator('article.msg.ephemeral').last();
      await poll(() => reply.innerText(), { timeout: 10_000 }).toContain('Was der Bot über dich speichert');
      const sent = [...pg.fake.interactions.values()].at(-1);
      expect(sent?.payload['locale']).toBe('de');
      await page.screenshot({ path: `${ARTIFACTS}locale-de.png` });
      // The client's own words are German too.
      await reply.locator('button', { hasText: 'Nachricht verwerfen' }).dispatchEvent('click');
      await poll(() => page.locator('article.msg.ephemeral').count()).toBe(0);
      // The server's language is the guild_locale of every interaction from it.
      await page.selectOption('#guild-locale', 'ja');
      await poll(() => pg.fake.guildLocale).toBe('ja');
    } finally {
      await page.selectOption('#guild-locale', 'en-US');
      await page.selectOption('#locale', 'en-US');
    }
    await poll(() => pg.fake.guildLocale).toBe('en-US');
    await clearComposer(page);
    await page.fill('#text', '/ext');
    await poll(() => page.locator('.picker-item').first().innerText()).toContain(
      'Extend a song you generated',
    );
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
      await poll(() => read(pending.locator('.msg-context.used')), { timeout: 5_000 }).toBe(
        'Ada (admin) used /tasks',
      );
      expect(await read(pending.locator('.msg-body'))).toMatch(
        /^(Sending command…|The application did not respond)$/,
      );
      await poll(() => pending.locator('.no-response').innerText(), { timeout: 10_000 }).toBe(
        'The application did not respond',
      );
      expect(await cssOf(pending.locator('.no-response'), 'color')).toBe('rgb(242, 63, 67)');
    } finally {
      fault.remove();
    }
  });

  it('commands hidden by default_member_permissions are hidden: /settings only for Manage Server', async () => {
    await page.selectOption('#user', alice);
    await clearComposer(page);
    await page.fill('#text', '/');
    await poll(() => page.locator('.picker-label').allInnerTexts()).not.toContain('/settings show');
    expect(await page.locator('.picker-label').allInnerTexts()).toContain('/extend-song');
    await page.fill('#text', '/sett');
    await poll(() => page.locator('.picker-empty').innerText()).toContain('No commands match');
    await page.selectOption('#user', ada);
    await page.fill('#text', '/sett');
    await poll(() => page.locator('.picker-label').allInnerTexts()).toEqual([
      '/settings reset',
      '/settings set',
      '/settings show',
    ]);
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
    await poll(() => page.locator('#composer-status').innerText()).toContain('10 file(s) added');
    expect(await page.locator('.opt-chip.filled').count()).toBe(10);
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#messages').innerText(), { timeout: 20_000 }).toMatch(
      /10 \/ 30|10\/30|10 of 30/,
    );
    await pickCommand(page, 'training-photos submit');
    await page.keyboard.press('Enter');
    // Nothing is sent before the member confirms consent (an ephemeral prompt).
    await page.locator('#messages button', { hasText: 'I confirm' }).last().click({ timeout: 20_000 });
    await poll(() => page.locator('#messages').innerText(), { timeout: 40_000 }).toContain(
      'The prepared images expire',
    );
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
      await poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 2' }).count(), {
        timeout: 80_000,
      }).toBe(1);
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
    await poll(() => lastMessage(page).innerText(), { timeout: 20_000 }).toMatch(/30%/);
    const task = [...pg.emulator.tasks.values()].find((t) => !tasksBefore.has(t.id));
    await page.click('#restart');
    await poll(() => page.locator('#notes').innerText(), { timeout: 10_000 }).toMatch(
      /exited \(SIGKILL\)[^]*started \(pid/,
    );
    // The task ends only now, while the old process is gone: the new one must pick the job up.
    pg.emulator.finish(task?.id ?? '');
    await poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 2' }).count(), {
      timeout: 60_000,
    }).toBe(1);
    await page.screenshot({ path: `${ARTIFACTS}after-restart.png` });
    // A SIGKILLed instance's gateway lease and jobs are taken over only once they expire
    // (~15 s with Redis), so this test needs more than the default 30 s on a loaded machine.
  }, 60_000);

  it('the composer: Enter and Tab pick a highlighted optional option; task_id offers the seeded parent to a member with no jobs', async () => {
    await page.selectOption('#user', bob);
    try {
      // Bob has run nothing: typing the advertised first step, the bot offers it from the service.
      await pickCommand(page, 'extend-song');
      await page.keyboard.type(FIXTURE_SONG_TASK_ID);
      // The bot was restarted by the test before: until the new process holds the gateway an
      // autocomplete goes unanswered, so a miss types the last character again (a new request).
      await poll(
        async () => {
          const texts = await page.locator('.picker-item').allInnerTexts();
          if (!texts.some((t) => t.includes(FIXTURE_SONG_TASK_ID))) {
            await page.keyboard.press('Backspace');
            await page.keyboard.type(FIXTURE_SONG_TASK_ID.slice(-1));
          }
          return texts;
        },
        { timeout: 60_000, interval: 2_000 },
      ).toContainEqual(expect.stringContaining(FIXTURE_SONG_TASK_ID));
      await page.locator('.picker-item', { hasText: FIXTURE_SONG_TASK_ID }).click();
      await poll(() => page.locator('.picker-item').allInnerTexts(), { timeout: 20_000 }).toContainEqual(
        expect.stringContaining(FIXTURE_SONG_IDS[0]),
      );
      await page.locator('.picker-item', { hasText: FIXTURE_SONG_IDS[0] }).click();
      // The required options are filled: the optional ones are offered, none highlighted.
      await poll(() => page.locator('.picker-aside').allInnerTexts()).toContain('optional');
      expect(await page.locator('.picker-item.active').count()).toBe(0);
      const sent = pg.fake.interactions.size;
      await page.keyboard.press('ArrowDown');
      const first = (await page.locator('.picker-item.active .picker-label').innerText()).trim();
      await page.keyboard.press('Enter');
      // Picked, not sent: its chip is there and has the focus.
      await poll(() => page.locator(`.opt-chip[data-option="${first}"]`).count()).toBe(1);
      expect(
        await page.evaluate(
          () =>
            (globalThis as unknown as { document: { activeElement: { dataset: { option?: string } } } })
              .document.activeElement.dataset.option,
        ),
      ).toBe(first);
      // Backspace on the empty optional option removes it; Tab on the line then picks the (first)
      // optional option offered and stays in the message box.
      await page.keyboard.press('Backspace');
      await poll(() => page.locator(`.opt-chip[data-option="${first}"]`).count()).toBe(0);
      await page.click('#text');
      await poll(() => page.locator('.picker-item').count()).toBeGreaterThan(0);
      const next = (await page.locator('.picker-item .picker-label').first().innerText()).trim();
      await page.keyboard.press('Tab');
      await poll(() => page.locator(`.opt-chip[data-option="${next}"]`).count()).toBe(1);
      expect(
        await page.evaluate(() =>
          Boolean(
            (
              globalThis as unknown as {
                document: { activeElement: { closest(s: string): unknown } };
              }
            ).document.activeElement.closest('#composer'),
          ),
        ),
      ).toBe(true);
      // Nothing went to the bot but autocompletes.
      expect([...pg.fake.interactions.values()].slice(sent).filter((i) => i.type !== 4)).toHaveLength(0);
    } finally {
      await clearComposer(page);
      await page.selectOption('#user', ada);
    }
  }, 120_000);

  it("the client's own words in the member's language, Japanese drawn with the served font", async () => {
    // Every language has every word (a string, so that the test runner leaves the page's import alone).
    const missing = (await page.evaluate(`import('/i18n.js').then(({ CLIENT_STRINGS: all }) =>
      Object.entries(all).flatMap(([locale, words]) =>
        Object.keys(all['en-US']).filter((k) => !words[k]).map((k) => locale + ':' + k)))`)) as string[];
    expect(missing).toEqual([]);
    for (const [locale, note, today] of [
      ['de', 'Nur du kannst das sehen · Nachricht verwerfen', 'Heute um'],
      ['ja', 'これはあなただけに表示されています · メッセージを削除', '今日'],
    ] as const) {
      await page.selectOption('#locale', locale);
      try {
        await poll(() => page.locator('html').getAttribute('lang')).toBe(locale);
        await pickCommand(page, 'tasks');
        await page.keyboard.press('Enter');
        const reply = page.locator('article.msg.ephemeral').last();
        await poll(() => read(reply.locator('.ephemeral-note')), { timeout: 20_000 }).toBe(note);
        expect(await read(reply.locator('.msg-time'))).toContain(today);
        expect(await page.locator('#text').getAttribute('placeholder')).not.toContain('Message #');
        if (locale === 'ja') {
          // The Japanese slices of Noto Sans JP come from the playground itself.
          const loaded = await page.evaluate(
            `document.fonts.load('16px "Noto Sans JP"', 'これは').then((f) => f.length)`,
          );
          expect(loaded).toBeGreaterThan(0);
          await page.screenshot({ path: `${ARTIFACTS}locale-ja.png` });
        }
        const id = (await reply.getAttribute('data-id')) ?? '';
        await reply.locator('button.link-button').dispatchEvent('click');
        // A live re-render can swap the message's element under the click: while it stays, click again.
        const dismissed = page.locator(`article[data-id="${id}"]`);
        await poll(
          async () => {
            const left = await dismissed.count();
            if (left > 0)
              await dismissed
                .locator('button.link-button')
                .dispatchEvent('click', undefined, { timeout: 1_000 })
                .catch(() => undefined);
            return left;
          },
          { timeout: 30_000, interval: 1_000 },
        ).toBe(0);
      } finally {
        await page.selectOption('#locale', 'en-US');
      }
    }
    await poll(() => page.locator('html').getAttribute('lang')).toBe('en-US');
  });

  it('mentions and replies drawn on render; forum previews keep their lines; the sidebar lists followed threads only', async () => {
    const posts = pg.fake.forumPosts(galleryId).filter((p) => !p.deleted);
    const postId = posts[0]?.id ?? '';
    expect(postId).not.toBe('');
    // A thread mention names the thread, and follows a rename without switching channel.
    const said = pg.fake.postUserMessage({
      content: `**see** <#${postId}> and <@${ada}>`,
      channelId: general,
      userId: alice,
    });
    const mention = page.locator(`article[data-id="${said.id}"] a.mention`);
    await poll(() => read(mention), { timeout: 10_000 }).toBe(posts[0]?.name);
    const bot = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${pg.fake.apiUrl}/v10${path}`, {
        method,
        headers: { authorization: `Bot ${pg.fake.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBeLessThan(300);
      return (await res.json()) as { id: string };
    };
    await bot('PATCH', `/channels/${postId}`, { name: 'renamed post' });
    await poll(() => read(mention), { timeout: 10_000 }).toBe('renamed post');
    expect(await page.locator('a.mention', { hasText: 'unknown' }).count()).toBe(0);
    // A reply previews the replied-to message as drawn: bold without its stars, the mention by name.
    const reply = await bot('POST', `/channels/${general}/messages`, {
      content: 'a reply',
      message_reference: { message_id: said.id },
      allowed_mentions: { parse: [] },
    });
    const snippet = page.locator(`article[data-id="${reply.id}"] .reply-snippet`);
    await poll(() => read(snippet), { timeout: 10_000 }).toBe('see renamed post and @Ada (admin)');
    expect(await snippet.locator('strong').innerText()).toBe('see');

    // The sidebar: Ada follows no gallery post; Alice posts in one and then follows it.
    expect(await page.locator(`.thread[data-channel="${postId}"]`).count()).toBe(0);
    pg.fake.postUserMessage({ content: 'nice one', channelId: postId, userId: alice });
    await page.selectOption('#user', alice);
    try {
      await poll(() => page.locator(`.thread[data-channel="${postId}"]`).count(), { timeout: 10_000 }).toBe(
        1,
      );
    } finally {
      await page.selectOption('#user', ada);
    }
    await poll(() => page.locator(`.thread[data-channel="${postId}"]`).count()).toBe(0);

    // The forum's post previews keep the first message's line breaks.
    await page.click(`[data-channel="${galleryId}"]`);
    const preview = page.locator('.forum-post .forum-post-preview').first();
    await poll(() => preview.count(), { timeout: 10_000 }).toBe(1);
    expect(await preview.innerText()).toMatch(/\S\n\S/);
    await page.click(`[data-channel="${general}"]`);
    await poll(() => page.locator('#composer').isVisible()).toBe(true);
  });

  it("a moderator uses Remove result from a message's Apps menu (right-click); a member is not offered it", async () => {
    // The newest finished job in #general, and its gallery post.
    const job = [...pg.fake.channelMessages(general)]
      .reverse()
      .find((m) => JSON.stringify(m.data['components'] ?? []).includes('Extend song 2'));
    expect(job).toBeDefined();
    const jobId = job?.id ?? '';
    const postsBefore = pg.fake.forumPosts(galleryId).filter((p) => !p.deleted).length;
    const article = page.locator(`article[data-id="${jobId}"]`);
    const apps = () => page.locator('#context-menu [data-command] .menu-label').allInnerTexts();

    // Alice: no Manage Messages, so no Remove result (and the local Discord refuses it too).
    await page.selectOption('#user', alice);
    await poll(() => article.count(), { timeout: 10_000 }).toBe(1);
    await article.click({ button: 'right', position: { x: 200, y: 30 } });
    await poll(() => page.locator('#context-menu').count()).toBe(1);
    expect(await apps()).not.toContain('Remove result');
    await page.keyboard.press('Escape');
    await poll(() => page.locator('#context-menu').count()).toBe(0);
    const refused = await fetch(`${pg.url}/api/message-command`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userId: alice, channelId: general, name: 'Remove result', messageId: jobId }),
    });
    expect(refused.status).toBe(403);

    // Mo, a moderator: right-click → Apps → Remove result.
    await page.selectOption('#user', mod);
    try {
      await poll(() => page.locator('#user-perms').innerText()).toBe('Manage Messages');
      await article.click({ button: 'right', position: { x: 200, y: 30 } });
      await page.locator('#context-menu [data-menu="apps"]').click();
      await poll(apps).toContain('Remove result');
      await page.screenshot({ path: `${ARTIFACTS}apps-menu.png` });
      await page.locator('#context-menu [data-command="Remove result"]').click();
      const answer = page.locator('article.msg.ephemeral').last();
      await poll(() => read(answer.locator('.msg-context.used')), { timeout: 20_000 }).toBe(
        'Mo (moderator) used Remove result',
      );
      await poll(() => answer.innerText(), { timeout: 30_000 }).toContain('its gallery post was deleted');
      // The bot holds the invite's Manage Threads: the post is gone.
      expect(pg.fake.forumPosts(galleryId).filter((p) => !p.deleted).length).toBe(postsBefore - 1);
      const sent = [...pg.fake.interactions.values()].at(-1)?.payload['data'] as Record<string, unknown>;
      expect(sent['type']).toBe(3);
      expect(sent['target_id']).toBe(jobId);
    } finally {
      await page.selectOption('#user', ada);
    }
  });

  /** The message commands the open message menu lists under Apps. */
  const appsListed = () => page.locator('#context-menu [data-command] .menu-label').allInnerTexts();
  /** Right-click on a message → Apps → `name`. */
  async function useFromApps(messageId: string, name: string) {
    const article = page.locator(`article[data-id="${messageId}"]`);
    await poll(() => article.count(), { timeout: 20_000 }).toBe(1);
    await article.click({ button: 'right', position: { x: 200, y: 20 } });
    await page.locator('#context-menu [data-menu="apps"]').click();
    await poll(appsListed).toContain(name);
    await page.locator(`#context-menu [data-command="${name}"]`).click();
  }
  /** The newest message `userId` posted in a channel (once the local Discord has it). */
  const newestBy = (channelId: string, userId: string) =>
    [...pg.fake.channelMessages(channelId)]
      .reverse()
      .find((m) => (m.data['author'] as { id?: string } | undefined)?.id === userId);
  const upscaleTasks = () => [...pg.emulator.tasks.values()].filter((t) => t.operation === 'upscale');

  it('a member posts an image (+ button), then Apps → Upscale image: the prompt form, then the upscaled images', async () => {
    await page.selectOption('#user', alice);
    try {
      await clearComposer(page);
      // No command picked: the file is attached to Alice's own message, previewed above the line.
      await page.setInputFiles('#file-input', { name: 'my-cat.png', mimeType: 'image/png', buffer: PNG });
      const upload = page.locator('#uploads .upload[data-filename="my-cat.png"]');
      await poll(() => upload.count()).toBe(1);
      expect(await upload.locator('img.upload-preview').count()).toBe(1);
      await page.fill('#text', 'my cat, a bit blurry');
      await page.screenshot({ path: `${ARTIFACTS}message-with-file.png` });
      await page.keyboard.press('Enter');
      await poll(() => newestBy(general, alice)?.data['content']).toBe('my cat, a bit blurry');
      const posted = newestBy(general, alice);
      const files = (posted?.data['attachments'] ?? []) as { filename?: string; content_type?: string }[];
      expect(files.map((f) => [f.filename, f.content_type])).toEqual([['my-cat.png', 'image/png']]);
      const postedId = posted?.id ?? '';
      await poll(() => page.locator('#uploads').isHidden()).toBe(true);
      await poll(() =>
        page.locator(`article[data-id="${postedId}"] img:not(.emoji)`).count(),
      ).toBeGreaterThan(0);

      const tasksBefore = upscaleTasks().length;
      await useFromApps(postedId, 'Upscale image');
      // Discord sent the message command with the message (and its attachment) resolved.
      const sent = [...pg.fake.interactions.values()].at(-1)?.payload['data'] as Record<string, unknown>;
      expect(sent['type']).toBe(3);
      expect(sent['target_id']).toBe(postedId);
      expect(JSON.stringify(sent['resolved'])).toContain('my-cat.png');
      // The bot answers with its prompt form.
      await poll(() => page.locator('#modal').isVisible(), { timeout: 20_000 }).toBe(true);
      expect(await page.locator('#modal-title').innerText()).toBe('Upscale this image');
      await page.locator('#modal-fields textarea[name="prompt"]').fill('a sharp photo of a cat');
      await page.locator('#modal-form button[type="submit"]').click();
      await poll(() => page.locator('#modal').isVisible()).toBe(false);

      // The job runs to its card: the upscaled images of Alice's image, with her prompt.
      const card = page
        .locator('#message-list article.msg')
        .filter({ has: page.locator('button', { hasText: 'Upscale again' }) })
        .filter({ hasText: 'a sharp photo of a cat' });
      await poll(() => card.count(), { timeout: 60_000 }).toBe(1);
      expect(await card.locator('.v2-container .mosaic.n4 img').count()).toBe(4);
      expect(await card.locator('a', { hasText: 'my-cat.png' }).count()).toBe(1);
      expect(await card.innerText()).toContain('Alice');
      const tasks = upscaleTasks();
      expect(tasks.length).toBe(tasksBefore + 1);
      expect(JSON.stringify(tasks.at(-1)?.params)).toContain('a sharp photo of a cat');
      expect(JSON.stringify(tasks.at(-1)?.params)).toContain('my-cat.png');
      await page.screenshot({ path: `${ARTIFACTS}upscale-image.png` });
    } finally {
      await page.selectOption('#user', ada);
    }
  });

  it('Upscale image on a message without an image: the reason, only to the member, and nothing starts', async () => {
    await page.selectOption('#user', alice);
    try {
      await clearComposer(page);
      await page.fill('#text', 'no picture in this one');
      await page.keyboard.press('Enter');
      await poll(() => newestBy(general, alice)?.data['content']).toBe('no picture in this one');
      const postedId = newestBy(general, alice)?.id ?? '';
      const tasksBefore = pg.emulator.tasks.size;
      const botMessagesBefore = pg.fake
        .channelMessages(general)
        .filter((m) => !m.ephemeral && (m.data['author'] as { bot?: boolean } | undefined)?.bot).length;

      await useFromApps(postedId, 'Upscale image');
      const answer = page.locator('article.msg.ephemeral').last();
      await poll(() => answer.innerText(), { timeout: 20_000 }).toContain(
        'This message has no image to upscale',
      );
      expect(await answer.innerText()).toContain('Only you can see this');
      expect(await page.locator('#modal').isVisible()).toBe(false);
      // Nothing started: no task at the service, no public message from the bot.
      expect(pg.emulator.tasks.size).toBe(tasksBefore);
      expect(
        pg.fake
          .channelMessages(general)
          .filter((m) => !m.ephemeral && (m.data['author'] as { bot?: boolean } | undefined)?.bot).length,
      ).toBe(botMessagesBefore);
    } finally {
      await page.selectOption('#user', ada);
    }
  });

  it('an image link a member posts: Discord embeds it, and Upscale image takes the embedded image', async () => {
    // A picture the emulator serves: the first upscaled image of the card above.
    const cards = JSON.stringify(pg.fake.channelMessages(general).map((m) => m.data));
    const link = new RegExp(`${pg.emulator.url}/files/[^"\\s]+?\\.png`).exec(cards)?.[0] ?? '';
    expect(link).not.toBe('');
    await page.selectOption('#user', alice);
    try {
      await clearComposer(page);
      await page.fill('#text', `this one again: ${link}`);
      await page.keyboard.press('Enter');
      await poll(() => newestBy(general, alice)?.data['content']).toBe(`this one again: ${link}`);
      const posted = newestBy(general, alice);
      expect(posted?.data['embeds']).toEqual([
        { type: 'image', url: link, thumbnail: { url: link, proxy_url: link } },
      ]);
      const postedId = posted?.id ?? '';
      // Drawn once: the embed's picture, not also the page's own link preview.
      const pictures = page.locator(`article[data-id="${postedId}"] img:not(.emoji)`);
      await poll(() => pictures.count(), { timeout: 20_000 }).toBe(1);

      const tasksBefore = upscaleTasks().length;
      await useFromApps(postedId, 'Upscale image');
      await poll(() => page.locator('#modal').isVisible(), { timeout: 20_000 }).toBe(true);
      await page.locator('#modal-fields textarea[name="prompt"]').fill('the same, from a link');
      await page.locator('#modal-form button[type="submit"]').click();
      const card = page
        .locator('#message-list article.msg')
        .filter({ has: page.locator('button', { hasText: 'Upscale again' }) })
        .filter({ hasText: 'the same, from a link' });
      await poll(() => card.count(), { timeout: 60_000 }).toBe(1);
      expect(upscaleTasks().length).toBe(tasksBefore + 1);
      expect(JSON.stringify(upscaleTasks().at(-1)?.params)).toContain(link);
    } finally {
      await page.selectOption('#user', ada);
    }
  });

  it("where the bot is not installed: an image dropped on the channel, then Upscale image runs through the member's own install", async () => {
    const lounge = pg.fake.channelIdByName('lounge');
    await page.selectOption('#user', mod);
    try {
      await page.click(`[data-channel="${lounge}"]`);
      await poll(() => page.locator('#channel-title').innerText()).toContain('lounge');
      // Dropped with no command picked: attached to Mo's message.
      const dataTransfer = await page.evaluateHandle((b64: string) => {
        const w = globalThis as unknown as {
          DataTransfer: new () => { items: { add(file: unknown): void } };
          File: new (parts: Uint8Array[], name: string, opts: { type: string }) => unknown;
          atob(s: string): string;
        };
        const dt = new w.DataTransfer();
        dt.items.add(
          new w.File([Uint8Array.from(w.atob(b64), (c) => c.charCodeAt(0))], 'lounge-dog.png', {
            type: 'image/png',
          }),
        );
        return dt;
      }, photos[3] ?? '');
      await page.dispatchEvent('#chat', 'drop', { dataTransfer });
      await poll(() => page.locator('#uploads .upload[data-filename="lounge-dog.png"]').count()).toBe(1);
      await page.click('#text');
      await page.keyboard.press('Enter');
      await poll(() => newestBy(lounge, mod)?.id).toBeDefined();
      const postedId = newestBy(lounge, mod)?.id ?? '';

      // The server never installed the bot: its own commands (Remove result) are not offered, even
      // to a moderator; Upscale image comes with Mo's own install.
      const article = page.locator(`article[data-id="${postedId}"]`);
      await poll(() => article.count(), { timeout: 20_000 }).toBe(1);
      await article.click({ button: 'right', position: { x: 200, y: 20 } });
      await page.locator('#context-menu [data-menu="apps"]').click();
      await poll(appsListed).toContain('Upscale image');
      expect(await appsListed()).not.toContain('Remove result');
      await page.keyboard.press('Escape');
      await poll(() => page.locator('#context-menu').count()).toBe(0);

      await useFromApps(postedId, 'Upscale image');
      await poll(() => page.locator('#modal').isVisible(), { timeout: 20_000 }).toBe(true);
      await page.locator('#modal-fields textarea[name="prompt"]').fill('a dog in the lounge');
      await page.locator('#modal-form button[type="submit"]').click();
      const card = page
        .locator('#message-list article.msg')
        .filter({ has: page.locator('button', { hasText: 'Upscale again' }) })
        .filter({ hasText: 'a dog in the lounge' });
      await poll(() => card.count(), { timeout: 60_000 }).toBe(1);
      expect(await card.locator('.v2-container .mosaic.n4 img').count()).toBe(4);
      // A personal job: answered through the interaction only, never with the bot token there.
      expect(pg.fake.requests.filter((r) => r.auth === 'bot' && r.path.includes(lounge))).toEqual([]);
    } finally {
      await page.selectOption('#user', ada);
      await page.click(`[data-channel="${general}"]`);
      await poll(() => page.locator('#composer').isVisible()).toBe(true);
    }
  });

  it("where the bot is not installed and in the DM with it, the / picker offers what the member's own install brings", async () => {
    const lounge = pg.fake.channelIdByName('lounge');
    const dm = pg.fake.dmChannelId(ada);
    const labels = () => page.locator('.picker-label').allInnerTexts();
    try {
      // Ada manages the playground server, not Elsewhere: /settings (that server's command) is not
      // offered there, the user-installable commands are.
      await page.click(`[data-channel="${lounge}"]`);
      await poll(() => page.locator('#channel-title').innerText()).toContain('lounge');
      await clearComposer(page);
      await page.fill('#text', '/');
      await poll(labels).toContain('/upscale');
      expect(await labels()).toContain('/tasks');
      expect((await labels()).filter((l) => l.startsWith('/settings'))).toEqual([]);
      // The DM with the bot: no /settings either.
      await clearComposer(page);
      await page.click(`[data-channel="${dm}"]`);
      await poll(() => page.locator(`[data-channel="${dm}"]`).getAttribute('aria-current')).toBe('true');
      await page.fill('#text', '/');
      await poll(labels).toContain('/privacy show');
      expect((await labels()).filter((l) => l.startsWith('/settings'))).toEqual([]);
      await clearComposer(page);
    } finally {
      await page.click(`[data-channel="${general}"]`);
      await poll(() => page.locator('#composer').isVisible()).toBe(true);
    }
  });

  it("/privacy delete removes the member's gallery posts (the bot holds the invite's Manage Threads)", async () => {
    const mine = () =>
      pg.fake
        .forumPosts(galleryId)
        .filter((p) => !p.deleted && JSON.stringify(p.message?.data ?? {}).includes(`<@${ada}>`));
    expect(mine().length).toBeGreaterThan(0);
    await pickCommand(page, 'privacy delete');
    await page.keyboard.press('Enter');
    await page
      .locator('#messages button', { hasText: 'Confirm: delete my data' })
      .last()
      .click({ timeout: 20_000 });
    await poll(() => page.locator('article.msg.ephemeral').last().innerText(), { timeout: 30_000 }).toMatch(
      /Deleted: .*gallery post/,
    );
    expect(await page.locator('article.msg.ephemeral').last().innerText()).not.toContain(
      'could not be deleted',
    );
    expect(mine()).toEqual([]);
  });

  it('is usable at phone width (channels and operator panel behind buttons)', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await poll(() => page.locator('#toggle-channels').isVisible()).toBe(true);
    expect(await page.locator('#channels').isVisible()).toBe(false);
    await page.click('#toggle-ops');
    await poll(() => page.locator('#ops').isVisible()).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}phone.png` });
    await page.click('#toggle-ops');
    await page.click('#toggle-channels');
    await poll(() => page.locator('#channels').isVisible()).toBe(true);
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});

// ---------------------------------------------------------------------------- the command

/**
 * Runs `npm run playground` as a member does in a terminal: in a process group of its own (npm, the
 * playground, the bot), so a "Ctrl-C" is SIGINT to the whole group; in a temp dir of its own (TMPDIR).
 */
function runPlayground(env: Record<string, string>) {
  const { REDIS_URL: _ignored, ...inherited } = process.env;
  const child = spawn('npm', ['run', '--silent', 'playground'], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  // Its pipes' end: all it printed has been read (the exit can come first).
  const closed = new Promise<void>((r) => child.once('close', () => r()));
  const pgid = child.pid ?? 0;
  return {
    child,
    output: () => out,
    exited,
    closed,
    /** A signal to every process of the group, as the terminal sends Ctrl-C. */
    signalGroup: (signal: NodeJS.Signals) => process.kill(-pgid, signal),
    /** The group's processes still running: pid and command line. */
    group: () =>
      spawnSync('ps', ['-e', '-o', 'pid=,pgid=,args='], { encoding: 'utf8' })
        .stdout.split('\n')
        .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
        .filter((m) => m !== null && Number(m[2]) === pgid)
        .map((m) => ({ pid: Number(m?.[1]), args: m?.[3] ?? '' })),
  };
}

/** What is left in a temp dir, but tsx's compile cache (`tsx-<uid>`, kept on purpose like `npm run playground` keeps it). */
const leftIn = async (dir: string) => (await readdir(dir)).filter((d) => !/^tsx-\d+$/.test(d));

/** Whether a process runs: a zombie (exited, not yet reaped by its parent, init for a daemon) does not. */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = spawnSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).stdout.trim();
  return stat !== '' && !stat.startsWith('Z');
};

describe('npm run playground as a command', { timeout: 90_000 }, () => {
  it('a busy PLAYGROUND_PORT: one line naming PLAYGROUND_PORT, exit code 1, nothing started or left', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as AddressInfo).port;
    const tmp = await mkdtemp(join(tmpdir(), 'playground-test-'));
    try {
      const run = runPlayground({ PLAYGROUND_PORT: String(port), TMPDIR: tmp });
      expect(await run.exited).toBe(1);
      await run.closed;
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

  // Ctrl-C reaches the whole group; a second one (an impatient member) may come while it stops. Each
  // way, several times: it once left both temp folders behind one stop in six.
  const stops: { signal: NodeJS.Signals; twice: boolean }[] = [
    { signal: 'SIGINT', twice: false },
    { signal: 'SIGINT', twice: true },
    { signal: 'SIGTERM', twice: false },
    { signal: 'SIGINT', twice: false },
    { signal: 'SIGINT', twice: true },
  ];
  it(`Ctrl-C (once or twice) and SIGTERM stop the bot and its redis-server and remove both temp folders, ${stops.length} times`, async () => {
    for (const [round, { signal, twice }] of stops.entries()) {
      const tmp = await mkdtemp(join(tmpdir(), 'playground-test-'));
      const run = runPlayground({ PLAYGROUND_PORT: '0', TMPDIR: tmp });
      try {
        await eventually(() => run.output().includes('Playground: http'), 60_000, 'the playground to start');
        await eventually(
          () => run.group().some((c) => c.args.includes('dist/bot/main.js')),
          10_000,
          'the bot process',
        );
        const processes = run.group();
        const left = await readdir(tmp);
        expect(left.some((d) => d.startsWith('mediabot-playground-'))).toBe(true);
        // The private Redis (when redis-server is installed) is a daemon: found by its pid file.
        const redisDir = left.find((d) => d.startsWith('mediabot-redis-'));
        const redisPid = redisDir ? Number(await readFile(join(tmp, redisDir, 'redis.pid'), 'utf8')) : 0;
        if (redisDir) expect(alive(redisPid)).toBe(true);
        if (signal === 'SIGINT') run.signalGroup('SIGINT');
        else run.child.kill('SIGTERM');
        if (twice) {
          await eventually(() => run.output().includes('stopping the playground'), 10_000, 'the stop');
          run.signalGroup('SIGINT');
        }
        // npm itself ends by the signal (as in a terminal); the playground must finish its cleanup first.
        await run.exited;
        await eventually(
          () => processes.every((c) => !alive(c.pid)),
          30_000,
          `round ${round}: its processes to exit (${JSON.stringify(processes.filter((c) => alive(c.pid)))})`,
        );
        if (redisPid) expect(alive(redisPid)).toBe(false);
        expect(await leftIn(tmp), `round ${round} (${signal}${twice ? ' twice' : ''})`).toEqual([]);
      } finally {
        if (run.group().length > 0) run.signalGroup('SIGKILL');
        await rm(tmp, { recursive: true, force: true });
      }
    }
  }, 400_000);
});
