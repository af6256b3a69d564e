import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormatsModule from 'ajv-formats';
import { ButtonStyle, ComponentType, type APIButtonComponent } from 'discord-api-types/v10';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseNextStepId } from '../src/services/discord/custom-ids.js';
import {
  COLORS,
  LIMITS,
  embedCharacters,
  escapeMarkdown,
  fitToDiscordLimits,
  formatDuration,
  isHttpUrl,
  progressBar,
  renderJob,
  renderJobSummaryLine,
  safeHttpUrl,
  truncate,
  type MessagePayload,
} from '../src/services/discord/render.js';
import type { Operation, TaskOutputs } from '../src/services/media/types.js';
import type { JobRecord, JobState } from '../src/services/store/types.js';

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
  const parts: string[] = [p.content];
  for (const e of p.embeds) {
    parts.push(e.title ?? '', e.description ?? '', e.url ?? '', e.image?.url ?? '', e.thumbnail?.url ?? '');
    parts.push(e.footer?.text ?? '', e.author?.name ?? '');
    for (const f of e.fields ?? []) parts.push(f.name, f.value);
  }
  for (const b of buttons(p)) if (b.style === ButtonStyle.Link) parts.push(b.url);
  return parts.join('\n');
}

function buttons(p: MessagePayload): APIButtonComponent[] {
  return p.components.flatMap((r) => r.components);
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
  return p.embeds.map((e) => e.description ?? '').join('\n');
}

/** Checks every Discord limit by hand (independently of the OpenAPI schema). */
function expectWithinLimits(p: MessagePayload): void {
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
  // What goes on the wire is the JSON text.
  const body: unknown = JSON.parse(JSON.stringify(p));
  for (const [path, validate] of validators) {
    const ok = validate(body);
    expect(
      ok ? [] : validate.errors?.slice(0, 5).map((e) => `${path}: ${e.instancePath} ${e.message ?? ''}`),
    ).toEqual([]);
  }
}

function check(p: MessagePayload): MessagePayload {
  expectWithinLimits(p);
  expectValid(p);
  return p;
}

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
    const p = check(renderJob(makeJob(op, 'submitting'), T0 + 1000));
    expect(p.embeds).toHaveLength(1);
    expect(p.embeds[0]?.title).toBe(titles[op]);
    expect(p.embeds[0]?.color).toBe(COLORS.queued);
    expect(p.embeds[0]?.description).toContain(`<@${USER}>`);
    expect(p.content + descriptions(p)).toContain('Submitting…');
    expect(p.embeds[0]?.fields?.some((f) => f.name === 'Task ID')).toBe(false);
    expect(p.components).toEqual([]);
  });

  it.each(ops)('%s queued shows the task id and the parameters', (op) => {
    const p = check(renderJob(makeJob(op, 'queued', { taskId: 'task-xyz' }), T0 + 1000));
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
    const p = check(renderJob(makeJob('upscale', 'queued'), T0));
    const fields = p.embeds[0]?.fields ?? [];
    expect(fields.find((f) => f.name === 'Prompt')?.value).toBe('a \\*cat\\* on a \\_mat\\_');
    expect(fields.find((f) => f.name === 'Image URL')?.value).toBe('https://cdn.example.com/in/source.png');
    expect(fields.find((f) => f.name === 'Resemblance')?.value).toBe('50');
  });

  it.each(ops)('%s processing shows the bar, percentage and elapsed time', (op) => {
    const job = makeJob(op, 'processing', { taskId: 'task-1', percentage: 30 });
    const p = check(renderJob(job, T0 + 65_000));
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
    const p = check(renderJob(job, T0 + 5000));
    expect(descriptions(p)).toContain('Preparing \\*images\\*');
    expect(JSON.stringify(p)).not.toContain('@everyone');
  });
});

