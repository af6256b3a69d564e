import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { normalizeTaskResult, ResultShapeError } from '../services/media/schemas.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import type { JobRecord, JobStore } from '../services/store/types.js';
import type { TaskResult } from '../services/media/types.js';
import type { Metrics } from '../metrics.js';

export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

export interface WebhookDeps {
  store: Pick<JobStore, 'get'>;
  /** Resolves with the merged job, or undefined when the job is unknown. */
  applyResult(
    jobId: string,
    result: TaskResult,
    source: 'webhook',
  ): Promise<Pick<JobRecord, 'taskId'> | undefined>;
  metrics?: Metrics;
  /** Per-IP limit; far above the real service's pace. */
  rateLimit?: { max: number; timeWindowMs: number };
}

const JOB_ID = /^[0-9a-f-]{36}$/i;

/** What the route needs to authenticate a delivery; immutable for a job's life. */
interface JobKeyInfo {
  secret: string;
  operation: JobRecord['operation'];
  taskId?: string;
}

/**
 * Bounded memo of jobId → secret/operation. A job's secret never changes, so
 * after the first delivery the route authenticates without a store read; the
 * merge itself still goes through the store (and answers 503 when it is down).
 */
class JobKeyCache {
  private readonly map = new Map<string, JobKeyInfo>();
  constructor(private readonly max = 20_000) {}
  get(id: string): JobKeyInfo | undefined {
    return this.map.get(id);
  }
  set(id: string, info: JobKeyInfo): void {
    if (this.map.size >= this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(id, info);
  }
  delete(id: string): void {
    this.map.delete(id);
  }
}

/** Constant-time comparison (job secrets all have the same length, so the length check leaks nothing). */
export function secretMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * `POST /webhooks/media/:jobId`: 401 wrong/missing secret, 404 unknown job,
 * 400 malformed body, 413 over 1 MiB, 503 store down, 202 accepted. The Discord
 * edit happens after the response (edit queue), so the service is answered fast.
 */
export const mediaWebhookRoutes: FastifyPluginAsync<WebhookDeps> = async (app, deps) => {
  const keys = new JobKeyCache();

  // The spec does not say which content type the service sends: read any body as JSON
  // rather than lose a delivery to a 415 (application/json keeps Fastify's own parser).
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => {
    try {
      done(null, JSON.parse(String(body)) as unknown);
    } catch {
      done(
        Object.assign(new Error('body is not JSON'), { statusCode: 400, code: 'WEBHOOK_BODY_INVALID' }),
        undefined,
      );
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    if (req.routeOptions.url === '/webhooks/media/:jobId')
      deps.metrics?.webhooks.inc({ status: String(reply.statusCode) });
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
      ...(deps.rateLimit
        ? { config: { rateLimit: { max: deps.rateLimit.max, timeWindow: deps.rateLimit.timeWindowMs } } }
        : {}),
    },
    async (req, reply) => {
      const given = req.headers['x-webhook-secret'];
      if (typeof given !== 'string' || given === '') {
        return reply.code(401).send(problem('WEBHOOK_SECRET_MISSING', 'x-webhook-secret header is required'));
      }
      const { jobId } = req.params;
      if (!JOB_ID.test(jobId)) return reply.code(404).send(problem('JOB_NOT_FOUND', 'unknown job'));

      let job: JobKeyInfo | undefined = keys.get(jobId);
      try {
        if (!job) {
          const record = await deps.store.get(jobId);
          if (record) {
            job = {
              secret: record.secret,
              operation: record.operation,
              ...(record.taskId ? { taskId: record.taskId } : {}),
            };
            keys.set(jobId, job);
          }
        }
      } catch (err) {
        if (err instanceof StoreUnavailableError) {
          deps.metrics?.storeErrors.inc();
          req.log.warn({ jobId }, 'store unavailable; webhook refused with 503');
          return reply
            .code(503)
            .header('retry-after', '5')
            .send(problem(err.code, 'store temporarily unavailable'));
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
        if (err instanceof ResultShapeError)
          return reply.code(400).send(problem('WEBHOOK_BODY_INVALID', err.message));
        throw err;
      }
      if (result.taskId && job.taskId && result.taskId !== job.taskId) {
        return reply.code(400).send(problem('WEBHOOK_TASK_MISMATCH', 'task_id does not belong to this job'));
      }
      try {
        const applied = await deps.applyResult(jobId, result, 'webhook');
        if (applied === undefined) {
          // Expired from the store since it was cached.
          keys.delete(jobId);
          return reply.code(404).send(problem('JOB_NOT_FOUND', 'unknown job'));
        }
        if (!job.taskId && applied.taskId) keys.set(jobId, { ...job, taskId: applied.taskId });
      } catch (err) {
        if (err instanceof StoreUnavailableError) {
          deps.metrics?.storeErrors.inc();
          return reply
            .code(503)
            .header('retry-after', '5')
            .send(problem(err.code, 'store temporarily unavailable'));
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
