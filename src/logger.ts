import { pino, type Logger, type DestinationStream } from 'pino';
import { createRequire } from 'node:module';
import type { PrettyOptions, prettyFactory as PrettyFactory } from 'pino-pretty';

/** pino-pretty costs ~10 MB of RSS once loaded: only a process that logs pretty loads it. */
const loadPrettyFactory = (): ((options: PrettyOptions) => (line: string) => string) =>
  (createRequire(import.meta.url)('pino-pretty') as { prettyFactory: typeof PrettyFactory }).prettyFactory;

/**
 * pino logs: JSON lines (level names, ISO times) for log collectors, or
 * pino-pretty's coloured one-liners for a person at a terminal. Secrets are
 * removed twice: by key (tokens, keys, webhook secrets wherever they sit in a
 * logged object) and by value (the configured token and API key, in case one
 * ends up inside a message or error text), before either format sees the line.
 *
 * Lines stay small and quiet whatever is logged: errors go through one serializer
 * (`serializeError`: name, message, code, status, method, URL, never a body), every
 * other logged value through a bounded copy (no bytes, long strings cut), URLs lose
 * their query (signed links), and a line still over MAX_LINE_BYTES is rebuilt from its
 * small fields with a `truncated` marker.
 */

export type LogFormat = 'json' | 'pretty';

/** `auto`: pretty when stdout is a terminal, JSON otherwise (files, pipes, containers). */
export function resolveLogFormat(format: LogFormat | 'auto', isTty: boolean): LogFormat {
  return format === 'auto' ? (isTty ? 'pretty' : 'json') : format;
}
/**
 * Keys whose values never reach a line, at any depth of a logged object or of a child's
 * bindings (compared lower-cased): tokens, API keys, webhook secrets and the headers
 * that carry them. Applied in the bounded copy every logged value goes through, not by
 * pino's `redact` paths: with a wildcard path, pino runs every value of every line and
 * binding through @pinojs/redact, which clones it and parses each path again per call
 * (a child per interaction cost more than the rest of its bindings' handling).
 */
const SECRET_KEYS: ReadonlySet<string> = new Set([
  'token',
  'secret',
  'apikey',
  'authorization',
  'webhook_secret',
  'webhooksecret',
  'x-webhook-secret',
]);
const CENSOR = '[REDACTED]';

const isSecretKey = (key: string): boolean => SECRET_KEYS.has(key.toLowerCase());

/**
 * Discord interaction tokens travel in URL paths (`/webhooks/{app}/{token}/…`,
 * `/interactions/{id}/{token}/callback`), e.g. in a DiscordAPIError's `url`.
 */
const INTERACTION_TOKEN_IN_URL = /(\/(?:webhooks|interactions)\/\d{5,25}\/)[A-Za-z0-9._~%-]{20,}/g;

/**
 * The query and fragment of any http(s) URL in a line: Discord CDN links carry their
 * signature there (`ex`, `is`, `hm`), the service's result links may too. In a JSON line
 * a URL ends at a quote or an escape.
 */
