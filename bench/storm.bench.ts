/**
 * Storm benchmark (issue: never lose a job). 100 concurrent jobs each receive 30
 * progress webhooks within a few seconds and then `finished`, against the fake
 * Discord enforcing realistic limits (5 edits / 5 s per channel and per
 * interaction token, 50 req/s global). Prints figures; asserts nothing.
 * Also compares the webhook path's throughput with a bare Fastify + Keyv(Redis)
 * handler doing the same store round trips, in the same run.
 */
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { Keyv } from 'keyv';
import KeyvRedis from '@keyv/redis';
import { Pool } from 'undici';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from '../test/emulator/server.js';
import { REDIS_URL, eventually, startHarness, type Harness } from '../test/helpers/harness.js';
import type { JobRecord } from '../src/services/store/types.js';

const JOBS = 100;
const PROGRESS = 30;
const SPREAD_MS = 3000;

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const r1 = (n: number) => Math.round(n * 10) / 10;

async function redisAnswers(): Promise<boolean> {
  const kv = new Keyv({
    store: new KeyvRedis(REDIS_URL, { throwOnConnectError: true }),
    throwOnErrors: true,
  });
  try {
    await Promise.race([
      kv.get('ping'),
      new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 1500)),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    await kv.disconnect().catch(() => undefined);
  }
}

async function startJobs(h: Harness, channels: string[], count: number): Promise<JobRecord[]> {
  h.emulator.setScenario({ hold: true, dropWebhooks: 'all' });
  for (let i = 0; i < count; i++) {
    h.fake.sendCommand({
      name: 'extend-song',
      channelId: channels[i % channels.length] ?? h.fake.defaultChannelId,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
  }
  return eventually(
    async () => {
      const jobs = await h.app.context.store.listUnfinished();
      const ready = jobs.filter((j) => j.taskId && j.message.messageId && j.state === 'queued');
      return ready.length >= count ? ready : undefined;
    },
    60_000,
    'jobs submitted',
  );
}

function finishedBody(taskId: string) {
  const f = (n: number) => `https://files.example/${taskId}-${n}`;
  return {
    task_id: taskId,
    task_type: 'song',
    status: 'finished',
    video_url: f(0),
    songs: [1, 2].map((n) => ({
      song_id: `${taskId}-s${n}`,
      lyrics: 'la la la',
      audio_url: `${f(n)}.mp3`,
      image_url: `${f(n)}.png`,
      video_url: `${f(n)}.mp4`,
    })),
  };
}

async function storm(label: string, channelCount: number) {
  const h = await startHarness({
    webhooks: true,
    redis: await redisAnswers(),
    fake: {
      rateLimits: true,
      guild: { channels: Array.from({ length: channelCount }, (_, i) => ({ name: `jobs-${i}` })) },
    },
    env: { WEBHOOK_SILENCE_MS: '600000', POLL_INITIAL_MS: '600000' },
  });
  const channels = h.fake.channelIds.slice(0, channelCount);
  const jobs = await startJobs(h, channels, JOBS);
  const pool = new Pool(h.baseUrl, { connections: 64 });
  const latencies: number[] = [];
  const finishedAt = new Map<string, number>();
  let non2xx = 0;
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);

  const post = async (job: JobRecord, body: unknown) => {
    const t0 = performance.now();
    const res = await pool.request({
      method: 'POST',
      path: `/webhooks/media/${job.id}`,
      headers: { 'content-type': 'application/json', 'x-webhook-secret': job.secret },
      body: JSON.stringify(body),
    });
    await res.body.text();
    latencies.push(performance.now() - t0);
    if (res.statusCode >= 300) non2xx++;
  };

  const t0 = Date.now();
  await Promise.all(
    jobs.map(async (job) => {
      const taskId = job.taskId ?? '';
      for (let k = 1; k <= PROGRESS; k++) {
        await new Promise((r) => setTimeout(r, (SPREAD_MS / PROGRESS) * (0.5 + Math.random())));
        await post(job, {
          task_id: taskId,
          task_type: 'song',
          status: 'processing',
          percentage: Math.round((k * 99) / PROGRESS),
        });
      }
      finishedAt.set(job.id, Date.now());
      await post(job, finishedBody(taskId));
    }),
  );
  const webhooksDone = Date.now() - t0;

  // Wait for every final state to reach its message.
  const finalEditAt = new Map<string, number>();
  await eventually(
    () => {
      for (const job of jobs) {
        if (finalEditAt.has(job.id) || !job.message.messageId) continue;
        const msg = h.fake.messages.get(job.message.messageId);
        const edit = msg?.edits.find((e) => JSON.stringify(e.after).includes(`${job.taskId}-s2`));
        if (edit) finalEditAt.set(job.id, edit.at);
      }
      return finalEditAt.size === jobs.length;
    },
    180_000,
    'final edits',
  );
  clearInterval(sampler);
  const toFinal = jobs.map((j) => (finalEditAt.get(j.id) ?? NaN) - (finishedAt.get(j.id) ?? NaN));
  const editsPerMessage = jobs.map((j) => h.fake.messages.get(j.message.messageId ?? '')?.edits.length ?? 0);
  const result = {
    scenario: label,
    jobs: JOBS,
    webhooks: latencies.length,
    'webhooks non-2xx': non2xx,
    'webhook phase s': r1(webhooksDone / 1000),
    'webhook p50 ms': r1(pct(latencies, 50)),
    'webhook p99 ms': r1(pct(latencies, 99)),
    'discord edits total': editsPerMessage.reduce((a, b) => a + b, 0),
    'max edits per message': Math.max(...editsPerMessage),
    '429s received': h.fake.count429,
    'finished→final edit p50 ms': r1(pct(toFinal, 50)),
    'finished→final edit p95 ms': r1(pct(toFinal, 95)),
    'rss MiB (peak)': r1(rssPeak / 1048576),
    'rss growth MiB': r1((rssPeak - rssBefore) / 1048576),
    'spec violations': h.fake.violations.length,
  };
  await pool.close();
  await h.close();
  return result;
}

/** Requests/s of `count` webhooks at `concurrency` against `url` (path per request). */
async function throughput(
  origin: string,
  reqs: { path: string; secret: string; body: string }[],
  concurrency: number,
) {
  const pool = new Pool(origin, { connections: concurrency });
  let i = 0;
  let failures = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (i < reqs.length) {
        const r = reqs[i++];
        if (!r) break;
        const res = await pool.request({
          method: 'POST',
          path: r.path,
          headers: { 'content-type': 'application/json', 'x-webhook-secret': r.secret },
          body: r.body,
        });
        await res.body.text();
        if (res.statusCode >= 300) failures++;
      }
    }),
  );
  if (failures > 0) throw new Error(`${failures} webhook requests failed during the throughput run`);
  const secs = (performance.now() - t0) / 1000;
  await pool.close();
  return reqs.length / secs;
}

