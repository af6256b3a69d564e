/**
 * One module per media operation: for each, slash options → parameters → the
 * service request body (checked by the emulator's validation of the spec) →
 * the result it expects (the emulator's own result bodies) → the finished
 * message (checked against Discord's OpenAPI description) → its next steps and
 * what they inherit; and the stored parameters round-trip (Retry).
 */
import {
  ApplicationCommandOptionType,
  type APIApplicationCommandInteractionDataOption,
  type APIAttachment,
} from 'discord-api-types/v10';
import { OptionResolver } from '../src/services/discord/interactions/options.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseNextStepId } from '../src/services/discord/interactions/custom-ids.js';
import { editBody, createJobRenderer } from '../src/services/discord/render/job-render.js';
import { customIds, isCardMessage, messageText } from './helpers/message-text.js';
import { normalizeTaskResult } from '../src/services/media/schemas.js';
import type { Operation, TaskOutputs } from '../src/services/media/types.js';
import {
  NEXT_STEP_TARGETS,
  checkParams,
  jobOperations,
  operations,
  resultFiles,
  mediaOperations,
  renderOperations,
} from '../src/services/operations/index.js';
import { inEnglish } from '../src/services/operations/fields.js';
import { t, translator } from '../src/i18n/index.js';
import type { ParamsOf } from '../src/services/operations/types.js';
import type { JobRecord } from '../src/services/store/types.js';
import { finishedResult, upscaleResult } from './emulator/results.js';
import type { TaskRecord } from './emulator/types.js';
import {
  validateSongExtend,
  validateUpload,
  validateUpscale,
  validateVideoExtend,
} from './emulator/validation.js';
import { OpenApiSpec } from './fake-discord/openapi.js';

const { renderJob } = createJobRenderer(renderOperations);

const BASE = 'https://media.example';
const WEBHOOK = { url: 'https://bot.example/webhooks/media/job-1', secret: 'f'.repeat(48) };
const USER = '123456789012345678';

/**
 * A real option resolver over plain values, as Discord sends them: each value typed as the
 * command declares the option (any command: the option names do not collide), attachments
 * through `resolved.attachments`.
 */
function optionsOf(values: Record<string, unknown>): OptionResolver {
  const declared = new Map<string, number>();
  for (const op of Object.values(operations)) {
    if (op.input.kind !== 'slash') continue;
    for (const o of op.input.data.options ?? []) declared.set(o.name, o.type);
  }
  const options: APIApplicationCommandInteractionDataOption[] = [];
  const attachments: Record<string, APIAttachment> = {};
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const type = declared.get(name);
    if (type === undefined) throw new Error(`no command declares option ${name}`);
    if (type === ApplicationCommandOptionType.Attachment) {
      const a = value as { name: string; url: string; contentType: string; size: number };
      const id = String(Object.keys(attachments).length + 1);
      attachments[id] = {
        id,
        filename: a.name,
        url: a.url,
        proxy_url: a.url,
        size: a.size,
        content_type: a.contentType,
      };
      options.push({ name, type, value: id });
    } else {
      options.push({ name, type, value } as APIApplicationCommandInteractionDataOption);
    }
  }
  return new OptionResolver(options, { attachments });
}

const image = (name: string) => ({
  name,
  url: `https://cdn.discordapp.com/attachments/1/2/${name}`,
  contentType: 'image/png',
  size: 1000,
});

async function bodyText(body: string | AsyncIterable<string>): Promise<string> {
  if (typeof body === 'string') return body;
  let out = '';
  for await (const chunk of body) out += chunk;
  return out;
}

function finishedJob(op: Operation, params: JobRecord['params'], result: TaskOutputs): JobRecord {
  return {
    id: `job-${op}`,
    secret: 'x',
    operation: op,
    userId: USER,
    message: {
      channelId: '223456789012345678',
      guildId: '323456789012345678',
      messageId: '423456789012345678',
    },
    params,
    taskId: `task-${op}`,
    state: 'finished',
    percentage: 100,
    result,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_030_000,
    finishedAt: 1_700_000_030_000,
    version: 5,
  };
}

let spec: OpenApiSpec;
const EDIT_PATHS = ['/webhooks/1/token/messages/@original', '/channels/2/messages/3'];