const URL_QUERY = /(\bhttps?:\/\/[^\s"'\\?#<>]*)[?#][^\s"'\\<>]*/gi;

/** No line is longer than this (bytes): a longer one is rebuilt from its small fields. */
export const MAX_LINE_BYTES = 8 * 1024;
/** Error messages are cut here (Discord's form errors can list many fields). */
const MAX_ERROR_MESSAGE = 500;
/** What a logged value may amount to, besides errors (see `boundedCopy`). */
const COPY_LIMITS = { depth: 6, keys: 40, items: 20, string: 1000, chars: 4000, nodes: 400 };
/** A fresh budget of characters and objects, shared by every value of one log line. */
const lineBudget = (): { chars: number; nodes: number } => ({
  chars: COPY_LIMITS.chars,
  nodes: COPY_LIMITS.nodes,
});

/** Strings this short are never cut (ids, names, statuses). */
const SHORT_STRING = 64;

type Scrub = (text: string) => string;

/** Cuts `text` to `max` characters, scrubbed first so no secret is cut in half and kept. */
function cut(text: string, max: number, scrub: Scrub): string {
  if (text.length <= max) return text;
  return `${scrub(text).slice(0, max)}…[${text.length} chars]`;
}

function read(obj: object, key: string): unknown {
  try {
    return (obj as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/**
 * The one serializer for errors in the logs (whatever is logged under `err` or `error`,
 * and any Error found inside a logged object): its type and name, message (cut at 500
 * characters), code, HTTP status, method and URL (without query), the same for its
 * `cause` (two levels) and an AggregateError's first errors, and a short stack when
 * `stacks` says so (debug level). Never anything else: `@discordjs/rest`'s DiscordAPIError
 * carries the request body (a failed upload's files) and `rawError`, undici errors carry
 * bodies and headers.
 */
export function serializeError(value: unknown, opts: { scrub?: Scrub; stacks?: boolean } = {}): unknown {
  const scrub = opts.scrub ?? ((t: string) => t);
  const one = (v: unknown, depth: number): unknown => {
    if (v === null || v === undefined) return v;
    if (typeof v !== 'object') return cut(String(v), MAX_ERROR_MESSAGE, scrub);
    const out: Record<string, unknown> = {};
    const ctor =
      v instanceof Error ? (v.constructor as { name?: unknown } | undefined)?.name : read(v, 'type');
    const type = typeof ctor === 'string' ? cut(ctor, 100, scrub) : undefined;
    if (type !== undefined) out['type'] = type;
    const name = read(v, 'name');
    if (typeof name === 'string' && name !== type) out['name'] = cut(name, 100, scrub);
    const message = read(v, 'message');
    if (typeof message === 'string') out['message'] = cut(message, MAX_ERROR_MESSAGE, scrub);
    const code = read(v, 'code');
    if (typeof code === 'number') out['code'] = code;
    else if (typeof code === 'string') out['code'] = cut(code, 100, scrub);
    const status = read(v, 'status') ?? read(v, 'statusCode');
    if (typeof status === 'number') out['status'] = status;
    const method = read(v, 'method');
    if (typeof method === 'string') out['method'] = cut(method, 16, scrub);
    const url = read(v, 'url');
    if (typeof url === 'string' || url instanceof URL)
      out['url'] = cut(withoutQuery(String(url)), 500, scrub);
    const stack = read(v, 'stack');
    if (opts.stacks === true && typeof stack === 'string') out['stack'] = shortStack(stack, scrub);
    if (depth < 2) {
      const cause = read(v, 'cause');
      if (cause !== undefined) out['cause'] = one(cause, depth + 1);
      const errors = read(v, 'errors');
      if (v instanceof AggregateError && Array.isArray(errors)) {
        out['errors'] = errors.slice(0, 3).map((e: unknown) => one(e, depth + 1));
      }
    }
    return out;
  };
  return one(value, 0);
}

/** The first frames of a stack (without the message line, which is logged apart). */
function shortStack(stack: string, scrub: Scrub): string {
  return stack
    .split('\n')
    .filter((l) => /^\s*at /.test(l))
    .slice(0, 8)
    .map((l) => cut(l.trim(), 200, scrub))
    .join('\n');
}

/** A URL without its query and fragment (they may be signed). */
export function withoutQuery(text: string): string {
  return text.replace(URL_QUERY, '$1');
}

/**
 * A copy of a logged value small enough for one line: bytes (Buffer, typed arrays) as
 * their size, errors through `serializeError`, strings cut, and depth, keys per object,
 * items per array, total characters and total objects bounded. Cycles become [Circular].
 */
function boundedCopy(
  value: unknown,
  err: (e: unknown) => unknown,
  scrub: Scrub,
  budget: { chars: number; nodes: number },
): unknown {
  const ancestors = new Set<object>();
  const str = (s: string): string => {
    // Ids, names and short texts stay whole even once the budget is spent.
    const room = Math.max(SHORT_STRING, Math.min(COPY_LIMITS.string, budget.chars));
    budget.chars -= Math.min(s.length, room);
    return cut(s, room, scrub);
  };
  const copy = (v: unknown, depth: number): unknown => {
    if (v === null || typeof v === 'number' || typeof v === 'boolean') return v;
    if (typeof v === 'string') return str(v);
    if (typeof v === 'bigint') return v.toString();
    if (typeof v !== 'object') return undefined; // functions, symbols, undefined: JSON drops them
    if (--budget.nodes < 0) return '[…]';
    if (v instanceof Error) return err(v);
    if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return `[${v.byteLength} bytes]`;
    if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
    if (v instanceof URL) return str(v.href);
    if (v instanceof Map || v instanceof Set) return `[${v.constructor.name}(${v.size})]`;
    if (typeof read(v, 'pipe') === 'function' || typeof read(v, 'getReader') === 'function')
      return '[stream]';
    if (ancestors.has(v)) return '[Circular]';
    if (depth >= COPY_LIMITS.depth) return Array.isArray(v) ? `[Array(${v.length})]` : '[Object]';
    ancestors.add(v);
    try {
      if (Array.isArray(v)) {
        const out = v.slice(0, COPY_LIMITS.items).map((x: unknown) => copy(x, depth + 1));
        if (v.length > COPY_LIMITS.items) out.push(`[+${v.length - COPY_LIMITS.items} more]`);
        return out;
      }
      const toJSON = read(v, 'toJSON');
      if (typeof toJSON === 'function') {
        try {
          return copy((toJSON as () => unknown).call(v), depth + 1);
        } catch {
          return '[unserializable]';
        }
      }
      const keys = Object.keys(v);
      const out: Record<string, unknown> = {};
      for (const key of keys.slice(0, COPY_LIMITS.keys))
        out[key] = isSecretKey(key) ? CENSOR : copy(read(v, key), depth + 1);
      if (keys.length > COPY_LIMITS.keys) out['…'] = `+${keys.length - COPY_LIMITS.keys} more keys`;
      return out;
    } finally {
      ancestors.delete(v);
    }
  };
  return copy(value, 0);
}

const ERROR_KEYS = new Set(['err', 'error']);

/**
 * A logged object (or child bindings) made safe: each value copied within bounds, except
 * `err`/`error`, left to pino's serializers (which are `serializeError`).
 */
function boundedRecord(
  obj: Record<string, unknown>,
  err: (e: unknown) => unknown,
  scrub: Scrub,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // One budget for the whole record: many fields cannot add up to a huge line either.
  const budget = lineBudget();
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    out[key] = ERROR_KEYS.has(key) ? v : isSecretKey(key) ? CENSOR : boundedCopy(v, err, scrub, budget);
  }
  return out;
}

/**
 * A line over MAX_LINE_BYTES (a huge message, or many fields each within bounds), rebuilt
 * from its small fields: level, time, msg (cut), short strings, numbers; the rest is named
 * in `truncated`.
 */
function shrinkLine(line: string, bytes: number): string {
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch {
    rec = undefined;
  }
  if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
    return `${JSON.stringify({ level: 'warn', msg: 'an oversized log line was dropped', truncated: { bytes } })}\n`;
  }
  const out: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [key, v] of Object.entries(rec as Record<string, unknown>)) {
    if (key === 'msg' && typeof v === 'string')
      out[key] = v.length > 1000 ? `${v.slice(0, 1000)}…[${v.length} chars]` : v;
    else if (
      v === null ||
      typeof v === 'number' ||
      typeof v === 'boolean' ||
      (typeof v === 'string' && v.length <= 200)
    )
      out[key] = v;
    else if (ERROR_KEYS.has(key) && JSON.stringify(v).length <= 2500) out[key] = v;
    else dropped.push(key);
  }
  out['truncated'] = { bytes, dropped: dropped.slice(0, 20) };
  const rebuilt = JSON.stringify(out);
  if (Buffer.byteLength(rebuilt) <= MAX_LINE_BYTES) return `${rebuilt}\n`;
  const { level, time, msg } = out;
  return `${JSON.stringify({ level, time, msg: typeof msg === 'string' ? msg.slice(0, 1000) : msg, truncated: { bytes } })}\n`;
}

export function createLogger(opts: {
  level: string;
  secrets?: string[];
  /** Default json. `pretty` renders each (already scrubbed) JSON line with pino-pretty. */
  format?: LogFormat;
  /** Colours in pretty mode (default: when the destination is a terminal). */
  colorize?: boolean;
  destination?: DestinationStream;
  /** INSTANCE_ID: carried by every line (`instance`), so replicas' logs can be told apart. */
  instance?: string;
}): Logger {
  const secrets = secretForms((opts.secrets ?? []).filter((s) => s.length >= 6));
  const scrub = (line: string): string => {
    let out = line;
    if (secrets.some((secret) => out.includes(secret))) {
      out = secrets.reduce((acc, secret) => acc.split(secret).join(CENSOR), out);
    }
    if (out.includes('/webhooks/') || out.includes('/interactions/')) {
      out = out.replace(INTERACTION_TOKEN_IN_URL, `$1${CENSOR}`);
    }
    if (out.includes('://')) out = withoutQuery(out);
    return out;
  };
  // Stacks only while debug is on (read at each error, so a level changed later counts).
  const err = (e: unknown): unknown => serializeError(e, { scrub, stacks: logger.isLevelEnabled('debug') });
  const options = {
    level: opts.level,
    base: { service: 'media-bot', ...(opts.instance !== undefined ? { instance: opts.instance } : {}) },
    serializers: { err, error: err },
    hooks: {
      // What formatters.log does not see, bounded and its secret keys removed the same way:
      // `%j`/`%o` arguments and a second object (`formatters.log` has only the first).
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void): void {
        if (args.length < 2) {
          method.apply(this, args);
          return;
        }
        const budget = lineBudget();
        method.apply(
          this,
          args.map((a, k) =>
            k === 0 || typeof a !== 'object' || a === null ? a : boundedCopy(a, err, scrub, budget),
          ),
        );
      },
    },
    formatters: {
      // "level":"info" and ISO times read better than 30 and epoch ms, for people and collectors alike.
      level: (label: string) => ({ level: label }),
      log: (obj: Record<string, unknown>) => boundedRecord(obj, err, scrub),
    },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const out = opts.destination ?? pino.destination({ dest: 1, sync: true });
  let destination: DestinationStream = out;
  if (opts.format === 'pretty') {
    // pino-pretty's formatter, applied in-process to each finished (scrubbed) line.
    const prettify = loadPrettyFactory()({
      colorize: opts.colorize ?? (opts.destination === undefined && process.stdout.isTTY),
      ignore: 'pid,hostname,service,component,instance',
      messageFormat: '{if component}{component}: {end}{msg}',
      translateTime: 'SYS:HH:MM:ss.l',
      singleLine: true,
    });
    destination = { write: (line: string) => void out.write(prettify(line)) };
  }
  // Value-level scrub on the finished line: it covers what the key paths cannot see
  // (an Error's message promoted to `msg`, `cause` chains, child bindings, stacks, URLs).
  const target: DestinationStream & { flush?: (cb: (err?: Error | null) => void) => void } = destination;
  const scrubbing = {
    write: (line: string): void => {
      // Scrubbed before any cut, so no secret is cut in half and kept.
      const clean = scrub(line);
      const bytes = Buffer.byteLength(clean);
      void target.write(bytes > MAX_LINE_BYTES ? shrinkLine(clean, bytes) : clean);
    },
    flush: (cb: (err?: Error | null) => void): void => (target.flush ? target.flush(cb) : cb()),
  };
  const logger = pino(options, scrubbing);
  // pino applies no formatter to a child's bindings (only serializers): bound them on the
  // way in. Children are made with Object.create(parent), so every descendant inherits this.
  const pinoChild = logger.child;
  logger.child = function (this: Logger, bindings: Record<string, unknown>, childOptions?: object) {
    return pinoChild.call(this, boundedRecord(bindings, err, scrub), childOptions);
  } as Logger['child'];
  const pinoSetBindings = logger.setBindings;
  logger.setBindings = function (this: Logger, bindings: Record<string, unknown>) {
    pinoSetBindings.call(this, boundedRecord(bindings, err, scrub));
  } as Logger['setBindings'];
  return logger;
}

/** Each secret as written raw, JSON-escaped and URL-encoded (how it can end up in a log line). */
function secretForms(secrets: string[]): string[] {
  const forms = new Set<string>();
  for (const s of secrets) {
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
    forms.add(encodeURIComponent(s));
  }
  // Longest first, so a form containing another is replaced whole.
  return [...forms].sort((a, b) => b.length - a.length);
}
