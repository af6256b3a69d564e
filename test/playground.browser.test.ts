/**
 * The playground in a real browser: Debian's Chromium driven by playwright-core
 * (no browser download), headless. The real bot runs as its own process behind
 * the page. Screenshots go to .ci/artifacts/ (and one to docs/ for the README).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlayground, type Playground } from '../playground/server.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import { percentagesShown } from './helpers/harness.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
if (!CHROMIUM)
  console.warn('[playground.browser.test] SKIPPED: no chromium binary (apt-get install chromium)');
const ARTIFACTS = new URL('../.ci/artifacts/', import.meta.url).pathname;
const DOCS = new URL('../docs/', import.meta.url).pathname;

/** 10 distinct small PNGs (the same pixel, distinct trailing bytes, so distinct hashes). */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const photos = Array.from({ length: 10 }, (_, i) =>
  Buffer.concat([PNG, Buffer.from(`photo-${i}`)]).toString('base64'),
);

async function runCommand(page: Page, name: string, fill: (page: Page) => Promise<void>, sub?: string) {
  await page.selectOption('#command', name);
  if (sub) await page.selectOption('#subcommand', sub);
  await fill(page);
  await page.click('#send');
}

const lastMessage = (page: Page) => page.locator('#messages article').last();

describe.skipIf(!CHROMIUM)('playground in Chromium', { timeout: 120_000 }, () => {
  let pg: Playground;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    pg = await startPlayground({ port: 0, stepMs: [300, 600], failureRate: 0, log: () => undefined });
    browser = await chromium.launch({
      executablePath: CHROMIUM ?? '',
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
    await pg.fake.waitFor(() => pg.fake.guildCommands().length >= 6, { timeoutMs: 30_000 });
    await page.goto(pg.url);
    await page.waitForSelector('body[data-ready="true"]');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await pg?.close();
  });

  it('/extend-song from the composer: percentages, then the two songs; then "Extend song 2"', async () => {
    // Held at 40 % until the page shows it: on a busy machine the whole progress phase of
    // a free-running task can fall between two edits, and the final then replaces it.
    pg.emulator.nextScenario({ hold: true, steps: [40], stepMs: 200 });
    const tasksBefore = new Set(pg.emulator.tasks.keys());
    await runCommand(page, 'extend-song', async (p) => {
      await p.fill('#opt-task_id', FIXTURE_SONG_TASK_ID);
      await p.fill('#opt-song_id', FIXTURE_SONG_IDS[0]);
    });
    await expect.poll(() => lastMessage(page).innerText(), { timeout: 20_000 }).toMatch(/40%/);
    const task = [...pg.emulator.tasks.values()].find((t) => !tasksBefore.has(t.id));
    pg.emulator.finish(task?.id ?? '');
    await expect
      .poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 2' }).count(), {
        timeout: 60_000,
      })
      .toBe(1);
    expect(await lastMessage(page).locator('audio').count()).toBeGreaterThanOrEqual(2);
    // The message the page shows went through percentages before the songs (its edit history).
    const shownId = await lastMessage(page).getAttribute('data-id');
    const edits = pg.fake.messages.get(shownId ?? '')?.edits ?? [];
    expect(percentagesShown(edits.map((e) => JSON.stringify(e.after))).length).toBeGreaterThan(0);
    await page.screenshot({ path: `${ARTIFACTS}extend-song.png` });
    // The README's screenshot, refreshed on demand (UPDATE_SCREENSHOTS=1 npm test).
    if (process.env['UPDATE_SCREENSHOTS'] === '1') {
      await mkdir(DOCS, { recursive: true });
      await page.screenshot({ path: `${DOCS}playground.png` });
    }

    const before = await page.locator('#messages article').count();
    await lastMessage(page).locator('button', { hasText: 'Extend song 2' }).click();
    await expect
      .poll(() => page.locator('#messages article').count(), { timeout: 10_000 })
      .toBeGreaterThan(before);
    await expect
      .poll(() => lastMessage(page).locator('button', { hasText: 'Extend song 1' }).count(), {
        timeout: 30_000,
      })
      .toBe(1);
  });

  it('10 photos by drag and drop, then submit a training set', async () => {
    await page.selectOption('#command', 'training-photos');
    await page.selectOption('#subcommand', 'start');
    await page.selectOption('#opt-ethnicity', { index: 1 });
    await page.selectOption('#opt-gender', 'female');
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
    await page.dispatchEvent('#drop', 'drop', { dataTransfer });
    await expect.poll(() => page.locator('#composer-status').innerText()).toContain('10 photo(s) added');
    await page.click('#send');
    await expect
      .poll(() => page.locator('#messages').innerText(), { timeout: 20_000 })
      .toMatch(/10 \/ 30|10\/30|10 of 30/);
    await runCommand(page, 'training-photos', async () => undefined, 'submit');
    // Nothing is sent before the member confirms consent (an ephemeral prompt).
    await lastMessage(page).locator('button', { hasText: 'I confirm' }).click({ timeout: 20_000 });
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
      await runCommand(page, 'extend-song', async (p) => {
        await p.fill('#opt-task_id', FIXTURE_SONG_TASK_ID);
        await p.fill('#opt-song_id', FIXTURE_SONG_IDS[1]);
      });
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
    await runCommand(page, 'extend-song', async (p) => {
      await p.fill('#opt-task_id', FIXTURE_SONG_TASK_ID);
      await p.fill('#opt-song_id', FIXTURE_SONG_IDS[0]);
    });
    await expect.poll(() => lastMessage(page).innerText(), { timeout: 20_000 }).toMatch(/30%/);
    const task = [...pg.emulator.tasks.values()].find((t) => !tasksBefore.has(t.id));
    await page.click('#restart');
    await expect
      .poll(() => page.locator('#notes').innerText(), { timeout: 10_000 })
      .toMatch(/started \(pid[^]*started \(pid/);
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
    await page.click('#toggle-ops');
    await expect.poll(() => page.locator('#ops').isVisible()).toBe(true);
    await page.screenshot({ path: `${ARTIFACTS}phone.png` });
    await page.setViewportSize({ width: 1280, height: 800 });
  });
});
