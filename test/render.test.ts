import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormatsModule from 'ajv-formats';
import { ButtonStyle, ComponentType, type APIButtonComponent } from 'discord-api-types/v10';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseNextStepId } from '../src/services/discord/interactions/custom-ids.js';
import {
  COLORS,
  LIMITS,
  embedCharacters,
  escapeMarkdown,
  fitToDiscordLimits,
  formatDuration,
  isHttpUrl,
  progressBar,
  renderJobSummaryLine,
  renderRemoved,
  renderThreadLine,
  safeHttpUrl,
  truncate,
  editBody,
  isCard,
  type CardPayload,
  type ClassicPayload,
  type MessagePayload,
  createJobRenderer,
} from '../src/services/discord/render/job-render.js';
import { translator } from '../src/i18n/index.js';
import { componentCount, messageText, textDisplayLength, walkComponents } from './helpers/message-text.js';
import type { Operation, TaskOutputs } from '../src/services/media/types.js';
import type { JobRecord, JobState } from '../src/services/store/types.js';
import { renderOperations } from '../src/services/operations/index.js';

const { renderJob, renderGalleryPost, threadName, withoutFreeText } = createJobRenderer(renderOperations);

// ---------------------------------------------------------------- fixtures

const T0 = Date.UTC(2025, 0, 2, 3, 4, 5);
const USER = '123456789012345678';

const PARAMS: Record<Operation, JobRecord['params']> = {
  upscale: {
    imageUrl: 'https://cdn.example.com/in/source.png',
    prompt: 'a *cat* on a _mat_',
    resemblance: 50,
  },
  song: { taskId: 'parent-task-1', songId: 'song-a', continueAt: 30 },
  video: { taskId: 'parent-video-1', prompt: 'pan left', aspectRatio: '16:9', enhancePrompt: true },
  upload: { ethnicity: 'asian', gender: 'female', age: 30, photos: 12 },
};

function makeJob(operation: Operation, state: JobState, extra: Partial<JobRecord> = {}): JobRecord {
  return {
    id: 'job_abc123',
    secret: 'deadbeef',
    operation,
    userId: USER,
    message: {
      channelId: '222222222222222222',
      guildId: '333333333333333333',
      messageId: '444444444444444444',
    },
    params: PARAMS[operation],
    state,
    percentage: 0,
    createdAt: T0,
    updatedAt: T0,
    version: 1,
    ...extra,
  };
}

const img = (n: number): string => `https://cdn.example.com/out/image_${n}.png`;

const RESULTS: Record<Operation, TaskOutputs> = {
  upscale: { kind: 'upscale', imageUrls: [img(1), img(2), img(3), img(4)], seed: 424242 },
  song: {
    kind: 'song',
    videoUrl: 'https://cdn.example.com/song/mix.mp4',
    songs: [
      {
        songId: 'song-1-id',
        audioUrl: 'https://cdn.example.com/song/1.mp3',
        imageUrl: 'https://cdn.example.com/song/1.jpg',
        videoUrl: 'https://cdn.example.com/song/1.mp4',
        lyrics: '[Verse 1]\nHello *world*\n# not a heading\n@everyone <@1> listen',
      },
      {
        songId: 'song-2-id',
        audioUrl: 'https://cdn.example.com/song/2.mp3',
        imageUrl: 'https://cdn.example.com/song/2.jpg',
        videoUrl: 'https://cdn.example.com/song/2.mp4',
        lyrics: 'Second song lyrics',
      },
    ],
  },
  video: { kind: 'video', videoUrl: 'https://cdn.example.com/video/out.mp4' },
  upload: { kind: 'upload', message: 'Images prepared', expiresAt: '2025-01-09T03:04:05.000Z' },
};

function finished(operation: Operation, result: TaskOutputs = RESULTS[operation]): JobRecord {
  return makeJob(operation, 'finished', {
    taskId: `task-${operation}-1`,
    percentage: 100,
    result,
    finishedAt: T0 + 65_000,
  });
}

/** Every URL a result carries. */
function resultUrls(result: TaskOutputs): string[] {
  switch (result.kind) {
    case 'upscale':
      return result.imageUrls;
    case 'song':
      return [
        ...(result.videoUrl !== undefined ? [result.videoUrl] : []),
        ...result.songs.flatMap((s) =>
          [s.audioUrl, s.imageUrl, s.videoUrl].filter((u): u is string => u !== undefined),
        ),
      ];
    case 'video':
      return [result.videoUrl];
    case 'upload':
      return [];
  }
}

/** All places a URL can show up in a message, as one searchable text. */
function everything(p: MessagePayload): string {
  return messageText(p);
}

/** A classic message (waiting, running): fails the test when it is a card. */
function classic(p: MessagePayload): ClassicPayload {
  if (isCard(p)) throw new Error('expected a classic message, got a card');
  return p;
}

/** A Components V2 card: fails the test when it is a classic message. */
function asCard(p: MessagePayload): CardPayload {
  if (!isCard(p)) throw new Error('expected a card, got a classic message');
  return p;
}

function buttons(p: MessagePayload): APIButtonComponent[] {
  return walkComponents(p.components).filter(
    (c): c is APIButtonComponent & Record<string, unknown> => c['type'] === ComponentType.Button,
  );
}

function linkButtons(p: MessagePayload): { label: string; url: string }[] {
  return buttons(p).flatMap((b) =>
    b.style === ButtonStyle.Link ? [{ label: b.label ?? '', url: b.url }] : [],
  );
}

function customIds(p: MessagePayload): string[] {
  return buttons(p).flatMap((b) =>
    b.style !== ButtonStyle.Link && b.style !== ButtonStyle.Premium ? [b.custom_id] : [],
  );
}

function actionLabels(p: MessagePayload): string[] {
  return buttons(p).flatMap((b) =>
    b.style !== ButtonStyle.Link && b.style !== ButtonStyle.Premium ? [b.label ?? ''] : [],
  );
}

function descriptions(p: MessagePayload): string {
  return classic(p)
    .embeds.map((e) => e.description ?? '')
    .join('\n');
}

/** The card's Text Displays, joined. */
function cardText(p: MessagePayload): string {
  return walkComponents(asCard(p).components)
    .filter((c) => c['type'] === ComponentType.TextDisplay)
    .map((c) => String(c['content']))
    .join('\n');
}

/** The URLs of the card's gallery, in order. */
function galleryUrls(p: MessagePayload): string[] {
  return walkComponents(asCard(p).components)
    .filter((c) => c['type'] === ComponentType.MediaGallery)
    .flatMap((c) => (c['items'] as { media: { url: string } }[]).map((i) => i.media.url));
}

