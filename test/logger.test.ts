import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DiscordAPIError, REST } from '@discordjs/rest';
import type { Logger } from 'pino';
import { Agent, interceptors, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createLogger, MAX_LINE_BYTES, resolveLogFormat, serializeError } from '../src/logger.js';

const TOKEN = 'MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.discord-bot-token-value';
const API_KEY = 'media-api-key-0123456789abcdef';
const JOB_SECRET = '9f8e7d6c5b4a39281706f5e4d3c2b1a0';
const INTERACTION_TOKEN = 'aW50ZXJhY3Rpb246MTIzNDU2Nzg5OmludGVyYWN0aW9uLXRva2Vu';

interface Capture {
  logger: Logger;
  lines: string[];
  text(): string;
  records(): Record<string, unknown>[];
}

function capture(secrets: string[] = [TOKEN, API_KEY], level = 'trace'): Capture {
  const lines: string[] = [];
  const logger = createLogger({
    level,
    secrets,
    destination: { write: (s: string) => void lines.push(s) },
  });
  return {
    logger,
    lines,
    text: () => lines.join(''),
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Asserts something was logged (so "no secret" is not vacuous) and no secret appears in it. */
function expectClean(c: Capture, ...secrets: string[]): void {
  expect(c.lines.length).toBeGreaterThan(0);
  const text = c.text();
  for (const s of secrets.length > 0 ? secrets : [TOKEN, API_KEY]) expect(text).not.toContain(s);
  // Every line is still valid JSON.
  for (const line of c.lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
}

describe('createLogger: secrets by key', () => {
  it.each<[string, (l: Logger) => void]>([
    ['token', (l) => l.info({ token: TOKEN }, 'login')],
    ['apiKey', (l) => l.info({ apiKey: API_KEY }, 'client')],
    [
      'headers.authorization',
      (l) => l.info({ headers: { authorization: API_KEY, accept: 'json' } }, 'request'),
    ],
    ['req.headers.authorization', (l) => l.info({ req: { headers: { authorization: API_KEY } } }, 'request')],
    [
      'nested config',
      (l) => l.info({ config: { discord: { token: TOKEN }, media: { apiKey: API_KEY } } }, 'cfg'),
    ],
  ])('%s', (_name, log) => {
    const c = capture();
    log(c.logger);
    expectClean(c);
    expect(c.text()).toContain('[REDACTED]');
  });

  it('job.secret and job.message.interaction.token (not configured secrets: removed by key)', () => {
    const c = capture();
    c.logger.info(
      {
        job: {
          id: 'j1',
          secret: JOB_SECRET,
          message: {
            channelId: '1',
            interaction: { applicationId: '2', token: INTERACTION_TOKEN, createdAt: 1 },
          },
        },
      },
      'job stored',
    );
    expectClean(c, JOB_SECRET, INTERACTION_TOKEN);
    const [rec] = c.records();
    const job = rec?.['job'] as { id: string; message: { channelId: string } };
    // Only the secrets go; the rest of the object stays readable.
    expect(job.id).toBe('j1');
    expect(job.message.channelId).toBe('1');
  });

  it('webhook secret header and field', () => {
    const c = capture();
    c.logger.info({ headers: { 'x-webhook-secret': JOB_SECRET } }, 'incoming');
    c.logger.info({ body: { webhook_secret: JOB_SECRET } }, 'submit');
    expectClean(c, JOB_SECRET);
  });

  it('at any depth, in arrays, in any letter case, and in child bindings', () => {
    // Not configured secrets: only the key can remove them.
    const c = capture([]);
    c.logger.info({ a: { b: { c: { d: { token: INTERACTION_TOKEN } } } } }, 'deep');
    c.logger.info({ calls: [{ headers: { Authorization: JOB_SECRET } }] }, 'array');
    c.logger.info({ WebhookSecret: JOB_SECRET, 'X-Webhook-Secret': JOB_SECRET }, 'case');
    c.logger
      .child({ job: { secret: JOB_SECRET } })
      .child({ token: INTERACTION_TOKEN })
      .info('bound');
    expectClean(c, JOB_SECRET, INTERACTION_TOKEN);
    expect(c.lines).toHaveLength(4);
    const [deep, array, cased, bound] = c.records();
    expect(deep?.['a']).toEqual({ b: { c: { d: { token: '[REDACTED]' } } } });
    expect(array?.['calls']).toEqual([{ headers: { Authorization: '[REDACTED]' } }]);
    expect(cased?.['WebhookSecret']).toBe('[REDACTED]');
    expect(bound?.['job']).toEqual({ secret: '[REDACTED]' });
    expect(bound?.['token']).toBe('[REDACTED]');
    // What formatters.log does not see: format arguments, a second object, setBindings.
    const e = capture([]);
    e.logger.info('args %j %o', { token: INTERACTION_TOKEN }, { job: { secret: JOB_SECRET } });
    e.logger.info({ a: 1 }, 'obj then %j', { headers: { authorization: JOB_SECRET } });
    const rebound = e.logger.child({ a: 1 });
    rebound.setBindings({ webhook_secret: JOB_SECRET });
    rebound.info('after setBindings');
    expectClean(e, JOB_SECRET, INTERACTION_TOKEN);
    expect(e.lines).toHaveLength(3);
    expect(e.text()).toContain('[REDACTED]');
    // A key that only contains a secret's name is an ordinary field.
    const d = capture([]);
    d.logger.info({ tokenRefusedAt: 5, secretLength: 48 }, 'fields');
    expect(d.records()[0]).toMatchObject({ tokenRefusedAt: 5, secretLength: 48 });
  });
});

describe('createLogger: configured secrets by value', () => {
  it('inside the message string', () => {
    const c = capture();
    c.logger.info(`logging in with ${TOKEN}`);
    c.logger.warn({ jobId: 'j' }, `calling media service with key ${API_KEY}`);
    c.logger.debug('printf style %s and %o', TOKEN, { k: API_KEY });
    expectClean(c);
    expect(c.records()[0]?.['msg']).toBe('logging in with [REDACTED]');
  });

  it('inside an unrelated field', () => {
    const c = capture();
    c.logger.info({ url: `https://discord.com/api/v10/webhooks/1/${TOKEN}/messages/@original` }, 'edit');
    c.logger.info({ deep: { deeper: { list: ['a', `key=${API_KEY}`] } } }, 'deep');
    expectClean(c);
    expect(c.records()[0]?.['url']).toBe(
      'https://discord.com/api/v10/webhooks/1/[REDACTED]/messages/@original',
    );
  });

  it('inside an error message logged as err', () => {
    const c = capture();
    c.logger.error({ err: new Error(`request failed: Authorization ${API_KEY}`) }, 'media call failed');
    expectClean(c);
    const err = c.records()[0]?.['err'] as { message: string; type: string };
    expect(err.message).toBe('request failed: Authorization [REDACTED]');
    expect(err.type).toBe('Error');
  });

  it('an Error passed directly (its message becomes msg)', () => {
    const c = capture();
    c.logger.error(new Error(`bad token ${TOKEN}`));
    c.logger.error(new Error(`bad key ${API_KEY}`), 'with a message');
    expectClean(c);
  });

  it("inside an error's cause chain and custom properties", () => {
    const c = capture();
    const inner = Object.assign(new Error(`socket to api with ${API_KEY}`), { config: { token: TOKEN } });
    c.logger.error({ err: new Error('outer failure', { cause: inner }) }, 'failed');
    expectClean(c);
  });

  it('inside child logger bindings', () => {
    const c = capture();
    c.logger.child({ token: TOKEN }).info('child 1');
    c.logger.child({ ctx: `key=${API_KEY}` }).info('child 2');
    c.logger
      .child({ a: 1 })
      .child({ url: `/webhooks/${TOKEN}` })
      .info('grandchild');
    expectClean(c);
    expect(c.lines).toHaveLength(3);
  });

  it('JSON-escaped and URL-encoded forms of a secret', () => {
    const odd = 'key"with\\quote/and space';
    const c = capture([odd]);
    c.logger.info({ note: `x ${odd} y` }, 'escaped');
    c.logger.info({ url: `https://x.test/k/${encodeURIComponent(odd)}/file` }, 'encoded');
    expect(c.lines.length).toBe(2);
    const text = c.text();
    expect(text).not.toContain(JSON.stringify(odd).slice(1, -1));
    expect(text).not.toContain(encodeURIComponent(odd));
    expect(c.records()[0]?.['note']).toBe('x [REDACTED] y');
  });

  it('leaves ordinary output alone', () => {
    const c = capture();
    c.logger.info({ jobId: 'abc', percentage: 40 }, 'progress');
    const [rec] = c.records();
    expect(rec).toMatchObject({
      jobId: 'abc',
      percentage: 40,
      msg: 'progress',
      service: 'media-bot',
      level: 'info',
    });
    expect(c.text()).not.toContain('[REDACTED]');
  });

  it('respects the level', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'warn',
      secrets: [TOKEN],
      destination: { write: (s: string) => void lines.push(s) },
    });
    logger.info('hidden');
    logger.warn('shown');
    expect(lines).toHaveLength(1);
  });
});

