import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { REST } from '@discordjs/rest';

/**
 * A tiny local Discord for unit tests of the interaction layer: a real
 * `@discordjs/rest` REST (its retries, its multipart, its errors) whose requests
 * land on an HTTP server on 127.0.0.1 that records each one and answers as
 * Discord's interaction routes do (the callback, `@original`, follow-ups). No
 * rules beyond "an interaction is acknowledged once" (a second callback is 40060);
 * anything else a test wants is a fault it queues.
 */

export interface Recorded {
  method: string;
  /** Path after `/api/v10`, decoded (`/webhooks/{app}/{token}/messages/@original`). */
  path: string;
  query: Record<string, string>;
  /** The JSON body, or a multipart body's `payload_json`. */
  body: Record<string, unknown> | undefined;
  /** Number of files in a multipart body. */
  files: number;
}

/**
 * What a fault answers: a status and body; `lost`: the request is carried out, then
 * Cloudflare's 502 comes back (Discord did the work, its answer was lost); `reset`:
 * the connection is dropped without an answer; `hold`: no answer until `release()`.
 */
export type FaultAnswer =
  { status: number; body?: unknown } | { lost: true } | { reset: true } | { hold: Promise<void> };

export interface Fault {
  method?: string;
  /** Matches the decoded path (a string must be equal; a RegExp must match). */
  path: string | RegExp;
  answer: FaultAnswer;
  /** How many requests it answers (default 1). */
  count?: number;
}

export const discordError = (status: number, code: number, message: string) => ({
  status,
  body: { code, message },
});
export const UNKNOWN_WEBHOOK = discordError(404, 10015, 'Unknown Webhook');
export const UNKNOWN_MESSAGE = discordError(404, 10008, 'Unknown Message');
export const ALREADY_ACKNOWLEDGED = discordError(400, 40060, 'Interaction has already been acknowledged.');

const BAD_GATEWAY = '<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>';

/** Callback types that create or show a message (so `@original` exists). */
const MESSAGE_CALLBACKS = new Set([4, 5, 6, 7]);

export class RecordingDiscord {
  readonly requests: Recorded[] = [];
  readonly rest: REST;
  readonly #server: Server;
  readonly #faults: (Fault & { left: number })[] = [];
  readonly #acknowledged = new Set<string>();
  /** token → the message id `@original` stands for. */
  readonly #originals = new Map<string, string>();
  #seq = 900000000000000000n;
  readonly #listeners = new Set<() => void>();

  private constructor(server: Server, url: string) {
    this.#server = server;
    // The bot's callback REST: no global limiter, REST's own retries (3) kept.
    this.rest = new REST({ api: `${url}/api`, globalRequestsPerSecond: Number.POSITIVE_INFINITY });
  }