/** Checks every Components V2 rule by hand (the OpenAPI file does not describe the flag or the totals). */
function expectCardWithinLimits(p: CardPayload): void {
  expect(Object.keys(p).sort()).toEqual(['allowed_mentions', 'components', 'flags']);
  expect(p.flags).toBe(1 << 15);
  expect(p.allowed_mentions).toEqual({ parse: [] });
  expect(p.components).toHaveLength(1);
  expect(p.components[0].type).toBe(ComponentType.Container);
  expect(componentCount(p)).toBeLessThanOrEqual(40);
  expect(textDisplayLength(p)).toBeLessThanOrEqual(4000);
  const all = walkComponents(p.components);
  for (const c of all) {
    if (c['type'] === ComponentType.TextDisplay) expect(String(c['content']).trim()).not.toBe('');
    if (c['type'] === ComponentType.MediaGallery) {
      const items = c['items'] as { media: { url: string } }[];
      expect(items.length).toBeGreaterThan(0);
      expect(items.length).toBeLessThanOrEqual(10);
      // A service URL, or a file uploaded with the message (a gallery post).
      for (const i of items) {
        expect(isHttpUrl(i.media.url) || /^attachment:\/\/[\w.-]+$/.test(i.media.url)).toBe(true);
        expect(i.media.url.length).toBeLessThanOrEqual(LIMITS.embedUrl);
      }
    }
    // A File component can only name an uploaded file.
    if (c['type'] === ComponentType.File)
      expect((c['file'] as { url: string }).url).toMatch(/^attachment:\/\/[\w.-]+$/);
    if (c['type'] === ComponentType.ActionRow) {
      const n = (c['components'] as unknown[]).length;
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThanOrEqual(LIMITS.buttonsPerRow);
    }
  }
  const ids = customIds(p);
  expect(new Set(ids).size).toBe(ids.length);
  for (const b of buttons(p)) {
    if (b.style === ButtonStyle.Premium) continue;
    expect((b.label ?? '').length).toBeGreaterThan(0);
    expect((b.label ?? '').length).toBeLessThanOrEqual(LIMITS.buttonLabel);
    if (b.style === ButtonStyle.Link) expect(b.url.length).toBeLessThanOrEqual(LIMITS.buttonUrl);
    else expect(b.custom_id.length).toBeLessThanOrEqual(LIMITS.customId);
  }
  for (const m of everything(p).matchAll(/(?<!\\)\]\(([^)\s]*)\)/g)) expect(m[1]).toMatch(/^https?:\/\//);
}

/** Checks every Discord limit by hand (independently of the OpenAPI schema). */
function expectWithinLimits(p: ClassicPayload): void {
  expect(Object.keys(p).sort()).toEqual(['allowed_mentions', 'components', 'content', 'embeds']);
  expect(p.allowed_mentions).toEqual({ parse: [] });
  expect(p.content.length).toBeLessThanOrEqual(LIMITS.content);
  expect(p.embeds.length).toBeLessThanOrEqual(LIMITS.embeds);
  expect(embedCharacters(p.embeds)).toBeLessThanOrEqual(LIMITS.embedTotal);
  for (const e of p.embeds) {
    expect(e.title?.length ?? 0).toBeLessThanOrEqual(LIMITS.embedTitle);
    expect(e.description?.length ?? 0).toBeLessThanOrEqual(LIMITS.embedDescription);
    expect(e.fields?.length ?? 0).toBeLessThanOrEqual(LIMITS.embedFields);
    for (const f of e.fields ?? []) {
      expect(f.name.length).toBeGreaterThan(0);
      expect(f.name.length).toBeLessThanOrEqual(LIMITS.fieldName);
      expect(f.value.length).toBeGreaterThan(0);
      expect(f.value.length).toBeLessThanOrEqual(LIMITS.fieldValue);
    }
    expect(e.footer?.text.length ?? 0).toBeLessThanOrEqual(LIMITS.footerText);
    expect(e.author?.name.length ?? 0).toBeLessThanOrEqual(LIMITS.authorName);
    for (const u of [e.url, e.image?.url, e.thumbnail?.url]) {
      if (u !== undefined) {
        expect(isHttpUrl(u)).toBe(true);
        expect(u.length).toBeLessThanOrEqual(LIMITS.embedUrl);
      }
    }
  }
  expect(p.components.length).toBeLessThanOrEqual(LIMITS.actionRows);
  for (const row of p.components) {
    expect(row.type).toBe(ComponentType.ActionRow);
    expect(row.components.length).toBeGreaterThan(0);
    expect(row.components.length).toBeLessThanOrEqual(LIMITS.buttonsPerRow);
    for (const b of row.components) {
      if (b.style === ButtonStyle.Premium) continue;
      expect((b.label ?? '').length).toBeGreaterThan(0);
      expect((b.label ?? '').length).toBeLessThanOrEqual(LIMITS.buttonLabel);
      if (b.style === ButtonStyle.Link) {
        expect(isHttpUrl(b.url)).toBe(true);
        expect(b.url.length).toBeLessThanOrEqual(LIMITS.buttonUrl);
      } else {
        expect(b.custom_id.length).toBeLessThanOrEqual(LIMITS.customId);
      }
    }
  }
  // No non-http URL anywhere a URL is interpreted.
  const urls = [
    ...p.embeds.flatMap((e) => [e.url, e.image?.url, e.thumbnail?.url]),
    ...linkButtons(p).map((b) => b.url),
  ].filter((u): u is string => u !== undefined);
  for (const u of urls) expect(u).toMatch(/^https?:\/\//);
  // Every live masked link (`](…)` not escaped as `\]`) points to http(s).
  for (const m of everything(p).matchAll(/(?<!\\)\]\(([^)\s]*)\)/g)) expect(m[1]).toMatch(/^https?:\/\//);
}

// ---------------------------------------------------------------- OpenAPI validation

const FIXTURE_SPEC = fileURLToPath(new URL('./fixtures/discord-openapi.json', import.meta.url));
const SHARED_SPEC = '/work/shared/spec/discord-openapi.json';

const EDIT_ENDPOINTS = [
  '/webhooks/{webhook_id}/{webhook_token}/messages/@original',
  '/channels/{channel_id}/messages/{message_id}',
] as const;

interface Spec {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: object }> } }>>;
  components: object;
}

const validators = new Map<string, ValidateFunction>();

function loadValidators(): void {
  const spec = JSON.parse(
    readFileSync(existsSync(FIXTURE_SPEC) ? FIXTURE_SPEC : SHARED_SPEC, 'utf8'),
  ) as Spec;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  // CommonJS package: under NodeNext the default import is `module.exports`, whose `.default` is the plugin.
  ajvFormatsModule.default(ajv);
  ajv.addFormat('snowflake', /^(0|[1-9][0-9]*)$/);
  ajv.addFormat('nonce', true);
  for (const path of EDIT_ENDPOINTS) {
    // The spec may spell the first segment {application_id} or {webhook_id}.
    const key =
      Object.keys(spec.paths).find((p) => p === path) ??
      Object.keys(spec.paths).find((p) => p === path.replace('{webhook_id}', '{application_id}'));
    const schema =
      key !== undefined
        ? spec.paths[key]?.['patch']?.requestBody?.content?.['application/json']?.schema
        : undefined;
    if (schema === undefined) throw new Error(`no PATCH ${path} JSON request body in the spec`);
    // `#/components/schemas/...` refs resolve against this root.
    validators.set(path, ajv.compile({ ...schema, components: spec.components }));
  }
}

