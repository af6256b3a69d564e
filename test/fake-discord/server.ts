import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { API_PREFIX } from './constants.js';
import { DiscordHttpError, err } from './errors.js';
import type { FaultBook } from './faults.js';
import { isObj, isRecord, toJson, type Json } from './json.js';
import { fileSummary } from './messages.js';
import { Router, type HandlerContext, type HandlerResult } from './router.js';
import { registerCdnRoutes, serveCdn } from './routes/cdn.js';
import { registerChannelRoutes } from './routes/channels-threads.js';
import { registerCommandRoutes } from './routes/commands.js';
import { registerGatewayRoutes } from './routes/gateway.js';
import { editedMessageId, registerInteractionRoutes } from './routes/interactions.js';
import { registerMessageRoutes } from './routes/messages.js';
import { registerThreadEditRoutes, registerThreadRoutes } from './routes/threads.js';
import type { FakeState } from './state.js';
import type { AuthKind, RequestRecord, UploadedFile } from './types.js';

/**
 * The request pipeline every REST call goes through, in Discord's order: record, auth,
 * rate limits, spec validation (recorded even when a fault answers), injected faults, then
 * the route's handler. CDN paths are served by `serveCdn`.
 */
export interface ServerDeps {
  state: FakeState;
  router: Router;
  faults: FaultBook;
  serveCdn: (url: URL, req: IncomingMessage, res: ServerResponse) => void;
  /** The message a PATCH route edits (for the concurrent-edit record and the edit latency). */
  editedMessageId: (template: string, params: Record<string, string>) => string | undefined;
}

/** The fake's HTTP server: every route family on one router, the CDN, and the gateway's upgrades. */
export function createFakeServer(s: FakeState, faults: FaultBook): Server {
  const router = new Router();
  for (const register of [
    registerGatewayRoutes,
    registerChannelRoutes,
    registerThreadRoutes,
    registerThreadEditRoutes,
    registerMessageRoutes,
    registerCdnRoutes,
    registerInteractionRoutes,
    registerCommandRoutes,
  ])
    register(router, s);
  const deps: ServerDeps = {
    state: s,
    router,
    faults,
    serveCdn: (url, req, res) => serveCdn(s, url, req, res),
    editedMessageId: (template, params) => editedMessageId(s, template, params),
  };
  const server = createServer((req, res) => {
    void onRequest(deps, req, res);
  });
  server.on('upgrade', (req, socket, head: Buffer) => s.gateway.handleUpgrade(req, socket, head));
  return server;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks);
}