  static async start(): Promise<RecordingDiscord> {
    // The server must exist (and have a port) before the REST pointing at it.
    const ref: { self?: RecordingDiscord } = {};
    const server = createServer((req, res) => {
      void ref.self?.handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    ref.self = new RecordingDiscord(server, `http://127.0.0.1:${port}`);
    return ref.self;
  }

  nextId(): string {
    this.#seq += 1n;
    return String(this.#seq);
  }

  fail(fault: Fault): void {
    this.#faults.push({ ...fault, left: fault.count ?? 1 });
  }

  /** Discord took an answer that did not come through this server (an HTTP response body). */
  acknowledge(interactionId: string, token: string, originalMessageId?: string): void {
    this.#acknowledged.add(interactionId);
    if (originalMessageId) this.#originals.set(token, originalMessageId);
  }

  /** The message `@original` stands for on this token, once an answer created or showed one. */
  originalOf(token: string): string | undefined {
    return this.#originals.get(token);
  }

  /** `METHOD path` of every request, in order (queries left out). */
  lines(): string[] {
    return this.requests.map((r) => `${r.method} ${r.path}`);
  }

  /**
   * Resolves once `check` holds (re-checked on every request and every 10 ms of real
   * time: requests are real I/O, and tests fake only setTimeout and Date).
   */
  async waitFor(check: () => boolean, what = 'requests', timeoutMs = 5000): Promise<void> {
    if (check()) return;
    await new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const tick = (): void => {
        if (check()) {
          stop();
          resolve();
        } else if (performance.now() - started > timeoutMs) {
          stop();
          reject(new Error(`timed out waiting for ${what}; got: ${this.lines().join(', ') || 'nothing'}`));
        }
      };
      const timer = setInterval(tick, 10);
      const stop = (): void => {
        clearInterval(timer);
        this.#listeners.delete(tick);
      };
      this.#listeners.add(tick);
    });
  }

  /** Resolves with the first `n` requests once they were recorded. */
  async waitForCount(n: number, timeoutMs = 5000): Promise<Recorded[]> {
    await this.waitFor(() => this.requests.length >= n, `${n} requests`, timeoutMs);
    return this.requests.slice(0, n);
  }

  async close(): Promise<void> {
    this.rest.clearHashSweeper();
    this.rest.clearHandlerSweeper();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  // ------------------------------------------------------------------ serving

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = decodeURIComponent(url.pathname.replace(/^\/api\/v10/, ''));
    const { body, files } = parseBody(req.headers['content-type'] ?? '', raw);
    const rec: Recorded = {
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      body,
      files,
    };
    this.requests.push(rec);
    for (const l of [...this.#listeners]) l();

    const fault = this.#takeFault(rec);
    if (fault && 'hold' in fault) await fault.hold;
    if (fault && 'reset' in fault) {
      req.socket.destroy();
      return;
    }
    if (fault && 'status' in fault) {
      send(res, fault.status, fault.body);
      return;
    }
    const out = this.#answer(rec);
    if (fault && 'lost' in fault) {
      res.writeHead(502, { 'content-type': 'text/html' }).end(BAD_GATEWAY);
      return;
    }
    send(res, out.status, out.body);
  }

  #takeFault(rec: Recorded): FaultAnswer | undefined {
    for (const f of this.#faults) {
      if (f.left <= 0) continue;
      if (f.method && f.method !== rec.method) continue;
      if (typeof f.path === 'string' ? f.path !== rec.path : !f.path.test(rec.path)) continue;
      f.left -= 1;
      return f.answer;
    }
    return undefined;
  }

  #message(id: string, body: Record<string, unknown> | undefined): Record<string, unknown> {
    return {
      id,
      channel_id: '333333333333333333',
      type: 0,
      content: typeof body?.['content'] === 'string' ? body['content'] : '',
      flags: typeof body?.['flags'] === 'number' ? body['flags'] : 0,
      author: {
        id: '111111111111111111',
        username: 'bot',
        discriminator: '0',
        global_name: null,
        avatar: null,
      },
      attachments: [],
      embeds: [],
      mentions: [],
      mention_roles: [],
      pinned: false,
      mention_everyone: false,
      tts: false,
      timestamp: '2026-01-01T00:00:00.000Z',
      edited_timestamp: null,
      components: [],
    };
  }

  #answer(rec: Recorded): { status: number; body?: unknown } {
    const callback = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(rec.path);
    if (callback && rec.method === 'POST') {
      const [, id = '', token = ''] = callback;
      if (this.#acknowledged.has(id)) return ALREADY_ACKNOWLEDGED;
      this.#acknowledged.add(id);
      const type = Number(rec.body?.['type']);
      const data = rec.body?.['data'] as Record<string, unknown> | undefined;
      let message: Record<string, unknown> | undefined;
      if (MESSAGE_CALLBACKS.has(type)) {
        const messageId = this.#originals.get(token) ?? this.nextId();
        this.#originals.set(token, messageId);
        message = this.#message(messageId, data);
      }
      if (rec.query['with_response'] !== 'true') return { status: 204 };
      return {
        status: 200,
        body: {
          interaction: { id, type: 2 },
          ...(type === 4 || type === 7
            ? { resource: { type, message } }
            : type === 5
              ? { resource: { type } }
              : {}),
        },
      };
    }
    const hook = /^\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/([^/]+))?$/.exec(rec.path);
    if (hook) {
      const [, , token = '', messageId] = hook;
      const id = messageId === '@original' ? (this.#originals.get(token) ?? this.nextId()) : messageId;
      if (rec.method === 'DELETE') return { status: 204 };
      if (rec.method === 'POST') return { status: 200, body: this.#message(this.nextId(), rec.body) };
      if (id) return { status: 200, body: this.#message(id, rec.body) };
    }
    return { status: 404, body: { code: 0, message: '404: Not Found' } };
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (body === undefined || status === 204) {
    res.writeHead(status).end();
    return;
  }
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/html' : 'application/json' });
  res.end(text);
}

function parseBody(
  contentType: string,
  raw: Buffer,
): { body: Record<string, unknown> | undefined; files: number } {
  if (raw.length === 0) return { body: undefined, files: 0 };
  if (contentType.startsWith('application/json'))
    return { body: JSON.parse(raw.toString('utf8')) as Record<string, unknown>, files: 0 };
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  if (!boundary) return { body: undefined, files: 0 };
  const parts = raw.toString('latin1').split(`--${boundary[1] ?? boundary[2]}`);
  let body: Record<string, unknown> | undefined;
  let files = 0;
  for (const part of parts) {
    const name = /name="([^"]+)"/.exec(part)?.[1];
    if (!name) continue;
    if (name === 'payload_json') {
      const json = part.slice(part.indexOf('\r\n\r\n') + 4).replace(/\r\n$/, '');
      body = JSON.parse(Buffer.from(json, 'latin1').toString('utf8')) as Record<string, unknown>;
    } else if (name.startsWith('files[')) files += 1;
  }
  return { body, files };
}
