import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID, FIXTURE_VIDEO_TASK_ID } from './emulator/server.js';
import { eventually, percentagesShown, startHarness, type Harness } from './helpers/harness.js';
import type { FakeMessage } from './fake-discord/index.js';
import { isCardMessage, messageText } from './helpers/message-text.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const texts = (m: FakeMessage): string[] => m.edits.map((e) => JSON.stringify(e.after));

/** What the message says, card or classic. */
const finalText = (m: FakeMessage): string => messageText(m);

describe.each([
  { mode: 'webhooks', webhooks: true, interactions: 'gateway' as const },
  { mode: 'polling', webhooks: false, interactions: 'gateway' as const },
  // The same commands with no gateway: Discord POSTs signed interactions to /interactions.
  { mode: 'webhooks, http interactions', webhooks: true, interactions: 'http' as const },
])('jobs end to end ($mode)', ({ webhooks, interactions }) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ webhooks, interactions });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('registers exactly the nine commands on first start (seven slash commands, two message commands)', () => {
    const commands = h.fake.guildCommands();
    expect(commands.map((c) => c['name']).sort()).toEqual([
      'Remove result',
      'Upscale image',
      'extend-song',
      'extend-video',
      'privacy',
      'settings',
      'tasks',
      'training-photos',
      'upscale',
    ]);
    expect(
      commands
        .filter((c) => c['type'] === 3)
        .map((c) => c['name'])
        .sort(),
    ).toEqual(['Remove result', 'Upscale image']);
    // Registered with their texts in every language (the fake keeps what was PUT); a message
    // command has a name and no description.
    for (const c of commands) {
      const key = c['type'] === 3 ? 'name_localizations' : 'description_localizations';
      const localized = c[key] as Record<string, string> | null | undefined;
      expect(Object.keys(localized ?? {}).sort(), String(c['name'])).toEqual([
        'de',
        'es-419',
        'es-ES',
        'fr',
        'ja',
        'pt-BR',
      ]);
    }
  });

  it('/extend-song goes from queued through percentages to both songs', async () => {
    // Steps slower than the per-message edit interval, so progress states are visible.
    h.emulator.nextScenario({ steps: [30, 60], stepMs: 1100 });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0], continue_at: 12.5 },
    });
    const first = await cmd.message();
    expect(first.ephemeral).toBe(false);
    const msg = await cmd.waitForMessage((m) => finalText(m).includes('Extend song 2'), 15_000);
    const task = [...h.emulator.tasks.values()].find((t) => t.operation === 'song' && !t.fixture);
    expect(task?.params).toMatchObject({
      parent_task_id: FIXTURE_SONG_TASK_ID,
      song_id: FIXTURE_SONG_IDS[0],
      continue_at: 12.5,
    });
    if (webhooks) expect(task?.webhookUrl).toMatch(/\/webhooks\/media\/[0-9a-f-]{36}$/);
    else expect(task?.webhookUrl).toBeUndefined();
    const final = task?.body as {
      songs: { audio_url: string; video_url: string; image_url: string }[];
      video_url: string;
    };
    expect(isCardMessage(msg)).toBe(true);
    const text = finalText(msg);
    for (const s of final.songs) {
      expect(text).toContain(s.audio_url);
      expect(text).toContain(s.video_url);
    }
    expect(text).toContain(final.video_url);
    const pcts = percentagesShown(texts(msg));
    expect([...pcts].sort((a, b) => a - b)).toEqual(pcts);
    if (webhooks) expect(pcts.length).toBeGreaterThan(0);
    if (interactions === 'http') {
      // Answered through the callback endpoint, then 202 on the HTTP request.
      expect(h.fake.httpDeliveries.filter((d) => d.interactionId === cmd.id).map((d) => d.status)).toEqual([
        202,
      ]);
      expect(h.fake.gateway.connections).toHaveLength(0);
    }
    h.fake.assertNoViolations();
  });

  it('/extend-video ends as a card (flag set, no content or embeds) showing the video URL', async () => {
    const cmd = h.fake.sendCommand({
      name: 'extend-video',
      options: { task_id: FIXTURE_VIDEO_TASK_ID, prompt: 'the camera pans to the sea', aspect_ratio: '16:9' },
    });
    const msg = await cmd.waitForMessage((m) => messageText(m).includes('.mp4'), 15_000);
    const task = [...h.emulator.tasks.values()].find((t) => t.operation === 'video' && !t.fixture);
    expect(task?.params).toMatchObject({ parent_task_id: FIXTURE_VIDEO_TASK_ID, aspect_ratio: '16:9' });
    expect(isCardMessage(msg)).toBe(true);
    expect(msg.content).toBe('');
    expect(msg.embeds).toEqual([]);
    expect(messageText(msg)).toContain((task?.body as { video_url: string }).video_url);
    expect(messageText(msg)).toContain('AI-generated');
    h.fake.assertNoViolations();
  });

  it('/upscale passes the attachment CDN URL and shows the images', async () => {
    const cmd = h.fake.sendCommand({
      name: 'upscale',
      options: { prompt: 'a sharper cat', resemblance: 70 },
      attachments: { image: { filename: 'cat.png', contentType: 'image/png', bytes: PNG } },
    });
    const msg = await cmd.waitForMessage((m) => finalText(m).includes('Upscale again'), 15_000);
    const req = [...h.emulator.tasks.values()].find((t) => t.operation === 'upscale');
    expect(String(req?.params['image_url'])).toContain(h.fake.cdnUrl);
    expect(isCardMessage(msg)).toBe(true);
    const body = req?.body as { image_urls: string[] };
    for (const u of body.image_urls) expect(finalText(msg)).toContain(u);
    h.fake.assertNoViolations();
  });
});