describe('renderJob: finished', () => {
  it.each(['upscale', 'song', 'video', 'upload'] as const)('%s: every result URL is in the message', (op) => {
    const job = finished(op);
    const p = check(renderJob(job, T0 + 70_000));
    expect(p.embeds[0]?.color).toBe(COLORS.finished);
    const all = everything(p);
    for (const url of resultUrls(RESULTS[op])) expect(all).toContain(url);
  });

  it('upscale: one embed per image sharing the url (gallery), seed, link buttons and upscale again', () => {
    const p = check(renderJob(finished('upscale'), T0));
    expect(p.embeds).toHaveLength(4);
    expect(p.embeds.map((e) => e.image?.url)).toEqual([img(1), img(2), img(3), img(4)]);
    expect(new Set(p.embeds.map((e) => e.url)).size).toBe(1);
    expect(p.embeds[0]?.fields?.find((f) => f.name === 'Seed')?.value).toBe('424242');
    expect(linkButtons(p).map((b) => b.label)).toEqual(['Image 1', 'Image 2', 'Image 3', 'Image 4']);
    expect(linkButtons(p).map((b) => b.url)).toEqual([img(1), img(2), img(3), img(4)]);
    const ids = customIds(p);
    expect(ids).toEqual(['next:upscale-again:job_abc123']);
    expect(parseNextStepId(ids[0] ?? '')).toEqual({ kind: 'upscale-again', jobId: 'job_abc123' });
    expect(actionLabels(p)).toEqual(['Upscale again']);
  });

  it('upscale with 12 images: ≤ 10 embeds, ≤ 5 rows, every image still reachable', () => {
    const urls = Array.from({ length: 12 }, (_, i) => img(i + 1));
    const p = check(renderJob(finished('upscale', { kind: 'upscale', imageUrls: urls, seed: 1 }), T0));
    expect(p.embeds).toHaveLength(10);
    // Galleries of 4: embeds 1-4, 5-8, 9-10 each share a url.
    expect(p.embeds.map((e) => e.url)).toEqual([
      img(1),
      img(1),
      img(1),
      img(1),
      img(5),
      img(5),
      img(5),
      img(5),
      img(9),
      img(9),
    ]);
    const all = everything(p);
    for (const u of urls) expect(all).toContain(u);
    expect(linkButtons(p)).toHaveLength(12);
    expect(customIds(p)).toEqual(['next:upscale-again:job_abc123']);
  });

  it('upscale with 40 images stays within limits and keeps every URL', () => {
    const urls = Array.from({ length: 40 }, (_, i) => img(i + 1));
    const p = check(renderJob(finished('upscale', { kind: 'upscale', imageUrls: urls }), T0));
    const all = everything(p);
    for (const u of urls) expect(all).toContain(u);
    expect(customIds(p)).toHaveLength(1);
  });

  it('song: two song embeds, video in content, audio/video buttons and extend buttons', () => {
    const p = check(renderJob(finished('song'), T0));
    const out = RESULTS.song as Extract<TaskOutputs, { kind: 'song' }>;
    expect(p.content).toContain('https://cdn.example.com/song/mix.mp4');
    const songEmbeds = p.embeds.filter((e) => /^Song \d+$/.test(e.title ?? ''));
    expect(songEmbeds.map((e) => e.title)).toEqual(['Song 1', 'Song 2']);
    expect(songEmbeds[0]?.fields?.find((f) => f.name === 'Song ID')?.value).toBe('`song-1-id`');
    expect(songEmbeds[1]?.fields?.find((f) => f.name === 'Song ID')?.value).toBe('`song-2-id`');
    expect(songEmbeds[0]?.thumbnail?.url).toBe(out.songs[0]?.imageUrl);
    expect(songEmbeds[1]?.thumbnail?.url).toBe(out.songs[1]?.imageUrl);
    // Lyrics are escaped: no heading, no mention.
    expect(songEmbeds[0]?.description).toContain('\\[Verse 1\\]');
    expect(songEmbeds[0]?.description).toContain('\\# not a heading');
    expect(songEmbeds[0]?.description).toContain('\\<@1\\>');
    expect(JSON.stringify(p)).not.toContain('@everyone');
    expect(linkButtons(p)).toEqual([
      { label: 'Audio 1', url: 'https://cdn.example.com/song/1.mp3' },
      { label: 'Audio 2', url: 'https://cdn.example.com/song/2.mp3' },
      { label: 'Video', url: 'https://cdn.example.com/song/mix.mp4' },
    ]);
    expect(customIds(p)).toEqual(['next:extend-song:job_abc123:0', 'next:extend-song:job_abc123:1']);
    expect(actionLabels(p)).toEqual(['Extend song 1', 'Extend song 2']);
    expect(customIds(p).map((id) => parseNextStepId(id))).toEqual([
      { kind: 'extend-song', jobId: 'job_abc123', songIndex: 0 },
      { kind: 'extend-song', jobId: 'job_abc123', songIndex: 1 },
    ]);
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
    const p = check(renderJob(job, T0));
    const songEmbeds = p.embeds.filter((e) => /^Song \d+$/.test(e.title ?? ''));
    for (const e of songEmbeds) expect(e.description).toMatch(/…$/);
    const all = everything(p);
    for (const url of resultUrls(out)) expect(all).toContain(url);
  });

  it('video: URL in the content, parameters embed, open button and extend again', () => {
    const p = check(renderJob(finished('video'), T0));
    const url = 'https://cdn.example.com/video/out.mp4';
    expect(p.content.split('\n')).toContain(url);
    expect(p.embeds).toHaveLength(1);
    expect(p.embeds[0]?.fields?.find((f) => f.name === 'Prompt')?.value).toBe('pan left');
    expect(p.embeds[0]?.fields?.find((f) => f.name === 'Aspect ratio')?.value).toBe('16:9');
    expect(linkButtons(p)).toEqual([{ label: 'Open video', url }]);
    expect(customIds(p)).toEqual(['next:extend-video:job_abc123']);
    expect(actionLabels(p)).toEqual(['Extend again']);
  });

  it('upload: message and expiry as relative, absolute and ISO time; no next step', () => {
    const p = check(renderJob(finished('upload'), T0));
    const unix = Date.parse('2025-01-09T03:04:05.000Z') / 1000;
    const d = descriptions(p);
    expect(d).toContain('Images prepared');
    expect(d).toContain(`<t:${unix}:R>`);
    expect(d).toContain(`<t:${unix}:F>`);
    expect(d).toContain('2025-01-09T03:04:05.000Z');
    expect(p.components).toEqual([]);
  });

  it('upload with an unparseable expiry still shows the text', () => {
    const p = check(renderJob(finished('upload', { kind: 'upload', message: 'ok', expiresAt: 'soon' }), T0));
    expect(descriptions(p)).toContain('`soon`');
  });

  it('finished without a result renders a plain finished message', () => {
    const p = check(renderJob(makeJob('video', 'finished'), T0));
    expect(p.embeds[0]?.color).toBe(COLORS.finished);
    expect(p.content).toContain('finished');
  });
});