describe('createLogger: Discord interaction tokens inside URLs', () => {
  it('a DiscordAPIError-like error carrying the interaction webhook URL', () => {
    const c = capture();
    const err = Object.assign(new Error('Unknown Message'), {
      url: `https://discord.com/api/v10/webhooks/123456789012345678/${INTERACTION_TOKEN}/messages/@original`,
      method: 'PATCH',
      status: 404,
    });
    c.logger.warn({ err, jobId: 'j' }, 'final edit failed');
    c.logger.error(
      { url: `https://discord.com/api/v10/interactions/987654321098765432/${INTERACTION_TOKEN}/callback` },
      'x',
    );
    expectClean(c, INTERACTION_TOKEN);
    const logged = c.records()[0]?.['err'] as { url: string; message: string };
    expect(logged.url).toBe(
      'https://discord.com/api/v10/webhooks/123456789012345678/[REDACTED]/messages/@original',
    );
    expect(logged.message).toBe('Unknown Message');
  });

  it('also without any configured secret', () => {
    const c = capture([]);
    c.logger.info({ url: `/webhooks/123456789012345678/${INTERACTION_TOKEN}` }, 'edit');
    expectClean(c, INTERACTION_TOKEN);
  });

  it('the media webhook route (a job id, not a token) is left readable', () => {
    const c = capture();
    c.logger.info({ url: '/webhooks/media/3f2b8c1e-2d4a-4f6b-9c8d-0e1f2a3b4c5d' }, 'webhook');
    expect(c.text()).toContain('/webhooks/media/3f2b8c1e-2d4a-4f6b-9c8d-0e1f2a3b4c5d');
  });
});

