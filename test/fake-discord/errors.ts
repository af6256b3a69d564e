import { isRecord, toJson, type JsonObject } from './json.js';
import type { HandlerContext } from './router.js';
import type { FakeState } from './state.js';
import type { FaultSpec, Violation } from './types.js';

/** What Cloudflare, in front of Discord, answers for a 502. */
export const BAD_GATEWAY_PAGE =
  '<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>';

/** Ready-made Discord error answers for `injectFault`. */
export const DiscordErrors = {
  unknownChannel: { status: 404, body: { message: 'Unknown Channel', code: 10003 } },
  unknownMessage: { status: 404, body: { message: 'Unknown Message', code: 10008 } },
  unknownWebhook: { status: 404, body: { message: 'Unknown Webhook', code: 10015 } },
  unknownInteraction: { status: 404, body: { message: 'Unknown interaction', code: 10062 } },
  missingAccess: { status: 403, body: { message: 'Missing Access', code: 50001 } },
  missingPermissions: { status: 403, body: { message: 'Missing Permissions', code: 50013 } },
  invalidWebhookToken: { status: 401, body: { message: 'Invalid Webhook Token', code: 50027 } },
  cannotSendToUser: { status: 403, body: { message: 'Cannot send messages to this user', code: 50007 } },
  oldMessageEditLimit: {
    status: 400,
    body: {
      message: 'Maximum number of edits to messages older than 1 hour reached. Try again later',
      code: 30046,
    },
  },
  alreadyAcknowledged: {
    status: 400,
    body: { message: 'Interaction has already been acknowledged.', code: 40060 },
  },
  internalServerError: { status: 500, body: { message: '500: Internal Server Error', code: 0 } },
  badGateway: {
    status: 502,
    body: BAD_GATEWAY_PAGE,
  },
  serviceUnavailable: { status: 503, body: { message: 'upstream connect error', code: 0 } },
  /** Discord did the work, then its answer was lost: the handler runs, Cloudflare's 502 comes back. */
  answerLost: {
    status: 502,
    afterHandler: true,
    body: BAD_GATEWAY_PAGE,
  },
  rateLimited: (retryAfterSeconds: number, global = false): FaultSpec => ({
    status: 429,
    body: { message: 'You are being rate limited.', retry_after: retryAfterSeconds, global },
  }),
} as const;

/** A Discord error answer a handler throws; the server turns it into the response. */
export class DiscordHttpError extends Error {
  readonly status: number;
  readonly body: JsonObject;
  constructor(status: number, code: number, message: string, errors?: JsonObject) {
    super(message);
    this.status = status;
    this.body = errors ? { message, code, errors } : { message, code };
  }
}

export const err = {
  unauthorized: () => new DiscordHttpError(401, 0, '401: Unauthorized'),
  notFound: () => new DiscordHttpError(404, 0, '404: Not Found'),
  unknownChannel: () => new DiscordHttpError(404, 10003, 'Unknown Channel'),
  unknownGuild: () => new DiscordHttpError(404, 10004, 'Unknown Guild'),
  unknownMember: () => new DiscordHttpError(404, 10007, 'Unknown Member'),
  unknownMessage: () => new DiscordHttpError(404, 10008, 'Unknown Message'),
  unknownUser: () => new DiscordHttpError(404, 10013, 'Unknown User'),
  unknownWebhook: () => new DiscordHttpError(404, 10015, 'Unknown Webhook'),
  unknownCommand: () => new DiscordHttpError(404, 10063, 'Unknown application command'),
  unknownInteraction: () => new DiscordHttpError(404, 10062, 'Unknown interaction'),
  missingAccess: () => new DiscordHttpError(403, 50001, 'Missing Access'),
  missingPermissions: () => new DiscordHttpError(403, 50013, 'Missing Permissions'),
  cannotEditOthers: () => new DiscordHttpError(403, 50005, 'Cannot edit a message authored by another user'),
  invalidWebhookToken: () => new DiscordHttpError(401, 50027, 'Invalid Webhook Token'),
  emptyMessage: () => new DiscordHttpError(400, 50006, 'Cannot send an empty message'),
  alreadyAcknowledged: () => new DiscordHttpError(400, 40060, 'Interaction has already been acknowledged.'),
  maxFollowUps: () =>
    new DiscordHttpError(400, 40094, 'This interaction has hit the maximum number of follow up messages'),
  oldMessageEdits: () =>
    new DiscordHttpError(
      400,
      30046,
      'Maximum number of edits to messages older than 1 hour reached. Try again later',
    ),
  invalidJson: () => new DiscordHttpError(400, 50109, 'The request body contains invalid JSON.'),
  invalidForm: (errors: JsonObject) => new DiscordHttpError(400, 50035, 'Invalid Form Body', errors),
};

/** Discord's nested `errors` object for one field: `{a: {b: {_errors: [{code, message}]}}}`. */
export const fieldError = (path: string[], code: string, message: string): JsonObject => {
  let node: JsonObject = { _errors: [{ code, message }] };
  for (const seg of [...path].reverse()) node = { [seg]: node };
  return node;
};

/** Records a Discord rule refusal as a semantic violation (tests see it in `violations`). */
export function recordSemanticViolation(s: FakeState, ctx: HandlerContext, error: DiscordHttpError): void {
  const errors = error.body['errors'];
  s.violations.push({
    source: 'semantic',
    method: ctx.method,
    path: ctx.path,
    route: ctx.template,
    operationId: s.spec.operationId(ctx.template, ctx.method),
    errors: [
      { path: '', keyword: 'discord', message: `${error.body['code']}: ${error.message}`, params: {} },
    ],
    discordErrors: isRecord(errors) ? (errors as JsonObject) : {},
    body: toJson(ctx.body),
    at: Date.now(),
  });
}

/** A readable list of violations, for `assertNoViolations`. */
export function violationReport(violations: Violation[]): string {
  const lines = violations.map((v) => {
    const errs = v.errors.map((e) => `      ${e.path || '(body)'}: ${e.message}`).join('\n');
    return `  [${v.source}] ${v.method} ${v.path}${v.operationId ? ` (${v.operationId})` : ''}\n${errs}`;
  });
  return `fake-discord: ${violations.length} request(s) violated the Discord API:\n${lines.join('\n')}`;
}
