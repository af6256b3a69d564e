import { err } from '../errors.js';
import { GatewayIntent, type GatewayHooks } from '../gateway.js';
import { bodyObject, type Router } from '../router.js';
import type { FakeState } from '../state.js';
import { applicationJson, channelJson, guildCreatePayload } from '../wire.js';

/** Gateway and identity family: what the fake gateway says on READY, and `/gateway[/bot]`, `/users`, `/applications/@me`. */

/**
 * Discord documents no resume window; sessions were seen to answer op 9 about 90 s after the
 * disconnect (discord-api-docs #1619).
 */
export const GATEWAY_RESUME_WINDOW_MS = 90_000;

export function gatewayHooks(s: FakeState): GatewayHooks {
  return {
    token: () => s.token,
    heartbeatIntervalMs: s.options.heartbeatIntervalMs ?? 41_250,
    compression: s.options.gatewayCompression ?? 'honor',
    resumeUrl: () => s.gatewayUrl,
    onChange: () => s.changed(),
    now: () => s.clock.now(),
    resumeWindowMs: s.options.gatewayResumeWindowMs ?? GATEWAY_RESUME_WINDOW_MS,
    readyPayload: () => ({
      v: 10,
      user: { ...s.botUser, verified: true, mfa_enabled: false, email: null },
      user_settings: {},
      guilds: s.installedGuildIds().map((id) => ({ id, unavailable: true })),
      private_channels: [],
      relationships: [],
      presences: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: ['us-east', 'us-central'],
      application: { id: s.applicationId, flags: 0 },
      auth: {},
      _trace: ['["fake-discord-gateway",{"micros":0}]'],
    }),
    guildCreates: (session) =>
      (session.intents & GatewayIntent.Guilds) !== 0
        ? s.installedGuildIds().map((id) => guildCreatePayload(s, id))
        : [],
  };
}

export function registerGatewayRoutes(r: Router, s: FakeState): void {
  r.add('GET', '/gateway', 'none', () => ({ status: 200, body: { url: s.gatewayUrl } }));
  r.add('GET', '/gateway/bot', 'bot', () => ({
    status: 200,
    body: {
      url: s.gatewayUrl,
      shards: 1,
      session_start_limit: {
        total: 1000,
        remaining: 1000 - s.gateway.identifies,
        reset_after: 0,
        max_concurrency: 1,
      },
    },
  }));
  r.add('GET', '/users/@me', 'bot', () => ({ status: 200, body: s.botUser }));
  r.add('GET', '/users/{user_id}', 'bot', (ctx) => {
    const u = s.users.get(ctx.params['user_id'] ?? '');
    if (!u) throw err.unknownUser();
    return { status: 200, body: u.user };
  });
  // Open (or get) the DM channel with a user.
  r.add('POST', '/users/@me/channels', 'bot', (ctx) => {
    const body = bodyObject(ctx);
    const userId = typeof body['recipient_id'] === 'string' ? body['recipient_id'] : '';
    if (!s.users.has(userId)) throw err.unknownUser();
    return { status: 200, body: channelJson(s, s.dmChannel(userId), false) };
  });
  r.add('GET', '/applications/@me', 'bot', () => ({ status: 200, body: applicationJson(s) }));
  r.add('GET', '/oauth2/applications/@me', 'bot', () => ({ status: 200, body: applicationJson(s) }));
}
