/**
 * Fake Discord (REST + gateway + CDN) on 127.0.0.1 for integration tests of the real bot.
 *
 *   const fake = await startFakeDiscord();
 *   const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.apiUrl } });
 *   await client.login(fake.token);           // GET /gateway/bot -> ws://127.0.0.1:PORT
 *   const cmd = fake.sendCommand({ name: 'upscale', attachments: { image: { filename: 'a.png', bytes } } });
 *   const msg = await cmd.waitForMessage((m) => m.embeds.length > 0);
 *   fake.assertNoViolations();
 *   await fake.close();
 */
export {
  startFakeDiscord,
  FakeDiscord,
  DiscordErrors,
  InteractionType,
  CallbackType,
  NONCE_WINDOW_MS,
} from './fake.js';
export type {
  InteractionHandle,
  InteractionState,
  ForumTag,
  ForumPost,
  ThreadInfo,
  AutoModBlock,
} from './fake.js';
export { FakeMessage, MessageFlag } from './messages.js';
export { OpenApiSpec, SPEC_QUIRKS, DEFAULT_SPEC_PATH } from './openapi.js';
export type { SpecError, SpecQuirk, BodyValidation } from './openapi.js';
export { DEFAULT_RATE_LIMITS } from './ratelimit.js';
export type { RateLimitConfig, WindowLimit } from './ratelimit.js';
export { OffsetClock } from './clock.js';
export { InteractionSigner } from './http-interactions.js';
export type { HttpDelivery, PostOptions, SignatureMode } from './http-interactions.js';
export type { FakeClock } from './clock.js';
export type { GatewayConnection, GatewaySession, GatewayPayload } from './gateway.js';
export type { Json, JsonObject } from './json.js';
export type * from './types.js';
