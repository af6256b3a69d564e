/** The service's own endpoints: the four operations and /fetch. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EmulatorCore } from '../core.js';
import { InvalidJson, badRequest, errorsBody, metaOf } from '../http.js';
import type { JsonValue } from '../types.js';
import {
  validateFetch,
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

/** Order matters: injected delay, injected failure, auth, then body syntax, like a gateway in front of the app. */
async function gate(core: EmulatorCore, apiKey: string, request: FastifyRequest, reply: FastifyReply) {
  const meta = metaOf(request);
  const path = pathOf(request);
  const delay = core.faults.takeDelay(path);
  if (delay !== undefined) {
    meta.delayedMs = delay;
    await core.timers.sleep(delay);
  }
  const injected = core.faults.takeFailure(path);
  if (injected !== undefined) {
    meta.injectedStatus = injected;
    return reply.code(injected).send(injected === 400 ? errorsBody(['Injected failure']) : {});
  }
  meta.authorized = request.headers.authorization === apiKey;
  if (!meta.authorized) return reply.code(401).send({});
  if (request.body instanceof InvalidJson) {
    return badRequest(reply, [`request body is not valid JSON: ${request.body.reason}`]);
  }
  return undefined;
}

export function apiRoutes(core: EmulatorCore, options: ApiOptions) {
  return async (api: FastifyInstance): Promise<void> => {
    api.addHook('onRequest', async (request) => {
      metaOf(request);
    });
    api.addHook('preHandler', async (request, reply) => gate(core, options.apiKey, request, reply));
    api.addHook('onResponse', async (request, reply) => {
      const meta = metaOf(request);
      core.logRequest({
        method: request.method,
        path: pathOf(request),
        statusCode: reply.statusCode,
        headers: redactedHeaders(request),
        authorized: meta.authorized,
        bodyBytes: meta.bodyBytes,
        receivedAt: meta.receivedAt,
        durationMs: Date.now() - meta.receivedAt,
        ...(meta.injectedStatus !== undefined ? { injectedStatus: meta.injectedStatus } : {}),
        ...(meta.delayedMs !== undefined ? { delayedMs: meta.delayedMs } : {}),
      });
    });

    api.post('/image-upscale', async (request, reply) => {
      const checked = validateUpscale(request.body);
      if (!checked.ok) return badRequest(reply, checked.errors);
      await core.timers.sleep(options.upscaleDelayMs);
      return core.createUpscale(params(request), checked.value.seed);
    });

    api.post('/song-extend', async (request, reply) => {
      const checked = validateSongExtend(request.body, (id) => core.tasks.get(id));
      if (!checked.ok) return badRequest(reply, checked.errors);
      const task = core.createAsync('song', params(request), checked.value, {
        songIds: [randomUUID(), randomUUID()],
      });
      return { task_id: task.id };
    });

    api.post('/video-extend', async (request, reply) => {
      const checked = validateVideoExtend(request.body, (id) => core.tasks.get(id));
      if (!checked.ok) return badRequest(reply, checked.errors);
      const task = core.createAsync('video', params(request), checked.value);
      return { task_id: task.id };
    });

    api.post('/ai-photo-upload', async (request, reply) => {
      const checked = validateUpload(request.body, options.keepUploadBytes);
      if (!checked.ok) return badRequest(reply, checked.errors);
      const { images, params: recorded, ...webhook } = checked.value;
      const task = core.createAsync('upload', recorded, webhook, { uploads: images });
      return { task_id: task.id };
    });

    api.post('/fetch', async (request, reply) => {
      const checked = validateFetch(request.body);
      if (!checked.ok) return badRequest(reply, checked.errors);
      const task = core.tasks.get(checked.value.taskId);
      if (!task) return badRequest(reply, ['Task not found']);
      return task.body;
    });
  };
}
