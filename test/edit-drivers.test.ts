/**
 * One edit policy, two drivers: every policy case runs against the in-process queue
 * (embedded store, SQLite) and the BullMQ worker (real Redis), as keyv's adapters share
 * one test suite. Each driver edits real messages of the fake Discord through the real
 * REST transport, and stores what it learns in a real store, so a second instance (or
 * the same one after a restart) knows it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REST } from '@discordjs/rest';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createInteractionRest,
  createRestTransport,
  type DiscordTransport,
} from '../src/services/discord/discord-transport.js';
import type { ChannelBudget } from '../src/services/discord/edits/channel-budget.js';
import { DEFAULT_EDIT_POLICY } from '../src/services/discord/edits/edit-policy.js';
import { EditQueue } from '../src/services/discord/edits/edit-queue.js';
import { jobMessageOf } from '../src/services/discord/edits/edit-key.js';
import { QueuedJobMessages, type JobRenderers } from '../src/services/discord/edits/job-messages.js';
import { jobError } from '../src/services/jobs/job-errors.js';
import { createJobRenderer, renderThreadLine } from '../src/services/discord/render/job-render.js';
import { RedisChannelBudget } from '../src/services/cluster/redis-channel-budget.js';
import { jobOperations, renderOperations } from '../src/services/operations/index.js';
import { openBull } from '../src/services/queues/bull.js';
import { BullJobEdits } from '../src/services/queues/job-edits.js';
import { createStores, type Stores } from '../src/services/store/keyv-store.js';
import type { JobRecord, JobUpdate } from '../src/services/store/types.js';
import { DiscordErrors, startFakeDiscord, type FakeDiscord } from './fake-discord/index.js';
import type { FaultSpec, RequestRecord } from './fake-discord/types.js';
import { REDIS_URL, eventually } from './helpers/harness.js';
import { inProcessJobs, type JobCore } from './helpers/jobs.js';
import { needs } from './helpers/requirements.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const render = createJobRenderer(renderOperations);
const renderers: JobRenderers = {
  render: render.renderJob,
  renderReply: renderThreadLine,
  withoutFreeText: render.withoutFreeText,
};
const MIN = 60_000;

/** One running edit driver (an instance of the bot, as far as edits go). */
interface Instance {
  jobChanged(job: JobRecord): void;
  close(): Promise<void>;
}

/** What a driver needs from the world around it, and gives back. */
interface World {
  stores: Stores;
  core: JobCore;
  transport: DiscordTransport;
}

interface DriverKind {
  name: string;
  requires: Parameters<typeof describe>[1];
  /** Opens the store every instance shares (SQLite in a temp dir, or a Redis namespace). */
  openStores(): Promise<{ stores: Stores; dispose(): Promise<void> }>;
  /**
   * What another instance (or this one after a restart) opens: on Redis a store handle
   * of its own; embedded, one process owns the file, so a restart reopens it after the
   * first handle let go of nothing but its memory: the same handle, a new driver.
   */
  otherStores(first: Stores): Promise<{ stores: Stores; dispose(): Promise<void> }>;
  /** Several instances run at once (Redis); embedded, a second one is the same after a restart. */
  concurrent: boolean;
  /** Starts one instance on `stores` (its own store handle when `ownStores` is given). */
  start(world: World, shared: { budget?: ChannelBudget }): Promise<Instance>;
}

function transportFor(fake: FakeDiscord): DiscordTransport {
  // As the app: channel edits and DMs reject on 429 (the driver waits), interaction edits on their own REST.
  const botRest = new REST({ api: fake.apiUrl, rejectOnRateLimit: () => true, offset: 0 }).setToken(
    fake.token,
  );
  return createRestTransport({ botRest, interactionRest: createInteractionRest({ api: fake.apiUrl }) });
}

