/**
 * The storm benchmark's ack baseline, in its own process like the bot: a gateway
 * connection as the bot opens it (@discordjs/ws, Guilds intent, one shard, no
 * compression) answering each INTERACTION_CREATE at once with a type-4 callback
 * through @discordjs/core on a REST client set as the bot's callback client.
 * Nothing else: no store, no validation, no job. argv: API URL, bot token.
 * Prints `ready` on stdout once identified.
 */
import { API } from '@discordjs/core/http-only';
import { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import { GatewayDispatchEvents, GatewayIntentBits } from 'discord-api-types/v10';

const [api = '', token = ''] = process.argv.slice(2);
const botRest = new REST({ api }).setToken(token);
// As src/runtime/discord-rest.ts's callbackRest: no local global limiter.
const callbacks = new API(new REST({ api, globalRequestsPerSecond: Number.POSITIVE_INFINITY }));
const manager = new WebSocketManager({
  token,
  intents: GatewayIntentBits.Guilds,
  rest: botRest,
  shardCount: 1,
});
manager.on(WebSocketShardEvents.Ready, () => process.stdout.write('ready\n'));
manager.on(WebSocketShardEvents.Dispatch, (payload) => {
  if (payload.t !== GatewayDispatchEvents.InteractionCreate) return;
  void callbacks.interactions
    .reply(payload.d.id, payload.d.token, { content: 'ok' })
    .catch((err: unknown) => process.stderr.write(`callback failed: ${String(err)}\n`));
});
await manager.connect();
process.once('SIGTERM', () => {
  void Promise.resolve(manager.destroy({ reason: 'bench done' })).finally(() => process.exit(0));
});
