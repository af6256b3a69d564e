/** The service's own endpoints: the four operations, /fetch, /fetch-many and /account. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EmulatorCore } from '../core.js';
import { InvalidJson, badRequest, errorsBody, metaOf, proxyPage, type RequestMeta } from '../http.js';
import type { FailureStatus, JsonValue, Operation, RequestLogEntry, ResultBody } from '../types.js';
import {
  validateFetch,
  validateFetchMany,
  validateSongExtend,
  validateUpload,
  validateUpscale,
  validateVideoExtend,
} from '../validation.js';

export interface ApiOptions {
  apiKey: string;
  upscaleDelayMs: number;
  keepUploadBytes: boolean;
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? request.url;
}

/** Only called after validation proved the body is a JSON object. */
function params(request: FastifyRequest): Record<string, JsonValue> {
  return request.body as Record<string, JsonValue>;
}

function redactedHeaders(request: FastifyRequest): Record<string, string | string[] | undefined> {
  const headers = { ...request.headers };
  if (headers.authorization !== undefined) headers.authorization = '[redacted]';
  return headers;
}

function logEntry(request: FastifyRequest, meta: RequestMeta, statusCode: number): RequestLogEntry {
  return {
    method: request.method,
    path: pathOf(request),
    statusCode,
    headers: redactedHeaders(request),
    authorized: meta.authorized,
    bodyBytes: meta.bodyBytes,
    receivedAt: meta.receivedAt,
    durationMs: Date.now() - meta.receivedAt,
    ...(meta.injectedStatus !== undefined ? { injectedStatus: meta.injectedStatus } : {}),
    ...(meta.delayedMs !== undefined ? { delayedMs: meta.delayedMs } : {}),
    ...(meta.rateLimited ? { rateLimited: true } : {}),
    ...(meta.lostAnswer !== undefined ? { lostAnswer: meta.lostAnswer } : {}),
  };
}

/** What an injected failure carries: the service's JSON, or a proxy's page for 502/504. */
function sendInjected(reply: FastifyReply, status: FailureStatus): FastifyReply {
  switch (status) {
    case 502:
    case 504:
      return reply.code(status).type('text/html').send(proxyPage(status));
    case 402:
      return reply.code(402).send(errorsBody(['Insufficient credits']));
    case 400:
    case 404:
    case 409:
    case 422:
      return reply.code(status).send(errorsBody(['Injected failure']));
    default:
      return reply.code(status).send({});
  }
}

/**
 * Order matters: a switched-off endpoint does not exist; then injected delay, injected
 * failure, auth, body syntax and rate limit, like a gateway in front of the app.
 */
async function gate(core: EmulatorCore, apiKey: string, request: FastifyRequest, reply: FastifyReply) {
  const meta = metaOf(request);
  const path = pathOf(request);
  if (
    (path === '/fetch-many' && !core.features.fetchMany) ||
    (path === '/account' && !core.features.account)
  ) {
    return reply.code(404).send(errorsBody([`no endpoint ${request.method} ${request.url}`]));
  }
  const delay = core.faults.takeDelay(path);
  if (delay !== undefined) {
    meta.delayedMs = delay;
    await core.timers.sleep(delay);
  }
  const injected = core.faults.takeFailure(path);
  if (injected !== undefined) {
    meta.injectedStatus = injected;
    return sendInjected(reply, injected);
  }
  meta.authorized = request.headers.authorization === apiKey;
  if (!meta.authorized) return reply.code(401).send({});
  if (request.body instanceof InvalidJson) {
    return badRequest(reply, [`request body is not valid JSON: ${request.body.reason}`]);
  }
  const limited = core.faults.takeRateLimit(path);
  if (limited) {
    meta.rateLimited = true;
    if (limited.retryAfter !== null) {
      const seconds = limited.retryAfter;
      reply.header(
        'retry-after',
        limited.format === 'date' ? new Date(Date.now() + seconds * 1000).toUTCString() : String(seconds),
      );
    }
    return reply.code(429).send(errorsBody(['Too many requests']));
  }
  return undefined;
}

/**
 * The answer of a submission the emulator carried out, unless `loseNextAnswer` says to lose
 * it: a proxy's 502 page, a destroyed connection, or an answer sent too late.
 */
