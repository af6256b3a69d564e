/**
 * Adding an operation is one module (CONTRIBUTING.md, "Adding an operation"): a toy
 * `remix` operation, made here and handed to the functions the bot builds its lists
 * with, shows up as a registered slash command, as a cost in CREDIT_COSTS, as the
 * endpoint the media client posts to and as a job the store keeps, with nothing else
 * of the bot changed. Its catalog texts stand in for the keys such a module adds to
 * the six catalogs.
 *
 * Its types are declared here too, but not by augmenting `OperationTypes` as a real
 * module does: an augmentation holds for the whole program, so the registry (which must
 * have a module for every operation) would stop compiling. The module is typed against
 * `OperationModuleOf<name, parameters, result>`, what `OperationModule<K>` is made of.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SlashCommandBuilder } from 'discord.js';
import { pino } from 'pino';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type * as Catalogs from '../src/i18n/catalogs.js';
import type { Operation, ParamsOf } from '../src/services/media/types.js';
import type { OperationModuleOf, SomeOperationModule } from '../src/services/operations/types.js';
import type { JobRecord } from '../src/services/store/types.js';

/** The toy's catalog keys (in every catalog: English stands in for the other five here). */
const REMIX_TEXTS = vi.hoisted(
  () =>
    ({
      'commands.remix.description': 'Remix an image of yours',
      'commands.remix.options.image_url.description': 'The http(s) URL of the image',
      'operations.remix.title': 'Remix',
      'operations.remix.label': 'Remix',
    }) as const,
);

vi.mock('../src/i18n/catalogs.js', async (importOriginal) => {
  const real = await importOriginal<typeof Catalogs>();
  return {
    ...real,
    CATALOGS: Object.fromEntries(
      Object.entries(real.CATALOGS).map(([l, c]) => [l, { ...c, ...REMIX_TEXTS }]),
    ),
    isMessageKey: (key: string) => real.isMessageKey(key) || Object.hasOwn(REMIX_TEXTS, key),
  };
});

// The bot's modules are imported here, after a reset, not above: with the module graph shared
// with the files a worker ran before (the fast lane runs without isolation), modules those
// files loaded are bound to the real catalogs, and the mock above would not reach them.
vi.resetModules();
const { commandData, commandList, commands } = await import('../src/commands/index.js');
const { ConfigError, parseConfig } = await import('../src/config.js');
const { MediaClient } = await import('../src/services/media/client.js');
const { jobOperations, jobOperationsOf, mediaOperationsOf, operationModules } =
  await import('../src/services/operations/index.js');
const { str, webhookFields } = await import('../src/services/operations/input.js');
const { createStores } = await import('../src/services/store/index.js');
// And the files after this one in the worker import them afresh, without the mock.
afterAll(() => {
  vi.doUnmock('../src/i18n/catalogs.js');
  vi.resetModules();
});

interface RemixParams {
  imageUrl: string;
}
/** Its finished result, as the job keeps it (a real module's `outputs` in `OperationTypes`). */
const remixResultSchema = z.object({ kind: z.literal('remix'), imageUrls: z.array(z.string()) });
type RemixOutputs = z.output<typeof remixResultSchema>;

