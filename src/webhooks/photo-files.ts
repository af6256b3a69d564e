import { createReadStream } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import type { PhotoSpool } from '../services/training/photo-spool.js';
import { problem } from './media-webhook.js';

export interface PhotoFilesDeps {
  spool: Pick<PhotoSpool, 'find'>;
}

/**
 * `GET /photos/:token/:file` (MEDIA_PHOTO_FORMAT=url): the cleaned copy of a
 * training photo, for the media service to fetch. Only the bot's cleaned
 * copies are ever linked (never the Discord originals, which keep their
 * metadata), at an unguessable token (256 random bits) that lives until the
 * upload job ends, 1 h at most. Unknown, malformed and expired links are all
 * the same 404; nothing is cached or indexed on the way.
 */
export const photoFileRoutes: FastifyPluginAsync<PhotoFilesDeps> = async (app, deps) => {
  app.get<{ Params: { token: string; file: string } }>('/photos/:token/:file', async (req, reply) => {
    const found = await deps.spool.find(req.params.token, req.params.file);
    if (!found) return reply.code(404).send(problem('NOT_FOUND', 'no such photo'));
    return reply
      .header('content-type', found.contentType)
      .header('content-length', found.size)
      .header('cache-control', 'private, no-store')
      .header('x-robots-tag', 'noindex')
      .header('referrer-policy', 'no-referrer')
      .send(createReadStream(found.path));
  });
};
