/**
 * Webhook intake throughput: the bot's `POST /webhooks/media/:jobId` against a
 * bare Fastify + Keyv(Redis) handler doing one get + one set per request, in
 * the same run, both loaded by autocannon from a separate process (so the
 * generator is not the bottleneck). All from one address, as a media service
 * flushing its backlog would: nothing valid may be refused.
 */
import Fastify from 'fastify';
import { Keyv } from 'keyv';
import KeyvRedis from '@keyv/redis';
import { REDIS_URL, startHarness } from '../test/helpers/harness.js';
import type { JobRecord } from '../src/services/store/types.js';
import { loadFromChild, redisAnswers, r1, startJobs, type LoadResult } from './common.js';

const JOBS = 100;
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

export async function runThroughputBench(): Promise<Record<string, unknown>> {
  if (!(await redisAnswers())) return { scenario: 'webhook throughput', skipped: 'no Redis at REDIS_URL' };
  // The fake Discord shares this process: its OpenAPI validation would be billed to the bot.
  const h = await startHarness({
    webhooks: true,
    redis: true,
    fake: { validation: 'off' },
    env: { WEBHOOK_SILENCE_MS: '600000' },
  });
  const { jobs } = await startJobs(h, [h.fake.defaultChannelId], JOBS);
  const targets = jobs.map((j) => ({ id: j.id, secret: j.secret, taskId: j.taskId ?? '' }));

  const kv = new Keyv({ store: new KeyvRedis(REDIS_URL), namespace: `bare${Date.now()}` });
  for (const j of jobs) await kv.set(`job:${j.id}`, j);
  const bare = Fastify({ bodyLimit: 1024 * 1024 });
  bare.post<{ Params: { id: string }; Body: { percentage: number } }>('/hook/:id', async (req, reply) => {
    const job = (await kv.get(`job:${req.params.id}`)) as JobRecord | undefined;
    if (!job || req.headers['x-webhook-secret'] !== job.secret) return reply.code(401).send({});
    await kv.set(`job:${req.params.id}`, {
      ...job,
      percentage: Math.max(job.percentage, req.body.percentage),
    });
    return reply.code(202).send({ ok: true });
  });
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

  const run = (url: string, pathPrefix: string, durationSec = SECONDS) =>
    loadFromChild({ url, pathPrefix, jobs: targets, connections: CONNECTIONS, durationSec });
  // Warm both, then alternate so machine noise hits both alike.
  await run(h.baseUrl, '/webhooks/media/', 1);
  await run(bareUrl, '/hook/', 1);
  const bot: LoadResult[] = [];
  const base: LoadResult[] = [];
  for (let i = 0; i < 2; i++) {
    bot.push(await run(h.baseUrl, '/webhooks/media/'));
    base.push(await run(bareUrl, '/hook/'));
  }
  await bare.close();
  await kv.clear().catch(() => undefined);
  await kv.disconnect();
  await h.close();

  const mean = (rs: LoadResult[], f: (r: LoadResult) => number) =>
    rs.reduce((a, r) => a + f(r), 0) / rs.length;
  const botRps = mean(bot, (r) => r.rps);
  const bareRps = mean(base, (r) => r.rps);
  return {
    scenario: `webhook throughput, ${JOBS} jobs, ${CONNECTIONS} connections, one address, autocannon in a child process`,
    'bot req/s': Math.round(botRps),
    'bare fastify+keyv/redis get+set req/s': Math.round(bareRps),
    'ratio bot/bare': Math.round((botRps / bareRps) * 100) / 100,
    'bot deliveries': bot.reduce((a, r) => a + r.total, 0),
    'bot refused (non-2xx)': bot.reduce((a, r) => a + r.non2xx, 0),
    'bot errors/timeouts': bot.reduce((a, r) => a + r.errors + r.timeouts, 0),
    'bot p50 ms': r1(Math.max(...bot.map((r) => r.p50))),
    'bot p99 ms': r1(Math.max(...bot.map((r) => r.p99))),
    'bare p99 ms': r1(Math.max(...base.map((r) => r.p99))),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await runThroughputBench());
  process.exit(0);
}
