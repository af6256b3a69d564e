import { Client, Events, GatewayIntentBits, type Interaction } from 'discord.js';
import { startFakeDiscord, type FakeDiscord } from '../fake-discord/index.js';
import type { FakeDiscordOptions } from '../fake-discord/types.js';

/**
 * A fake Discord with an unmodified discord.js client logged in to it, for the fake's own
 * tests: `handler` answers interactions (set it per test), its errors land in `errors`.
 */
export interface FakeWithClient {
  fake: FakeDiscord;
  client: Client;
  handler: (interaction: Interaction) => Promise<void>;
  readonly errors: unknown[];
  close(): Promise<void>;
}

export async function fakeWithClient(
  options: FakeDiscordOptions = {},
  intents: GatewayIntentBits[] = [GatewayIntentBits.Guilds],
): Promise<FakeWithClient> {
  const fake = await startFakeDiscord({
    selfCheckResponses: true,
    warmUpValidators: true, // compile the usual validators here, not inside the first test's wait
    ...options,
  });
  const client = new Client({ intents, rest: { api: fake.apiUrl } });
  const out: FakeWithClient = {
    fake,
    client,
    handler: async () => undefined,
    errors: [],
    close: async () => {
      await client.destroy(); // before fake.close(), or discord.js keeps reconnecting
      await fake.close();
    },
  };
  client.on(Events.InteractionCreate, (interaction) => {
    out.handler(interaction).catch((error: unknown) => out.errors.push(error));
  });
  const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
  await client.login(fake.token);
  await ready;
  return out;
}