function expectDiscordValid(payload: object): void {
  // As the edit goes out (a card clears the classic fields).
  const body: unknown = JSON.parse(JSON.stringify(editBody(payload)));
  for (const path of EDIT_PATHS) {
    const match = spec.matchPath(path);
    expect(match, path).toBeDefined();
    const r = spec.validateRequestBody(match?.template ?? '', 'PATCH', body);
    expect(r.ok === false ? r.errors : [], path).toEqual([]);
    expect(r.ok).not.toBe('no-schema');
  }
}

/** A finished parent of each extend operation, as the emulator knows it. */
const parentTask = (operation: 'song' | 'video'): TaskRecord =>
  ({
    id: 'parent-1',
    operation,
    state: 'finished',
    songIds: ['song-a', 'song-b'],
  }) as unknown as TaskRecord;

beforeAll(() => {
  spec = OpenApiSpec.load();
});

describe('the registry', () => {
  it('the Discord check is real: a malformed message fails it', () => {
    expect(() => expectDiscordValid({ content: 5, components: [{ type: 99 }] })).toThrow();
  });

  it('has a module for every operation, each naming its own operation and a known command', () => {
    for (const [op, m] of Object.entries(operations)) {
      expect(m.operation).toBe(op);
      if (m.input.kind === 'slash') expect(m.input.data.name).toBe(m.command);
    }
    // The store checks the same operations' jobs.
    expect(jobOperations.names).toEqual(Object.keys(operations));
  });

  it('every next step leads to an operation that says what it inherits', () => {
    for (const target of Object.values(NEXT_STEP_TARGETS)) {
      expect(operations[target].continueFrom).toBeTypeOf('function');
    }
  });
});

describe('upscale: options → body → result → render → next steps', () => {
  const m = operations.upscale;
  const options = {
    prompt: 'a crisp fox',
    image: image('fox.png'),
    resemblance: 70,
    detail: 30,
    seed: 7,
    magic_prompt: 'ON',
  };

  it('round trip', async () => {
    if (m.input.kind !== 'slash') throw new Error('upscale is a slash command');
    const params = m.input.fromOptions(optionsOf(options), { maxImageBytes: 10_000 });
    const checked = checkParams('upscale', params);
    expect(checked.ok).toBe(true);
    expect(params).toEqual({
      imageUrl: image('fox.png').url,
      prompt: 'a crisp fox',
      resemblance: 70,
      detail: 30,
      seed: 7,
      magicPromptOption: 'ON',
    });

    const body: unknown = JSON.parse(await bodyText(m.body(params, { photoFormat: 'base64' })));
    expect(body).toEqual({
      image_url: image('fox.png').url,
      prompt: 'a crisp fox',
      resemblance: 70,
      detail: 30,
      seed: 7,
      magic_prompt_option: 'ON',
    });
    expect(validateUpscale(body)).toMatchObject({ ok: true });

    const { result } = normalizeTaskResult(
      'upscale',
      {
        ...upscaleResult({ baseUrl: BASE, taskId: 'task-upscale' }, 7),
        status: 'finished',
      },
      mediaOperations,
    );
    expect(result.state).toBe('finished');
    expect(result.outputs?.kind).toBe('upscale');
    const stored = m.toStored(params);
    const job = finishedJob('upscale', stored, result.outputs as TaskOutputs);
    const payload = renderJob(job, job.updatedAt);
    expectDiscordValid(payload);
    expect(JSON.stringify(payload)).toContain(`${BASE}/files/task-upscale-1.png`);
    expect(customIds(payload).map(parseNextStepId)).toEqual([{ kind: 'upscale-again', jobId: job.id }]);

    // Retry: exactly the same parameters. Upscale again: all but the seed.
    expect(m.fromStored(stored)).toEqual(params);
    const { seed: _seed, ...withoutSeed } = params;
    expect(m.continueFrom?.({ ...job, taskId: 'task-upscale' }, {})).toEqual(withoutSeed);
  });

  it('refuses what the service would refuse, naming the option', () => {
    if (m.input.kind !== 'slash') throw new Error('upscale is a slash command');
    const input = m.input;
    expect(() => input.fromOptions(optionsOf({ prompt: 'x' }), { maxImageBytes: 10 })).toThrow(/image/);
    expect(() =>
      input.fromOptions(optionsOf({ ...options, image: undefined, image_url: 'javascript:alert(1)' }), {
        maxImageBytes: 10_000,
      }),
    ).toThrow(/image_url/);
    expect(() => input.fromOptions(optionsOf(options), { maxImageBytes: 10 })).toThrow(/limit/);
    const bad = checkParams('upscale', { imageUrl: 'https://a.example/x.png', prompt: ' ', resemblance: 0 });
    if (bad.ok) throw new Error('a blank prompt must be refused');
    expect(bad.problems.map(inEnglish)).toEqual(expect.arrayContaining([expect.stringMatching(/prompt/)]));
    // The member reads them in their language; the option keeps its canonical name.
    expect(bad.problems.map((p) => p(translator('de')))).toContain(
      t('de', 'input.not_empty', { field: 'prompt' }),
    );
  });
});