describe('createLogger: formats', () => {
  it('pretty: one readable line per record, secrets still scrubbed, no colours off a terminal', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      secrets: [TOKEN],
      format: 'pretty',
      colorize: false,
      destination: { write: (s: string) => void lines.push(s) },
    });
    logger
      .child({ component: 'jobs' })
      .info({ jobId: 'j1', note: `has ${TOKEN}` }, 'job finished: upscale in 3 s');
    const text = lines.join('');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: jobs: job finished: upscale in 3 s/);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('\u001b[');
    expect(() => JSON.parse(text)).toThrow();
  });

  it('resolveLogFormat: auto is pretty on a terminal, JSON otherwise; explicit values win', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });
});

/** A local HTTP server answering every request with `status` and `json`, after reading the whole body. */
async function answering(status: number, json: unknown) {
  const received: number[] = [];
  const server = createServer((req, res) => {
    let size = 0;
    req.on('data', (c: Buffer) => (size += c.length));
    req.on('end', () => {
      received.push(size);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const lineBytes = (c: Capture) => c.lines.map((l) => Buffer.byteLength(l));

describe('createLogger: errors are logged by one serializer, never with a body', () => {
  const FILE_MARK = 'GALLERY-FILE-PAYLOAD-';
  const file = Buffer.from(FILE_MARK.repeat(100_000)); // 2.1 MB
  const PROMPT = 'a private prompt the member typed';

  async function failedUpload(): Promise<{ err: DiscordAPIError; received: number[] }> {
    const discord = await answering(403, { message: 'Missing Permissions', code: 50013 });
    try {
      const rest = new REST({ api: `${discord.origin}/api`, retries: 0 }).setToken(TOKEN);
      let caught: unknown;
      try {
        await rest.post('/channels/123456789012345678/messages', {
          body: { content: PROMPT, nonce: 'n1' },
          files: [{ name: 'result.png', data: file, contentType: 'image/png' }],
        });
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(DiscordAPIError);
      return { err: caught as DiscordAPIError, received: discord.received };
    } finally {
      await discord.close();
    }
  }

  it('a failed multipart upload through @discordjs/rest logs name, code and status only (< 2 KiB, no file byte)', async () => {
    const { err, received } = await failedUpload();
    // The upload really carried the file, and the error really holds it.
    expect(received[0]).toBeGreaterThan(file.length);
    expect(JSON.stringify(err.requestBody.files?.[0]?.data).length).toBeGreaterThan(file.length);

    for (const level of ['info', 'debug']) {
      const c = capture([TOKEN, API_KEY], level);
      c.logger.warn({ err, jobId: 'j1', guildId: '1', gallery: '2' }, 'gallery post failed');
      c.logger.error(err); // the Error itself, its message as msg
      c.logger.error({ error: err }, 'as error');
      c.logger.info({ attempt: { failure: err } }, 'nested');
      expectClean(c);
      expect(c.lines).toHaveLength(4);
      for (const bytes of lineBytes(c)) expect(bytes).toBeLessThan(2048);
      const text = c.text();
      for (const leak of [
        FILE_MARK,
        file.subarray(0, 30).toString('base64'),
        PROMPT,
        'requestBody',
        'rawError',
        '"data"',
      ])
        expect(text, `${level}: ${leak}`).not.toContain(leak);
      const logged = c.records()[0]?.['err'] as Record<string, unknown>;
      expect(logged).toMatchObject({
        type: 'DiscordAPIError',
        name: 'DiscordAPIError[50013]',
        message: 'Missing Permissions',
        code: 50013,
        status: 403,
        method: 'POST',
        url: expect.stringMatching(/\/api\/v10\/channels\/123456789012345678\/messages$/),
      });
      expect(Object.keys(logged).sort()).toEqual(
        [
          'type',
          'name',
          'message',
          'code',
          'status',
          'method',
          'url',
          ...(level === 'debug' ? ['stack'] : []),
        ].sort(),
      );
      expect(c.records()[1]?.['msg']).toBe('Missing Permissions');
      expect(c.records()[2]?.['error']).toEqual(logged);
      expect((c.records()[3]?.['attempt'] as { failure: unknown }).failure).toEqual(logged);
    }
  });

  it('a stack only at debug level, and short', () => {
    const deep = (n: number): Error => (n === 0 ? new Error('deep failure') : deep(n - 1));
    const info = capture([], 'info');
    info.logger.error({ err: deep(30) }, 'x');
    expect(info.records()[0]?.['err']).not.toHaveProperty('stack');
    const debug = capture([], 'debug');
    debug.logger.error({ err: deep(30) }, 'x');
    const stack = (debug.records()[0]?.['err'] as { stack: string }).stack;
    expect(stack.split('\n')).toHaveLength(8);
    expect(stack).toMatch(/^at /);
    expect(stack).not.toContain('deep failure');
  });

  it('an undici error keeps its status and code, not its body or headers', async () => {
    const service = await answering(500, {
      secret_result: 'https://files.example/out.mp4?sig=zzz',
      huge: 'q'.repeat(50_000),
    });
    const dispatcher = new Agent();
    try {
      // undici's error holding the answer's body (parsed) and headers.
      const caught = await request(`${service.origin}/fetch?task=1`, {
        dispatcher,
        throwOnError: true,
      }).catch((e: unknown) => e);
      expect(caught).toHaveProperty('body.secret_result');
      const c = capture();
      c.logger.warn({ err: caught }, 'service call failed');
      expectClean(c);
      expect(c.text()).not.toContain('secret_result');
      expect(c.text()).not.toContain('qqqq');
      expect(c.records()[0]?.['err']).toMatchObject({ code: 'UND_ERR_RESPONSE_STATUS_CODE', status: 500 });
      // What the media client's reads end with when their retries give up: status and headers.
      const retried = await request(`${service.origin}/fetch?task=2`, {
        method: 'POST',
        dispatcher: dispatcher.compose(
          interceptors.retry({ maxRetries: 1, minTimeout: 1, methods: ['POST'], statusCodes: [500] }),
        ),
      }).catch((e: unknown) => e);
      expect(retried).toHaveProperty('headers');
      c.logger.warn({ err: retried }, 'service read failed');
      expect(c.records()[1]?.['err']).toMatchObject({ code: 'UND_ERR_REQ_RETRY', status: 500 });
      expect(c.records()[1]?.['err']).not.toHaveProperty('headers');
    } finally {
      await dispatcher.close();
      await service.close();
    }
  });

  it('causes two levels deep, each with the same fields; AggregateError lists its first errors', () => {
    const root = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), {
      code: 'ECONNREFUSED',
      body: 'root body',
    });
    const mid = new Error('socket failed', { cause: root });
    const top = new Error('request failed', { cause: new Error('fetch failed', { cause: mid }) });
    const c = capture();
    c.logger.error({ err: top }, 'x');
    const e = c.records()[0]?.['err'] as { cause: { cause: { cause?: unknown; message: string } } };
    expect(e.cause.cause.message).toBe('socket failed');
    expect(e.cause.cause).not.toHaveProperty('cause'); // a third level is not followed
    const agg = new AggregateError([root, new Error('second'), new Error('third'), new Error('fourth')], '');
    c.logger.error({ err: Object.assign(agg, { code: 'ECONNREFUSED' }) }, 'y');
    const a = c.records()[1]?.['err'] as { code: string; errors: { message: string }[] };
    expect(a.code).toBe('ECONNREFUSED');
    expect(a.errors.map((x) => x.message)).toEqual(['connect ECONNREFUSED 127.0.0.1:9', 'second', 'third']);
    expect(c.text()).not.toContain('root body');
  });

  it('a long message is cut at 500 characters, a secret inside it still removed', () => {
    const c = capture();
    c.logger.error({ err: new Error(`${'e'.repeat(480)} ${TOKEN} ${'f'.repeat(5000)}`) }, 'x');
    expectClean(c);
    // Not even a piece of the token survives the cut.
    expect(c.text()).not.toContain(TOKEN.slice(0, 12));
    const message = (c.records()[0]?.['err'] as { message: string }).message;
    expect(message.length).toBeLessThan(540);
    expect(message).toMatch(/…\[\d+ chars\]$/);
  });

  it('serializeError on values that are not errors', () => {
    expect(serializeError('plain text')).toBe('plain text');
    expect(serializeError({ status: 502, statusText: 'Bad Gateway', body: 'html page' })).toEqual({
      status: 502,
    });
    expect(serializeError(undefined)).toBeUndefined();
  });
});

describe('createLogger: signed URLs lose their query', () => {
  const SIGNED =
    'https://cdn.discordapp.com/attachments/111/222/cat.png?ex=67a1b2c3&is=67a06143&hm=0123456789abcdef0123456789abcdef&';
  const RESULT =
    'https://media.example/results/a1/out.mp4?X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA#frag';

  it('in fields, messages, error URLs and error messages', () => {
    const c = capture();
    c.logger.info({ url: SIGNED, files: [RESULT] }, 'downloading');
    c.logger.info(`fetched ${SIGNED} and ${RESULT}`);
    c.logger.warn(
      { err: Object.assign(new Error(`GET ${RESULT} failed`), { url: SIGNED, method: 'GET', status: 403 }) },
      'failed',
    );
    const text = c.text();
    for (const leak of ['ex=67a1', 'hm=0123', 'X-Amz-Signature', 'AKIA', 'deadbeef', '#frag', '?'])
      expect(text).not.toContain(leak);
    const [first, second, third] = c.records();
    expect(first?.['url']).toBe('https://cdn.discordapp.com/attachments/111/222/cat.png');
    expect(first?.['files']).toEqual(['https://media.example/results/a1/out.mp4']);
    expect(second?.['msg']).toBe(
      'fetched https://cdn.discordapp.com/attachments/111/222/cat.png and https://media.example/results/a1/out.mp4',
    );
    expect(third?.['err']).toMatchObject({
      url: 'https://cdn.discordapp.com/attachments/111/222/cat.png',
      message: 'GET https://media.example/results/a1/out.mp4 failed',
    });
  });

  it('pretty output too', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      format: 'pretty',
      colorize: false,
      destination: { write: (s: string) => void lines.push(s) },
    });
    logger.info({ url: SIGNED }, 'downloading');
    expect(lines.join('')).toContain('https://cdn.discordapp.com/attachments/111/222/cat.png');
    expect(lines.join('')).not.toContain('hm=');
  });
});

describe('createLogger: no line exceeds a few KiB', () => {
  it('a huge object is capped: bytes as their size, long strings cut, many keys and items bounded', () => {
    const c = capture();
    const circular: Record<string, unknown> = { name: 'loop' };
    circular['self'] = circular;
    c.logger.info(
      {
        body: 'x'.repeat(5_000_000),
        file: Buffer.alloc(6 * 1024 * 1024, 0x41),
        view: new Uint8Array(1000),
        list: Array.from({ length: 100_000 }, (_, i) => i),
        wide: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, 'v'.repeat(900)])),
        deep: { a: { b: { c: { d: { e: { f: { g: { h: 'bottom' } } } } } } } },
        circular,
        when: new Date(0),
        jobId: 'j-huge',
      },
      'huge',
    );
    expect(c.lines).toHaveLength(1);
    expect(lineBytes(c)[0]).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const rec = c.records()[0] ?? {};
    expect(rec['msg']).toBe('huge');
    expect(rec['jobId']).toBe('j-huge');
    expect(rec['file']).toBe('[6291456 bytes]');
    expect(rec['view']).toBe('[1000 bytes]');
    expect(rec['body']).toMatch(/^x{1000}…\[5000000 chars\]$/);
    expect((rec['list'] as unknown[]).slice(-1)).toEqual(['[+99980 more]']);
    expect((rec['wide'] as Record<string, unknown>)['…']).toBe('+4960 more keys');
    expect(rec['when']).toBe('1970-01-01T00:00:00.000Z');
    expect(JSON.stringify(rec['deep'])).toContain('[Object]');
    expect(rec['circular']).toEqual({ name: 'loop', self: '[Circular]' });
    expect(c.text()).not.toContain('AAAA');
  });

  it('a huge message is cut with a marker, the line stays valid JSON', () => {
    const c = capture();
    c.logger.info({ jobId: 'j1' }, `${'m'.repeat(200_000)} ${TOKEN}`);
    c.logger.error(new Error('n'.repeat(300_000))); // the error's message becomes msg
    expectClean(c);
    for (const bytes of lineBytes(c)) expect(bytes).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const [a, b] = c.records();
    expect(a).toMatchObject({ level: 'info', jobId: 'j1', truncated: { bytes: expect.any(Number) } });
    expect(a?.['msg']).toMatch(/^m{1000}…\[\d+ chars\]$/);
    expect(b?.['msg']).toMatch(/^n{1000}…/);
    expect(b?.['err']).toMatchObject({ type: 'Error', message: expect.stringMatching(/^n{500}…/) });
  });

  it('child bindings are bounded too', () => {
    const c = capture();
    c.logger.child({ ctx: 'c'.repeat(100_000), blob: Buffer.alloc(100_000) }).info('from a child');
    expect(lineBytes(c)[0]).toBeLessThanOrEqual(MAX_LINE_BYTES);
    expect(c.records()[0]).toMatchObject({ msg: 'from a child', blob: '[100000 bytes]' });
  });

  it('a secret in a long string is removed before the string is cut', () => {
    const c = capture();
    const secretAtCut = `${'a'.repeat(995)}${API_KEY}${'b'.repeat(2000)}`;
    c.logger.info({ note: secretAtCut }, 'x');
    expect(c.text()).not.toContain(API_KEY.slice(0, 12));
    expect(c.records()[0]?.['note']).toMatch(/^a{995}\[RED/);
  });
});