/** The one module: its command, cost and endpoint, and how it is sent, read and kept. */
const remix: OperationModuleOf<'remix', RemixParams, RemixOutputs> = {
  operation: 'remix',
  command: 'remix',
  cost: 3,
  path: { variable: 'MEDIA_PATH_REMIX', default: '/image-remix' },
  mode: 'async',
  input: {
    kind: 'slash',
    data: new SlashCommandBuilder()
      .setName('remix')
      .setDescription('Remix an image of yours')
      .addStringOption((o) =>
        o.setName('image_url').setDescription('The http(s) URL of the image').setRequired(true),
      )
      .toJSON(),
    fromOptions: (o) => ({ imageUrl: o.getString('image_url', true) }),
  },
  schema: z.object({ imageUrl: z.url() }),
  retryable: true,
  toStored: (p) => ({ image_url: p.imageUrl }),
  fromStored: (s) => {
    const imageUrl = str(s['image_url']);
    return imageUrl === undefined ? { cannot: () => 'no image' } : { imageUrl };
  },
  body: (p, o) => JSON.stringify({ image_url: p.imageUrl, ...webhookFields(o.webhook) }),
  outputs: (b) => (b.image_urls ? { kind: 'remix', imageUrls: b.image_urls } : undefined),
  resultSchema: remixResultSchema,
  resultWithoutText: (out) => out,
  card: () => ({ title: 'Remix', facts: [], media: [], links: [], notes: [], actions: [] }),
  inGallery: false,
  files: () => [],
  fileKinds: [],
  continueFrom: undefined,
};
// 'remix' is no `Operation` of the bot's own type: the lists below take it as one.
const withRemix = [...operationModules, remix as unknown as SomeOperationModule];

const REQUIRED = {
  DISCORD_TOKEN: 'bot-token-abc.def',
  DISCORD_APPLICATION_ID: '123456789012345678',
  MEDIA_API_KEY: 'media-key-xyz',
};

