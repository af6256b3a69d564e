import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { normalizeTaskResult, ResultShapeError, type ResultOutputs } from '../services/media/schemas.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import { SingleFlight } from '../services/shared/single-flight.js';
import type { JobRecord, JobStore } from '../services/store/types.js';
import type { TaskResult } from '../services/media/types.js';
import type { Metrics } from '../metrics.js';
import { AuthFailureGuard, type AuthFailureLimit } from './auth-failures.js';
import { JobKeys, type JobKeyInfo } from './job-keys.js';
import { jsonShapeExcess, WEBHOOK_JSON_SHAPE } from './json-shape.js';

export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

export interface WebhookDeps {
  store: Pick<JobStore, 'get'>;
  /** Resolves with the merged job, or undefined when the job is unknown. */
  applyResult(
    jobId: string,
    result: TaskResult,
    source: 'webhook',
  ): Promise<Pick<JobRecord, 'taskId'> | undefined>;
  /** What a finished result of each operation carries (the operations registry's). */
  operations: ResultOutputs;
  metrics?: Metrics;
  /** Memo of job secrets; the app shares it with JobLifecycle so its own jobs are known before the first delivery. */
  keys?: JobKeys;
  /** Per-source budget of failed authentications (default DEFAULT_AUTH_FAILURE_LIMIT). */
  authFailures?: AuthFailureLimit;
}

const JOB_ID = /^[0-9a-f-]{36}$/i;
/** The 202 body, serialised once. */
const ACCEPTED = JSON.stringify({ ok: true });
const JSON_TYPE = 'application/json; charset=utf-8';

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
 *
 * The job and its secret are checked in `onRequest`, before the body is read: an
 * anonymous flood of large or deeply nested bodies costs no parse. An authenticated
 * body is read up to 1 MiB and parsed only within WEBHOOK_JSON_SHAPE (else 400).
 *
 * No limit applies to deliveries that authenticate: the service flushes its
 * backlog in bursts after an outage and a refused delivery would be lost.
 * Failed authentications are counted per source address (`req.ip`, see
 * TRUST_PROXY); a source over its budget is answered 429 for the requests that
 * would need a store read to be judged, while everything decidable from memory
 * (its valid deliveries included) is answered as usual.
 */