describe('invalid input and service errors', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ webhooks: true });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('refuses /upscale without an image, ephemerally, with no service call', async () => {
    const before = h.emulator.requests.length;
    const cmd = h.fake.sendCommand({ name: 'upscale', options: { prompt: 'x' } });
    const msg = await cmd.message();
    expect(msg.ephemeral).toBe(true);
    expect(msg.content).toMatch(/image/);
    expect(h.emulator.requests.length).toBe(before);
  });

  it('refuses a non-image attachment and a non-http image_url', async () => {
    const before = h.emulator.requests.length;
    const a = await h.fake
      .sendCommand({
        name: 'upscale',
        options: { prompt: 'x' },
        attachments: { image: { filename: 'notes.txt', contentType: 'text/plain', bytes: 'hello' } },
      })
      .message();
    expect(a.ephemeral).toBe(true);
    expect(a.content).toMatch(/not an image/);
    const b = await h.fake
      .sendCommand({ name: 'upscale', options: { prompt: 'x', image_url: 'ftp://x/y.png' } })
      .message();
    expect(b.ephemeral).toBe(true);
    expect(b.content).toMatch(/http/);
    expect(h.emulator.requests.length).toBe(before);
  });

  it.each([
    { status: 400 as const, expected: /Injected failure|rejected/ },
    { status: 401 as const, expected: /API key/ },
    { status: 500 as const, expected: /internal error|try again/i },
  ])('shows a service $status clearly in the job message', async ({ status, expected }) => {
    h.emulator.failNext(1, { status, path: '/song-extend' });
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    const msg = await cmd.waitForMessage((m) => finalText(m).includes('failed'), 10_000);
    expect(finalText(msg)).toMatch(expected);
    h.fake.assertNoViolations();
  });

  it('/tasks lists the user’s jobs ephemerally', async () => {
    const msg = await h.fake.sendCommand({ name: 'tasks' }).message();
    expect(msg.ephemeral).toBe(true);
    expect(msg.content).toMatch(/Your jobs\*\* · page 1 of \d+/);
  });

  it("task_id: a member with no jobs who types a task the service has finished is offered it, not another member's job", async () => {
    const userId = h.fake.addUser({ username: 'newcomer' });
    const ask = async (name: string, typed: string) => {
      const ac = h.fake.sendAutocomplete({ name, userId, options: { task_id: typed }, focused: 'task_id' });
      await ac.response();
      return (ac.choices ?? []).map((c) => (c as { value: string }).value);
    };
    expect(await ask('extend-song', '')).toEqual([]);
    expect(await ask('extend-song', FIXTURE_SONG_TASK_ID)).toEqual([FIXTURE_SONG_TASK_ID]);
    // Not a task the service knows, nor another member's job.
    expect(await ask('extend-song', 'song-parent-9999')).toEqual([]);
    const before = new Set(h.emulator.tasks.keys());
    h.emulator.nextScenario({ steps: [50], stepMs: 100 });
    await h.fake
      .sendCommand({
        name: 'extend-song',
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
      })
      .waitForMessage((m) => finalText(m).includes('Extend song 2'), 15_000);
    const theirs = [...h.emulator.tasks.keys()].find((id) => !before.has(id)) ?? '';
    expect(await ask('extend-song', theirs)).toEqual([]);
  });

  it('autocompletes song ids of a task the service knows', async () => {
    const ac = h.fake.sendAutocomplete({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: '' },
      focused: 'song_id',
    });
    await ac.response();
    const values = (ac.choices ?? []).map((c) => (c as { value: string }).value);
    expect(values).toEqual([...FIXTURE_SONG_IDS]);
  });
});

describe('restarts', () => {
  it('does not re-register unchanged commands: a restart costs one GET', async () => {
    const h1 = await startHarness();
    const puts = h1.fake.commandCalls;
    await h1.stopBot();
    const before = { ...puts };
    const h2 = await startHarness({ reuse: { fake: h1.fake, emulator: h1.emulator } });
    const after = h2.fake.commandCalls;
    const delta = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
    expect(Object.entries(delta).filter(([, v]) => v > 0)).toEqual([[expect.stringMatching(/GET/), 1]]);
    await h2.close();
    await h1.close();
  });

  it('finishes a job whose webhook arrives while the bot is down (resume + poll)', async () => {
    const h1 = await startHarness({ webhooks: true });
    h1.emulator.nextScenario({ hold: true });
    const cmd = h1.fake.sendCommand({
      name: 'extend-song',
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    await cmd.message();
    const task = await eventually(() =>
      [...h1.emulator.tasks.values()].find(
        (t) => t.operation === 'song' && !t.fixture && t.state === 'processing',
      ),
    );
    await eventually(() => task.history.length >= 4, 10_000, 'progress steps');
    await h1.stopBot();
    h1.emulator.finish(task.id);
    const h2 = await startHarness({
      webhooks: true,
      reuse: {
        fake: h1.fake,
        emulator: h1.emulator,
        dataDir: h1.dataDir,
        namespace: h1.namespace,
        port: h1.port,
      },
    });
    const msg = await cmd.waitForMessage((m) => finalText(m).includes('Extend song 2'), 15_000);
    expect(finalText(msg)).toContain('Song 2');
    await h2.close();
    await h1.close();
  });
});
