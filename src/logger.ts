import { pino, type Logger, type DestinationStream } from 'pino';

/**
 * pino JSON logs. Secrets are removed twice: by key (tokens, keys, webhook
 * secrets wherever they sit in a logged object) and by value (the configured
 * token and API key, in case one ends up inside a message or error text).
 */
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

export function createLogger(opts: { level: string; secrets?: string[]; destination?: DestinationStream }): Logger {
  const secrets = secretForms((opts.secrets ?? []).filter((s) => s.length >= 6));
  const scrub = (s: string): string =>
    secrets.some((secret) => s.includes(secret))
      ? secrets.reduce((acc, secret) => acc.split(secret).join('[REDACTED]'), s)
      : s;
  const options = {
    level: opts.level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    base: { service: 'media-bot' },
    serializers: { err: pino.stdSerializers.err },
  };
  const destination = opts.destination ?? pino.destination({ dest: 1, sync: true });
  if (secrets.length === 0) return pino(options, destination);
  // Value-level scrub on the finished line: it covers what the object hooks cannot see
  // (an Error's message promoted to `msg`, `cause` chains, child bindings, stacks).
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
