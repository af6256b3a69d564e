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
 */

export type LogFormat = 'json' | 'pretty';

/** `auto`: pretty when stdout is a terminal, JSON otherwise (files, pipes, containers). */
export function resolveLogFormat(format: LogFormat | 'auto', isTty: boolean): LogFormat {
  return format === 'auto' ? (isTty ? 'pretty' : 'json') : format;
}
const REDACT_PATHS = [
  'token',
  'secret',
  'apiKey',
  'authorization',
  'webhook_secret',
  'webhookSecret',
  '*.token',
  '*.secret',
  '*.apiKey',
  '*.authorization',
  '*.webhook_secret',
  '*.headers.authorization',
  '*.headers["x-webhook-secret"]',
  'headers.authorization',
  'headers["x-webhook-secret"]',
  'req.headers.authorization',
  'req.headers["x-webhook-secret"]',
  'job.secret',
  'job.message.interaction.token',
  'ref.interaction.token',
  'interaction.token',
];

/**
 * Discord interaction tokens travel in URL paths (`/webhooks/{app}/{token}/…`,
 * `/interactions/{id}/{token}/callback`), e.g. in a DiscordAPIError's `url`.
 */
const INTERACTION_TOKEN_IN_URL = /(\/(?:webhooks|interactions)\/\d{5,25}\/)[A-Za-z0-9._~%-]{20,}/g;

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
      out = secrets.reduce((acc, secret) => acc.split(secret).join('[REDACTED]'), out);
    }
    if (out.includes('/webhooks/') || out.includes('/interactions/')) {
      out = out.replace(INTERACTION_TOKEN_IN_URL, '$1[REDACTED]');
    }
    return out;
  };
  const options = {
    level: opts.level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    base: { service: 'media-bot', ...(opts.instance !== undefined ? { instance: opts.instance } : {}) },
    serializers: { err: pino.stdSerializers.err },
    // "level":"info" and ISO times read better than 30 and epoch ms, for people and collectors alike.
    formatters: { level: (label: string) => ({ level: label }) },
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
    write: (line: string): void => void target.write(scrub(line)),
    flush: (cb: (err?: Error | null) => void): void => (target.flush ? target.flush(cb) : cb()),
  };
  return pino(options, scrubbing);
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