const inProcess: DriverKind = {
  name: 'in-process queue (embedded store)',
  requires: {},
  concurrent: false,
  async openStores() {
    const dataDir = await mkdtemp(join(tmpdir(), 'edits-'));
    const stores = await createStores({ operations: jobOperations, dataDir, logger });
    return {
      stores,
      async dispose() {
        await stores.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
  otherStores(first) {
    return Promise.resolve({ stores: first, dispose: () => Promise.resolve() });
  },
  async start(world) {
    const { core } = world;
    const queue = new EditQueue({
      transport: world.transport,
      logger,
      onMessageGone: (key) => {
        const jobId = jobMessageOf(key);
        if (jobId !== undefined) void core.lifecycle.mark(jobId, { messageGone: true });
      },
      onDelivered: (key, d) => {
        const jobId = jobMessageOf(key);
        if (d.final && jobId !== undefined) void core.lifecycle.mark(jobId, { finalShown: true });
      },
    });
    const messages = new QueuedJobMessages({
      edits: queue,
      renderers,
      now: Date.now,
      onAutoMod: (id) => void core.lifecycle.withholdText(id),
      learned: {
        tokenRefused: (id) => void core.lifecycle.mark(id, { tokenRefused: true }),
        dmRefused: (id) => void core.lifecycle.mark(id, { dmRefused: true }),
        dmNoticeDue: (id) => void core.lifecycle.noticeDm(id),
      },
    });
    return {
      jobChanged: (job) => messages.jobChanged(job),
      async close() {
        messages.close();
        await queue.drain(2000);
        queue.close();
      },
    };
  },
};

const bullmq = (namespace: string): DriverKind => ({
  name: 'BullMQ worker (Redis)',
  requires: needs('redis'),
  concurrent: true,
  async openStores() {
    const stores = await createStores({
      operations: jobOperations,
      redisUrl: REDIS_URL,
      dataDir: tmpdir(),
      logger,
      namespace,
    });
    return { stores, dispose: () => stores.close() };
  },
  otherStores() {
    return this.openStores();
  },
  async start(world, shared) {
    const bull = await openBull({ url: REDIS_URL, namespace, logger, lockMs: 5000 });
    const redis = world.stores.redis;
    if (!redis) throw new Error('a Redis store is needed');
    const budget =
      shared.budget ??
      new RedisChannelBudget({
        redis,
        prefix: `${namespace}::cluster:`,
        logger,
        limit: DEFAULT_EDIT_POLICY.channelLimit,
        windowMs: DEFAULT_EDIT_POLICY.channelWindowMs,
        finalReserve: DEFAULT_EDIT_POLICY.finalReserve,
      });
    const { core } = world;
    const edits = new BullJobEdits(bull, {
      store: world.stores.jobs,
      lifecycle: { mark: (id, flags) => core.lifecycle.mark(id, flags) },
      transport: world.transport,
      budget,
      renderers,
      marks: bull.connection,
      logger,
      onAutoMod: async (id) => {
        await core.lifecycle.withholdText(id);
      },
      onDmNoticeDue: (id) => core.lifecycle.noticeDm(id),
    });
    return {
      jobChanged: (job) => edits.jobChanged(job),
      async close() {
        await edits.close();
        await bull.close();
      },
    };
  },
});

const kinds: DriverKind[] = [inProcess, bullmq(`ed${randomBytes(4).toString('hex')}`)];

for (const kind of kinds) {
  describe(`edit policy conformance: ${kind.name}`, kind.requires, () => {
    let fake: FakeDiscord;
    let answering: Server;
    let opened: { stores: Stores; dispose(): Promise<void> };
    let world: World;
    const running: Instance[] = [];
    /** Instances' own store handles opened by `instance({ ownStores: true })`. */
    const extra: { dispose(): Promise<void>; core: JobCore }[] = [];
    let instanceOf: (job: JobRecord) => void = () => undefined;

    beforeAll(async () => {
      fake = await startFakeDiscord({ warmUpValidators: true });
      // The bot's interactions endpoint, as far as these jobs go: each command is answered in
      // the HTTP response with the job's first message (its original response).
      answering = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ type: 4, data: { content: 'Queued…', allowed_mentions: { parse: [] } } }));
        });
      });
      await new Promise<void>((r) => answering.listen(0, '127.0.0.1', r));
      fake.setInteractionsMode('http', `http://127.0.0.1:${(answering.address() as AddressInfo).port}/`);
      opened = await kind.openStores();
      const core = inProcessJobs({
        store: opened.stores.jobs,
        logger,
        // The lifecycle's message updates go to the instance under test.
        onChanged: (job) => instanceOf(job),
      });
      world = { stores: opened.stores, core, transport: transportFor(fake) };
    }, 60_000);
    afterEach(async () => {
      while (running.length > 0) await running.pop()?.close();
      while (extra.length > 0) {
        const e = extra.pop();
        await e?.core.stop();
        await e?.dispose();
      }
      fake.clearFaults();
      fake.setRateLimits(true);
      fake.assertNoViolations();
    });
    afterAll(async () => {
      await world?.core.stop();
      await opened?.dispose();
      await fake?.close();
      await new Promise((r) => answering?.close(r));
    });

    /** Starts an instance; with `ownStores`, on a store handle of its own (another process). */
    async function instance(
      opts: { ownStores?: boolean; budget?: ChannelBudget; transport?: DiscordTransport } = {},
    ): Promise<Instance> {
      let w = opts.transport ? { ...world, transport: opts.transport } : world;
      if (opts.ownStores) {
        const own = await kind.otherStores(world.stores);
        const to: { target?: Instance } = {};
        const core = inProcessJobs({
          store: own.stores.jobs,
          logger,
          onChanged: (job) => to.target?.jobChanged(job),
        });
        extra.push({ core, dispose: own.dispose });
        w = { stores: own.stores, core, transport: w.transport };
        const target = await kind.start(w, opts.budget ? { budget: opts.budget } : {});
        to.target = target;
        running.push(target);
        return target;
      }
      const started = await kind.start(w, opts.budget ? { budget: opts.budget } : {});
      instanceOf = (job) => started.jobChanged(job);
      running.push(started);
      return started;
    }

    /**
     * A job whose live message is a real interaction's original response in the fake
     * Discord. `tokenAgeMs`: how old the bot believes its token is.
     */
    async function job(
      opts: {
        tokenAgeMs?: number;
        personal?: boolean;
        userId?: string;
        prompt?: string;
        channelId?: string;
      } = {},
    ): Promise<{ record: JobRecord; token: string; messageId: string }> {
      const userId = opts.userId ?? fake.defaultUserId;
      const cmd = fake.sendCommand({
        name: 'upscale',
        userId,
        ...(opts.channelId ? { channelId: opts.channelId } : {}),
      });
      const message = await cmd.message(5000);
      const now = Date.now();
      const record: JobRecord = {
        id: randomUUID(),
        secret: 'x'.repeat(64),
        operation: 'upscale',
        userId,
        message: {
          channelId: message.channelId,
          ...(fake.guildId ? { guildId: fake.guildId } : {}),
          messageId: message.id,
          interaction: {
            applicationId: fake.applicationId,
            token: cmd.token,
            createdAt: now - (opts.tokenAgeMs ?? 0),
          },
        },
        params: {
          imageUrl: 'https://cdn.example.com/in/source.png',
          prompt: opts.prompt ?? 'a fox in the snow',
          resemblance: 50,
        },
        taskId: `task-${randomBytes(4).toString('hex')}`,
        state: 'processing',
        percentage: 5,
        createdAt: now,
        updatedAt: now,
        version: 1,
        ...(opts.personal ? { personal: true as const } : {}),
      };
      await world.stores.jobs.create(record);
      return { record, token: cmd.token, messageId: message.id };
    }

    /** Applies a change through the real store and hands the record to `to`, as the lifecycle does. */
    async function change(to: Instance, jobId: string, update: Omit<JobUpdate, 'at'>): Promise<JobRecord> {
      const r = await world.stores.jobs.apply(jobId, { ...update, at: Date.now() });
      if (!r) throw new Error('unknown job');
      if (r.changed) to.jobChanged(r.job);
      return r.job;
    }

    const finish = (to: Instance, jobId: string) =>
      change(to, jobId, {
        state: 'finished',
        result: {
          kind: 'upscale',
          imageUrls: ['https://cdn.example.com/out/one.png', 'https://cdn.example.com/out/two.png'],
        },
      });

    const stored = async (jobId: string): Promise<JobRecord> => {
      const r = await world.stores.jobs.get(jobId);
      if (!r) throw new Error('job gone from the store');
      return r;
    };
    const onToken = (token: string) => (r: RequestRecord) =>
      r.path.includes(`/${token}/`) || r.path.endsWith(`/${token}`);
    const tokenRequests = (token: string) =>
      fake.requests.filter(onToken(token)).filter((r) => r.method === 'PATCH');
    const text = (o: unknown) => JSON.stringify(o ?? {});
    /** Two requests of a message's progress reached Discord at least the policy's interval apart. */
    const expectSpaced = (earlier: RequestRecord | undefined, later: RequestRecord | undefined) =>
      expect((later?.at ?? 0) - (earlier?.at ?? 0)).toBeGreaterThanOrEqual(
        DEFAULT_EDIT_POLICY.progressIntervalMs,
      );
    /** No 5 s of these requests of a message hold more than `limit` (the policy's 5 by default). */
    const expectWindowKept = (sent: RequestRecord[], limit = DEFAULT_EDIT_POLICY.interactionLimit) => {
      const { interactionWindowMs } = DEFAULT_EDIT_POLICY;
      for (const e of sent)
        expect(
          sent.filter((o) => o.at >= e.at && o.at < e.at + interactionWindowMs).length,
        ).toBeLessThanOrEqual(limit);
    };
    /** Three progress edits of the job's message, each seen by Discord before the next change. */
    const threeProgressEdits = async (to: Instance, jobId: string, token: string) => {
      for (const [i, percentage] of [10, 20, 30].entries()) {
        await change(to, jobId, { percentage });
        await eventually(() => tokenRequests(token).length > i, 5000, `progress edit ${i + 1}`);
      }
    };
    /** Discord answers the next `count` requests on this interaction token with `answer`. */
    const faultOnToken = (token: string, answer: Omit<FaultSpec, 'route' | 'count'>, count = 1) =>
      fake.injectFault({ route: new RegExp(`/webhooks/\\d+/${token}/`), ...answer, count });

    it('a refused token is touched once, never again by this or a second instance; the final goes by bot token', async () => {
      const a = await instance();
      const { record, token, messageId } = await job();
      faultOnToken(token, DiscordErrors.invalidWebhookToken, Infinity);
      for (const p of [10, 20, 30]) await change(a, record.id, { percentage: p });
      await eventually(
        async () => (await stored(record.id)).tokenRefusedAt !== undefined,
        10_000,
        'the refusal stored',
      );
      for (const p of [40, 50]) await change(a, record.id, { percentage: p });
      // A second instance with a store handle of its own takes the job's next changes: on
      // Redis beside the first (their workers share the queue), embedded after a restart.
      if (!kind.concurrent) {
        await a.close();
        running.splice(running.indexOf(a), 1);
      }
      const b = await instance({ ownStores: true });
      a.jobChanged({ ...(await stored(record.id)), percentage: 55 });
      const now = await stored(record.id);
      b.jobChanged({ ...now, percentage: 60 });
      const final = await finish(b, record.id);
      b.jobChanged(final);
      await eventually(
        async () => (await stored(record.id)).finalShownAt !== undefined,
        15_000,
        'the final shown',
      );
      expect(tokenRequests(token)).toHaveLength(1);
      const msg = fake.channelMessages(record.message.channelId).find((m) => m.id === messageId);
      expect(text(msg?.data)).toContain('one.png');
    }, 40_000);

    it('finals first under a shared channel budget: every final lands, no 429, at most 5 edits per 5 s', async () => {
      const a = await instance();
      const jobs = await Promise.all(Array.from({ length: 6 }, () => job({ tokenAgeMs: 20 * MIN })));
      const from = fake.requests.length;
      for (const j of jobs) for (const p of [10, 30]) await change(a, j.record.id, { percentage: p });
      const pushed = Date.now();
      for (const j of jobs) await finish(a, j.record.id);
      await eventually(
        async () =>
          (await Promise.all(jobs.map((j) => stored(j.record.id)))).every(
            (r) => r.finalShownAt !== undefined,
          ),
        30_000,
        'every final shown',
      );
      const edits = fake.requests
        .slice(from)
        .filter((r) => r.method === 'PATCH' && r.route === '/channels/{channel_id}/messages/{message_id}');
      expect(edits.filter((r) => r.status === 429)).toHaveLength(0);
      for (const e of edits)
        expect(edits.filter((o) => o.at >= e.at && o.at < e.at + 5000).length).toBeLessThanOrEqual(5);
      // Six finals need two windows of the channel's bucket; finals never wait behind progress past that.
      const finals = edits.filter((r) => text(r.body).includes('one.png'));
      expect(finals).toHaveLength(6);
      expect(Math.max(...finals.map((r) => r.at)) - pushed).toBeLessThan(12_000);
      expect(jobs.every((j) => tokenRequests(j.token).length === 0)).toBe(true);
    }, 60_000);

    it('a deleted message ends the job’s edits (10008), recorded with the job', async () => {
      const a = await instance();
      const { record } = await job({ tokenAgeMs: 20 * MIN });
      await new REST({ api: fake.apiUrl })
        .setToken(fake.token)
        .delete(`/channels/${record.message.channelId}/messages/${record.message.messageId ?? ''}`);
      await change(a, record.id, { percentage: 40 });
      await eventually(
        async () => (await stored(record.id)).messageGone === true,
        10_000,
        'the message gone',
      );
      await finish(a, record.id);
      await new Promise((r) => setTimeout(r, 500));
      const patches = fake.requests.filter(
        (r) => r.method === 'PATCH' && r.path.endsWith(`/messages/${record.message.messageId ?? ''}`),
      );
      expect(patches.map((r) => r.status)).toEqual([404]);
    }, 30_000);

    it('AutoMod refusing the member’s text: the final goes without it, the job marked withheld', async () => {
      const a = await instance();
      fake.setAutoModKeywords(fake.guildId, ['forbiddenword']);
      try {
        const { record, messageId } = await job({ prompt: 'a forbiddenword fox' });
        await finish(a, record.id);
        await eventually(
          async () => (await stored(record.id)).finalShownAt !== undefined,
          15_000,
          'the final shown',
        );
        expect((await stored(record.id)).textWithheld).toBe(true);
        const msg = fake.channelMessages(record.message.channelId).find((m) => m.id === messageId);
        expect(text(msg?.data)).toContain('one.png');
        expect(text(msg?.data)).not.toContain('forbiddenword');
      } finally {
        fake.setAutoModKeywords(fake.guildId, []);
      }
    }, 30_000);

    it('a 429 is waited out for its retry_after, then the final lands', async () => {
      const a = await instance();
      const { record, token } = await job();
      faultOnToken(token, DiscordErrors.rateLimited(1.2));
      await finish(a, record.id);
      await eventually(
        async () => (await stored(record.id)).finalShownAt !== undefined,
        15_000,
        'the final shown',
      );
      const sent = tokenRequests(token);
      expect(sent.map((r) => r.status)).toEqual([429, 200]);
      expect((sent[1]?.at ?? 0) - (sent[0]?.at ?? 0)).toBeGreaterThanOrEqual(1150);
    }, 30_000);

    it('progress on the interaction route is spaced and leaves the final its slots', async () => {
      const a = await instance();
      const { record, token } = await job();
      const start = Date.now();
      for (let p = 2; Date.now() - start < 4000; p = Math.min(99, p + 3)) {
        await change(a, record.id, { percentage: p });
        await new Promise((r) => setTimeout(r, 100));
      }
      await finish(a, record.id);
      await eventually(
        async () => (await stored(record.id)).finalShownAt !== undefined,
        15_000,
        'the final shown',
      );
      const sent = tokenRequests(token);
      const progress = sent.filter((r) => !text(r.body).includes('one.png'));
      expect(progress.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < progress.length; i++) expectSpaced(progress[i - 1], progress[i]);
      expectWindowKept(progress, DEFAULT_EDIT_POLICY.interactionLimit - DEFAULT_EDIT_POLICY.finalReserve);
      expect(sent.every((r) => r.status === 200)).toBe(true);
      expect(text(sent.at(-1)?.body)).toContain('one.png');
    }, 30_000);

    it('progress spacing counts from the answer: an edit that reaches Discord late does not bring the next one closer', async () => {
      // The first progress edit is held 400 ms between the driver and the wire (a stall,
      // the REST queue): spaced from when it set off, the next one would arrive 600 ms after it.
      let held = 0;
      const late: DiscordTransport = {
        ...world.transport,
        async editInteractionOriginal(...args) {
          if (held++ === 0) await new Promise((r) => setTimeout(r, 400));
          return world.transport.editInteractionOriginal(...args);
        },
      };
      const a = await instance({ transport: late });
      const { record, token } = await job();
      await change(a, record.id, { percentage: 10 });
      await eventually(() => tokenRequests(token).length >= 1, 5000, 'the first progress edit');
      await change(a, record.id, { percentage: 20 });
      await eventually(() => tokenRequests(token).length >= 2, 5000, 'the second progress edit');
      const [first, second] = tokenRequests(token);
      expectSpaced(first, second);
    }, 20_000);

    it('progress spacing counts a refused answer too: the retry of a progress edit Discord answered 5xx waits the interval', async () => {
      const a = await instance();
      const { record, token } = await job();
      const fault = faultOnToken(token, DiscordErrors.internalServerError);
      await change(a, record.id, { percentage: 10 });
      await eventually(() => fault.hits >= 1, 5000, 'the progress edit refused');
      await eventually(
        () => tokenRequests(token).some((r) => r.status === 200),
        10_000,
        'the progress edit sent again',
      );
      const [refused, next] = tokenRequests(token);
      expect(refused?.status).toBe(500);
      expectSpaced(refused, next);
    }, 20_000);

    it('finals keep to the message’s interaction window too: retries after three progress edits, never a sixth edit within 5 s', async () => {
      const a = await instance();
      const { record, token } = await job();
      await threeProgressEdits(a, record.id, token);
      // Refused twice: its backoff (0.5–1 s, then 1–2 s) alone would put five finals' and
      // progress' requests 3.5–5 s after the first progress edit, the sixth within its window.
      const fault = faultOnToken(token, DiscordErrors.internalServerError, 2);
      await finish(a, record.id);
      await eventually(
        async () => (await stored(record.id)).finalShownAt !== undefined,
        20_000,
        'the final shown',
      );
      expect(fault.hits).toBe(2);
      const sent = tokenRequests(token);
      expect(sent.map((r) => r.status)).toEqual([200, 200, 200, 500, 500, 200]);
      expectWindowKept(sent);
    }, 30_000);

    it('AutoMod refusing a final twice after three progress edits: the bare final waits for the window, sent once', async () => {
      const a = await instance();
      const { record, token, messageId } = await job();
      await threeProgressEdits(a, record.id, token);
      // The error's text is free text too: refused with the member's text and without it.
      fake.setAutoModKeywords(fake.guildId, ['forbiddenword']);
      try {
        await change(a, record.id, {
          state: 'failed',
          error: jobError('service_failed', 'the forbiddenword filter tripped'),
        });
        await eventually(
          async () => (await stored(record.id)).finalShownAt !== undefined,
          20_000,
          'the final shown',
        );
        const sent = tokenRequests(token);
        expect(sent.map((r) => r.status)).toEqual([200, 200, 200, 400, 400, 200]);
        expectWindowKept(sent);
        const msg = fake.channelMessages(record.message.channelId).find((m) => m.id === messageId);
        expect(text(msg?.data)).not.toContain('forbiddenword');
      } finally {
        fake.setAutoModKeywords(fake.guildId, []);
      }
    }, 30_000);

    it('restart mid-edit: a final refused by 5xx before the restart lands once after it', async () => {
      const a = await instance();
      const { record, token } = await job();
      const fault = faultOnToken(token, DiscordErrors.internalServerError, Infinity);
      await finish(a, record.id);
      await eventually(() => fault.hits >= 1, 10_000, 'the final refused');
      await a.close();
      running.splice(running.indexOf(a), 1);
      fault.remove();
      const b = await instance({ ownStores: true });
      // The keeper's check after a restart shows a final not yet shown again.
      b.jobChanged(await stored(record.id));
      await eventually(
        async () => (await stored(record.id)).finalShownAt !== undefined,
        20_000,
        'the final shown',
      );
      await new Promise((r) => setTimeout(r, 500));
      expect(tokenRequests(token).filter((r) => r.status === 200)).toHaveLength(1);
    }, 40_000);

    it('personal job: progress only through the interaction; the final by DM with every result URL, never the bot token in its channel', async () => {
      const a = await instance();
      const userId = fake.addUser({ username: `member${randomBytes(2).toString('hex')}` });
      const { record } = await job({ personal: true, userId, tokenAgeMs: 20 * MIN });
      const from = fake.requests.length;
      // Discord takes the first DM and its answer is lost (a 502): the retry must not send a second.
      const lost = fake.injectFault({
        method: 'POST',
        route: `/channels/${fake.dmChannelId(userId)}/messages`,
        ...DiscordErrors.answerLost,
      });
      await change(a, record.id, { percentage: 50 });
      await finish(a, record.id);
      await eventually(
        async () => (await stored(record.id)).finalShownAt !== undefined,
        15_000,
        'the final shown',
      );
      const sent = fake.requests.slice(from);
      expect(sent.filter((r) => r.path.startsWith(`/channels/${record.message.channelId}`))).toHaveLength(0);
      const dm = fake.dmChannelId(userId);
      const posted = fake.channelMessages(dm);
      expect(posted).toHaveLength(1);
      expect(text(posted[0]?.data)).toContain('one.png');
      expect(text(posted[0]?.data)).toContain('two.png');
      expect(sent.some((r) => r.method === 'POST' && r.path === '/users/@me/channels')).toBe(true);
      expect(lost.hits).toBe(1);
    }, 30_000);

    it('personal job whose token Discord refused: one touch of it, then the final by DM', async () => {
      const a = await instance();
      const userId = fake.addUser({ username: `member${randomBytes(2).toString('hex')}` });
      const { record, token } = await job({ personal: true, userId });
      const from = fake.requests.length;
      faultOnToken(token, DiscordErrors.invalidWebhookToken, Infinity);
      await change(a, record.id, { percentage: 30 });
      await eventually(
        async () => (await stored(record.id)).tokenRefusedAt !== undefined,
        10_000,
        'the refusal stored',
      );
      await change(a, record.id, { percentage: 60 });
      await finish(a, record.id);
      await eventually(
        async () => (await stored(record.id)).finalShownAt !== undefined,
        15_000,
        'the final shown',
      );
      expect(tokenRequests(token)).toHaveLength(1);
      expect(text(fake.channelMessages(fake.dmChannelId(userId))[0]?.data)).toContain('one.png');
      expect(
        fake.requests.slice(from).filter((r) => r.path.startsWith(`/channels/${record.message.channelId}/`)),
      ).toHaveLength(0);
    }, 30_000);

    it('personal job near its token’s end says once that the result comes by DM', async () => {
      const a = await instance();
      const userId = fake.addUser({ username: `member${randomBytes(2).toString('hex')}` });
      // The notice is due a second from now.
      const { record, messageId } = await job({
        personal: true,
        userId,
        tokenAgeMs: DEFAULT_EDIT_POLICY.dmNoticeMs - 1000,
      });
      await change(a, record.id, { percentage: 20 });
      await eventually(
        async () => (await stored(record.id)).dmNoticeAt !== undefined,
        10_000,
        'the notice stored',
      );
      await eventually(
        () =>
          text(fake.channelMessages(record.message.channelId).find((m) => m.id === messageId)?.data).includes(
            'direct message',
          ),
        10_000,
        'the notice shown',
      );
    }, 30_000);

    it('personal job whose member closed their DMs: 50007 once, recorded, no retry', async () => {
      const a = await instance();
      const userId = fake.addUser({ username: `member${randomBytes(2).toString('hex')}` });
      fake.setDmsOpen(userId, false);
      const { record } = await job({ personal: true, userId, tokenAgeMs: 20 * MIN });
      await finish(a, record.id);
      await eventually(
        async () => (await stored(record.id)).dmRefused === true,
        15_000,
        'the refusal stored',
      );
      await new Promise((r) => setTimeout(r, 1500));
      const dm = fake.dmChannelId(userId);
      const posts = fake.requests.filter((r) => r.method === 'POST' && r.path === `/channels/${dm}/messages`);
      expect(posts.map((r) => r.status)).toEqual([403]);
      expect((await stored(record.id)).finalShownAt).toBeUndefined();
      // The refusal is a Discord rule the fake records; the request itself was well-formed.
      fake.takeViolations();
    }, 30_000);
  });
}
