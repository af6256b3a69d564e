import type { Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger, resolveLogFormat } from '../src/logger.js';

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

function capture(secrets: string[] = [TOKEN, API_KEY]): Capture {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'trace',
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
    c.logger.info({ url: `https://x.test/?k=${encodeURIComponent(odd)}` }, 'encoded');
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
