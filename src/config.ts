import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { z } from 'zod';

/**
 * The only module that reads the environment. Parsed once at start (t3-env
 * style: an empty string counts as unset); everything else receives `Config`.
 */

const emptyAsUnset = (v: unknown): unknown => (typeof v === 'string' && v.trim() === '' ? undefined : v);

const required = (hint: string) =>
  z.preprocess(
    emptyAsUnset,
    z.string({ error: (iss) => (iss.input === undefined ? `required (${hint})` : 'must be a string') }),
  );

const withDefault = <T extends z.ZodType>(schema: T, fallback: z.input<T>) =>
  z.preprocess((v) => emptyAsUnset(v) ?? fallback, schema);

const optional = <T extends z.ZodType>(schema: T) => z.preprocess(emptyAsUnset, schema.optional());

const httpUrl = (what: string) =>
  z
    .string()
    .refine((v) => {
      try {
        const u = new URL(v);
        return u.protocol === 'http:' || u.protocol === 'https:';
      } catch {
        return false;
      }
    }, `must be an http(s) URL (${what})`)
    .transform((v) => v.replace(/\/+$/, ''));

const snowflake = (what: string) =>
  z.string().regex(/^\d{1,20}$/, `must be a Discord snowflake, digits only (${what})`);

const path = z
  .string()
  .regex(/^\/[\w\-./]*$/, 'must be a path starting with / (e.g. /fetch)')
  .transform((v) => v.replace(/\/+$/, '') || '/');

const int = (min: number, max: number, what: string) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number (${what})`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(min, `must be at least ${min} (${what})`)
        .max(max, `must be at most ${max} (${what})`),
    );

/**
 * TRUST_PROXY → Fastify `trustProxy`: `false` (default: the TCP peer is the
 * source), `true` (trust every X-Forwarded-For hop: only when the port is
 * reachable through the proxy alone), a hop count, or a comma list of proxy
 * addresses / CIDRs (`loopback`, `linklocal`, `uniquelocal` allowed).
 */
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const trustProxy = z.string().transform((v, ctx): boolean | number | string[] => {
  const t = v.trim().toLowerCase();
  if (t === 'false') return false;
  if (t === 'true') return true;
  if (/^\d+$/.test(t)) return Number(t);
  const list = t.split(',').map((x) => x.trim());
  const bad = list.filter((x) => {
    if (PROXY_NAMES.has(x)) return false;
    const [addr, bits, ...rest] = x.split('/');
    if (rest.length > 0 || !addr) return true;
    const family = isIP(addr);
    if (family === 0) return true;
    return bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
  });
  if (bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be true, false, a hop count or a comma list of proxy IPs/CIDRs (not ${bad.join(', ')})`,
    });
    return z.NEVER;
  }
  return list;
});

/**
 * OUTBOUND_ALLOW → what downloads may reach beyond public addresses (self-hosted services):
 * a comma list of origins (`http(s)://host[:port]`, matched exactly, before DNS) and of IP
 * addresses / CIDRs (a resolved address inside one counts as public).
 */
const outboundAllow = z.string().transform((v, ctx): { origins: string[]; cidrs: string[] } => {
  const origins: string[] = [];
  const cidrs: string[] = [];
  const bad: string[] = [];
  for (const item of v
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '')) {
    if (item.includes('://')) {
      let u: URL | undefined;
      try {
        u = new URL(item);
      } catch {
        u = undefined;
      }
      const bare = u && u.pathname === '/' && !u.search && !u.hash && !u.username && !u.password;
      if (u && bare && (u.protocol === 'http:' || u.protocol === 'https:')) origins.push(u.origin);
      else bad.push(item);
      continue;
    }
    const [addr, bits, ...rest] = item.split('/');
    const family = addr ? isIP(addr) : 0;
    const max = family === 4 ? 32 : 128;
    if (
      family === 0 ||
      rest.length > 0 ||
      (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max))
    ) {
      bad.push(item);
      continue;
    }
    cidrs.push(`${addr}/${bits ?? max}`);
  }
  if (bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a comma list of origins (http(s)://host[:port]) and IPs/CIDRs (not ${bad.join(', ')})`,
    });
    return z.NEVER;
  }
  return { origins, cidrs };
});