async function throughputRatio() {
  const useRedis = await redisAnswers();
  if (!useRedis) return { 'throughput ratio': 'skipped (no Redis)' };
  const N = Number(process.env.BENCH_N ?? 6000);
  // The fake Discord shares this process: its OpenAPI validation would be billed to the bot.
  const h = await startHarness({
    webhooks: true,
    redis: true,
    fake: { validation: 'off' },
    env: { WEBHOOK_SILENCE_MS: '600000' },
  });
  const jobs = await startJobs(h, [h.fake.defaultChannelId], 20);
  const mk = (k: number) => {
    const job = jobs[k % jobs.length] as JobRecord;
    const body = JSON.stringify({
      task_id: job.taskId,
      task_type: 'song',
      status: 'processing',
      percentage: Math.min(99, Math.floor(k / jobs.length)),
    });
    return { job, body };
  };
  const botReqs = Array.from({ length: N }, (_, k) => {
    const { job, body } = mk(k);
    return { path: `/webhooks/media/${job.id}`, secret: job.secret, body };
  });

  // Bare handler: the same three store round trips as the webhook path (lookup, then merge read + write).
  const kv = new Keyv({ store: new KeyvRedis(REDIS_URL), namespace: `bare${Date.now()}` });
  for (const j of jobs) await kv.set(`job:${j.id}`, j);
  const bare = Fastify({ bodyLimit: 1024 * 1024 });
  bare.post<{ Params: { id: string }; Body: { percentage: number } }>('/hook/:id', async (req, reply) => {
    const job = (await kv.get(`job:${req.params.id}`)) as JobRecord | undefined;
    if (!job || req.headers['x-webhook-secret'] !== job.secret) return reply.code(401).send({});
    const again = (await kv.get(`job:${req.params.id}`)) as JobRecord;
    await kv.set(`job:${req.params.id}`, {
      ...again,
      percentage: Math.max(again.percentage, req.body.percentage),
    });
    return reply.code(202).send({ ok: true });
  });
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
  const bareReqs = botReqs.map((r) => ({ ...r, path: r.path.replace('/webhooks/media/', '/hook/') }));

  // Warm both, then measure alternately so machine noise hits both.
  await throughput(h.baseUrl, botReqs.slice(0, 300), 16);
  await throughput(bareUrl, bareReqs.slice(0, 300), 16);
  const botRps = await throughput(h.baseUrl, botReqs, 32);
  const bareRps = await throughput(bareUrl, bareReqs, 32);
  await bare.close();
  await kv.clear().catch(() => undefined);
  await kv.disconnect();
  await h.close();
  return {
    'bot webhook req/s': Math.round(botRps),
    'bare fastify+redis req/s': Math.round(bareRps),
    'throughput ratio': Math.round((botRps / bareRps) * 100) / 100,
  };
}

export async function runStormBench(): Promise<Record<string, unknown>[]> {
  const results: Record<string, unknown>[] = [];
  results.push(await storm('100 jobs over 10 channels', 10));
  results.push(await storm('100 jobs in one channel', 1));
  results.push({ scenario: 'webhook throughput vs bare handler', ...(await throughputRatio()) });
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await runStormBench()) console.table(r);
  process.exit(0);
}
