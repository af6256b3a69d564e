import { Routes, type APIInteraction, type APIUser } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import { commands, components, registrationPlan } from '../commands/index.js';
import { createInteractionRouter } from '../commands/router.js';
import type { BotContext } from '../commands/types.js';
import type { GatewayLease } from '../services/cluster/gateway-lease.js';
import { Gateway } from '../services/discord/gateway/gateway.js';
import { syncCommandScopes, type SyncResult } from '../services/discord/registration/command-sync.js';
import { trackCallbackRetries } from '../services/discord/interactions/callback-retries.js';
import { gatewayIntake } from '../services/discord/interactions/gateway-intake.js';
import { HttpInteractionEndpoint } from '../services/discord/interactions/http-endpoint.js';
import { BotInteraction, type AckTransport } from '../services/discord/interactions/interaction.js';
import { createInteractionClaim } from '../services/discord/interactions/interaction-claim.js';
import type { AtomicKeyValueStore } from '../services/store/types.js';
import { inPhase } from '../start-errors.js';
import type { DiscordRest } from './discord-rest.js';

/** Gateway: a command not answering by then is acknowledged on its behalf (Discord allows 3 s in all). */
const GATEWAY_ACK_AFTER_MS = 1500;
/** HTTP: the acknowledgement travels in the HTTP response itself, so it can wait a little longer. */
const HTTP_ACK_AFTER_MS = 2500;

/** How interactions arrive: the gateway (fenced by the lease on Redis) or the HTTP endpoint. */
export interface Interactions {
  /** http mode: the endpoint the HTTP server hands `/interactions` to. */
  endpoint: HttpInteractionEndpoint | undefined;
  /** gateway mode. */
  gateway: Gateway | undefined;
  /** The gateway is READY (or another instance holds it), or REST answered (http mode). */
  discordReady(): boolean;
  /** Connects to Discord: checks the token over REST (http), or opens the gateway (through the lease on Redis). */
  connect(url: string): Promise<void>;
  /** Registers the slash commands; undefined when Discord refused (the bot still serves registered ones). */
  syncCommands(): Promise<SyncResult[] | undefined>;
}

export function createInteractions(deps: {
  config: Config;
  context: BotContext;
  rest: DiscordRest;
  kv: AtomicKeyValueStore;
  gatewayLease: GatewayLease | undefined;
  ackDeadlineMs: number | undefined;
  logger: Logger;
  metrics: Metrics;
  now: () => number;
}): Interactions {
  const { config, logger, gatewayLease, metrics } = deps;
  const { botRest, callbackRest, api } = deps.rest;
  // The same router whichever way they arrive.
  const route = createInteractionRouter(commands, components, deps.context);
  const { interactions: interactionMode } = config.discord;
  const ackAfterMs =
    deps.ackDeadlineMs ?? (interactionMode.mode === 'http' ? HTTP_ACK_AFTER_MS : GATEWAY_ACK_AFTER_MS);
  const interactionLog = logger.child({ component: 'interactions' });
  // A 40060 is our own lost answer only when REST had to send that callback again.
  const callbackRetried = trackCallbackRetries(callbackRest);
  const run = (raw: APIInteraction, transport?: AckTransport, receivedAt?: number): void => {
    const name = 'data' in raw && raw.data && 'name' in raw.data ? raw.data.name : '';
    // Owed an answer until Discord takes one or the handler is done: follow-up work waits for it.
    const answered = deps.context.firstAnswers.owe();
    let i: BotInteraction;
    try {
      i = new BotInteraction(raw, {
        api: api.interactions,
        callbackRetried,
        logger: interactionLog,
        ackAfterMs,
        ephemeralByDefault: route.ephemeralCommand(name),
        onFirstAnswer: answered,
        ...(transport ? { transport } : {}),
        ...(receivedAt !== undefined ? { receivedAt } : {}),
      });
    } catch (err) {
      // Never run: owed nothing (else every later wait would take its full bound).
      answered();
      throw err;
    }
    void route(i)
      .catch((err: unknown) => logger.error({ err }, 'interaction router failed'))
      .finally(() => {
        i.dispose();
        answered();
      });
  };

  const claimInteraction = createInteractionClaim(deps.kv, deps.now);
  const endpoint =
    interactionMode.mode === 'http'
      ? new HttpInteractionEndpoint({
          logger: interactionLog,
          // Set-if-absent in the store every instance shares: one run per interaction id.
          claim: claimInteraction,
          run: (raw, exchange, receivedAt) => run(raw, exchange, receivedAt),
        })
      : undefined;

  const gateway =
    interactionMode.mode === 'gateway'
      ? new Gateway({
          token: config.discord.token,
          rest: botRest,
          kv: deps.kv,
          logger: logger.child({ component: 'gateway' }),
          // Fenced by the lease (an instance that lost it never acts on what its dying connection
          // still delivers), then claimed like an HTTP interaction: a replayed dispatch runs once.
          onInteraction: gatewayIntake({
            logger: interactionLog,
            claim: claimInteraction,
            ...(gatewayLease ? { holdsGateway: () => gatewayLease.verify() } : {}),
            run: (raw, receivedAt) => run(raw, undefined, receivedAt),
            answer: async (raw, body) => {
              await callbackRest.post(Routes.interactionCallback(raw.id, raw.token), { body, auth: false });
            },
          }),
        })
      : undefined;
  // http mode: Discord is "ready" once the token has been checked over REST at start.
  let restReady = false;

  return {
    endpoint,
    gateway,
    discordReady: () =>
      endpoint ? restReady : gatewayLease && !gatewayLease.holds() ? true : (gateway?.isReady() ?? false),
    async connect(url) {
      if (endpoint) {
        // No gateway connection: check the token once over REST (a bad one stops the start).
        const me = (await inPhase('discord', () => botRest.get(Routes.user('@me')))) as Partial<APIUser>;
        restReady = true;
        logger.info(
          { user: me.username, interactions: `${url}/interactions` },
          'Discord REST ready; interactions arrive over HTTP (no gateway)',
        );
      } else if (gateway && gatewayLease) {
        let first: Promise<void> | undefined;
        await inPhase('store', () =>
          gatewayLease.start({
            acquired: () => {
              metrics.gatewayLeader.set(1);
              const connecting = gateway.connect();
              first ??= connecting;
              return connecting;
            },
            lost: async () => {
              metrics.gatewayLeader.set(0);
              await gateway.disconnect({ keepSession: false });
            },
          }),
        );
        // The first holder connects as a lone bot does, and a failure stops the start the same way.
        if (first) await inPhase('discord', () => first as Promise<void>);
        else logger.info('another instance holds the gateway; this one serves webhooks and jobs (standby)');
      } else if (gateway) {
        await inPhase('discord', () => gateway.connect());
      }
    },
    async syncCommands() {
      try {
        return await syncCommandScopes({
          rest: botRest,
          applicationId: config.discord.applicationId,
          scopes: registrationPlan({
            userInstall: config.userInstall.enabled,
            guildId: config.discord.guildId,
          }),
          logger,
        });
      } catch (err) {
        // The bot still serves already-registered commands; `npm run register` retries on demand.
        logger.error({ err }, 'could not register slash commands');
        return undefined;
      }
    },
  };
}