function expectValid(p: MessagePayload): void {
  // What goes on the wire is the JSON text of the edit (a card clears the classic fields).
  const body: unknown = JSON.parse(JSON.stringify(editBody(p)));
  for (const [path, validate] of validators) {
    const ok = validate(body);
    expect(
      ok ? [] : validate.errors?.slice(0, 5).map((e) => `${path}: ${e.instancePath} ${e.message ?? ''}`),
    ).toEqual([]);
  }
}

function check<P extends MessagePayload>(p: P): P {
  if (isCard(p)) expectCardWithinLimits(p);
  else expectWithinLimits(p);
  expectValid(p);
  return p;
}

const checkClassic = (p: MessagePayload): ClassicPayload => check(classic(p));
const checkCard = (p: MessagePayload): CardPayload => check(asCard(p));

beforeAll(() => {
  loadValidators();
});

// ---------------------------------------------------------------- tests

describe('OpenAPI validation is real', () => {
  it('rejects payloads that break the spec', () => {
    const bad: unknown[] = [
      { content: 'x'.repeat(2001) },
      { embeds: Array.from({ length: 11 }, () => ({ title: 't' })) },
      { embeds: [{ title: 't'.repeat(257) }] },
      { embeds: [{ fields: [{ name: 'n', value: 'v'.repeat(1025) }] }] },
      {
        components: [
          {
            type: 1,
            components: [{ type: 2, style: 5, label: 'x', url: `https://a.example/${'a'.repeat(600)}` }],
          },
        ],
      },
      { embeds: [{ image: { url: 'not a url' } }] },
    ];
    for (const body of bad) {
      const results = [...validators.values()].map((v) => v(body));
      expect(
        results.some((ok) => !ok),
        JSON.stringify(body).slice(0, 80),
      ).toBe(true);
    }
  });
});

describe('progressBar', () => {
  it.each([
    [0, '░░░░░░░░░░ 0%'],
    [5, '░░░░░░░░░░ 5%'],
    [30, '███░░░░░░░ 30%'],
    [99, '█████████░ 99%'],
    [100, '██████████ 100%'],
    [-20, '░░░░░░░░░░ 0%'],
    [250, '██████████ 100%'],
    [Number.NaN, '░░░░░░░░░░ 0%'],
    [37.9, '███░░░░░░░ 37%'],
  ])('%s → %s', (pct, bar) => {
    expect(progressBar(pct)).toBe(bar);
  });
});

describe('helpers', () => {
  it('formats durations', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(42_000)).toBe('42s');
    expect(formatDuration(65_000)).toBe('1m 05s');
    expect(formatDuration(3_723_000)).toBe('1h 02m 03s');
    expect(formatDuration(-5)).toBe('0s');
  });

  it('accepts only http(s) URLs', () => {
    expect(isHttpUrl('https://a.example/x.png')).toBe(true);
    expect(isHttpUrl('http://a.example')).toBe(true);
    expect(isHttpUrl('javascript:alert(1)')).toBe(false);
    expect(isHttpUrl('JaVaScRiPt:alert(1)')).toBe(false);
    expect(isHttpUrl('data:text/html,hi')).toBe(false);
    expect(isHttpUrl('ftp://a.example/x')).toBe(false);
    expect(isHttpUrl('/relative/path')).toBe(false);
    expect(isHttpUrl('')).toBe(false);
    expect(isHttpUrl(undefined)).toBe(false);
    expect(isHttpUrl(42)).toBe(false);
  });

  it('keeps clean URLs verbatim and encodes unsafe characters', () => {
    expect(safeHttpUrl('https://a.example/x_1.png?a=1&b=2#f')).toBe('https://a.example/x_1.png?a=1&b=2#f');
    const weird = safeHttpUrl('https://user:pw@a.example/a b/<x>"{y}|^`?q=a b');
    expect(weird).toBeDefined();
    expect(weird).not.toMatch(/[\s<>"{}|^`]/);
    expect(weird).not.toContain('pw@');
  });

  it('decides what the URL parser would: no colon no link, any letter case or surrounding space a link', () => {
    for (const v of ['song-123', 'a b c', '550e8400-e29b-41d4-a716-446655440000', 'https//a.example'])
      expect(safeHttpUrl(v)).toBeUndefined();
    expect(safeHttpUrl('HTTPS://a.example/x')).toBe('HTTPS://a.example/x');
    expect(safeHttpUrl('  https://a.example/x ')).toBe('https://a.example/x');
    expect(safeHttpUrl('mailto:a@b.example')).toBeUndefined();
  });

  it('truncates with an ellipsis, never splitting a surrogate pair', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 3)).toBe('abc');
    const cut = truncate('ab😀cd', 4);
    expect(cut.length).toBeLessThanOrEqual(4);
    expect(cut.endsWith('…')).toBe(true);
    expect(/[\ud800-\udbff](?![\udc00-\udfff])/.test(cut)).toBe(false);
  });

  it('escapes markdown and neutralises mentions', () => {
    const s = escapeMarkdown(
      '# title\n> quote\n- item\n*b* _i_ `c` ||s|| [l](u) <@1> <t:1:R> @everyone @here',
    );
    expect(s).toContain('\\# title');
    expect(s).toContain('\\> quote');
    expect(s).toContain('\\- item');
    expect(s).toContain('\\*b\\*');
    expect(s).toContain('\\[l\\](u)');
    expect(s).toContain('\\<@1\\>');
    expect(s).not.toMatch(/@everyone|@here/);
  });
});

describe('renderJob: pending and processing', () => {
  const ops: Operation[] = ['upscale', 'song', 'video', 'upload'];
  const titles: Record<Operation, string> = {
    upscale: 'Upscale',
    song: 'Song extension',
    video: 'Video extension',
    upload: 'Training photos',
  };

  it.each(ops)('%s submitting', (op) => {
    const p = checkClassic(renderJob(makeJob(op, 'submitting'), T0 + 1000));
    expect(p.embeds).toHaveLength(1);
    expect(p.embeds[0]?.title).toBe(titles[op]);
    expect(p.embeds[0]?.color).toBe(COLORS.queued);
    expect(p.embeds[0]?.description).toContain(`<@${USER}>`);
    expect(p.content + descriptions(p)).toContain('Submitting…');
    expect(p.embeds[0]?.fields?.some((f) => f.name === 'Task ID')).toBe(false);
    expect(p.components).toEqual([]);
  });

  it.each(ops)('%s queued shows the task id and the parameters', (op) => {
    const p = checkClassic(renderJob(makeJob(op, 'queued', { taskId: 'task-xyz' }), T0 + 1000));
    expect(p.embeds[0]?.title).toBe(titles[op]);
    expect(p.embeds[0]?.color).toBe(COLORS.queued);
    expect(p.content + descriptions(p)).toContain('Queued…');
    const fields = p.embeds[0]?.fields ?? [];
    expect(fields.find((f) => f.name === 'Task ID')?.value).toBe('`task-xyz`');
    // One field per parameter, after the task id.
    expect(fields).toHaveLength(1 + Object.keys(PARAMS[op]).length);
    for (const value of Object.values(PARAMS[op])) {
      if (typeof value === 'number') expect(fields.map((f) => f.value)).toContain(String(value));
    }
  });

  it('escapes markdown in user parameters and shows URL parameters as URLs', () => {
    const p = checkClassic(renderJob(makeJob('upscale', 'queued'), T0));
    const fields = p.embeds[0]?.fields ?? [];
    expect(fields.find((f) => f.name === 'Prompt')?.value).toBe('a \\*cat\\* on a \\_mat\\_');
    expect(fields.find((f) => f.name === 'Image URL')?.value).toBe('https://cdn.example.com/in/source.png');
    expect(fields.find((f) => f.name === 'Resemblance')?.value).toBe('50');
  });

  it.each(ops)('%s processing shows the bar, percentage and elapsed time', (op) => {
    const job = makeJob(op, 'processing', { taskId: 'task-1', percentage: 30 });
    const p = checkClassic(renderJob(job, T0 + 65_000));
    const text = p.content + '\n' + descriptions(p);
    expect(text).toContain('███░░░░░░░ 30%');
    expect(text).toContain('elapsed 1m 05s');
    expect(p.embeds[0]?.color).toBe(COLORS.processing);
    expect(p.embeds[0]?.title).toBe(titles[op]);
  });

  it('processing upload shows the status text, escaped', () => {
    const job = makeJob('upload', 'processing', {
      percentage: 50,
      statusText: 'Preparing *images* @everyone',
    });
    const p = checkClassic(renderJob(job, T0 + 5000));
    expect(descriptions(p)).toContain('Preparing \\*images\\*');
    expect(JSON.stringify(p)).not.toContain('@everyone');
  });
});

