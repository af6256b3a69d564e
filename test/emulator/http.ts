/** Fastify plumbing shared by all routes: body parsing, error shapes, per-request bookkeeping. */
import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FailureStatus, LostAnswerMode } from './types.js';

/**
 * A body that failed to parse. The parser hands this on instead of throwing so
 * the API hooks can still answer 401 for a bad key first (auth before syntax).
 */
export class InvalidJson {
  constructor(readonly reason: string) {}
}

/** Bookkeeping for the request log, keyed by the raw request. */
export interface RequestMeta {
  receivedAt: number;
  bodyBytes: number;
  authorized: boolean;
  injectedStatus?: FailureStatus;
  delayedMs?: number;
  rateLimited?: boolean;
  lostAnswer?: LostAnswerMode;
  /** Already in the request log (a reset connection is logged by hand: no response follows). */
  logged?: boolean;
}
const metas = new WeakMap<IncomingMessage, RequestMeta>();

export function metaOf(request: FastifyRequest): RequestMeta {
  let meta = metas.get(request.raw);
  if (!meta) {
    meta = { receivedAt: Date.now(), bodyBytes: 0, authorized: false };
    metas.set(request.raw, meta);
  }
  return meta;
}

export function errorsBody(messages: readonly string[]): { errors: { msg: string }[] } {
  return { errors: messages.map((msg) => ({ msg })) };
}

/** What a reverse proxy in front of the service answers when it cannot reach it (not the service's JSON). */
export function proxyPage(status: 502 | 504): string {
  const title = status === 502 ? '502 Bad Gateway' : '504 Gateway Time-out';
  return `<html>\r\n<head><title>${title}</title></head>\r\n<body>\r\n<center><h1>${title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`;
}

export function badRequest(reply: FastifyReply, messages: readonly string[]): FastifyReply {
  return reply.code(400).send(errorsBody(messages));
}

/** Parses every body as JSON whatever its Content-Type (clients that forget the header still get checked). */
export function installJsonParsing(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, raw: Buffer, done) => {
    metaOf(request).bodyBytes = raw.length;
    if (raw.length === 0) {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(raw.toString('utf8')) as unknown);
    } catch (error) {
      done(null, new InvalidJson(error instanceof Error ? error.message : String(error)));
    }
  });

  app.setErrorHandler((error: FastifyError, _request, reply) => {
    const status = error.statusCode ?? 500;
    if (status === 413) return reply.code(413).send(errorsBody(['request body too large']));
    if (status >= 400 && status < 500) return reply.code(status).send(errorsBody([error.message]));
    // The spec's server error shape: an empty object.
    return reply.code(500).send({});
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorsBody([`no endpoint ${request.method} ${request.url}`])),
  );
}
