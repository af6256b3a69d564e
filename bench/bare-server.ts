/**
 * The throughput benchmark's baseline, in its own process like the bot: Fastify +
 * Keyv on Redis, one get + one set per webhook. argv: redis URL, namespace.
 * Prints its URL on the first line of stdout.
 */
import Fastify from 'fastify';
import { Keyv } from 'keyv';
import KeyvRedis from '@keyv/redis';

interface Job {
  secret: string;
  percentage: number;
  [field: string]: unknown;
}

const [redisUrl = 'redis://127.0.0.1:6379', namespace = 'bare'] = process.argv.slice(2);
const kv = new Keyv({ store: new KeyvRedis(redisUrl), namespace });
const app = Fastify({ bodyLimit: 1024 * 1024 });
app.post<{ Params: { id: string }; Body: { percentage: number } }>('/hook/:id', async (req, reply) => {
  const job = (await kv.get(`job:${req.params.id}`)) as Job | undefined;
  if (!job || req.headers['x-webhook-secret'] !== job.secret) return reply.code(401).send({});
  await kv.set(`job:${req.params.id}`, { ...job, percentage: Math.max(job.percentage, req.body.percentage) });
  return reply.code(202).send({ ok: true });
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${url}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => kv.disconnect())
    .finally(() => process.exit(0));
});