describe('renderJob: finished (a Components V2 card)', () => {
  it.each(['upscale', 'song', 'video', 'upload'] as const)(
    '%s: a card, no content or embeds, every result URL in it',
    (op) => {
      const p = checkCard(renderJob(finished(op), T0 + 70_000));
      expect(p.components[0].accent_color).toBe(COLORS.finished);
      expect('content' in p || 'embeds' in p).toBe(false);
      const all = everything(p);
      for (const url of resultUrls(RESULTS[op])) expect(all).toContain(url);
    },
  );

  it('says who ran it without pinging, the parameters, that it is AI-generated, and the job', () => {
    const p = checkCard(renderJob(finished('video'), T0));
    const text = cardText(p);
    expect(text).toContain(`by <@${USER}>`);
    expect(p.allowed_mentions).toEqual({ parse: [] });
    expect(text).toContain('AI-generated');
    expect(text).toContain('took 1m 05s');
    expect(text).toContain('**Prompt:** pan left');
    expect(text).toContain('**Aspect ratio:** 16:9');
    expect(text).toContain('**Enhance prompt:** yes');
    expect(text).toContain('Job job_abc123');
    expect(text).toContain('`task-video-1`');
  });

  it('the task and song ids a member copies into a command are code spans', () => {
    const job = finished('song');
    job.params = { task_id: 'parent-task-1', song_id: 'song-a', continue_at: 30 };
    const text = cardText(checkCard(renderJob(job, T0)));
    expect(text).toContain('**Source task:** `parent-task-1`');
    expect(text).toContain('**Song ID:** `song-a`');
    expect(text).toContain('**Continue at:** 30');
  });

  it('a parameter link whose name is not UTF-8 (%C3) or has none still renders, named by its file or host', () => {
    const job = finished('upscale');
    job.params = { ...job.params, image_url: 'https://cdn.example.com/in/%C3.png' };
    expect(cardText(checkCard(renderJob(job, T0)))).toContain('(https://cdn.example.com/in/%C3.png)');
    job.params = { ...job.params, image_url: 'https://cdn.example.com/' };
    expect(cardText(checkCard(renderJob(job, T0)))).toContain('[cdn.example.com](https://cdn.example.com/)');
  });

  it('names the parent job it extends, once, as a link', () => {
    const link = 'https://discord.com/channels/333333333333333333/222222222222222222/555555555555555555';
    const job = finished('video');
    job.params = { ...job.params, extended_from: link };
    const text = cardText(checkCard(renderJob(job, T0)));
    expect(text).toContain(`Extended from ${link}`);
    expect(text.split(link)).toHaveLength(2);
  });

  it('upscale: the images in one gallery, the seed, upscale again', () => {
    const p = checkCard(renderJob(finished('upscale'), T0));
    expect(galleryUrls(p)).toEqual([img(1), img(2), img(3), img(4)]);
    expect(cardText(p)).toContain('Upscaled images (4)');
    expect(cardText(p)).toContain('**Seed:** 424242');
    // The input image is a parameter: a short link, not a gallery item.
    expect(cardText(p)).toContain('[source.png](https://cdn.example.com/in/source.png)');
    const ids = customIds(p);
    expect(ids).toEqual(['next:upscale-again:job_abc123']);
    expect(parseNextStepId(ids[0] ?? '')).toEqual({ kind: 'upscale-again', jobId: 'job_abc123' });
    expect(actionLabels(p)).toEqual(['Upscale again']);
  });

  it('upscale with 12 images: 10 in the gallery, the other two as links', () => {
    const urls = Array.from({ length: 12 }, (_, i) => img(i + 1));
    const p = checkCard(renderJob(finished('upscale', { kind: 'upscale', imageUrls: urls, seed: 1 }), T0));
    expect(galleryUrls(p)).toEqual(urls.slice(0, 10));
    expect(cardText(p)).toContain(`[Image 11](${img(11)})`);
    expect(cardText(p)).toContain(`[Image 12](${img(12)})`);
    expect(customIds(p)).toEqual(['next:upscale-again:job_abc123']);
  });

  it('upscale with 40 images stays within limits and keeps every URL', () => {
    const urls = Array.from({ length: 40 }, (_, i) => img(i + 1));
    const p = checkCard(renderJob(finished('upscale', { kind: 'upscale', imageUrls: urls }), T0));
    const all = everything(p);
    for (const u of urls) expect(all).toContain(u);
    expect(customIds(p)).toHaveLength(1);
  });

  it('song: the covers in the gallery, audio/video links and song ids per song, lyrics escaped, extend buttons', () => {
    const p = checkCard(renderJob(finished('song'), T0));
    const out = RESULTS.song as Extract<TaskOutputs, { kind: 'song' }>;
    expect(galleryUrls(p)).toEqual(out.songs.map((s) => s.imageUrl));
    const text = cardText(p);
    // The task's own video is labelled, like each song's line, not a bare "Video" at the end.
    expect(text.split('\n')).toContain(
      '**Result video** · 🎬 [Open video](https://cdn.example.com/song/mix.mp4)',
    );
    expect(text).toContain(
      '**Song 1** · 🎧 [Audio](https://cdn.example.com/song/1.mp3) · 🎬 [Video](https://cdn.example.com/song/1.mp4) · Song ID `song-1-id`',
    );
    expect(text).toContain('Song ID `song-2-id`');
    // Lyrics are escaped: no heading, no mention.
    expect(text).toContain('\\[Verse 1\\]');
    expect(text).toContain('\\# not a heading');
    expect(text).toContain('\\<@1\\>');
    expect(JSON.stringify(p)).not.toContain('@everyone');
    expect(customIds(p)).toEqual(['next:extend-song:job_abc123:0', 'next:extend-song:job_abc123:1']);
    expect(actionLabels(p)).toEqual(['Extend song 1', 'Extend song 2']);
  });

  it('song with 20k-character lyrics on both songs stays within every limit', () => {
    const lyric = (c: string): string =>
      Array.from({ length: 2000 }, (_, i) => `${c}${i} *la* _la_\n`)
        .join('')
        .padEnd(20_000, 'x');
    const out: TaskOutputs = {
      kind: 'song',
      videoUrl: 'https://cdn.example.com/song/mix.mp4',
      songs: [
        {
          songId: 's1',
          audioUrl: 'https://cdn.example.com/1.mp3',
          imageUrl: 'https://cdn.example.com/1.jpg',
          videoUrl: 'https://cdn.example.com/1.mp4',
          lyrics: lyric('a').slice(0, 20_000),
        },
        {
          songId: 's2',
          audioUrl: 'https://cdn.example.com/2.mp3',
          imageUrl: 'https://cdn.example.com/2.jpg',
          videoUrl: 'https://cdn.example.com/2.mp4',
          lyrics: lyric('b').slice(0, 20_000),
        },
      ],
    };
    const job = finished('song', out);
    job.params = { ...job.params, note: 'y'.repeat(5000) };
    const p = checkCard(renderJob(job, T0));
    expect(cardText(p)).toMatch(/…/);
    const all = everything(p);
    for (const url of resultUrls(out)) expect(all).toContain(url);
  });

  it('video: the video plays in the card’s gallery, and as a link; extend again', () => {
    const p = checkCard(renderJob(finished('video'), T0));
    expect(cardText(p)).toContain('🎬 [Open video](https://cdn.example.com/video/out.mp4)');
    expect(galleryUrls(p)).toEqual(['https://cdn.example.com/video/out.mp4']);
    expect(customIds(p)).toEqual(['next:extend-video:job_abc123']);
    expect(actionLabels(p)).toEqual(['Extend again']);
  });

  it('upload: message and expiry as relative and absolute time (no raw ISO time beside them); no next step', () => {
    const p = checkCard(renderJob(finished('upload'), T0));
    const unix = Date.parse('2025-01-09T03:04:05.000Z') / 1000;
    const d = cardText(p);
    expect(d).toContain('Images prepared');
    expect(d).toContain(`The prepared images expire <t:${unix}:R> (<t:${unix}:F>).`);
    expect(d).not.toContain('2025-01-09');
    expect(buttons(p)).toEqual([]);
  });

  it('upload with an unparseable expiry still shows the text', () => {
    const p = checkCard(
      renderJob(finished('upload', { kind: 'upload', message: 'ok', expiresAt: 'soon' }), T0),
    );
    expect(cardText(p)).toContain('`soon`');
  });

  it('finished without a result renders a plain finished card', () => {
    const p = checkCard(renderJob(makeJob('video', 'finished'), T0));
    expect(p.components[0].accent_color).toBe(COLORS.finished);
    expect(cardText(p)).toContain('Finished, but the service sent no result.');
  });
});