describe('a fifth operation, declared in one module', () => {
  it('its slash command is registered, with its catalog texts; the bot’s own list has no such command', () => {
    expect(commands.map((c) => c.data.name)).not.toContain('remix');
    const list = commandList(withRemix);
    const command = list.find((c) => c.data.name === 'remix');
    expect(command).toMatchObject({ job: true, userInstall: 'job' });
    // After the other operations' commands, before the commands no module declares.
    const names = commands.map((c) => c.data.name);
    const slash = operationModules.filter((m) => m.input.kind === 'slash').length;
    expect(list.map((c) => c.data.name)).toEqual([...names.slice(0, slash), 'remix', ...names.slice(slash)]);
    const registered = commandData(false, list).find((c) => c.name === 'remix');
    expect(registered).toMatchObject({
      name: 'remix',
      description: REMIX_TEXTS['commands.remix.description'],
      description_localizations: { de: REMIX_TEXTS['commands.remix.description'] },
      options: [{ name: 'image_url', required: true }],
      // A paid job: server installs, in servers only (design: "Where commands work").
      integration_types: [0],
      contexts: [0],
    });
  });

  it('its cost is in CREDIT_COSTS (default and set) and its MEDIA_PATH_* variable sets its endpoint', () => {
    const byDefault = parseConfig(withRemix, REQUIRED);
    expect(byDefault.community.costs).toMatchObject({ remix: 3, upscale: 1, 'training-photos': 2 });
    expect(byDefault.media.paths.submit).toMatchObject({ remix: '/image-remix', upscale: '/image-upscale' });
    const set = parseConfig(withRemix, {
      ...REQUIRED,
      CREDIT_COSTS: 'remix=5',
      MEDIA_PATH_REMIX: '/v2/remix/',
    });
    expect(set.community.costs['remix']).toBe(5);
    expect(set.media.paths.submit['remix']).toBe('/v2/remix');
    // A bad value of its variable is a configuration problem like any other.
    expect(() => parseConfig(withRemix, { ...REQUIRED, MEDIA_PATH_REMIX: 'remix' })).toThrow(
      /MEDIA_PATH_REMIX: must be a path/,
    );
    // Without the module, CREDIT_COSTS may not name it; with it, the message lists it.
    expect(() => parseConfig(operationModules, { ...REQUIRED, CREDIT_COSTS: 'remix=5' })).toThrow(
      /CREDIT_COSTS: .*not understood: "remix=5"/,
    );
    expect(() => parseConfig(withRemix, { ...REQUIRED, CREDIT_COSTS: 'nope=1' })).toThrow(
      /CREDIT_COSTS: must be command=cost pairs for upscale, extend-song, extend-video, training-photos, remix; not understood: "nope=1"/,
    );
    expect(() => parseConfig(withRemix, { ...REQUIRED, CREDIT_COSTS: 'nope=1' })).toThrow(ConfigError);
  });

  it('two modules declaring one variable or command are refused, naming it', () => {
    const twin = { ...remix, operation: 'twin' } as unknown as SomeOperationModule;
    expect(() => parseConfig([...withRemix, twin], REQUIRED)).toThrow(/command remix is declared twice/);
    const clash = { ...remix, path: { variable: 'MEDIA_FETCH_PATH', default: '/x' } };
    expect(() =>
      parseConfig([...operationModules, clash as unknown as SomeOperationModule], REQUIRED),
    ).toThrow(/MEDIA_FETCH_PATH is declared twice/);
  });

  it('a job of it is kept by a store given it, its result checked by its schema; the bot’s own refuses it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'toy-op-'));
    const logger = pino({ level: 'silent' });
    const stores = await createStores({ dataDir, logger, operations: jobOperationsOf(withRemix) });
    const job = {
      id: 'remix-job-1',
      secret: 'secret',
      operation: 'remix' as Operation,
      userId: 'user-1',
      message: { channelId: 'channel-1' },
      params: remix.toStored({ imageUrl: 'https://cdn.example.test/fox.png' }),
      state: 'finished',
      percentage: 100,
      result: { kind: 'remix', imageUrls: ['https://cdn.example.test/fox-remix.png'] },
      createdAt: 1_000,
      updatedAt: 2_000,
      version: 0,
    } as unknown as JobRecord;
    try {
      await stores.jobs.create(job);
      expect(await stores.jobs.get(job.id)).toMatchObject({ operation: 'remix', result: job.result });
      const malformed = { ...job, id: 'remix-job-2', result: { kind: 'remix', imageUrls: 'one' } };
      await expect(stores.jobs.create(malformed as unknown as JobRecord)).rejects.toThrow(
        /result\.imageUrls/,
      );
    } finally {
      await stores.close();
    }
    const own = await createStores({ dataDir, logger, namespace: 'own', operations: jobOperations });
    try {
      await expect(own.jobs.create({ ...job, id: 'remix-job-3' })).rejects.toThrow(/operation/);
    } finally {
      await own.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  describe('the media client posts it to its endpoint', () => {
    let server: Server;
    let baseUrl = '';
    const seen: { method: string; url: string; body: unknown }[] = [];

    beforeAll(async () => {
      server = createServer((req, res) => {
        let raw = '';
        req.setEncoding('utf8');
        req.on('data', (chunk: string) => (raw += chunk));
        req.on('end', () => {
          seen.push({ method: req.method ?? '', url: req.url ?? '', body: JSON.parse(raw) as unknown });
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ task_id: 'remix-task-1' }));
        });
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('at the path MEDIA_PATH_REMIX sets, with the body the module builds', async () => {
      const config = parseConfig(withRemix, {
        ...REQUIRED,
        MEDIA_API_URL: baseUrl,
        MEDIA_PATH_REMIX: '/v2/remix',
      });
      const client = new MediaClient({
        baseUrl: config.media.baseUrl,
        apiKey: config.media.apiKey,
        paths: config.media.paths,
        photoFormat: 'base64',
        timeoutMs: 5000,
        upscaleTimeoutMs: 5000,
        logger: pino({ level: 'silent' }),
        operations: mediaOperationsOf(withRemix),
      });
      try {
        const op = 'remix' as Operation;
        const params = { imageUrl: 'https://cdn.example.test/fox.png' } as unknown as ParamsOf<typeof op>;
        const submitted = await client.submit(op, params, { url: 'https://bot.example.test/w', secret: 's' });
        expect(submitted).toEqual({ taskId: 'remix-task-1' });
        expect(seen).toEqual([
          {
            method: 'POST',
            url: '/v2/remix',
            body: {
              image_url: 'https://cdn.example.test/fox.png',
              webhook_url: 'https://bot.example.test/w',
              webhook_secret: 's',
            },
          },
        ]);
      } finally {
        await client.close();
      }
    });
  });
});
