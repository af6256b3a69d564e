/**
 * Result files. Public (no key), like a CDN; single byte ranges for video players that seek.
 * The provider purges a task's assets after about a day: an expired one answers 404.
 */
import type { FastifyInstance } from 'fastify';
import { errorsBody } from '../http.js';
import { mediaFileFor } from '../media/index.js';
import type { FileFault } from '../types.js';

function parseRange(header: string, size: number): { start: number; end: number } | 'invalid' | undefined {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined; // unsupported (e.g. multi-range): serve the whole file
  const [, from = '', to = ''] = match;
  if (from === '' && to === '') return undefined;
  const start = from === '' ? Math.max(0, size - Number(to)) : Number(from);
  const end = from === '' || to === '' ? size - 1 : Math.min(Number(to), size - 1);
  return start > end || start >= size ? 'invalid' : { start, end };
}

export const fileRoutes = (faults: ReadonlyMap<string, FileFault>, expired: (name: string) => boolean) =>
  async function routes(app: FastifyInstance): Promise<void> {
    app.get<{ Params: { name: string } }>('/files/:name', async (request, reply) => {
      const found = mediaFileFor(request.params.name);
      if (!found) return reply.code(404).send(errorsBody([`no file ${request.params.name}`]));
      if (expired(request.params.name)) return reply.code(404).send(errorsBody(['asset expired']));
      let file = found;
      for (const [match, fault] of faults) {
        if (!request.params.name.includes(match)) continue;
        if ('status' in fault) return reply.code(fault.status).send(errorsBody(['file unavailable']));
        if ('body' in fault) {
          file = { ...found, bytes: fault.body, contentType: fault.contentType };
          continue;
        }
        const padded = Buffer.alloc(Math.max(fault.sizeBytes, found.bytes.length));
        found.bytes.copy(padded);
        file = { ...found, bytes: padded };
      }
      const size = file.bytes.length;
      reply.header('content-type', file.contentType).header('accept-ranges', 'bytes');
      const rangeHeader = request.headers.range;
      const range = rangeHeader === undefined ? undefined : parseRange(rangeHeader, size);
      if (range === 'invalid') {
        return reply.code(416).header('content-range', `bytes */${size}`).send(Buffer.alloc(0));
      }
      if (range) {
        return reply
          .code(206)
          .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
          .send(file.bytes.subarray(range.start, range.end + 1));
      }
      return reply.send(file.bytes);
    });
  };
