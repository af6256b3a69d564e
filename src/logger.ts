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
  const secrets = (opts.secrets ?? []).filter((s) => s.length >= 6);
  const scrub = (s: string): string => secrets.reduce((acc, secret) => acc.split(secret).join('[REDACTED]'), s);
  const options = {
    level: opts.level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    base: { service: 'media-bot' },
    hooks: {
      // Value-level scrub of the message text and string args.
      logMethod(this: Logger, args: Parameters<Logger['info']>, method: (...a: unknown[]) => void) {
        method.apply(
          this,
          (args as unknown[]).map((a) => (typeof a === 'string' && secrets.length > 0 ? scrub(a) : a)),
        );
      },
    },
    formatters: {
      log(obj: Record<string, unknown>) {
        if (secrets.length === 0) return obj;
        const text = JSON.stringify(obj, errorReplacer);
        return secrets.some((s) => text.includes(s)) ? (JSON.parse(scrub(text)) as Record<string, unknown>) : obj;
      },
    },
    serializers: { err: pino.stdSerializers.err },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

function errorReplacer(_key: string, value: unknown): unknown {
  return value instanceof Error ? { ...value, message: value.message, stack: value.stack } : value;
}
