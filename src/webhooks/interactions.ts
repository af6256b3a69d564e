import type { FastifyPluginAsync } from 'fastify';
import type { APIInteraction } from 'discord-api-types/v10';
import { z } from 'zod';
import {
  ed25519PublicKey,
  verifyInteractionSignature,
  DEFAULT_MAX_SKEW_MS,
} from '../services/discord/interactions/signature.js';
import type { HttpReply } from '../services/discord/interactions/http-endpoint.js';
import type { Metrics } from '../metrics.js';
import { problem } from './media-webhook.js';

export interface InteractionsDeps {
  /** DISCORD_PUBLIC_KEY (hex). */
  publicKey: string;
  /** Runs a verified interaction; resolves with the HTTP answer for Discord. */
  handle(interaction: APIInteraction): Promise<HttpReply>;
  metrics?: Metrics;
  /** Wall clock for the timestamp check (Unix ms). */
  nowMs?: () => number;
  maxSkewMs?: number;
}

/** Interactions are small JSON (attachments arrive as URLs); anything bigger is not Discord. */
export const INTERACTION_BODY_LIMIT = 256 * 1024;

const snowflake = z.string().regex(/^\d{1,20}$/);
const userRef = z.looseObject({ id: snowflake });

/**
 * The parts the bot relies on before it wraps the interaction (BotInteraction): ids, the
 * token, the invoking user (`user` in DMs, `member.user` in guilds) and `data`.
 */
const interactionSchema = z.union([
  z.looseObject({ type: z.literal(1), id: snowflake, application_id: snowflake }),
  z
    .looseObject({
      type: z.union([z.literal(2), z.literal(3), z.literal(4), z.literal(5)]),
      id: snowflake,
      application_id: snowflake,
      token: z.string().min(1).max(1000),
      data: z.looseObject({}),
      user: userRef.optional(),
      member: z.looseObject({ user: userRef }).optional(),
    })
    .refine((i) => i.user !== undefined || i.member !== undefined, 'no user or member'),
]);

/**
 * `POST /interactions` (DISCORD_INTERACTIONS=http). The Ed25519 signature is
 * checked over the raw bytes before anything else (no JSON parsing, no store
 * access): missing, malformed, stale (±5 min) or wrong → 401, as Discord's own
 * endpoint check expects. Then: not JSON or not an interaction → 400; PING →
 * PONG; anything else runs the bot's command code (see HttpInteractions).
 */
export const interactionRoutes: FastifyPluginAsync<InteractionsDeps> = async (app, deps) => {
  const key = ed25519PublicKey(deps.publicKey);
  const nowMs = deps.nowMs ?? Date.now;
  const count = (outcome: string) => deps.metrics?.httpInteractions.inc({ outcome });

  // Scoped to this plugin: the body stays raw bytes, whatever its content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: INTERACTION_BODY_LIMIT },
    (_req, body, done) => done(null, body),
  );

  app.post('/interactions', async (req, reply) => {
    const rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const header = (name: string): string | undefined => {
      const v = req.headers[name];
      return typeof v === 'string' ? v : undefined;
    };
    const check = verifyInteractionSignature(
      key,
      {
        signature: header('x-signature-ed25519'),
        timestamp: header('x-signature-timestamp'),
        rawBody,
      },
      nowMs(),
      deps.maxSkewMs ?? DEFAULT_MAX_SKEW_MS,
    );
    if (!check.ok) {
      count(`signature_${check.reason}`);
      return reply
        .code(401)
        .send(problem('INVALID_SIGNATURE', `invalid request signature (${check.reason})`));
    }
    let json: unknown;
    try {
      json = JSON.parse(rawBody.toString('utf8'));
    } catch {
      count('malformed');
      return reply.code(400).send(problem('MALFORMED_BODY', 'body is not JSON'));
    }
    const parsed = interactionSchema.safeParse(json);
    if (!parsed.success) {
      count('malformed');
      return reply.code(400).send(problem('MALFORMED_BODY', 'body is not a Discord interaction'));
    }
    const answer = await deps.handle(json as APIInteraction);
    if (answer.status === 202) {
      count(answer.duplicate ? 'duplicate' : 'answered_by_callback');
      return reply.code(202).send();
    }
    const { sent } = answer;
    // `sent` marks the deadline's acknowledgement on the command's behalf.
    count(parsed.data.type === 1 ? 'ping' : sent ? 'auto_acknowledged' : 'answered_inline');
    if (sent) reply.raw.once('finish', sent).once('close', sent);
    return reply.code(200).send(answer.body);
  });
};