const bool = (what: string) =>
  z
    .string()
    .transform((v) => v.trim().toLowerCase())
    .pipe(
      z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], {
        error: `must be true or false (${what})`,
      }),
    )
    .transform((v) => ['true', '1', 'yes', 'on'].includes(v));

/**
 * What the configuration reads of each media operation: its module declares it
 * (src/services/operations/), and whoever parses the environment passes the
 * modules in, so this module imports none of them.
 */
export interface OperationSettings {
  readonly operation: string;
  /** Its slash command: its name in CREDIT_COSTS. */
  readonly command: string;
  /** What it costs unless CREDIT_COSTS says otherwise. */
  readonly cost: number;
  /** Its service endpoint: the MEDIA_PATH_* variable that sets it, and its default. */
  readonly path: { readonly variable: string; readonly default: string };
}

/**
 * `upscale=1,extend-song=2,…`: each a whole number 0-1000000; a command left out costs its
 * built-in price (so a new command after an upgrade never stops the bot from starting).
 */
const creditCosts = (operations: readonly OperationSettings[]) =>
  z.string().transform((v, ctx): Record<string, number> => {
    const out: Record<string, number> = Object.fromEntries(operations.map((o) => [o.command, o.cost]));
    const problems: string[] = [];
    for (const part of v
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '')) {
      const m = /^([\w-]+)\s*=\s*(\d{1,7})$/.exec(part);
      const name = m?.[1];
      if (!m || name === undefined || !Object.hasOwn(out, name)) {
        problems.push(`"${part}"`);
        continue;
      }
      const cost = Number(m[2]);
      if (cost > 1_000_000) problems.push(`"${part}" (at most 1000000)`);
      else out[name] = cost;
    }
    if (problems.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `must be command=cost pairs for ${operations.map((o) => o.command).join(', ')}; not understood: ${problems.join(', ')}`,
      });
      return z.NEVER;
    }
    return out;
  });