export const mediaWebhookRoutes: FastifyPluginAsync<WebhookDeps> = async (app, deps) => {
  const keys = deps.keys ?? new JobKeys();
  const guard = new AuthFailureGuard(deps.authFailures);
  // One store read per job however many of its deliveries arrive before it is answered.
  const lookups = new SingleFlight<JobKeyInfo | undefined>();
  const lookup = (jobId: string): Promise<JobKeyInfo | undefined> =>
    lookups.run(jobId, async () => {
      const record = await deps.store.get(jobId);
      if (!record) return undefined;
      keys.remember(record);
      return keys.get(jobId);
    });

  // The spec does not say which content type the service sends: read any body as JSON
  // rather than lose a delivery to a 415. One parser for every type, Fastify's own JSON
  // parse (prototype poisoning refused) behind a bound on the body's shape: it runs only
  // once the hook below has authenticated the delivery.
  app.removeAllContentTypeParsers();
  const parseJson = app.getDefaultJsonParser('error', 'error') as (
    req: FastifyRequest,
    body: string,
    done: (err: Error | null, value?: unknown) => void,
  ) => void;
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (req, body, done) => {
    const bytes = body as Buffer;
    const excess = jsonShapeExcess(bytes, WEBHOOK_JSON_SHAPE);
    if (excess !== undefined) {
      done(
        bodyError(
          'WEBHOOK_BODY_TOO_COMPLEX',
          excess === 'depth'
            ? `body nested deeper than ${WEBHOOK_JSON_SHAPE.maxDepth} levels`
            : `body holds more than ${WEBHOOK_JSON_SHAPE.maxTokens} values`,
        ),
        undefined,
      );
      return;
    }
    parseJson(req, bytes.toString('utf8'), (err, value) => {
      if (err) done(bodyError('WEBHOOK_BODY_INVALID', 'body is not JSON'), undefined);
      else done(null, value);
    });
  });
  // Deliveries counted by status where each answer is made, not in an onResponse hook: a
  // hook runs per request, and this route is the one a storm hits. One labelled child
  // per status, looked up once (a label hash per request is not free).
  const byStatus = new Map<number, { inc(): void }>();
  const count = (status: number): void => {
    const counter = deps.metrics?.webhooks;
    if (!counter) return;
    let child = byStatus.get(status);
    if (!child) {
      child = counter.labels({ status: String(status) });
      byStatus.set(status, child);
    }
    child.inc();
  };
  const answer = (reply: FastifyReply, status: number, body: unknown): FastifyReply => {
    count(status);
    return reply.code(status).send(body);
  };
  const refuse = (
    req: FastifyRequest,
    reply: FastifyReply,
    status: 401 | 404,
    code: string,
    message: string,
  ) => {
    // Counted without waiting: the answer does not depend on it.
    void guard.fail(req.ip).catch(() => undefined);
    return answer(reply, status, problem(code, message));
  };
  const storeDown = (reply: FastifyReply, code: string): FastifyReply => {
    deps.metrics?.storeErrors.inc();
    return answer(reply.header('retry-after', '5'), 503, problem(code, 'store temporarily unavailable'));
  };
  // What fails before the handler (body not JSON 400, over the limit 413) or throws in it
  // (500) is answered by the app's error handler, and counted here.
  const appErrorHandler = app.errorHandler;
  app.setErrorHandler(function (this: typeof app, err, req, reply) {
    const sent = appErrorHandler.call(this, err, req, reply);
    count(reply.statusCode);
    return sent;
  });

  // The delivery's job, found by the onRequest hook, for the handler (the body is parsed in between).
  const authenticated = new WeakMap<FastifyRequest, JobKeyInfo>();

  /**
   * Authenticates before the body is read: an unauthenticated request, whatever its
   * size, costs a header check and at most one store read, never a parse (its unread
   * body is discarded by Node after the answer).
   */
  const authenticate = async (
    req: FastifyRequest<{ Params: { jobId: string } }>,
    reply: FastifyReply,
  ): Promise<FastifyReply | undefined> => {
    const given = req.headers['x-webhook-secret'];
    if (typeof given !== 'string' || given === '') {
      return refuse(req, reply, 401, 'WEBHOOK_SECRET_MISSING', 'x-webhook-secret header is required');
    }
    const { jobId } = req.params;
    if (!JOB_ID.test(jobId)) return refuse(req, reply, 404, 'JOB_NOT_FOUND', 'unknown job');

    let job: JobKeyInfo | undefined = keys.get(jobId);
    if (!job) {
      const waitMs = await guard.throttledForMs(req.ip);
      if (waitMs > 0) {
        return answer(
          reply.header('retry-after', String(Math.ceil(waitMs / 1000))),
          429,
          problem('WEBHOOK_AUTH_THROTTLED', 'too many failed webhook authentications from this address'),
        );
      }
      try {
        job = await lookup(jobId);
      } catch (err) {
        if (err instanceof StoreUnavailableError) {
          req.log.warn({ jobId }, 'store unavailable; webhook refused with 503');
          return storeDown(reply, err.code);
        }
        throw err;
      }
    }
    if (!job) return refuse(req, reply, 404, 'JOB_NOT_FOUND', 'unknown job');
    if (!secretMatches(given, job.secret)) {
      return refuse(req, reply, 401, 'WEBHOOK_SECRET_INVALID', 'wrong webhook secret');
    }
    authenticated.set(req, job);
    return undefined;
  };

  app.post<{ Params: { jobId: string } }>(
    '/webhooks/media/:jobId',
    { bodyLimit: WEBHOOK_BODY_LIMIT, onRequest: authenticate },
    async (req, reply) => {
      const job = authenticated.get(req);
      // The hook answers every request it does not authenticate.
      if (!job) throw new Error('webhook reached its handler unauthenticated');
      const { jobId } = req.params;

      let result: TaskResult;
      try {
        result = normalizeTaskResult(job.operation, req.body, deps.operations).result;
      } catch (err) {
        if (err instanceof ResultShapeError)
          return answer(reply, 400, problem('WEBHOOK_BODY_INVALID', err.message));
        throw err;
      }
      if (result.taskId && job.taskId && result.taskId !== job.taskId) {
        return answer(reply, 400, problem('WEBHOOK_TASK_MISMATCH', 'task_id does not belong to this job'));
      }
      try {
        const applied = await deps.applyResult(jobId, result, 'webhook');
        if (applied === undefined) {
          // Expired from the store since it was cached.
          keys.delete(jobId);
          return answer(reply, 404, problem('JOB_NOT_FOUND', 'unknown job'));
        }
        if (!job.taskId && applied.taskId) keys.set(jobId, { ...job, taskId: applied.taskId });
      } catch (err) {
        if (err instanceof StoreUnavailableError) return storeDown(reply, err.code);
        throw err;
      }
      // Guarded: under a storm the log object alone costs more than the check.
      if (req.log.level === 'debug' || req.log.level === 'trace') {
        req.log.debug({ jobId, taskId: result.taskId, state: result.state }, 'webhook accepted');
      }
      count(202);
      return reply.code(202).type(JSON_TYPE).send(ACCEPTED);
    },
  );
};

function bodyError(code: string, message: string): Error {
  return Object.assign(new Error(message), { statusCode: 400, code });
}

export function problem(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}