describe('extend-song: options → body → result → render → next steps', () => {
  const m = operations.song;

  it('round trip', async () => {
    if (m.input.kind !== 'slash') throw new Error('extend-song is a slash command');
    const params = m.input.fromOptions(
      optionsOf({ task_id: ' parent-1 ', song_id: 'song-a', continue_at: 12.5 }),
      { maxImageBytes: 10 },
    );
    expect(params).toEqual({ parentTaskId: 'parent-1', songId: 'song-a', continueAt: 12.5 });
    const body: unknown = JSON.parse(
      await bodyText(m.body(params, { webhook: WEBHOOK, photoFormat: 'base64' })),
    );
    expect(body).toEqual({
      parent_task_id: 'parent-1',
      song_id: 'song-a',
      continue_at: 12.5,
      webhook_url: WEBHOOK.url,
      webhook_secret: WEBHOOK.secret,
    });
    expect(validateSongExtend(body, () => parentTask('song'))).toMatchObject({ ok: true });

    const { result } = normalizeTaskResult(
      'song',
      finishedResult('song', { baseUrl: BASE, taskId: 'task-song', songIds: ['s-1', 's-2'] }),
      mediaOperations,
    );
    expect(result.state).toBe('finished');
    const stored = m.toStored(params);
    const job = finishedJob('song', stored, result.outputs as TaskOutputs);
    const payload = renderJob(job, job.updatedAt);
    expectDiscordValid(payload);
    expect(customIds(payload).map(parseNextStepId)).toEqual([
      { kind: 'extend-song', jobId: job.id, songIndex: 0 },
      { kind: 'extend-song', jobId: job.id, songIndex: 1 },
    ]);
    expect(m.fromStored(stored)).toEqual(params);
    // Extend song 2: the parent task and its second song.
    expect(m.continueFrom?.({ ...job, taskId: 'task-song' }, { songIndex: 1 })).toEqual({
      parentTaskId: 'task-song',
      songId: 's-2',
    });
    expect(m.continueFrom?.({ ...job, taskId: 'task-song' }, { songIndex: 5 })).toHaveProperty('cannot');
  });

  // Regression: the gallery kept the two audio files and the top-level video only; the
  // covers and each song's video (links that expire) were lost.
  it('the gallery keeps every file: both audio files, both covers, each song’s video, the top-level video', () => {
    const { result } = normalizeTaskResult(
      'song',
      finishedResult('song', { baseUrl: BASE, taskId: 'task-song', songIds: ['s-1', 's-2'] }),
      mediaOperations,
    );
    expect(resultFiles(result.outputs)).toEqual(
      ['1.wav', '2.wav', '1.png', '2.png', '1.mp4', '2.mp4']
        .map((f) => `${BASE}/files/task-song-${f}`)
        .concat(`${BASE}/files/task-song.mp4`),
    );
    // A link the service repeats (the top-level video is song 1's) is kept once; missing ones are skipped.
    const repeated: TaskOutputs = {
      kind: 'song',
      songs: [{ songId: 'a', audioUrl: `${BASE}/a.wav`, videoUrl: `${BASE}/a.mp4` }, { songId: 'b' }],
      videoUrl: `${BASE}/a.mp4`,
    };
    expect(resultFiles(repeated)).toEqual([`${BASE}/a.wav`, `${BASE}/a.mp4`]);
  });
});