/** ALLOWED_GUILD_IDS: a comma list of server ids (snowflakes), at least one. */
const guildIdList = z.string().transform((v, ctx): string[] => {
  const ids = v
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
  const bad = ids.filter((id) => !/^\d{1,20}$/.test(id));
  if (ids.length === 0 || bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a comma list of server ids, digits only${bad.length > 0 ? ` (not ${bad.join(', ')})` : ''}`,
    });
    return z.NEVER;
  }
  return [...new Set(ids)];
});

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

const schema = z.object({
  DISCORD_TOKEN: required('your bot token from the Developer Portal').pipe(
    z.string().regex(/^\S+$/, 'must be a bot token without spaces'),
  ),
  DISCORD_APPLICATION_ID: required('the application id from the Developer Portal').pipe(
    snowflake('the application id'),
  ),
  DISCORD_GUILD_ID: optional(snowflake('a guild id to register commands to')),
  DISCORD_API_URL: withDefault(httpUrl('Discord REST base'), 'https://discord.com/api'),
  DISCORD_INTERACTIONS: withDefault(
    z.enum(['gateway', 'http'], {
      error: 'must be gateway or http (http: Discord posts interactions to POST /interactions)',
    }),
    'gateway',
  ),
  DISCORD_PUBLIC_KEY: optional(
    z
      .string()
      .transform((v) => v.trim().toLowerCase())
      .pipe(
        z
          .string()
          .regex(
            /^[0-9a-f]{64}$/,
            'must be 64 hex characters (Developer Portal → General Information → Public Key)',
          ),
      ),
  ),
  MEDIA_API_URL: withDefault(httpUrl('media service base_url'), 'https://api.apiframe.pro'),
  MEDIA_API_KEY: required('the media service API key').pipe(
    z.string().regex(/^\S+$/, 'must not contain spaces'),
  ),
  MEDIA_FETCH_PATH: withDefault(path, '/fetch'),
  MEDIA_FETCH_MANY_PATH: withDefault(path, '/fetch-many'),
  MEDIA_PHOTO_FORMAT: withDefault(z.enum(['base64', 'url'], { error: 'must be base64 or url' }), 'base64'),
  MEDIA_TIMEOUT_MS: withDefault(int(1000, 600_000, 'milliseconds per service request'), '30000'),
  MEDIA_UPSCALE_TIMEOUT_MS: withDefault(
    int(1000, 900_000, 'milliseconds for the synchronous upscale'),
    '180000',
  ),
  MEDIA_SUBMIT_CONCURRENCY: withDefault(
    int(1, 256, 'submissions in flight at start; halves on 429/503, grows back up to twice this'),
    '8',
  ),
  MEDIA_READS_PER_SECOND: withDefault(int(1, 10_000, 'fetch requests per second to the service'), '10'),
  MEDIA_LOW_CREDITS: withDefault(int(0, 1_000_000_000, 'warn below this many account credits'), '100'),
  SHOW_ACCOUNT_BALANCE: withDefault(bool('show the account credits in /settings show'), 'false'),
  PUBLIC_URL: optional(httpUrl('public base URL of this server, for webhooks')),
  HOST: withDefault(z.string(), '0.0.0.0'),
  PORT: withDefault(int(0, 65535, 'a TCP port'), '3000'),
  TRUST_PROXY: withDefault(trustProxy, 'false'),
  REDIS_URL: optional(
    z.string().regex(/^rediss?:\/\/.+/, 'must be a redis:// or rediss:// URL (unset: embedded SQLite)'),
  ),
  DATA_DIR: withDefault(z.string(), './data'),
  LOG_LEVEL: withDefault(z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }), 'info'),
  LOG_FORMAT: withDefault(
    z.enum(LOG_FORMATS, { error: `must be one of ${LOG_FORMATS.join(', ')} (auto: pretty on a terminal)` }),
    'auto',
  ),
  METRICS_PORT: optional(int(1, 65535, 'a separate TCP port for /metrics')),
  METRICS_TOKEN: optional(
    z.string().regex(/^[\x21-\x7e]{16,}$/, 'must be at least 16 printable characters, no spaces'),
  ),
  REDIS_START_TIMEOUT_SECONDS: withDefault(int(0, 600, 'seconds to wait for Redis at start'), '30'),
  JOB_MAX_DURATION_MINUTES: withDefault(
    int(1, 7 * 24 * 60, 'minutes before an unfinished job times out'),
    '120',
  ),
  POLL_INITIAL_MS: withDefault(int(100, 600_000, 'first poll delay'), '5000'),
  POLL_MAX_MS: withDefault(int(100, 3_600_000, 'longest poll interval'), '60000'),
  WEBHOOK_SILENCE_MS: withDefault(int(100, 3_600_000, 'silence before a webhook job is polled'), '60000'),
  QUEUE_LOCK_SECONDS: withDefault(
    int(2, 600, "how long a queued job stays its worker's without a sign of life (Redis)"),
    '5',
  ),
  OUTBOUND_ALLOW: withDefault(outboundAllow, ''),
  PHOTO_MAX_BYTES: withDefault(
    int(1024, 100 * 1024 * 1024, 'largest accepted image in bytes'),
    String(10 * 1024 * 1024),
  ),
  TRAINING_SESSION_TTL_HOURS: withDefault(int(1, 24 * 7, 'hours a photo session is kept'), '24'),
  RETENTION_DAYS: withDefault(int(1, 3650, 'days job records are kept after the job ended'), '30'),
  CONSENT_RETENTION_DAYS: withDefault(
    int(1, 3650, 'days a training-photo consent record is kept as proof'),
    '365',
  ),
  DEFAULT_THREADS: withDefault(bool('a thread per job by default'), 'false'),
  DEFAULT_MAX_ACTIVE_JOBS: withDefault(int(1, 50, 'unfinished jobs per member per server'), '3'),
  DEFAULT_COOLDOWN_SECONDS: withDefault(int(0, 3600, 'seconds between two submissions of a member'), '0'),
  DEFAULT_DAILY_CREDITS: withDefault(int(0, 1_000_000, 'credits per server per UTC day, 0 = no budget'), '0'),
  USER_INSTALL: withDefault(bool('also register the job commands for user installs'), 'false'),
  USER_MAX_ACTIVE_JOBS: withDefault(int(1, 50, 'unfinished personal jobs per member'), '3'),
  USER_DAILY_CREDITS: withDefault(
    int(0, 1_000_000, 'credits per member per UTC day for personal jobs, 0 = no budget'),
    '20',
  ),
  ALLOWED_GUILD_IDS: optional(guildIdList),
  OPERATOR_DAILY_CREDITS: withDefault(
    int(0, 1_000_000_000, 'credits all servers and members may spend per UTC day, 0 = no ceiling'),
    '0',
  ),
  INSTANCE_ID: optional(
    z.string().regex(/^[\x21-\x7e]{1,100}$/, 'must be 1 to 100 printable characters, no spaces'),
  ),
});

type Env = z.output<typeof schema>;

/** The variables each operation declares: MEDIA_PATH_* (in their order), then CREDIT_COSTS. */
function operationsSchema(operations: readonly OperationSettings[]) {
  return {
    paths: z.object(
      Object.fromEntries(operations.map((o) => [o.path.variable, withDefault(path, o.path.default)])),
    ),
    costs: z.object({ CREDIT_COSTS: withDefault(creditCosts(operations), '') }),
  };
}

/** Two operations naming one command or one variable (or a cost out of range): a mistake in the code, not in the environment. */
function declarationProblem(operations: readonly OperationSettings[]): string | undefined {
  const taken = new Set<string>([...Object.keys(schema.shape), 'CREDIT_COSTS']);
  for (const o of operations) {
    for (const name of [`operation ${o.operation}`, `command ${o.command}`, o.path.variable]) {
      if (taken.has(name)) return `${name} is declared twice`;
      taken.add(name);
    }
    if (!Number.isInteger(o.cost) || o.cost < 0 || o.cost > 1_000_000)
      return `operation ${o.operation}: cost ${o.cost} is not a whole number 0-1000000`;
  }
  return undefined;
}

export interface Config {
  discord: {
    token: string;
    applicationId: string;
    guildId?: string;
    apiUrl: string;
    /**
     * `gateway`: one gateway connection receives interactions. `http`: no gateway; Discord
     * posts them to `POST /interactions`, verified with `publicKey` (Ed25519, hex).
     */
    interactions: { mode: 'gateway' } | { mode: 'http'; publicKey: string };
  };
  media: {
    baseUrl: string;
    apiKey: string;
    paths: {
      fetch: string;
      fetchMany: string;
      /** Each operation's endpoint (its MEDIA_PATH_* variable), by operation. */
      submit: Readonly<Record<string, string>>;
    };
    photoFormat: 'base64' | 'url';
    timeoutMs: number;
    upscaleTimeoutMs: number;
    /** Submissions in flight at start (the limit adapts between 1 and twice this). */
    submitConcurrency: number;
    /** Pace of background reads (fetch, fetch-many) to the service. */
    readsPerSecond: number;
    /** Warn when the account's credits fall below this (`GET {base}/account`). */
    lowCredits: number;
    /** Show the account's credits to Manage Server members in `/settings show`. */
    showAccountBalance: boolean;
  };
  publicUrl?: string;
  http: { host: string; port: number; trustProxy: boolean | number | string[] };
  /** `/metrics`: on the main port unless `port` is set; `token` set: `Authorization: Bearer <token>` required. */
  metrics: { port?: number; token?: string };
  store: { redisUrl?: string; dataDir: string; jobTtlMs: number; redisStartTimeoutMs: number };
  jobs: {
    maxDurationMs: number;
    pollInitialMs: number;
    pollMaxMs: number;
    webhookSilenceMs: number;
    /** BullMQ lock: longer than any event-loop stall (a stall past it runs a job twice). */
    queueLockMs: number;
  };
  photos: { maxBytes: number; sessionTtlMs: number };
  /** How long what the bot keeps about members is kept (RETENTION_DAYS, CONSENT_RETENTION_DAYS). */
  privacy: { retentionDays: number; consentRetentionDays: number };
  /**
   * What outbound downloads (result files, photos) may reach beyond public addresses:
   * the origins of MEDIA_API_URL and DISCORD_API_URL (the bot's own configuration), plus
   * OUTBOUND_ALLOW's origins and CIDRs. Compile with `compileAllowList`.
   */
  outbound: { allow: { origins: string[]; cidrs: string[] } };
  /** Per-guild settings' defaults (a server's own values, set with /settings, win) and credit costs. */
  community: {
    defaults: { threads: boolean; maxActiveJobs: number; cooldownSeconds: number; dailyCredits: number };
    /** What each operation's command costs (CREDIT_COSTS), by command. */
    costs: Readonly<Record<string, number>>;
  };
  /**
   * User installs (USER_INSTALL): `enabled` registers the user-installable commands globally
   * for installs to a member's account; a personal job (no server settings apply) counts
   * against the member's own limits, across every place they use it.
   */
  userInstall: { enabled: boolean; maxActiveJobs: number; dailyCredits: number };
  /** The operator's bounds above every server's settings (design: "Operator limits"). */
  operator: {
    /** ALLOWED_GUILD_IDS: job commands run only in these servers (undefined: every server). */
    allowedGuildIds?: readonly string[];
    /** OPERATOR_DAILY_CREDITS: what everyone together may spend per UTC day (0: no ceiling). */
    dailyCredits: number;
  };
  logLevel: (typeof LOG_LEVELS)[number];
  logFormat: (typeof LOG_FORMATS)[number];
  /** Names this instance in logs, metrics and Redis leases (default hostname:pid). */
  instanceId: string;
}

/** Thrown with one human line per problem; main prints them and exits 1. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.join('\n')}`);
    this.name = 'ConfigError';
  }
}