describe('renderJob: untrusted URLs', () => {
  it('a 600-character URL is never a button but stays in the message as a link', () => {
    const long = `https://cdn.example.com/${'a'.repeat(600)}.mp4`;
    const p = check(renderJob(finished('video', { kind: 'video', videoUrl: long }), T0));
    expect(linkButtons(p)).toEqual([]);
    expect(everything(p)).toContain(long);
    expect(customIds(p)).toEqual(['next:extend-video:job_abc123']);

    const song = check(
      renderJob(
        finished('song', {
          kind: 'song',
          songs: [{ songId: 's', audioUrl: long, imageUrl: long, videoUrl: long }],
        }),
        T0,
      ),
    );
    expect(linkButtons(song)).toEqual([]);
    expect(everything(song)).toContain(long);

    const up = check(renderJob(finished('upscale', { kind: 'upscale', imageUrls: [long, img(2)] }), T0));
    expect(linkButtons(up).map((b) => b.label)).toEqual(['Image 2']);
    expect(up.embeds[0]?.image?.url).toBe(long);
  });

  it('odd but http(s) URLs are normalised into valid URIs', () => {
    const odd = [
      'https://cdn.example.com/a b/ü.png?q=x y|z^#frag`x',
      'https://cdn.example.com/[x]/{y}/%zz.png',
      'http://[::1]:8080/a.png',
      'https://bücher.example/a.png',
      'https://user:secret@cdn.example.com/a.png',
    ];
    const p = check(renderJob(finished('upscale', { kind: 'upscale', imageUrls: odd }), T0));
    expect(p.embeds).toHaveLength(odd.length);
    expect(linkButtons(p)).toHaveLength(odd.length);
    expect(JSON.stringify(p)).not.toContain('secret');
  });

  it('a URL longer than an embed allows is kept as a text link only', () => {
    const huge = `https://cdn.example.com/${'b'.repeat(2100)}.png`;
    const p = check(renderJob(finished('upscale', { kind: 'upscale', imageUrls: [huge, img(2)] }), T0));
    expect(everything(p)).toContain(huge);
    expect(p.embeds.every((e) => e.image?.url !== huge && e.url !== huge)).toBe(true);
  });

  it('javascript: and other non-http URLs are dropped everywhere', () => {
    const evil = 'javascript:alert(document.cookie)';
    const ups = check(
      renderJob(
        finished('upscale', { kind: 'upscale', imageUrls: [evil, img(2), 'data:image/png;base64,AAAA'] }),
        T0,
      ),
    );
    expect(ups.embeds.map((e) => e.image?.url)).toEqual([img(2)]);
    expect(linkButtons(ups).map((b) => b.label)).toEqual(['Image 2']);
    expect(JSON.stringify(ups)).not.toContain('data:image');

    const song = check(
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

    const vid = check(renderJob(finished('video', { kind: 'video', videoUrl: evil }), T0));
    expect(linkButtons(vid)).toEqual([]);
    expect(vid.content).not.toContain('javascript');
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

describe('renderJob: failed', () => {
  const advice: [string, RegExp][] = [
    ['service_rejected', /fix the input and run the command again/i],
    ['service_auth', /API key was rejected — ask an admin; nothing was charged/],
    ['service_error', /try again later/i],
    ['service_unavailable', /try again later/i],
    ['timed_out', /\/tasks/],
    ['not_confirmed', /never confirmed this job.*credits were returned/i],
    [
      'service_out_of_credits',
      /unavailable for now \(the operator has been told\)\. Your credits were returned/,
    ],
    ['service_busy', /try again later\. Your credits were returned/i],
    ['something_new', /try again later/i],
  ];

  it.each(advice)('%s: red embed, error text and advice', (code, re) => {
    const job = makeJob('song', 'failed', {
      taskId: 'task-failed-1',
      error: { code, message: 'Service said no' },
    });
    const p = check(renderJob(job, T0));
    const e = p.embeds[0];
    expect(e?.color).toBe(COLORS.failed);
    expect(e?.title).toBe('Song extension failed');
    expect(e?.description).toContain('Service said no');
    expect(e?.fields?.find((f) => f.name === 'What you can do')?.value).toMatch(re);
    expect(e?.fields?.find((f) => f.name === 'Task ID')?.value).toBe('`task-failed-1`');
    // A failed job's one button: Retry (same parameters, new job).
    const ids = p.components.flatMap((r) => r.components).map((b) => ('custom_id' in b ? b.custom_id : ''));
    expect(ids).toEqual([`next:retry:${job.id}`]);
  });

  it('several service messages are each shown, escaped, without mentions', () => {
    const details = ['image_url is *invalid*', 'prompt too long <@&999> @here', '[x](javascript:alert(1))'];
    const job = makeJob('upscale', 'failed', {
      error: { code: 'service_rejected', message: details.join('\n'), details },
    });
    const p = check(renderJob(job, T0));
    const d = descriptions(p);
    expect(d).toContain('• image\\_url is \\*invalid\\*');
    expect(d).toContain('• prompt too long \\<@&999\\>');
    expect(d).not.toContain('@here');
    expect(d).toContain('\\[x\\]');
    expect(p.embeds[0]?.fields?.some((f) => f.name === 'Task ID')).toBe(false);
  });

  it('a huge error message is truncated within limits', () => {
    const job = makeJob('video', 'failed', { error: { code: 'service_error', message: 'e'.repeat(50_000) } });
    const p = check(renderJob(job, T0));
    expect(descriptions(p)).toMatch(/…$/);
  });

  it('failed without an error object still renders', () => {
    const p = check(renderJob(makeJob('upload', 'failed'), T0));
    expect(p.embeds[0]?.color).toBe(COLORS.failed);
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