describe('result cards: limits', () => {
  it('100 images behind 1500-character links: 10 in the gallery, links trimmed with "… and N more"', () => {
    const urls = Array.from(
      { length: 100 },
      (_, i) => `https://cdn.example.com/${String(i).padStart(3, '0')}/${'z'.repeat(1500)}.png`,
    );
    const p = checkCard(renderJob(finished('upscale', { kind: 'upscale', imageUrls: urls }), T0));
    expect(galleryUrls(p)).toEqual(urls.slice(0, 10));
    const text = cardText(p);
    const linked = urls.slice(10).filter((u) => text.includes(u)).length;
    expect(linked).toBeGreaterThan(0);
    expect(text).toContain(`… and ${90 - linked} more`);
    expect(customIds(p)).toEqual(['next:upscale-again:job_abc123']);
  });

  it('a 4000-character prompt and 20 extra parameters: the parameters give way, the links stay', () => {
    const job = finished('video');
    job.params = {
      ...job.params,
      prompt: 'p'.repeat(4000),
      ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`extra_${i}`, 'v'.repeat(300)])),
    };
    const p = checkCard(renderJob(job, T0));
    expect(everything(p)).toContain('https://cdn.example.com/video/out.mp4');
    expect(cardText(p)).toMatch(/… and \d+ more/);
    expect(customIds(p)).toEqual(['next:extend-video:job_abc123']);
  });

  it('every card is within the V2 limits, for every operation and state that is a card', () => {
    for (const op of ['upscale', 'song', 'video', 'upload'] as const) {
      checkCard(renderJob(finished(op), T0));
      checkCard(renderJob(makeJob(op, 'failed', { error: { code: 'x', message: 'no' } }), T0));
    }
  });
});

describe('result cards: languages', () => {
  it("speak the server's language (job.locale): German", () => {
    const job = { ...finished('upscale'), locale: 'de' };
    const p = checkCard(renderJob(job, T0));
    const text = cardText(p);
    expect(text).toContain('Hochskalierte Bilder (4)');
    expect(text).toContain(`von <@${USER}>`);
    expect(text).toContain('KI-generiert');
    expect(text).toContain('Auftrag job_abc123');
    expect(actionLabels(p)).toEqual(['Erneut hochskalieren']);
  });

  it('Japanese, failed: title, advice and Retry', () => {
    const job = makeJob('song', 'failed', {
      locale: 'ja',
      error: { code: 'service_rejected', message: 'no' },
    });
    const p = checkCard(renderJob(job, T0));
    expect(cardText(p)).toContain('失敗');
    expect(actionLabels(p)).toEqual(['再試行']);
    const ja = checkCard(renderJob({ ...finished('video'), locale: 'ja' }, T0));
    expect(cardText(ja)).toContain('AI 生成');
    expect(actionLabels(ja)).toEqual(['さらに延長']);
  });

  it('a server locale the bot does not speak reads English; a translator passed in wins', () => {
    expect(cardText(renderJob({ ...finished('video'), locale: 'ko' }, T0))).toContain('AI-generated');
    expect(cardText(renderJob(finished('video'), T0, translator('fr')))).toContain('Généré par IA');
  });
});

