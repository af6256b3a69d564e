import { API } from '@discordjs/core/http-only';
import { REST } from '@discordjs/rest';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import {
  createInteractionRest,
  createRestTransport,
  type DiscordTransport,
} from '../services/discord/discord-transport.js';

/** The four Discord REST clients, each counted in the metrics, and the edits' transport over them. */
export interface DiscordRest {
  /** The bot token's (commands, threads, gallery, moderation). */
  botRest: REST;
  /** Interaction webhooks (no global limiter). */
  interactionRest: REST;
  /** Interaction callbacks. */
  callbackRest: REST;
  /** Channel edits. */
  editRest: REST;
  /** Interaction callbacks through @discordjs/core. */
  api: API;
  transport: DiscordTransport;
}

export function createDiscordRest(config: Config, logger: Logger, metrics: Metrics): DiscordRest {
  const countResponses = (rest: REST) =>
    rest.on('response', (req, res) =>
      metrics.discordRequests.inc({ route: req.route, status: String(res.status) }),
    );
  const botRest = new REST({ api: config.discord.apiUrl }).setToken(config.discord.token);
  botRest.on('rateLimited', (info) =>
    logger.warn(
      { route: info.route, retryAfter: info.retryAfter, global: info.global, scope: info.scope },
      'Discord rate limit',
    ),
  );
  const interactionRest = createInteractionRest({ api: config.discord.apiUrl });
  // Interaction callbacks keep REST's own retries (a lost answer is recognised as 40060 and taken).
  const callbackRest = new REST({
    api: config.discord.apiUrl,
    globalRequestsPerSecond: Number.POSITIVE_INFINITY,
  });
  // Channel edits reject on 429 instead of sleeping inside REST: the queue waits and sends the latest state.
  const editRest = new REST({
    api: config.discord.apiUrl,
    rejectOnRateLimit: () => true,
    offset: 0,
  }).setToken(config.discord.token);
  for (const rest of [botRest, interactionRest, callbackRest, editRest]) countResponses(rest);
  const api = new API(callbackRest);
  const transport = createRestTransport({ botRest: editRest, interactionRest });
  return { botRest, interactionRest, callbackRest, editRest, api, transport };
}
