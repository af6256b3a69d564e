// A bot process holding one gateway session with @discordjs/ws (what another instance resumes
// after this one dies). It prints, one JSON line each, the session info it would store (a
// shared store such as Redis in the real bot) and the dispatches it receives. Environment:
// FAKE_API (the fake's apiUrl), FAKE_TOKEN, INTENTS.
import { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';

const { FAKE_API, FAKE_TOKEN, INTENTS } = process.env;
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
let session = null;
const manager = new WebSocketManager({
  token: FAKE_TOKEN,
  intents: Number(INTENTS),
  rest: new REST({ api: FAKE_API }).setToken(FAKE_TOKEN),
  retrieveSessionInfo: () => session,
  updateSessionInfo: (_shardId, info) => {
    session = info;
    print({ type: 'session', info });
  },
});
manager.on(WebSocketShardEvents.Dispatch, (payload) =>
  print({ type: 'dispatch', t: payload.t, s: payload.s }),
);
await manager.connect();