describe('waiting and running messages, thread lines, /tasks lines: languages', () => {
  const everyText = (p: ClassicPayload): string =>
    [
      p.content,
      ...p.embeds.flatMap((e) => [
        e.title,
        e.description,
        e.footer?.text,
        ...(e.fields ?? []).flatMap((f) => [f.name, f.value]),
      ]),
    ].join('\n');

  it("a ja server's running job message is Japanese: status, elapsed time, labels, footer", () => {
    const job = makeJob('upscale', 'processing', { locale: 'ja', percentage: 30, taskId: 'task-1' });
    const p = checkClassic(renderJob(job, T0 + 65_000));
    const text = everyText(p);
    expect(p.content).toBe('⚙️ **アップスケール** · ███░░░░░░░ 30% · 経過 1分05秒');
    expect(p.embeds[0]?.title).toBe('アップスケール');
    expect(text).toContain('⚙️ 処理中… 30%');
    expect(p.embeds[0]?.fields?.find((f) => f.name === 'タスク ID')?.value).toBe('`task-1`');
    expect(p.embeds[0]?.fields?.map((f) => f.name)).toContain('プロンプト');
    expect(p.embeds[0]?.footer?.text).toBe('ジョブ job_abc123');
    for (const english of ['Processing', 'elapsed', 'Task ID', 'Prompt', 'Job ']) {
      expect(text).not.toContain(english);
    }
  });

  it('waiting states speak the server language too; English reads as before', () => {
    const busy = makeJob('video', 'submitting', { locale: 'de', waitingUntil: T0 + 60_000, cost: 2 });
    const de = everyText(checkClassic(renderJob(busy, T0 + 1000)));
    expect(de).toContain('Warten auf den Dienst (ausgelastet), neuer Versuch');
    expect(de).toContain('Kosten: 2 Credits');
    expect(de).toContain('seit 1 s');
    const unconfirmed = makeJob('song', 'unconfirmed', { locale: 'ja' });
    const ja = everyText(checkClassic(renderJob(unconfirmed, T0)));
    expect(ja).toContain('❔ まだ確認されていません…');
    expect(ja).toContain('再送信はしません');
    const en = everyText(checkClassic(renderJob({ ...unconfirmed, locale: 'en-US' }, T0)));
    expect(en).toContain('❔ Not confirmed yet…');
    expect(en).toContain(
      'The service did not answer the submission. It may have received it, so it is not sent again: the bot waits for the service to report this job, and returns your credits if it never does.',
    );
    expect(everyText(checkClassic(renderJob({ ...busy, locale: 'en-US' }, T0)))).toContain(
      'Waiting for the service (busy), trying again <t:',
    );
  });

  it("a ja server's thread line is Japanese in every state; English otherwise", () => {
    const line = (state: JobState, locale = 'en-US') =>
      renderThreadLine(makeJob('video', state, { locale })).content;
    expect(line('processing', 'ja')).toBe(`<@${USER}> **動画の延長** · ⚙️ 実行中 · <#222222222222222222>`);
    expect(line('finished', 'ja')).toContain('✅ 完了');
    expect(line('failed', 'ja')).toContain('❌ 失敗');
    expect(line('finished')).toBe(`<@${USER}> **Video extension** · ✅ finished · <#222222222222222222>`);
    expect(renderThreadLine(makeJob('video', 'failed'), translator('de')).content).toContain(
      'fehlgeschlagen',
    );
  });

  it("a /tasks line speaks the member's language (the translator passed), not the server's", () => {
    const job = makeJob('upscale', 'processing', { locale: 'ja', percentage: 30, taskId: 'task-9' });
    const line = renderJobSummaryLine(job, T0 + 5000, translator('de'));
    expect(line).toContain('⚙️ **Hochskalierung** · 30 % · läuft seit 5 s · `task-9`');
    expect(line).toContain('[Nachricht](https://discord.com/channels/');
    const failed = makeJob('upload', 'failed', { error: { code: 'timed_out', message: 'x' } });
    expect(renderJobSummaryLine(failed, T0, translator('de'))).toContain('fehlgeschlagen (timed_out)');
    expect(renderJobSummaryLine(makeJob('song', 'unconfirmed'), T0)).toContain(
      'not confirmed by the service yet',
    );
  });
});

describe('renderGalleryPost: the result card with the files attached', () => {
  it('shows the attached files (images in the gallery, audio as File components), no service URLs, no buttons', () => {
    const job = finished('song');
    const files = [{ filename: 'cover_1.jpeg' }, { filename: 'song_1.mp3' }, { filename: 'video_1.mp4' }];
    const p = renderGalleryPost(job, files, []);
    const { attachments, ...card } = p;
    checkCard(card);
    expect(attachments).toEqual(files.map((f, i) => ({ id: String(i), filename: f.filename })));
    expect(galleryUrls(p)).toEqual(['attachment://cover_1.jpeg', 'attachment://video_1.mp4']);
    const fileParts = walkComponents(p.components).filter((c) => c['type'] === ComponentType.File);
    expect(fileParts.map((c) => (c['file'] as { url: string }).url)).toEqual(['attachment://song_1.mp3']);
    expect(buttons(p)).toEqual([]);
    const text = cardText(p);
    expect(text).toContain(`by <@${USER}>`);
    expect(text).toContain('[Jump to the job](https://discord.com/channels/333333333333333333/');
    expect(JSON.stringify(p)).not.toContain('https://cdn.example.com/out/');
  });

  it('links what could not be attached, with the reason, in the server language', () => {
    const job = { ...finished('upscale'), locale: 'ja' };
    const linked = [{ url: img(2), reason: () => 'download failed (HTTP 500)' }];
    const { attachments, ...p } = renderGalleryPost(job, [{ filename: 'image_1.png' }], linked);
    checkCard(p);
    expect(attachments).toEqual([{ id: '0', filename: 'image_1.png' }]);
    const text = cardText(p);
    expect(text).toContain('添付できなかったファイル:');
    expect(text).toContain(`• <${img(2)}> (download failed (HTTP 500))`);
    expect(text).toContain('ジョブへ移動');
    expect(galleryUrls(p)).toEqual(['attachment://image_1.png']);
  });
});

describe('threadName: thread and gallery post titles', () => {
  const named = (operation: Operation, params: JobRecord['params'], extra: Partial<JobRecord> = {}) =>
    threadName(makeJob(operation, 'queued', { params, ...extra }));
  const uuid = '43929e12-5b7c-4d2e-9f00-0123456789ab';

  it('the command and the prompt’s first words, within 100 characters', () => {
    expect(named('video', { task_id: uuid, prompt: 'a fox  runs\nthrough snow' })).toBe(
      'extend-video · a fox runs through snow',
    );
    const long = named('upscale', { prompt: 'word '.repeat(40) });
    expect(long.length).toBeLessThanOrEqual(100);
    expect(long).toMatch(/^upscale · word word .*…$/);
  });

  it('a song extension: its task’s short id, never the whole UUID; once sung, its first lyric line', () => {
    expect(named('song', { task_id: uuid, song_id: 'song-a' })).toBe('extend-song · 43929e12');
    expect(named('song', { task_id: 'song-parent-0001', song_id: 'song-a' })).toBe(
      'extend-song · song-parent-0001',
    );
    // A gallery post is made once the job finished: the song's own words name it.
    expect(named('song', { task_id: uuid, song_id: 'song-a' }, { result: RESULTS.song })).toBe(
      'extend-song · Hello *world*',
    );
  });

  it('withheld text (AutoMod): the command and the job’s short id', () => {
    expect(named('video', { task_id: uuid, prompt: 'forbidden' }, { textWithheld: true })).toBe(
      'extend-video · job_abc1',
    );
  });
});