describe('extend-video: options → body → result → render → next steps', () => {
  const m = operations.video;

  it('round trip', async () => {
    if (m.input.kind !== 'slash') throw new Error('extend-video is a slash command');
    const params = m.input.fromOptions(
      optionsOf({
        task_id: 'parent-1',
        prompt: 'the fox runs',
        image: image('first.png'),
        end_image: image('last.png'),
        enhance_prompt: true,
        aspect_ratio: '16:9',
      }),
      { maxImageBytes: 10_000 },
    );
    const body: unknown = JSON.parse(
      await bodyText(m.body(params, { webhook: WEBHOOK, photoFormat: 'base64' })),
    );
    expect(body).toEqual({
      parent_task_id: 'parent-1',
      prompt: 'the fox runs',
      image_url: image('first.png').url,
      end_image_url: image('last.png').url,
      enhance_prompt: true,
      aspect_ratio: '16:9',
      webhook_url: WEBHOOK.url,
      webhook_secret: WEBHOOK.secret,
    });
    expect(validateVideoExtend(body, () => parentTask('video'))).toMatchObject({ ok: true });

    // A finished video result has no status (spec quirk): its video_url says it.
    const { result } = normalizeTaskResult(
      'video',
      finishedResult('video', { baseUrl: BASE, taskId: 'task-video' }),
      mediaOperations,
    );
    expect(result.state).toBe('finished');
    const stored = m.toStored(params);
    const job = finishedJob('video', stored, result.outputs as TaskOutputs);
    const payload = renderJob(job, job.updatedAt);
    expectDiscordValid(payload);
    expect(isCardMessage(payload)).toBe(true);
    expect(messageText(payload)).toContain(`${BASE}/files/task-video.mp4`);
    expect(customIds(payload).map(parseNextStepId)).toEqual([{ kind: 'extend-video', jobId: job.id }]);
    expect(m.fromStored(stored)).toEqual(params);
    // Extend again: the new prompt, the parent's aspect ratio and prompt enhancement (not its frames).
    expect(m.continueFrom?.({ ...job, taskId: 'task-video' }, { prompt: 'then it sleeps' })).toEqual({
      parentTaskId: 'task-video',
      prompt: 'then it sleeps',
      enhancePrompt: true,
      aspectRatio: '16:9',
    });
  });
});

describe('training upload: params → streamed body → result → render', () => {
  const m = operations.upload;

  it('round trip', async () => {
    const params: ParamsOf<'upload'> = {
      photos: Array.from({ length: 10 }, (_, i) => ({ url: `https://cdn.example/p${i}.png` })),
      ethnicity: 'asian',
      gender: 'female',
      age: 30,
    };
    expect(checkParams('upload', params).ok).toBe(true);
    const nine = checkParams('upload', { ...params, photos: params.photos.slice(0, 9) });
    expect(nine.ok ? [] : nine.problems.map(inEnglish)).toEqual(['images: at least 10 photos are needed']);
    const body: unknown = JSON.parse(
      await bodyText(m.body(params, { webhook: WEBHOOK, photoFormat: 'url' })),
    );
    expect(body).toMatchObject({ ethnicity: 'asian', gender: 'female', age: 30, webhook_url: WEBHOOK.url });
    expect(validateUpload(body, false)).toMatchObject({ ok: true });

    const expiresAt = '2030-01-01T00:00:00.000Z';
    const { result } = normalizeTaskResult(
      'upload',
      finishedResult('upload', { baseUrl: BASE, taskId: 'task-upload', imageCount: 10, expiresAt }),
      mediaOperations,
    );
    expect(result.state).toBe('finished');
    const job = finishedJob('upload', m.toStored(params), result.outputs as TaskOutputs);
    // The job's params are shown publicly: the photo count only, never the subject's demographics.
    expect(job.params).toEqual({ photos: 10 });
    const payload = renderJob(job, job.updatedAt);
    expectDiscordValid(payload);
    expect(messageText(payload)).toContain('Training photos');
    expect(JSON.stringify(payload)).toContain(`<t:${Date.parse(expiresAt) / 1000}:R>`);
    expect(customIds(payload)).toEqual([]);
    expect(JSON.stringify(payload)).not.toMatch(/asian|female/);
    // A failed upload offers Retry (its photos wait in the member's session, retried through
    // the consent step); the job itself keeps no photo, so `fromStored` says why when they are gone.
    expect(m.retryable).toBe(true);
    expect(m.fromStored(job.params)).toHaveProperty('cannot');
    const { result: _result, ...unfinished } = job;
    expect(customIds(renderJob({ ...unfinished, state: 'failed' }, 0))).toEqual([`next:retry:${job.id}`]);
  });
});
