import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig as parseWith, secretsOf, type Config } from '../src/config.js';
import { operationModules } from '../src/services/operations/index.js';
import { botCommand, productionEnv } from './helpers/production-node-flags.js';
import { runNode, type NodeRun } from './helpers/run-node.js';

const REQUIRED = {
  DISCORD_TOKEN: 'bot-token-abc.def',
  DISCORD_APPLICATION_ID: '123456789012345678',
  MEDIA_API_KEY: 'media-key-xyz',
} as const;

/** The environment read as the bot reads it: with the registry's operations. */
const parseConfig = (env: Record<string, string | undefined>): Config => parseWith(operationModules, env);

/** The problems parseConfig reports for `env` (fails the test when it parses). */
function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    if (err instanceof ConfigError) return err.problems;
  }
  throw new Error('expected parseConfig to throw ConfigError');
}

function lineFor(problems: string[], variable: string): string {
  const lines = problems.filter((p) => p.startsWith(`${variable}:`));
  expect(lines, `${variable} in ${JSON.stringify(problems)}`).toHaveLength(1);
  return lines[0] ?? '';
}

describe('parseConfig', () => {
  it('empty env: one line each for the three required variables, and nothing else', () => {
    const problems = problemsOf({});
    expect(problems).toHaveLength(3);
    expect(lineFor(problems, 'DISCORD_TOKEN')).toMatch(/required.*token/i);
    expect(lineFor(problems, 'DISCORD_APPLICATION_ID')).toMatch(/required.*application id/i);
    expect(lineFor(problems, 'MEDIA_API_KEY')).toMatch(/required.*API key/i);
    for (const p of problems) expect(p).not.toContain('\n');
  });

  it('the ConfigError message lists every problem on its own line', () => {
    let message = '';
    try {
      parseConfig({});
    } catch (err) {
      message = err instanceof Error ? err.message : '';
    }
    const lines = message.split('\n');
    expect(
      lines.filter((l) => /^(DISCORD_TOKEN|DISCORD_APPLICATION_ID|MEDIA_API_KEY):/.test(l)),
    ).toHaveLength(3);
  });

  it('required variables set to empty or blank strings count as missing', () => {
    const problems = problemsOf({ DISCORD_TOKEN: '', DISCORD_APPLICATION_ID: '   ', MEDIA_API_KEY: '' });
    expect(problems).toHaveLength(3);
    expect(lineFor(problems, 'DISCORD_APPLICATION_ID')).toMatch(/required/);
  });

  it.each<[string, string, RegExp]>([
    ['PORT', '70000', /at most 65535/],
    ['PORT', 'abc', /whole number/],
    ['PORT', '-1', /whole number/],
    ['MEDIA_API_URL', 'ftp://media.example.test', /http\(s\) URL/],
    ['MEDIA_API_URL', 'not a url', /http\(s\) URL/],
    ['DISCORD_API_URL', 'localhost:3000', /http\(s\) URL/],
    ['PUBLIC_URL', 'not a url', /http\(s\) URL/],
    ['MEDIA_PHOTO_FORMAT', 'zip', /base64 or url/],
    ['LOG_LEVEL', 'loud', /one of .*info/],
    ['REDIS_URL', 'http://x', /redis:\/\//],
    ['DISCORD_GUILD_ID', 'abc', /snowflake/],
    ['DISCORD_APPLICATION_ID', 'my-app', /snowflake/],
    ['MEDIA_FETCH_PATH', 'fetch', /path starting with \//],
    ['MEDIA_TIMEOUT_MS', '5', /at least 1000/],
    ['MEDIA_FETCH_MANY_PATH', 'fetch-many', /path starting with \//],
    ['MEDIA_FETCH_MANY_PATH', '/fetch many', /path starting with \//],
    ['MEDIA_LOW_CREDITS', '-5', /whole number/],
    ['MEDIA_LOW_CREDITS', 'lots', /whole number/],
    ['SHOW_ACCOUNT_BALANCE', 'maybe', /true or false/],
    ['MEDIA_SUBMIT_CONCURRENCY', '0', /at least 1/],
    ['MEDIA_SUBMIT_CONCURRENCY', '257', /at most 256/],
    ['MEDIA_READS_PER_SECOND', '0', /at least 1/],
  ])('%s=%s → its own line', (variable, value, expected) => {
    const problems = problemsOf({ ...REQUIRED, [variable]: value });
    expect(problems).toHaveLength(1);
    expect(lineFor(problems, variable)).toMatch(expected);
  });

  it('every invalid value is reported at once, one line each', () => {
    const problems = problemsOf({
      ...REQUIRED,
      PORT: '70000',
      MEDIA_API_URL: 'ftp://x',
      PUBLIC_URL: 'nope',
      MEDIA_PHOTO_FORMAT: 'zip',
      LOG_LEVEL: 'loud',
      REDIS_URL: 'http://x',
      DISCORD_GUILD_ID: 'abc',
    });
    const vars = problems.map((p) => p.split(':')[0]).sort();
    expect(vars).toEqual(
      [
        'DISCORD_GUILD_ID',
        'LOG_LEVEL',
        'MEDIA_API_URL',
        'MEDIA_PHOTO_FORMAT',
        'PORT',
        'PUBLIC_URL',
        'REDIS_URL',
      ].sort(),
    );
  });

  it('design defaults are applied exactly', () => {
    const c = parseConfig({ ...REQUIRED });
    const expected: Config = {
      discord: {
        token: REQUIRED.DISCORD_TOKEN,
        applicationId: REQUIRED.DISCORD_APPLICATION_ID,
        interactions: { mode: 'gateway' },
        apiUrl: 'https://discord.com/api',
      },
      media: {
        baseUrl: 'https://api.apiframe.pro',
        apiKey: REQUIRED.MEDIA_API_KEY,
        paths: {
          fetch: '/fetch',
          fetchMany: '/fetch-many',
          submit: {
            upscale: '/image-upscale',
            song: '/song-extend',
            video: '/video-extend',
            upload: '/ai-photo-upload',
          },
        },
        photoFormat: 'base64',
        timeoutMs: c.media.timeoutMs,
        upscaleTimeoutMs: c.media.upscaleTimeoutMs,
        submitConcurrency: 8,
        readsPerSecond: 10,
        lowCredits: 100,
        showAccountBalance: false,
      },
      http: { host: '0.0.0.0', port: 3000, trustProxy: false },
      metrics: {},
      store: { dataDir: './data', jobTtlMs: c.store.jobTtlMs, redisStartTimeoutMs: 30_000 },
      jobs: c.jobs,
      photos: c.photos,
      privacy: { retentionDays: 30, consentRetentionDays: 365 },
      outbound: { allow: { origins: ['https://api.apiframe.pro', 'https://discord.com'], cidrs: [] } },
      community: {
        defaults: { threads: false, maxActiveJobs: 3, cooldownSeconds: 0, dailyCredits: 0 },
        costs: { upscale: 1, 'extend-song': 2, 'extend-video': 6, 'training-photos': 2 },
      },
      userInstall: { enabled: false, maxActiveJobs: 3, dailyCredits: 20 },
      operator: { dailyCredits: 0 },
      logLevel: 'info',
      logFormat: 'auto',
      instanceId: `${hostname()}:${process.pid}`,
    };
    expect(c).toEqual(expected);
    // Unset optional variables leave no key behind (exactOptionalPropertyTypes).
    expect('guildId' in c.discord).toBe(false);
    expect('publicUrl' in c).toBe(false);
    expect('redisUrl' in c.store).toBe(false);
    expect('allowedGuildIds' in c.operator).toBe(false);
  });

  it('CREDIT_COSTS: a command left out costs its built-in price; a pair not understood is one line', () => {
    expect(parseConfig({ ...REQUIRED, CREDIT_COSTS: 'extend-video=10' }).community.costs).toEqual({
      upscale: 1,
      'extend-song': 2,
      'extend-video': 10,
      'training-photos': 2,
    });
    expect(() => parseConfig({ ...REQUIRED, CREDIT_COSTS: 'remix=3' })).toThrow(
      /CREDIT_COSTS: .*not understood: "remix=3"/,
    );
  });

  it('each operation module’s MEDIA_PATH_* variable and default cost are documented where operators look', async () => {
    const example = await readFile(resolve('.env.example'), 'utf8');
    const docs = await readFile(resolve('docs/configuration.md'), 'utf8');
    const costs = operationModules.map((m) => `${m.command}=${m.cost}`).join(',');
    expect(example).toContain(`CREDIT_COSTS=${costs}\n`);
    expect(docs).toContain(`| \`${costs}\` |`);
    for (const m of operationModules) {
      expect(example).toContain(`${m.path.variable}=${m.path.default}\n`);
      expect(docs).toMatch(
        new RegExp(`\\| \`${m.path.variable}\` +\\| \`${m.path.default}\` +\\| \`/${m.command}`),
      );
    }
  });

  it('ALLOWED_GUILD_IDS and OPERATOR_DAILY_CREDITS: server ids and a daily ceiling, one line per bad value', () => {
    expect(
      parseConfig({
        ...REQUIRED,
        ALLOWED_GUILD_IDS: ' 111111111111111111, 222222222222222222,',
        OPERATOR_DAILY_CREDITS: '500',
      }).operator,
    ).toEqual({ allowedGuildIds: ['111111111111111111', '222222222222222222'], dailyCredits: 500 });
    const problems = problemsOf({
      ...REQUIRED,
      ALLOWED_GUILD_IDS: '111,my-server',
      OPERATOR_DAILY_CREDITS: '-5',
    });
    expect(lineFor(problems, 'ALLOWED_GUILD_IDS')).toBe(
      'ALLOWED_GUILD_IDS: must be a comma list of server ids, digits only (not my-server)',
    );
    expect(lineFor(problems, 'OPERATOR_DAILY_CREDITS')).toMatch(
      /^OPERATOR_DAILY_CREDITS: must be a whole number/,
    );
    expect(lineFor(problemsOf({ ...REQUIRED, ALLOWED_GUILD_IDS: ',' }), 'ALLOWED_GUILD_IDS')).toMatch(
      /comma list of server ids/,
    );
  });

  it('RETENTION_DAYS and CONSENT_RETENTION_DAYS: whole days, defaults 30 and 365', () => {
    expect(parseConfig({ ...REQUIRED, RETENTION_DAYS: '7', CONSENT_RETENTION_DAYS: '730' }).privacy).toEqual({
      retentionDays: 7,
      consentRetentionDays: 730,
    });
    expect(parseConfig({ ...REQUIRED, RETENTION_DAYS: '', CONSENT_RETENTION_DAYS: '' }).privacy).toEqual({
      retentionDays: 30,
      consentRetentionDays: 365,
    });
    const problems = problemsOf({ ...REQUIRED, RETENTION_DAYS: '0', CONSENT_RETENTION_DAYS: 'a year' });
    expect(lineFor(problems, 'RETENTION_DAYS')).toMatch(/at least 1/);
    expect(lineFor(problems, 'CONSENT_RETENTION_DAYS')).toMatch(/whole number/);
  });

  it('USER_INSTALL and the members’ own limits: off, 3 and 20 by default; bad values one line each', () => {
    expect(
      parseConfig({ ...REQUIRED, USER_INSTALL: 'true', USER_MAX_ACTIVE_JOBS: '5', USER_DAILY_CREDITS: '0' })
        .userInstall,
    ).toEqual({ enabled: true, maxActiveJobs: 5, dailyCredits: 0 });
    const problems = problemsOf({
      ...REQUIRED,
      USER_INSTALL: 'maybe',
      USER_MAX_ACTIVE_JOBS: '0',
      USER_DAILY_CREDITS: '-1',
    });
    expect(lineFor(problems, 'USER_INSTALL')).toMatch(/true|false/);
    expect(lineFor(problems, 'USER_MAX_ACTIVE_JOBS')).toMatch(/at least 1/);
    expect(lineFor(problems, 'USER_DAILY_CREDITS')).toMatch(/USER_DAILY_CREDITS/);
  });

  it('MEDIA_PHOTO_FORMAT=url without PUBLIC_URL is one clear line (the service would fetch the originals)', () => {
    const problems = problemsOf({ ...REQUIRED, MEDIA_PHOTO_FORMAT: 'url' });
    expect(problems).toHaveLength(1);
    expect(lineFor(problems, 'MEDIA_PHOTO_FORMAT')).toMatch(/url needs PUBLIC_URL/);
    expect(
      parseConfig({ ...REQUIRED, MEDIA_PHOTO_FORMAT: 'url', PUBLIC_URL: 'https://bot.example.test' }).media
        .photoFormat,
    ).toBe('url');
  });

  it('INSTANCE_ID names the instance; default hostname:pid; spaces or over 100 characters refused', () => {
    expect(parseConfig({ ...REQUIRED, INSTANCE_ID: 'bot-2' }).instanceId).toBe('bot-2');
    expect(parseConfig({ ...REQUIRED, INSTANCE_ID: '' }).instanceId).toBe(`${hostname()}:${process.pid}`);
    for (const bad of ['two words', 'x'.repeat(101)]) {
      let problems: string[] = [];
      try {
        parseConfig({ ...REQUIRED, INSTANCE_ID: bad });
      } catch (err) {
        problems = (err as ConfigError).problems;
      }
      expect(problems).toEqual(['INSTANCE_ID: must be 1 to 100 printable characters, no spaces']);
    }
  });

  it('empty strings mean unset: defaults apply', () => {
    const blank = {
      DISCORD_GUILD_ID: '',
      DISCORD_API_URL: '',
      MEDIA_API_URL: '  ',
      MEDIA_FETCH_PATH: '',
      MEDIA_FETCH_MANY_PATH: '',
      MEDIA_LOW_CREDITS: '',
      SHOW_ACCOUNT_BALANCE: ' ',
      MEDIA_SUBMIT_CONCURRENCY: '',
      MEDIA_READS_PER_SECOND: '',
      MEDIA_PATH_UPSCALE: '',
      MEDIA_PATH_SONG_EXTEND: '',
      MEDIA_PATH_VIDEO_EXTEND: '',
      MEDIA_PATH_PHOTO_UPLOAD: '',
      MEDIA_PHOTO_FORMAT: '',
      PUBLIC_URL: '',
      HOST: '',
      PORT: '',
      REDIS_URL: '',
      DATA_DIR: '',
      LOG_LEVEL: '',
      OUTBOUND_ALLOW: ' ',
    };
    expect(parseConfig({ ...REQUIRED, ...blank })).toEqual(parseConfig({ ...REQUIRED }));
  });

  it('set values are used, typed, and URLs lose their trailing slash', () => {
    const c = parseConfig({
      ...REQUIRED,
      DISCORD_GUILD_ID: '987654321098765432',
      DISCORD_API_URL: 'http://127.0.0.1:4000/api/',
      MEDIA_API_URL: 'http://127.0.0.1:5000/v1//',
      MEDIA_FETCH_PATH: '/v2/fetch/',
      MEDIA_FETCH_MANY_PATH: '/v2/tasks/batch/',
      MEDIA_LOW_CREDITS: '0',
      SHOW_ACCOUNT_BALANCE: 'yes',
      MEDIA_SUBMIT_CONCURRENCY: '3',
      MEDIA_READS_PER_SECOND: '50',
      MEDIA_PATH_UPSCALE: '/up',
      MEDIA_PHOTO_FORMAT: 'url',
      PUBLIC_URL: 'https://bot.example.test/',
      HOST: '127.0.0.1',
      PORT: '8080',
      REDIS_URL: 'redis://127.0.0.1:6379',
      DATA_DIR: '/var/lib/bot',
      LOG_LEVEL: 'debug',
    });
    expect(c.discord.guildId).toBe('987654321098765432');
    expect(c.discord.apiUrl).toBe('http://127.0.0.1:4000/api');
    expect(c.media.baseUrl).toBe('http://127.0.0.1:5000/v1');
    expect(c.media.paths.fetch).toBe('/v2/fetch');
    expect(c.media.paths.fetchMany).toBe('/v2/tasks/batch');
    expect(c.media.lowCredits).toBe(0);
    expect(c.media.showAccountBalance).toBe(true);
    expect(c.media.submitConcurrency).toBe(3);
    expect(c.media.readsPerSecond).toBe(50);
    expect(c.media.paths.submit).toEqual({ ...parseConfig(REQUIRED).media.paths.submit, upscale: '/up' });
    expect(c.media.photoFormat).toBe('url');
    expect(c.publicUrl).toBe('https://bot.example.test');
    expect(c.http).toEqual({ host: '127.0.0.1', port: 8080, trustProxy: false });
    expect(c.store.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.store.dataDir).toBe('/var/lib/bot');
    expect(c.logLevel).toBe('debug');
  });

  it('TRUST_PROXY: booleans, hop counts, address/CIDR lists; anything else is one clear line', () => {
    const tp = (v: string) => parseConfig({ ...REQUIRED, TRUST_PROXY: v }).http.trustProxy;
    expect(tp('false')).toBe(false);
    expect(tp('TRUE')).toBe(true);
    expect(tp('2')).toBe(2);
    expect(tp('10.0.0.0/8, 127.0.0.1,::1,fd00::/8,loopback')).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
      '::1',
      'fd00::/8',
      'loopback',
    ]);
    for (const bad of ['yes', '10.0.0.0/33', 'proxy.example', '1.2.3.4/8/9']) {
      const err = (() => {
        try {
          parseConfig({ ...REQUIRED, TRUST_PROXY: bad });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toHaveLength(1);
      expect((err as ConfigError).problems[0]).toMatch(/^TRUST_PROXY: must be true, false, a hop count/);
    }
  });

  it('OUTBOUND_ALLOW: origins and IPs/CIDRs, added to the origins of MEDIA_API_URL and DISCORD_API_URL', () => {
    const allow = (env: Record<string, string>) => parseConfig({ ...REQUIRED, ...env }).outbound.allow;
    expect(
      allow({
        MEDIA_API_URL: 'http://localhost:4000/v1',
        DISCORD_API_URL: 'http://127.0.0.1:5000/api',
        OUTBOUND_ALLOW:
          ' http://Media.Internal:8080/ , https://files.lan, 10.0.0.0/8,192.168.1.5,fd00::/8 ,::1',
      }),
    ).toEqual({
      origins: [
        'http://localhost:4000',
        'http://127.0.0.1:5000',
        'http://media.internal:8080',
        'https://files.lan',
      ],
      cidrs: ['10.0.0.0/8', '192.168.1.5/32', 'fd00::/8', '::1/128'],
    });
    // The configured origins appear once, and a default port is folded into the origin.
    expect(allow({ MEDIA_API_URL: 'https://media.test', OUTBOUND_ALLOW: 'https://media.test:443' })).toEqual({
      origins: ['https://media.test', 'https://discord.com'],
      cidrs: [],
    });
    for (const bad of [
      'media.internal:8080',
      'ftp://files.lan',
      'http://files.lan/path',
      'http://user:pw@files.lan',
      'http://files.lan/?q=1',
      '10.0.0.0/33',
      '0x7f.1',
      '2130706433',
      'fd00::/129',
      '1.2.3.4/8/9',
    ]) {
      let problems: string[] = [];
      try {
        parseConfig({ ...REQUIRED, OUTBOUND_ALLOW: `https://ok.test, ${bad}` });
      } catch (err) {
        problems = (err as ConfigError).problems;
      }
      expect(problems, bad).toEqual([
        `OUTBOUND_ALLOW: must be a comma list of origins (http(s)://host[:port]) and IPs/CIDRs (not ${bad})`,
      ]);
    }
  });

  it('DISCORD_INTERACTIONS: gateway by default; http takes DISCORD_PUBLIC_KEY (hex, any case)', () => {
    const key = 'AB'.repeat(32);
    expect(parseConfig({ ...REQUIRED }).discord.interactions).toEqual({ mode: 'gateway' });
    expect(
      parseConfig({ ...REQUIRED, DISCORD_INTERACTIONS: 'gateway', DISCORD_PUBLIC_KEY: key }).discord
        .interactions,
    ).toEqual({
      mode: 'gateway',
    });
    expect(
      parseConfig({ ...REQUIRED, DISCORD_INTERACTIONS: 'http', DISCORD_PUBLIC_KEY: ` ${key} ` }).discord
        .interactions,
    ).toEqual({ mode: 'http', publicKey: 'ab'.repeat(32) });
  });

  it('DISCORD_INTERACTIONS=http without DISCORD_PUBLIC_KEY (or with an empty one) is one line naming the key', () => {
    for (const DISCORD_PUBLIC_KEY of [undefined, '', '  ']) {
      const problems = problemsOf({ ...REQUIRED, DISCORD_INTERACTIONS: 'http', DISCORD_PUBLIC_KEY });
      expect(problems).toHaveLength(1);
      expect(lineFor(problems, 'DISCORD_PUBLIC_KEY')).toMatch(
        /required with DISCORD_INTERACTIONS=http.*Public Key/,
      );
    }
  });

  it('the missing public key is listed together with the other problems', () => {
    const problems = problemsOf({ DISCORD_INTERACTIONS: 'http', PORT: 'x' });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(
      ['DISCORD_APPLICATION_ID', 'DISCORD_PUBLIC_KEY', 'DISCORD_TOKEN', 'MEDIA_API_KEY', 'PORT'].sort(),
    );
  });

  it.each<[string, string, RegExp]>([
    ['DISCORD_INTERACTIONS', 'webhook', /must be gateway or http/],
    ['DISCORD_INTERACTIONS', 'HTTP ', /must be gateway or http/],
    ['DISCORD_PUBLIC_KEY', 'abc', /64 hex characters/],
    ['DISCORD_PUBLIC_KEY', 'z'.repeat(64), /64 hex characters/],
    ['DISCORD_PUBLIC_KEY', 'ab'.repeat(33), /64 hex characters/],
  ])('%s=%s → its own line', (variable, value, expected) => {
    const problems = problemsOf({
      ...REQUIRED,
      DISCORD_INTERACTIONS: 'http',
      DISCORD_PUBLIC_KEY: 'ab'.repeat(32),
      [variable]: value,
    });
    expect(problems).toHaveLength(1);
    expect(lineFor(problems, variable)).toMatch(expected);
  });

  it('unrelated variables are ignored', () => {
    expect(() =>
      parseConfig({ ...REQUIRED, PATH: '/usr/bin', npm_config_x: 'y', SHELL: '/bin/sh' }),
    ).not.toThrow();
  });

  it('secretsOf lists the token and the API key', () => {
    expect(secretsOf(parseConfig({ ...REQUIRED })).sort()).toEqual(
      [REQUIRED.DISCORD_TOKEN, REQUIRED.MEDIA_API_KEY].sort(),
    );
  });

  it('secretsOf lists the password in REDIS_URL (as written and decoded)', () => {
    const config = parseConfig({ ...REQUIRED, REDIS_URL: 'redis://:s3cret%2Fpass@redis:6379' });
    expect(secretsOf(config)).toEqual(expect.arrayContaining(['s3cret%2Fpass', 's3cret/pass']));
    expect(secretsOf(parseConfig({ ...REQUIRED, REDIS_URL: 'redis://redis:6379' }))).toHaveLength(2);
  });
});

// ---------------------------------------------------------------------------
// The real entry point, as an operator would run it
// ---------------------------------------------------------------------------

/** What `npm start` runs (the bundled src/main.ts and its flags), set before the runs below. */
let command: string[] = [];

interface RunResult extends NodeRun {
  ms: number;
}

async function runMain(cwd: string, env: Record<string, string>): Promise<RunResult> {
  const started = Date.now();
  const r = await runNode(command, { cwd, env: { ...productionEnv(), ...env }, timeoutMs: 60_000 });
  return { ...r, ms: Date.now() - started };
}

describe('src/main.ts with a bad environment', { timeout: 90_000 }, () => {
  // A temp cwd: no .env can leak in, and nothing is written to the repository.
  let cwd: string;
  const baseEnv = (): Record<string, string> => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
  });

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'mediabot-config-'));
    command = await botCommand();
  });
  afterAll(async () => {
    await rm(cwd, { recursive: true, force: true });
  });

  it('empty environment: exit 1, one line per missing variable, no stack trace, fast', async () => {
    const r = await runMain(cwd, baseEnv());
    expect(r.code).toBe(1);
    const lines = r.stderr.split('\n').map((l) => l.trim());
    for (const v of ['DISCORD_TOKEN', 'DISCORD_APPLICATION_ID', 'MEDIA_API_KEY']) {
      expect(
        lines.filter((l) => l.startsWith(`${v}:`)),
        r.stderr,
      ).toHaveLength(1);
    }
    expect(r.stderr).not.toMatch(/^\s+at /m);
    expect(r.stderr).not.toMatch(/Error:/);
    expect(r.stdout).toBe('');
    // Fast: nothing is waited for (a wait would reach the 60 s kill: code null). The bound is
    // loose: loading the bot is slow when the suite loads both cores.
    expect(r.ms).toBeLessThan(30_000);
  });

  it('reads ./.env, the real environment wins, and still no stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mediabot-dotenv-'));
    try {
      await writeFile(
        join(dir, '.env'),
        [
          'DISCORD_TOKEN=tok-from-dotenv',
          'DISCORD_APPLICATION_ID=123',
          'MEDIA_API_KEY=key-from-dotenv',
          'PORT=abc',
          'LOG_LEVEL=loud',
        ].join('\n'),
      );
      const r = await runMain(dir, { ...baseEnv(), PORT: '70000' });
      expect(r.code).toBe(1);
      const problems = r.stderr
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => /^[A-Z_]+:/.test(l));
      expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(['LOG_LEVEL', 'PORT']);
      expect(problems.find((p) => p.startsWith('PORT:'))).toMatch(/at most 65535/);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      // Secrets read from .env are never echoed.
      expect(r.stderr + r.stdout).not.toContain('tok-from-dotenv');
      expect(r.stderr + r.stdout).not.toContain('key-from-dotenv');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