describe('removed results', () => {
  it('a removed job renders, in every state, a card saying only that a moderator removed it', () => {
    const removed = { at: T0, by: '999999999999999999' };
    for (const job of [
      { ...finished('upscale'), removed },
      { ...finished('song'), removed },
      makeJob('video', 'processing', { removed }),
      makeJob('video', 'failed', { removed, error: { code: 'x', message: 'secret error' } }),
    ]) {
      const p = checkCard(renderJob(job, T0));
      expect(cardText(p)).toBe('🚫 This result was removed by a moderator.');
      expect(buttons(p)).toEqual([]);
      expect(galleryUrls(p)).toEqual([]);
      const all = JSON.stringify(p);
      expect(all).not.toContain('https://');
      expect(all).not.toContain('cat');
      expect(all).not.toContain(USER);
    }
  });

  it('renderRemoved is that card, in the language asked for', () => {
    const job = { ...finished('video'), locale: 'de' };
    // Ready to PATCH over a classic message: the card, its classic fields cleared.
    expect(renderRemoved(job)).toEqual(editBody(renderJob({ ...job, removed: { at: T0, by: '1' } }, T0)));
    expect(renderRemoved(job)).toMatchObject({ content: null, embeds: null, flags: 1 << 15 });
    expectValid(renderRemoved(job));
    expect(cardText(renderRemoved(job))).toContain('Moderator');
    expect(messageText(renderRemoved(job, translator('ja')))).toContain('モデレーター');
    // A message whose record is gone: the server's language is not known, English.
    expect(messageText(renderRemoved())).toBe('🚫 This result was removed by a moderator.');
  });
});

describe('AutoMod withheld text', () => {
  it('public renders leave out the prompt once textWithheld is set; other parameters stay', () => {
    const job = { ...finished('upscale'), textWithheld: true };
    const card = checkCard(renderJob(job, T0));
    expect(cardText(card)).not.toContain('cat');
    expect(cardText(card)).not.toContain('Prompt');
    expect(cardText(card)).toContain('**Resemblance:** 50');
    const running = checkClassic(renderJob({ ...makeJob('video', 'processing'), textWithheld: true }, T0));
    expect(JSON.stringify(running)).not.toContain('pan left');
    expect(JSON.stringify(running)).toContain('16:9');
    // Without the flag the prompt is shown.
    expect(cardText(renderJob(finished('upscale'), T0))).toContain('a \\*cat\\* on a \\_mat\\_');
  });
});

describe('renderJob: untrusted URLs', () => {
  it('a 600-character URL is never a button but stays in the message as a link', () => {
    const long = `https://cdn.example.com/${'a'.repeat(600)}.mp4`;
    const p = checkCard(renderJob(finished('video', { kind: 'video', videoUrl: long }), T0));
    expect(linkButtons(p)).toEqual([]);
    expect(everything(p)).toContain(long);
    expect(customIds(p)).toEqual(['next:extend-video:job_abc123']);

    const song = checkCard(
      renderJob(
        finished('song', {
          kind: 'song',
          songs: [{ songId: 's', audioUrl: long, imageUrl: long, videoUrl: long }],
        }),
        T0,
      ),
    );
    expect(everything(song)).toContain(long);

    const up = checkCard(renderJob(finished('upscale', { kind: 'upscale', imageUrls: [long, img(2)] }), T0));
    expect(galleryUrls(up)).toEqual([long, img(2)]);
  });

  it('odd but http(s) URLs are normalised into valid URIs', () => {
    const odd = [
      'https://cdn.example.com/a b/ü.png?q=x y|z^#frag`x',
      'https://cdn.example.com/[x]/{y}/%zz.png',
      'http://[::1]:8080/a.png',
      'https://bücher.example/a.png',
      'https://user:secret@cdn.example.com/a.png',
    ];
    const p = checkCard(renderJob(finished('upscale', { kind: 'upscale', imageUrls: odd }), T0));
    expect(galleryUrls(p)).toHaveLength(odd.length);
    expect(JSON.stringify(p)).not.toContain('secret');
  });

  it('a URL longer than a gallery item allows is kept as a text link only', () => {
    const huge = `https://cdn.example.com/${'b'.repeat(2100)}.png`;
    const p = checkCard(renderJob(finished('upscale', { kind: 'upscale', imageUrls: [huge, img(2)] }), T0));
    expect(cardText(p)).toContain(huge);
    expect(galleryUrls(p)).toEqual([img(2)]);
  });

  it('javascript: and other non-http URLs are dropped everywhere', () => {
    const evil = 'javascript:alert(document.cookie)';
    const ups = checkCard(
      renderJob(
        finished('upscale', { kind: 'upscale', imageUrls: [evil, img(2), 'data:image/png;base64,AAAA'] }),
        T0,
      ),
    );
    expect(galleryUrls(ups)).toEqual([img(2)]);
    expect(JSON.stringify(ups)).not.toContain('data:image');

    const song = checkCard(
      renderJob(
        finished('song', {
          kind: 'song',
          videoUrl: evil,
          songs: [{ songId: 's', audioUrl: evil, imageUrl: 'JAVASCRIPT:x', videoUrl: 'vbscript:x' }],
        }),
        T0,
      ),
    );
    expect(linkButtons(song)).toEqual([]);
    expect(JSON.stringify(song)).not.toMatch(/javascript:|vbscript:/i);

    const vid = checkCard(renderJob(finished('video', { kind: 'video', videoUrl: evil }), T0));
    expect(JSON.stringify(vid)).not.toContain('javascript');
    expect(cardText(vid)).toContain('The service returned no video URL.');
  });

  it('fitToDiscordLimits drops unsafe embed/button URLs it is handed directly', () => {
    const p = check(
      fitToDiscordLimits({
        content: 'x'.repeat(2500),
        embeds: Array.from({ length: 12 }, (_, i) => ({
          title: 't'.repeat(300),
          description: 'd'.repeat(5000),
          url: i === 0 ? 'javascript:alert(1)' : 'https://ok.example/',
          image: { url: 'javascript:alert(1)' },
          thumbnail: { url: 'https://ok.example/t.png' },
          footer: { text: 'f'.repeat(3000) },
          author: { name: 'a'.repeat(300) },
          fields: Array.from({ length: 30 }, () => ({ name: 'n'.repeat(300), value: 'v'.repeat(2000) })),
        })),
        components: Array.from({ length: 7 }, () => ({
          type: ComponentType.ActionRow,
          components: [
            ...Array.from({ length: 4 }, (_, i) => ({
              type: ComponentType.Button as const,
              style: ButtonStyle.Link as const,
              label: 'L'.repeat(100),
              url: i === 0 ? 'javascript:alert(1)' : `https://ok.example/${'p'.repeat(i === 1 ? 600 : 10)}`,
            })),
            {
              type: ComponentType.Button as const,
              style: ButtonStyle.Primary as const,
              label: 'ok',
              custom_id: 'c'.repeat(101),
            },
            {
              type: ComponentType.Button as const,
              style: ButtonStyle.Primary as const,
              label: 'ok',
              custom_id: 'fine',
            },
            {
              type: ComponentType.Button as const,
              style: ButtonStyle.Primary as const,
              label: 'ok',
              custom_id: 'fine2',
            },
          ],
        })),
        allowed_mentions: { parse: [] },
      }),
    );
    expect(p.content).toHaveLength(2000);
    expect(p.content.endsWith('…')).toBe(true);
    expect(p.embeds).toHaveLength(10);
    expect(p.embeds[0]?.url).toBeUndefined();
    expect(p.embeds[0]?.image).toBeUndefined();
    expect(p.components).toHaveLength(5);
  });
});