async function answer(
  core: EmulatorCore,
  request: FastifyRequest,
  reply: FastifyReply,
  body: ResultBody,
): Promise<ResultBody | FastifyReply> {
  const lost = core.faults.takeLostAnswer(pathOf(request));
  if (!lost) return body;
  const meta = metaOf(request);
  meta.lostAnswer = lost.mode;
  switch (lost.mode) {
    case 'bad-gateway':
      return reply.code(502).type('text/html').send(proxyPage(502));
    case 'late': {
      const epoch = core.epoch;
      await core.timers.sleep(lost.delayMs);
      // Cut short by reset()/close(): the answer belongs to a log that is gone.
      if (epoch !== core.epoch) return destroy(request, reply, meta);
      return body;
    }
    case 'reset':
      // No response will follow, so no onResponse either: logged here.
      core.logRequest(logEntry(request, meta, 0));
      return destroy(request, reply, meta);
  }
}

function destroy(request: FastifyRequest, reply: FastifyReply, meta: RequestMeta): FastifyReply {
  meta.logged = true;
  reply.hijack();
  request.raw.socket.destroy();
  return reply;
}

/** A submission's credits; false answers 402 (nothing created). */
function charged(core: EmulatorCore, operation: Operation, reply: FastifyReply): boolean {
  if (core.charge(operation)) return true;
  void reply.code(402).send(errorsBody(['Insufficient credits']));
  return false;
}

export function apiRoutes(core: EmulatorCore, options: ApiOptions) {
  return async (api: FastifyInstance): Promise<void> => {
    api.addHook('onRequest', async (request) => {
      metaOf(request);
    });
    api.addHook('preHandler', async (request, reply) => gate(core, options.apiKey, request, reply));
    api.addHook('onResponse', async (request, reply) => {
      const meta = metaOf(request);
      if (meta.logged) return;
      meta.logged = true;
      core.logRequest(logEntry(request, meta, reply.statusCode));
    });

    api.post('/image-upscale', async (request, reply) => {
      const checked = validateUpscale(request.body);
      if (!checked.ok) return badRequest(reply, checked.errors);
      if (!charged(core, 'upscale', reply)) return reply;
      await core.timers.sleep(options.upscaleDelayMs);
      return answer(core, request, reply, core.createUpscale(params(request), checked.value.seed));
    });

    api.post('/song-extend', async (request, reply) => {
      const checked = validateSongExtend(request.body, (id) => core.tasks.get(id));
      if (!checked.ok) return badRequest(reply, checked.errors);
      if (!charged(core, 'song', reply)) return reply;
      const task = core.createAsync('song', params(request), checked.value, {
        songIds: [randomUUID(), randomUUID()],
      });
      return answer(core, request, reply, { task_id: task.id });
    });

    api.post('/video-extend', async (request, reply) => {
      const checked = validateVideoExtend(request.body, (id) => core.tasks.get(id));
      if (!checked.ok) return badRequest(reply, checked.errors);
      if (!charged(core, 'video', reply)) return reply;
      const task = core.createAsync('video', params(request), checked.value);
      return answer(core, request, reply, { task_id: task.id });
    });

    api.post('/ai-photo-upload', async (request, reply) => {
      const checked = validateUpload(request.body, options.keepUploadBytes);
      if (!checked.ok) return badRequest(reply, checked.errors);
      if (!charged(core, 'upload', reply)) return reply;
      const { images, params: recorded, ...webhook } = checked.value;
      const task = core.createAsync('upload', recorded, webhook, { uploads: images });
      return answer(core, request, reply, { task_id: task.id });
    });

    api.post('/fetch', async (request, reply) => {
      const checked = validateFetch(request.body);
      if (!checked.ok) return badRequest(reply, checked.errors);
      const task = core.tasks.get(checked.value.taskId);
      if (!task) return badRequest(reply, ['Task not found']);
      return task.body;
    });

    // Each known task as /fetch shows it (quirks included: an upload still processing has no
    // task_id), in the order asked; unknown ids are left out.
    api.post('/fetch-many', async (request, reply) => {
      const checked = validateFetchMany(request.body);
      if (!checked.ok) return badRequest(reply, checked.errors);
      const tasks = checked.value.taskIds.flatMap((id) => {
        const task = core.tasks.get(id);
        return task ? [task.body] : [];
      });
      return { tasks };
    });

    api.get('/account', async () => ({
      email: core.account.email,
      credits: core.account.credits,
      total_images: core.account.totalImages,
      plan: core.account.plan,
    }));
  };
}
