/**
 * `/_emulator/*`: the control API over HTTP, for driving the emulator by hand
 * (curl) while the bot runs against it. Unauthenticated on purpose: the server
 * binds to 127.0.0.1 unless told otherwise.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { badRequest, errorsBody } from '../http.js';
import { scenarioPatchSchema } from '../scenario.js';
import { API_PATHS, FAILURE_STATUSES, OPERATION_PATHS, type Emulator, type TaskRecord } from '../types.js';

const failNextSchema = z
  .object({
    count: z.number().int().min(1).default(1),
    status: z.union(FAILURE_STATUSES.map((s) => z.literal(s))),
    path: z.enum(API_PATHS).optional(),
  })
  .strict();
const rateLimitNextSchema = z
  .object({
    count: z.number().int().min(1).default(1),
    retryAfter: z.number().int().min(0).nullable().optional(),
    format: z.enum(['seconds', 'date']).optional(),
    path: z.enum(API_PATHS).optional(),
  })
  .strict();
const loseNextSchema = z
  .object({
    count: z.number().int().min(1).default(1),
    mode: z.enum(['bad-gateway', 'reset', 'late']),
    delayMs: z.number().min(0).optional(),
    path: z.enum(OPERATION_PATHS).optional(),
  })
  .strict();
const featuresSchema = z.object({ fetchMany: z.boolean(), account: z.boolean() }).partial().strict();
const accountSchema = z
  .object({
    email: z.string(),
    credits: z.number(),
    plan: z.string(),
    totalImages: z.number().int().min(0),
    addCredits: z.number(),
  })
  .partial()
  .strict();
const expireSchema = z.object({ taskId: z.string().optional() }).strict();
const resultTtlSchema = z.object({ ms: z.number().min(0) }).strict();
const delayNextSchema = z.object({ ms: z.number().min(0), path: z.enum(API_PATHS).optional() }).strict();
const failSchema = z.object({ message: z.string().optional() }).strict();

/** JSON view of a task; uploaded bytes (possibly megabytes) are left out. */
function taskView(task: Readonly<TaskRecord>) {
  const uploads = task.uploads?.map((image) => {
    if (image.kind === 'url') return image;
    const { bytes: _bytes, ...rest } = image;
    return rest;
  });
  return { ...task, ...(uploads ? { uploads } : {}) };
}

function parse<T>(schema: z.ZodType<T>, body: unknown, reply: FastifyReply): T | undefined {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  void badRequest(
    reply,
    result.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`),
  );
  return undefined;
}

function conflict(reply: FastifyReply, error: unknown): FastifyReply {
  const message = error instanceof Error ? error.message : String(error);
  return reply.code(message.startsWith('unknown') ? 404 : 409).send(errorsBody([message]));
}

export function controlRoutes(emulator: Emulator) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/', async () => ({
      url: emulator.url,
      scenario: emulator.scenario,
      features: emulator.features,
      account: emulator.account,
      tasks: emulator.tasks.size,
      requests: emulator.requests.length,
      webhookDeliveries: emulator.webhookDeliveries.length,
    }));

    app.get('/tasks', async () => [...emulator.tasks.values()].map(taskView));

    app.get<{ Params: { id: string } }>('/tasks/:id', async (request, reply) => {
      const task = emulator.tasks.get(request.params.id);
      if (!task) return reply.code(404).send(errorsBody([`unknown task ${request.params.id}`]));
      const webhooks = emulator.webhookDeliveries.filter((d) => d.taskId === task.id);
      return { ...taskView(task), webhooks };
    });

    app.post<{ Params: { id: string } }>('/tasks/:id/finish', async (request, reply) => {
      try {
        return taskView(emulator.finish(request.params.id));
      } catch (error) {
        return conflict(reply, error);
      }
    });

    app.post<{ Params: { id: string } }>('/tasks/:id/fail', async (request, reply) => {
      const body = parse(failSchema, request.body, reply);
      if (!body) return reply;
      try {
        return taskView(emulator.fail(request.params.id, body.message));
      } catch (error) {
        return conflict(reply, error);
      }
    });

    app.get('/scenario', async () => emulator.scenario);

    app.post('/scenario', async (request, reply) => {
      const patch = parse(scenarioPatchSchema, request.body, reply);
      return patch ? emulator.setScenario(patch) : reply;
    });

    app.post('/next-scenario', async (request, reply) => {
      const patch = parse(scenarioPatchSchema, request.body, reply);
      if (!patch) return reply;
      emulator.nextScenario(patch);
      return { queued: true };
    });

    app.post('/fail-next', async (request, reply) => {
      const body = parse(failNextSchema, request.body, reply);
      if (!body) return reply;
      emulator.failNext(body.count, { status: body.status, ...(body.path ? { path: body.path } : {}) });
      return { ok: true };
    });

    app.post('/delay-next', async (request, reply) => {
      const body = parse(delayNextSchema, request.body, reply);
      if (!body) return reply;
      emulator.delayNext(body.ms, body.path);
      return { ok: true };
    });

    app.post('/rate-limit-next', async (request, reply) => {
      const body = parse(rateLimitNextSchema, request.body, reply);
      if (!body) return reply;
      const { count, ...options } = body;
      emulator.rateLimitNext(count, {
        ...(options.retryAfter !== undefined ? { retryAfter: options.retryAfter } : {}),
        ...(options.format ? { format: options.format } : {}),
        ...(options.path ? { path: options.path } : {}),
      });
      return { ok: true };
    });

    app.post('/lose-next', async (request, reply) => {
      const body = parse(loseNextSchema, request.body, reply);
      if (!body) return reply;
      emulator.loseNextAnswer(body.count, {
        mode: body.mode,
        ...(body.delayMs !== undefined ? { delayMs: body.delayMs } : {}),
        ...(body.path ? { path: body.path } : {}),
      });
      return { ok: true };
    });

    app.get('/features', async () => emulator.features);
    app.post('/features', async (request, reply) => {
      const patch = parse(featuresSchema, request.body, reply);
      return patch ? emulator.setFeatures(patch) : reply;
    });

    app.get('/account', async () => emulator.account);
    app.post('/account', async (request, reply) => {
      const patch = parse(accountSchema, request.body, reply);
      return patch ? emulator.setAccount(patch) : reply;
    });

    app.post('/expire-results', async (request, reply) => {
      const body = parse(expireSchema, request.body, reply);
      if (!body) return reply;
      try {
        emulator.expireResults(body.taskId);
      } catch (error) {
        return conflict(reply, error);
      }
      return { ok: true };
    });

    app.post('/result-ttl', async (request, reply) => {
      const body = parse(resultTtlSchema, request.body, reply);
      if (!body) return reply;
      emulator.setResultTtl(body.ms);
      return { ok: true };
    });

    app.get('/requests', async () => emulator.requests);
    app.get('/webhooks', async () => emulator.webhookDeliveries);

    app.post('/reset', async () => {
      emulator.reset();
      return { ok: true };
    });
  };
}