describe('renderJob: failed (a card)', () => {
  const advice: [string, RegExp][] = [
    ['service_rejected', /fix the input and run the command again/i],
    ['service_auth', /API key was rejected — ask an admin; nothing was charged/],
    ['service_error', /try again later/i],
    ['service_unavailable', /try again later/i],
    ['timed_out', /\/tasks/],
    ['not_confirmed', /never confirmed this job.*credits were returned/i],
    ['service_out_of_credits', /unavailable for now: try again later\. Nothing was charged/],
    ['service_busy', /try again later/i],
    ['restart_during_submit', /restarted while submitting/],
    ['something_new', /try again later/i],
  ];

  it.each(advice)('%s: red card, error text, advice and Retry', (code, re) => {
    const job = makeJob('song', 'failed', {
      taskId: 'task-failed-1',
      error: { code, message: 'Service said no' },
    });
    const p = checkCard(renderJob(job, T0));
    expect(p.components[0].accent_color).toBe(COLORS.failed);
    const text = cardText(p);
    expect(text).toContain('Song extension failed');
    expect(text).toContain('Service said no');
    expect(text).toContain('**What you can do**');
    expect(text).toMatch(re);
    expect(text).toContain(`**Error code:** \`${code}\``);
    expect(text).toContain('`task-failed-1`');
    expect(text).not.toContain('AI-generated');
    // A failed job's one button: Retry (same parameters, new job).
    expect(customIds(p)).toEqual([`next:retry:${job.id}`]);
  });

  it('several service messages are each shown, escaped, without mentions', () => {
    const details = ['image_url is *invalid*', 'prompt too long <@&999> @here', '[x](javascript:alert(1))'];
    const job = makeJob('upscale', 'failed', {
      error: { code: 'service_rejected', message: details.join('\n'), details },
    });
    const d = cardText(checkCard(renderJob(job, T0)));
    expect(d).toContain('• image\\_url is \\*invalid\\*');
    expect(d).toContain('• prompt too long \\<@&999\\>');
    expect(d).not.toContain('@here');
    expect(d).toContain('\\[x\\]');
    expect(d).not.toContain('Task ID');
  });

  it('a huge error message is truncated within limits', () => {
    const job = makeJob('video', 'failed', { error: { code: 'service_error', message: 'e'.repeat(50_000) } });
    expect(cardText(checkCard(renderJob(job, T0)))).toMatch(/e…/);
  });

  it('failed without an error object still renders', () => {
    const p = checkCard(renderJob(makeJob('upload', 'failed'), T0));
    expect(p.components[0].accent_color).toBe(COLORS.failed);
    expect(cardText(p)).toContain('Unknown error.');
  });
});

describe('renderJobSummaryLine', () => {
  it('shows state, operation, percentage, task id, created time and a jump link', () => {
    const job = makeJob('upscale', 'processing', { percentage: 30, taskId: 'task-9' });
    const line = renderJobSummaryLine(job, T0 + 5000);
    expect(line).toContain('⚙️');
    expect(line).toContain('Upscale');
    expect(line).toContain('30%');
    expect(line).toContain('`task-9`');
    expect(line).toContain(`<t:${Math.floor(T0 / 1000)}:R>`);
    expect(line).toContain(
      'https://discord.com/channels/333333333333333333/222222222222222222/444444444444444444',
    );
    expect(line).not.toContain('\n');
  });

  it('uses @me without a guild and no link without a message id', () => {
    const dm = makeJob('song', 'finished', { message: { channelId: '222', messageId: '444' } });
    expect(renderJobSummaryLine(dm, T0)).toContain('https://discord.com/channels/@me/222/444');
    const noMsg = makeJob('video', 'queued', { message: { channelId: '222' } });
    expect(renderJobSummaryLine(noMsg, T0)).not.toContain('discord.com/channels');
  });

  it('failed shows the code; every state has its emoji', () => {
    const failed = makeJob('upload', 'failed', { error: { code: 'timed_out', message: 'x' } });
    expect(renderJobSummaryLine(failed, T0)).toContain('failed (timed_out)');
    const emojis: Record<JobState, string> = {
      submitting: '📤',
      unconfirmed: '❔',
      queued: '⏳',
      processing: '⚙️',
      finished: '✅',
      failed: '❌',
    };
    for (const [state, emoji] of Object.entries(emojis) as [JobState, string][]) {
      expect(renderJobSummaryLine(makeJob('video', state), T0).startsWith(emoji)).toBe(true);
    }
  });
});

describe('withoutFreeText: what a public message still shows when AutoMod refused it without the member’s text', () => {
  it('leaves out the status, error and lyrics text and the member’s prompt; keeps state, links and buttons', () => {
    const lyrics = 'Forbidden words in a verse';
    const song = makeJob('song', 'finished', {
      params: { task_id: 't', song_id: 's', prompt: 'a private prompt' },
      statusText: 'the service says something',
      result: {
        kind: 'song',
        songs: [{ songId: 's1', audioUrl: 'https://files.example/a.wav', lyrics }],
      },
    });
    const bare = withoutFreeText(song);
    expect(bare.textWithheld).toBe(true);
    expect(bare.statusText).toBeUndefined();
    expect(bare.result).toEqual({
      kind: 'song',
      songs: [{ songId: 's1', audioUrl: 'https://files.example/a.wav' }],
    });
    // The record itself is untouched (the member's own views keep everything).
    expect(song.result).toMatchObject({ songs: [{ lyrics }] });
    const shown = messageText(renderJob(bare, T0));
    expect(shown).not.toContain('Forbidden');
    expect(shown).not.toContain('a private prompt');
    expect(shown).toContain('https://files.example/a.wav');
    // Each operation says what of its result is free text: an upload's message is.
    const upload = finished('upload', { kind: 'upload', message: 'Forbidden words', expiresAt: 'soon' });
    expect(withoutFreeText(upload).result).toEqual({ kind: 'upload', expiresAt: 'soon' });
    expect(withoutFreeText(finished('video')).result).toEqual(finished('video').result);
  });

  it('a failed job shows its code and the advice, not the service’s text, and never “unknown error”', () => {
    const failed = makeJob('upscale', 'failed', {
      error: { code: 'service_rejected', message: 'Forbidden words', details: ['Forbidden', 'words'] },
    });
    const shown = messageText(renderJob(withoutFreeText(failed), T0));
    expect(shown).not.toContain('Forbidden');
    expect(shown).toContain('service_rejected');
    expect(shown).not.toContain(translator('en-US').t('job.failed.unknown_error'));
    // The same job with its text shows it.
    expect(messageText(renderJob(failed, T0))).toContain('Forbidden');
  });
});