const opt = <K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };

type DiscordEnv = Pick<
  Env,
  'DISCORD_TOKEN' | 'DISCORD_APPLICATION_ID' | 'DISCORD_GUILD_ID' | 'DISCORD_API_URL'
> &
  Partial<Pick<Env, 'DISCORD_INTERACTIONS' | 'DISCORD_PUBLIC_KEY'>>;

function discordOf(e: DiscordEnv): Config['discord'] {
  return {
    token: e.DISCORD_TOKEN,
    applicationId: e.DISCORD_APPLICATION_ID,
    ...opt('guildId', e.DISCORD_GUILD_ID),
    apiUrl: e.DISCORD_API_URL,
    interactions:
      e.DISCORD_INTERACTIONS === 'http' && e.DISCORD_PUBLIC_KEY !== undefined
        ? { mode: 'http', publicKey: e.DISCORD_PUBLIC_KEY }
        : { mode: 'gateway' },
  };
}

/** What the operations' variables set: their endpoints (by operation) and costs (by command). */
interface OperationValues {
  submit: Record<string, string>;
  costs: Record<string, number>;
}

function toConfig(e: Env, ops: OperationValues): Config {
  return {
    discord: discordOf(e),
    media: {
      baseUrl: e.MEDIA_API_URL,
      apiKey: e.MEDIA_API_KEY,
      paths: {
        fetch: e.MEDIA_FETCH_PATH,
        fetchMany: e.MEDIA_FETCH_MANY_PATH,
        submit: ops.submit,
      },
      photoFormat: e.MEDIA_PHOTO_FORMAT,
      timeoutMs: e.MEDIA_TIMEOUT_MS,
      upscaleTimeoutMs: e.MEDIA_UPSCALE_TIMEOUT_MS,
      submitConcurrency: e.MEDIA_SUBMIT_CONCURRENCY,
      readsPerSecond: e.MEDIA_READS_PER_SECOND,
      lowCredits: e.MEDIA_LOW_CREDITS,
      showAccountBalance: e.SHOW_ACCOUNT_BALANCE,
    },
    ...opt('publicUrl', e.PUBLIC_URL),
    http: { host: e.HOST, port: e.PORT, trustProxy: e.TRUST_PROXY },
    metrics: { ...opt('port', e.METRICS_PORT), ...opt('token', e.METRICS_TOKEN) },
    store: {
      ...opt('redisUrl', e.REDIS_URL),
      dataDir: e.DATA_DIR,
      // The record's own expiry is a backstop a day after the retention sweep deletes it.
      jobTtlMs: (e.RETENTION_DAYS + 1) * 86_400_000,
      redisStartTimeoutMs: e.REDIS_START_TIMEOUT_SECONDS * 1000,
    },
    jobs: {
      maxDurationMs: e.JOB_MAX_DURATION_MINUTES * 60_000,
      pollInitialMs: e.POLL_INITIAL_MS,
      pollMaxMs: e.POLL_MAX_MS,
      webhookSilenceMs: e.WEBHOOK_SILENCE_MS,
      queueLockMs: e.QUEUE_LOCK_SECONDS * 1000,
    },
    photos: { maxBytes: e.PHOTO_MAX_BYTES, sessionTtlMs: e.TRAINING_SESSION_TTL_HOURS * 3_600_000 },
    privacy: { retentionDays: e.RETENTION_DAYS, consentRetentionDays: e.CONSENT_RETENTION_DAYS },
    outbound: {
      allow: {
        origins: [
          ...new Set([
            new URL(e.MEDIA_API_URL).origin,
            new URL(e.DISCORD_API_URL).origin,
            ...e.OUTBOUND_ALLOW.origins,
          ]),
        ],
        cidrs: e.OUTBOUND_ALLOW.cidrs,
      },
    },
    community: {
      defaults: {
        threads: e.DEFAULT_THREADS,
        maxActiveJobs: e.DEFAULT_MAX_ACTIVE_JOBS,
        cooldownSeconds: e.DEFAULT_COOLDOWN_SECONDS,
        dailyCredits: e.DEFAULT_DAILY_CREDITS,
      },
      costs: ops.costs,
    },
    userInstall: {
      enabled: e.USER_INSTALL,
      maxActiveJobs: e.USER_MAX_ACTIVE_JOBS,
      dailyCredits: e.USER_DAILY_CREDITS,
    },
    operator: { ...opt('allowedGuildIds', e.ALLOWED_GUILD_IDS), dailyCredits: e.OPERATOR_DAILY_CREDITS },
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    instanceId: e.INSTANCE_ID ?? `${hostname()}:${process.pid}`,
  };
}