function send(
  res: ServerResponse,
  status: number,
  body: Json | undefined,
  headers: Record<string, string>,
): void {
  if (res.writableEnded) return;
  if (body === undefined || status === 204) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  if (typeof body === 'string' && status >= 500) {
    res.writeHead(status, { 'Content-Type': 'text/html', ...headers });
    res.end(body);
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** JSON, or multipart with `payload_json` + `files[n]` (other text fields become the body when there is no payload_json). */
async function parseBody(
  req: IncomingMessage,
): Promise<{ body: unknown; files: UploadedFile[]; error?: DiscordHttpError }> {
  const raw = await readBody(req);
  const contentType = req.headers['content-type'] ?? '';
  if (raw.length === 0) return { body: undefined, files: [] };
  if (contentType.startsWith('multipart/form-data')) {
    const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
    const files: UploadedFile[] = [];
    let body: unknown = undefined;
    const extra: Record<string, unknown> = {};
    for (const [field, value] of form.entries()) {
      if (typeof value === 'string') {
        if (field === 'payload_json') {
          try {
            body = JSON.parse(value);
          } catch {
            return { body: undefined, files, error: err.invalidJson() };
          }
        } else {
          extra[field] = value;
        }
      } else {
        files.push({
          field,
          filename: value.name,
          contentType: value.type,
          bytes: Buffer.from(await value.arrayBuffer()),
        });
      }
    }
    if (body === undefined && Object.keys(extra).length > 0) body = extra;
    return { body, files };
  }
  try {
    return { body: JSON.parse(raw.toString('utf8')), files: [] };
  } catch {
    return { body: undefined, files: [], error: err.invalidJson() };
  }
}

/** The request validators `warmUpValidators` compiles at start: the routes a bot uses most. */
export const USUAL_BOT_ROUTES = [
  { template: '/channels/{channel_id}/messages', method: 'POST' },
  { template: '/channels/{channel_id}/messages/{message_id}', method: 'PATCH' },
  { template: '/interactions/{interaction_id}/{interaction_token}/callback', method: 'POST' },
  { template: '/webhooks/{webhook_id}/{webhook_token}/messages/@original', method: 'PATCH' },
  { template: '/webhooks/{webhook_id}/{webhook_token}', method: 'POST' },
  { template: '/applications/{application_id}/commands', method: 'PUT' },
];

/** Answers the published spec cannot describe, exempt from the self-check (see the README's quirks table). */
function specGap(body: Json): boolean {
  // InteractionCallbackResponse.resource has no variant for a deferred reply ({type: 5}), which the docs describe.
  if (isObj(body) && isObj(body['resource']) && body['resource']['type'] === 5) return true;
  // GuildChannelResponse's type enum lacks GUILD_MEDIA (16).
  return (Array.isArray(body) ? body : [body]).some((c) => isObj(c) && c['type'] === 16);
}

export async function onRequest(deps: ServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const url = new URL(req.url ?? '/', deps.state.baseUrl);
    if (url.pathname.startsWith('/cdn/') || url.pathname.startsWith('/media/')) {
      deps.serveCdn(url, req, res);
      return;
    }
    if (!url.pathname.startsWith(`${API_PREFIX}/`)) {
      send(res, 404, { message: '404: Not Found', code: 0 }, {});
      return;
    }
    await onApiRequest(deps, url, req, res);
  } catch (e) {
    deps.state.options.debug?.(
      `fake-discord internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
    );
    if (!res.headersSent) send(res, 500, { message: '500: Internal Server Error', code: 0 }, {});
  }
}

async function onApiRequest(
  deps: ServerDeps,
  url: URL,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const s = deps.state;
  const method = (req.method ?? 'GET').toUpperCase();
  const path = url.pathname.slice(API_PREFIX.length);
  const authHeader = req.headers['authorization'];
  const auth: AuthKind =
    authHeader === undefined ? 'none' : authHeader === `Bot ${s.token}` ? 'bot' : 'invalid';
  const parsed = await parseBody(req);
  const match = deps.router.match(path, method);
  const route = match?.route;
  const params = match?.params ?? {};
  const specMatch = s.spec.matchPath(path);
  const inSpec = specMatch !== undefined && s.spec.hasOperation(specMatch.template, method);
  const template = route?.template ?? specMatch?.template ?? null;

  const record: RequestRecord = {
    seq: ++s.requestSeq,
    method,
    path,
    route: template,
    query: Object.fromEntries(url.searchParams.entries()),
    auth,
    status: 0,
    at: Date.now(),
    clockAt: s.clock.now(),
    body: parsed.body === undefined ? undefined : toJson(parsed.body),
    files: fileSummary(parsed.files),
    inSpec,
    rateLimited: false,
    fault: false,
    response: undefined,
    responseHeaders: {},
  };
  s.requests.push(record);
  if (!inSpec) s.unspecifiedRequests.push({ method, path, route: template, handled: route !== undefined });
  s.options.debug?.(`fake-discord <- ${method} ${path}${url.search}`);

  // Edits of one message at once, tracked from arrival to answer.
  const editKey = method === 'PATCH' && route ? deps.editedMessageId(route.template, params) : undefined;
  if (editKey !== undefined) {
    const n = (s.editsInFlight.get(editKey) ?? 0) + 1;
    s.editsInFlight.set(editKey, n);
    if (n > 1) s.concurrentEdits.push({ messageId: editKey, path, at: Date.now() });
  }
  const finish = (status: number, body: Json | undefined, headers: Record<string, string>): void => {
    if (editKey !== undefined) {
      const left = (s.editsInFlight.get(editKey) ?? 1) - 1;
      if (left <= 0) s.editsInFlight.delete(editKey);
      else s.editsInFlight.set(editKey, left);
    }
    record.status = status;
    record.response = body;
    record.responseHeaders = headers;
    if (
      s.options.selfCheckResponses &&
      specMatch &&
      inSpec &&
      body !== undefined &&
      status < 300 &&
      !specGap(body)
    ) {
      const errors = s.spec.validateResponseBody(specMatch.template, method, status, body);
      if (errors && errors.length > 0)
        s.responseViolations.push({ method, route: specMatch.template, status, errors });
    }
    send(res, status, body, headers);
    s.changed();
  };
  const fail = (e: DiscordHttpError, headers: Record<string, string> = {}): void =>
    finish(e.status, e.body, headers);

  if (!route) {
    s.unhandledRequests.push({ method, path, inSpec });
    fail(err.notFound());
    return;
  }
  if (route.auth === 'bot' && auth !== 'bot') {
    fail(err.unauthorized());
    return;
  }
  const ctx: HandlerContext = {
    method,
    path,
    template: route.template,
    params,
    query: url.searchParams,
    auth,
    body: parsed.body,
    files: parsed.files,
    record,
  };

  // A server that never installed the app: the bot is no member, any bot-token call there is refused.
  if (auth === 'bot') {
    const outside = ['guild_id', 'channel_id', 'thread_id']
      .map((k) => params[k])
      .find((id) => id !== undefined && s.outsiderGuildOf(id) !== undefined);
    if (outside !== undefined) {
      s.outsiderRequests.push({ method, path, guildId: s.outsiderGuildOf(outside) ?? '' });
      fail(err.missingAccess());
      return;
    }
  }

  // 1. rate limits
  const verdict = s.rateLimiter.check({ method, template: route.template, params, botAuth: auth === 'bot' });
  if (verdict.limited) {
    record.rateLimited = true;
    s.rateLimitHits.push({
      source: 'limiter',
      method,
      path,
      route: route.template,
      bucket: verdict.limited.bucket,
      global: verdict.limited.global,
      retryAfterMs: verdict.limited.retryAfterMs,
      at: Date.now(),
    });
    finish(
      429,
      {
        message: 'You are being rate limited.',
        retry_after: Math.round(verdict.limited.retryAfterMs) / 1000,
        global: verdict.limited.global,
      },
      verdict.headers,
    );
    return;
  }

  // 2. body validation against the spec (recorded even if a fault answers)
  let invalid: DiscordHttpError | null = parsed.error ?? null;
  if (!invalid && s.validation !== 'off' && parsed.body !== undefined && specMatch && inSpec) {
    const result = s.spec.validateRequestBody(specMatch.template, method, parsed.body);
    if (result.ok === false) {
      s.violations.push({
        source: 'openapi',
        method,
        path,
        route: specMatch.template,
        operationId: s.spec.operationId(specMatch.template, method),
        errors: result.errors,
        discordErrors: result.discordErrors,
        body: record.body,
        at: Date.now(),
      });
      if (s.validation === 'reject') invalid = err.invalidForm(result.discordErrors);
    } else if (result.ok === true && result.quirks.length > 0) {
      for (const q of result.quirks) s.specQuirks.push({ ...q, method, path, route: specMatch.template });
    }
  }

  // 3. injected faults
  const fault = deps.faults.take(method, path, route.template);
  const faultResponse = (): void => {
    if (!fault) return;
    record.fault = true;
    const status = fault.spec.status;
    const body: Json =
      fault.spec.body !== undefined
        ? fault.spec.body
        : status === 429
          ? { message: 'You are being rate limited.', retry_after: 1, global: false }
          : { message: `${status}: Injected fault`, code: 0 };
    const headers: Record<string, string> = { ...verdict.headers, ...(fault.spec.headers ?? {}) };
    if (status === 429) {
      const retryAfter = isRecord(body) && typeof body['retry_after'] === 'number' ? body['retry_after'] : 1;
      const global = isRecord(body) && body['global'] === true;
      headers['Retry-After'] ??= String(Math.max(1, Math.ceil(retryAfter)));
      headers['X-RateLimit-Scope'] ??= global ? 'global' : 'user';
      if (global) headers['X-RateLimit-Global'] ??= 'true';
      record.rateLimited = true;
      s.rateLimitHits.push({
        source: 'fault',
        method,
        path,
        route: route.template,
        bucket: headers['X-RateLimit-Bucket'] ?? 'fault',
        global,
        retryAfterMs: retryAfter * 1000,
        at: Date.now(),
      });
    }
    finish(status, body, headers);
  };
  if (fault?.spec.delayMs) await sleep(fault.spec.delayMs);
  if (fault && !fault.spec.afterHandler) {
    faultResponse();
    return;
  }
  if (invalid) {
    fail(invalid, verdict.headers);
    return;
  }

  // 4. the handler (message edits after the configured network latency)
  if (editKey !== undefined && s.options.editLatencyMs) await sleep(s.options.editLatencyMs);
  let result: HandlerResult;
  try {
    result = await route.handler(ctx);
  } catch (e) {
    if (e instanceof DiscordHttpError) {
      if (fault) faultResponse();
      else fail(e, verdict.headers);
      return;
    }
    throw e;
  }
  if (fault) {
    faultResponse();
    return;
  }
  finish(result.status, result.body, { ...verdict.headers, ...(result.headers ?? {}) });
}
