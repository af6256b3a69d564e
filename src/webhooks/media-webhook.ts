import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { normalizeTaskResult, ResultShapeError } from '../services/media/schemas.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import type { JobRecord, JobStore } from '../services/store/types.js';
import type { TaskResult } from '../services/media/types.js';
import type { Metrics } from '../metrics.js';

export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

export interface WebhookDeps {
  store: Pick<JobStore, 'get'>;
  applyResult(jobId: string, result: TaskResult, source: 'webhook'): Promise<unknown>;
  metrics?: Metrics;
  /** Per-IP limit; far above the real service's pace. */
  rateLimit?: { max: number; timeWindowMs: number };
}

const JOB_ID = /^[0-9a-f-]{36}$/i;

/** Constant-time comparison that also hides the length of the expected secret. */
export function secretMatches(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}

/**
 * `POST /webhooks/media/:jobId`: 401 wrong/missing secret, 404 unknown job,
 * 400 malformed body, 413 over 1 MiB, 503 store down, 202 accepted. The Discord
 * edit happens after the response (edit queue), so the service is answered fast.
 */
export const mediaWebhookRoutes: FastifyPluginAsync<WebhookDeps> = async (app, deps) => {
  app.addHook('onResponse', async (req, reply) => {
    if (req.routeOptions.url === '/webhooks/media/:jobId') deps.metrics?.webhooks.inc({ status: String(reply.statusCode) });
  });

  if (deps.rateLimit) {
    const { default: rateLimit } = await import('@fastify/rate-limit');
    await app.register(rateLimit, {
      global: false,
      max: deps.rateLimit.max,
      timeWindow: deps.rateLimit.timeWindowMs,
    });
  }

  app.post<{ Params: { jobId: string } }>(
    '/webhooks/media/:jobId',
    {
      bodyLimit: WEBHOOK_BODY_LIMIT,
      ...(deps.rateLimit ? { config: { rateLimit: { max: deps.rateLimit.max, timeWindow: deps.rateLimit.timeWindowMs } } } : {}),
    },
    async (req, reply) => {
      const given = req.headers['x-webhook-secret'];
      if (typeof given !== 'string' || given === '') {
        return reply.code(401).send(problem('WEBHOOK_SECRET_MISSING', 'x-webhook-secret header is required'));
      }
      const { jobId } = req.params;
      if (!JOB_ID.test(jobId)) return reply.code(404).send(problem('JOB_NOT_FOUND', 'unknown job'));

      let job: JobRecord | undefined;
      try {
        job = await deps.store.get(jobId);
      } catch (err) {
        if (err instanceof StoreUnavailableError) {
          deps.metrics?.storeErrors.inc();
          req.log.warn({ jobId }, 'store unavailable; webhook refused with 503');
          return reply.code(503).header('retry-after', '5').send(problem(err.code, 'store temporarily unavailable'));
        }
        throw err;
      }
      if (!job) return reply.code(404).send(problem('JOB_NOT_FOUND', 'unknown job'));
      if (!secretMatches(given, job.secret)) {
        return reply.code(401).send(problem('WEBHOOK_SECRET_INVALID', 'wrong webhook secret'));
      }

      let result: TaskResult;
      try {
        result = normalizeTaskResult(job.operation, req.body).result;
      } catch (err) {
        if (err instanceof ResultShapeError) return reply.code(400).send(problem('WEBHOOK_BODY_INVALID', err.message));
        throw err;
      }
      if (result.taskId && job.taskId && result.taskId !== job.taskId) {
        return reply.code(400).send(problem('WEBHOOK_TASK_MISMATCH', 'task_id does not belong to this job'));
      }
      try {
        await deps.applyResult(jobId, result, 'webhook');
      } catch (err) {
        if (err instanceof StoreUnavailableError) {
          deps.metrics?.storeErrors.inc();
          return reply.code(503).header('retry-after', '5').send(problem(err.code, 'store temporarily unavailable'));
        }
        throw err;
      }
      req.log.debug({ jobId, taskId: result.taskId, state: result.state }, 'webhook accepted');
      return reply.code(202).send({ ok: true });
    },
  );
};

export function problem(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}