function problemsOf(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.join('.') || '(environment)'}: ${i.message}`);
}

/**
 * Parses an environment (default: process.env); throws ConfigError listing every problem. `operations` declare
 * the MEDIA_PATH_* variables and the commands CREDIT_COSTS may name (the registry's
 * modules: src/services/operations/).
 */
export function parseConfig(
  operations: readonly OperationSettings[],
  env: Record<string, string | undefined> = process.env,
): Config {
  const declared = declarationProblem(operations);
  if (declared !== undefined) throw new Error(`Operations declared wrongly: ${declared}`);
  const parsed = schema.safeParse(env);
  const variables = operationsSchema(operations);
  const paths = variables.paths.safeParse(env);
  const costs = variables.costs.safeParse(env);
  // Listed with the others, so one start shows every problem.
  const publicKeyMissing =
    emptyAsUnset(env['DISCORD_INTERACTIONS']) === 'http' &&
    emptyAsUnset(env['DISCORD_PUBLIC_KEY']) === undefined
      ? [
          'DISCORD_PUBLIC_KEY: required with DISCORD_INTERACTIONS=http (Developer Portal → General Information → Public Key)',
        ]
      : [];
  const problems = [
    ...(parsed.success ? [] : problemsOf(parsed.error)),
    ...(paths.success ? [] : problemsOf(paths.error)),
    ...(costs.success ? [] : problemsOf(costs.error)),
    ...publicKeyMissing,
  ];
  if (!parsed.success || !paths.success || !costs.success || problems.length > 0)
    throw new ConfigError(problems);
  // The service would fetch url-mode photos itself: only the bot's cleaned copies (served under
  // PUBLIC_URL) may be given, never the Discord originals with their metadata.
  if (parsed.data.MEDIA_PHOTO_FORMAT === 'url' && parsed.data.PUBLIC_URL === undefined) {
    throw new ConfigError([
      'MEDIA_PHOTO_FORMAT: url needs PUBLIC_URL (the service fetches the cleaned photos from {PUBLIC_URL}/photos/…); set PUBLIC_URL or use base64',
    ]);
  }
  if (parsed.data.METRICS_PORT !== undefined && parsed.data.METRICS_PORT === parsed.data.PORT) {
    throw new ConfigError(['METRICS_PORT: must differ from PORT (unset it to serve /metrics on PORT)']);
  }
  return toConfig(parsed.data, {
    submit: Object.fromEntries(
      operations.map((o) => [o.operation, paths.data[o.path.variable] ?? o.path.default]),
    ),
    costs: costs.data.CREDIT_COSTS,
  });
}

/**
 * What `npm run register` and `npm run invite` need: the Discord variables only
 * (they never talk to the media service, so MEDIA_API_KEY is not asked for).
 */
export interface DiscordConfig {
  discord: Config['discord'];
  /** USER_INSTALL: where the commands are registered (see `registrationPlan`). */
  userInstall: boolean;
  logLevel: Config['logLevel'];
  logFormat: Config['logFormat'];
}

const discordSchema = schema.pick({
  DISCORD_TOKEN: true,
  DISCORD_APPLICATION_ID: true,
  DISCORD_GUILD_ID: true,
  DISCORD_API_URL: true,
  LOG_LEVEL: true,
  LOG_FORMAT: true,
  USER_INSTALL: true,
});

export function parseDiscordConfig(env: Record<string, string | undefined> = process.env): DiscordConfig {
  const parsed = discordSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(problemsOf(parsed.error));
  const e = parsed.data;
  return {
    discord: discordOf(e),
    userInstall: e.USER_INSTALL,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
  };
}

/** `npm run invite`: the application id (and a guild to preselect), nothing secret. */
const inviteSchema = schema.pick({
  DISCORD_APPLICATION_ID: true,
  DISCORD_GUILD_ID: true,
  USER_INSTALL: true,
});

export function parseInviteConfig(env: Record<string, string | undefined> = process.env): {
  applicationId: string;
  guildId?: string;
  userInstall: boolean;
} {
  const parsed = inviteSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(problemsOf(parsed.error));
  return {
    applicationId: parsed.data.DISCORD_APPLICATION_ID,
    userInstall: parsed.data.USER_INSTALL,
    ...opt('guildId', parsed.data.DISCORD_GUILD_ID),
  };
}

/** Loads `./.env` into process.env when present (real env wins), like `node --env-file-if-exists`. */
export function loadDotEnv(file = '.env'): void {
  if (!existsSync(file)) return;
  const before = { ...process.env };
  process.loadEnvFile(file);
  Object.assign(process.env, before);
}

/** Values that must never be printed; the logger redacts them wherever they appear. */
export function secretsOf(config: Config): string[] {
  return [
    config.discord.token,
    config.media.apiKey,
    ...(config.metrics.token ? [config.metrics.token] : []),
    ...redisPassword(config.store.redisUrl),
  ];
}

/** The password in REDIS_URL (compose's Redis has one), as written and decoded. */
function redisPassword(url: string | undefined): string[] {
  if (url === undefined) return [];
  try {
    const raw = new URL(url).password;
    return raw ? [...new Set([raw, decodeURIComponent(raw)])] : [];
  } catch {
    return [];
  }
}
