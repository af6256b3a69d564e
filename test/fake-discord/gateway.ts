import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { constants as zlibConstants, createDeflate, deflateSync, type Deflate } from 'node:zlib';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { isRecord, type Json, type JsonObject } from './json.js';

/** Gateway opcodes (https://discord.com/developers/docs/topics/opcodes-and-status-codes). */
export const Op = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  PresenceUpdate: 3,
  VoiceStateUpdate: 4,
  Resume: 6,
  Reconnect: 7,
  RequestGuildMembers: 8,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const;

export const GatewayIntent = {
  Guilds: 1 << 0,
  GuildMessages: 1 << 9,
  MessageContent: 1 << 15,
  DirectMessages: 1 << 12,
} as const;

export interface GatewayPayload {
  op: number;
  d: Json;
  s: number | null;
  t: string | null;
}

export interface GatewaySession {
  readonly id: string;
  readonly intents: number;
  readonly identify: JsonObject;
  seq: number;
  /** Every dispatch sent in this session, kept for RESUME replay. */
  readonly events: GatewayPayload[];
  connection: GatewayConnection | null;
  resumes: number;
  /** Fake-clock time its last socket closed (null while one is open); RESUME works within the window after it. */
  disconnectedAt: number | null;
  /** Why it can no longer be resumed ('closed 1000', 'expired', 'invalidated'), once it cannot. */
  ended: string | null;
}

export interface GatewayConnection {
  readonly id: number;
  readonly url: string;
  readonly query: Record<string, string>;
  /** What the client negotiated: `zlib-stream` via `?compress=`, `identify` via IDENTIFY `compress: true`, or none. */
  compression: 'zlib-stream' | 'identify' | 'none';
  session: GatewaySession | null;
  heartbeats: number;
  lastHeartbeatSeq: number | null;
  openedAt: number;
  closedAt: number | null;
  closeCode: number | null;
  /** Payloads received from the client, in order. */
  readonly received: GatewayPayload[];
}

export interface GatewayHooks {
  token: () => string;
  /** Builds READY's `d` (without session_id / resume_gateway_url, the gateway adds them). */
  readyPayload: (session: GatewaySession) => JsonObject;
  /** GUILD_CREATE payloads to send after READY. */
  guildCreates: (session: GatewaySession) => JsonObject[];
  resumeUrl: () => string;
  heartbeatIntervalMs: number;
  /** 'honor' (default) answers `?compress=zlib-stream` / IDENTIFY `compress: true`; 'ignore' always sends text frames. */
  compression?: 'honor' | 'ignore';
  onChange: () => void;
  /** The fake clock, for the resume window. */
  now: () => number;
  /** How long after its socket closed a session can still be resumed. */
  resumeWindowMs: number;
}

interface LiveConnection {
  info: GatewayConnection;
  ws: WebSocket;
  deflate: Deflate | null;
  sendChain: Promise<void>;
}

/**
 * Server side of the Discord gateway (v10, JSON encoding), enough for @discordjs/ws 1.x and
 * 2.x. A session can be resumed by any connection (another process too) with its id, the
 * token and a sequence it sent, within `resumeWindowMs` after its socket closed, unless the
 * client closed with 1000/1001; otherwise op 9 `d: false`.
 */
export class FakeGateway {
  readonly wss: WebSocketServer;
  readonly connections: GatewayConnection[] = [];
  readonly sessions = new Map<string, GatewaySession>();
  identifies = 0;
  resumes = 0;
  /** RESUMEs answered with op 9 `d: false` (unknown, ended or expired session, or a sequence it never sent). */
  resumeRefusals = 0;
  /** The most recently identified session: dispatches go there. */
  currentSession: GatewaySession | null = null;
  readonly #live = new Map<number, LiveConnection>();
  readonly #hooks: GatewayHooks;
  #nextConnectionId = 1;

  constructor(hooks: GatewayHooks) {
    this.#hooks = hooks;
    this.wss = new WebSocketServer({ noServer: true });
    this.wss.on('connection', (ws: WebSocket, req: IncomingMessage) => this.#onConnection(ws, req));
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.wss.emit('connection', ws, req));
  }

  #onConnection(ws: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? '/', 'ws://127.0.0.1');
    const query = Object.fromEntries(url.searchParams.entries());
    const info: GatewayConnection = {
      id: this.#nextConnectionId++,
      url: req.url ?? '/',
      query,
      compression:
        query['compress'] === 'zlib-stream' && this.#hooks.compression !== 'ignore' ? 'zlib-stream' : 'none',
      session: null,
      heartbeats: 0,
      lastHeartbeatSeq: null,
      openedAt: Date.now(),
      closedAt: null,
      closeCode: null,
      received: [],
    };
    const live: LiveConnection = {
      info,
      ws,
      deflate: info.compression === 'zlib-stream' ? createDeflate() : null,
      sendChain: Promise.resolve(),
    };
    this.connections.push(info);
    this.#live.set(info.id, live);

    if (query['v'] !== undefined && query['v'] !== '10') {
      ws.close(4012, 'Invalid API version');
      return;
    }
    if (query['encoding'] !== undefined && query['encoding'] !== 'json') {
      // Real Discord also speaks ETF; discord.js only ever asks for JSON.
      ws.close(4002, 'Error while decoding payload.');
      return;
    }

    ws.on('message', (data: RawData, isBinary: boolean) => this.#onMessage(live, data, isBinary));
    ws.on('close', (code: number) => {
      info.closedAt = Date.now();
      info.closeCode = code;
      live.deflate?.close();
      this.#live.delete(info.id);
      const session = info.session;
      if (session && session.connection === info) {
        session.connection = null;
        session.disconnectedAt = this.#hooks.now();
        // Discord: a client closing with 1000 or 1001 ends its session (the bot goes offline).
        if (code === 1000 || code === 1001) session.ended ??= `closed ${code}`;
      }
      this.#hooks.onChange();
    });
    ws.on('error', () => undefined);
    this.#send(live, {
      op: Op.Hello,
      d: { heartbeat_interval: this.#hooks.heartbeatIntervalMs },
      s: null,
      t: null,
    });
    this.#hooks.onChange();
  }

  #send(live: LiveConnection, payload: GatewayPayload): void {
    const text = JSON.stringify(payload);
    const { ws, deflate, info } = live;
    if (deflate) {
      // zlib-stream: one shared deflate context per connection, each payload ends with a Z_SYNC_FLUSH marker.
      live.sendChain = live.sendChain.then(
        () =>
          new Promise<void>((resolve) => {
            const chunks: Buffer[] = [];
            const onData = (chunk: Buffer): void => {
              chunks.push(chunk);
            };
            deflate.on('data', onData);
            deflate.write(text);
            deflate.flush(zlibConstants.Z_SYNC_FLUSH, () => {
              deflate.off('data', onData);
              if (ws.readyState === ws.OPEN) ws.send(Buffer.concat(chunks), { binary: true });
              resolve();
            });
          }),
      );
      return;
    }
    if (ws.readyState !== ws.OPEN) return;
    if (info.compression === 'identify' && payload.op === Op.Dispatch) {
      ws.send(deflateSync(text), { binary: true });
      return;
    }
    ws.send(text);
  }

  #close(live: LiveConnection, code: number, reason: string): void {
    if (live.ws.readyState === live.ws.OPEN || live.ws.readyState === live.ws.CONNECTING)
      live.ws.close(code, reason);
  }

  #onMessage(live: LiveConnection, data: RawData, isBinary: boolean): void {
    if (isBinary) {
      this.#close(live, 4002, 'Error while decoding payload.');
      return;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(
        Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8'),
      );
    } catch {
      this.#close(live, 4002, 'Error while decoding payload.');
      return;
    }
    if (!isRecord(payload) || typeof payload['op'] !== 'number') {
      this.#close(live, 4002, 'Error while decoding payload.');
      return;
    }
    const op = payload['op'];
    const d = (payload['d'] ?? null) as Json;
    live.info.received.push({ op, d, s: null, t: null });
    switch (op) {
      case Op.Heartbeat:
        live.info.heartbeats += 1;
        live.info.lastHeartbeatSeq = typeof d === 'number' ? d : null;
        this.#send(live, { op: Op.HeartbeatAck, d: null, s: null, t: null });
        break;
      case Op.Identify:
        this.#identify(live, d);
        break;
      case Op.Resume:
        this.#resume(live, d);
        break;
      case Op.PresenceUpdate:
      case Op.VoiceStateUpdate:
      case Op.RequestGuildMembers:
        if (!live.info.session) this.#close(live, 4003, 'Not authenticated.');
        break;
      default:
        this.#close(live, 4001, 'Unknown opcode.');
    }
    this.#hooks.onChange();
  }

  #identify(live: LiveConnection, d: Json): void {
    if (live.info.session) {
      this.#close(live, 4005, 'Already authenticated.');
      return;
    }
    if (!isRecord(d) || typeof d['token'] !== 'string' || !isRecord(d['properties'])) {
      this.#close(live, 4002, 'Error while decoding payload.');
      return;
    }
    if (d['token'].replace(/^Bot /, '') !== this.#hooks.token()) {
      this.#close(live, 4004, 'Authentication failed.');
      return;
    }
    const intents = d['intents'];
    if (typeof intents !== 'number' || !Number.isInteger(intents) || intents < 0) {
      this.#close(live, 4013, 'Invalid intent(s).');
      return;
    }
    const shard = d['shard'];
    if (shard !== undefined && shard !== null) {
      if (!Array.isArray(shard) || shard.length !== 2 || shard[0] !== 0 || shard[1] !== 1) {
        this.#close(live, 4010, 'Invalid shard.');
        return;
      }
    }
    if (d['compress'] === true && live.info.compression === 'none' && this.#hooks.compression !== 'ignore') {
      live.info.compression = 'identify';
    }
    this.identifies += 1;
    const session: GatewaySession = {
      id: randomBytes(16).toString('hex'),
      intents,
      identify: d as JsonObject,
      seq: 0,
      events: [],
      connection: live.info,
      resumes: 0,
      disconnectedAt: null,
      ended: null,
    };
    this.sessions.set(session.id, session);
    live.info.session = session;
    this.currentSession = session;
    const ready: JsonObject = {
      ...this.#hooks.readyPayload(session),
      session_id: session.id,
      session_type: 'normal',
      resume_gateway_url: this.#hooks.resumeUrl(),
      shard: [0, 1],
    };
    this.#dispatchTo(session, 'READY', ready);
    for (const guild of this.#hooks.guildCreates(session)) this.#dispatchTo(session, 'GUILD_CREATE', guild);
  }

  #resume(live: LiveConnection, d: Json): void {
    if (!isRecord(d) || typeof d['token'] !== 'string' || typeof d['session_id'] !== 'string') {
      this.#close(live, 4002, 'Error while decoding payload.');
      return;
    }
    if (d['token'].replace(/^Bot /, '') !== this.#hooks.token()) {
      this.#close(live, 4004, 'Authentication failed.');
      return;
    }
    const session = this.sessions.get(d['session_id']);
    const seq = d['seq'];
    if (
      session &&
      !session.ended &&
      session.connection === null &&
      session.disconnectedAt !== null &&
      this.#hooks.now() - session.disconnectedAt > this.#hooks.resumeWindowMs
    )
      session.ended = 'expired';
    // Any process holding the session id and token may resume it (another bot instance too).
    if (!session || session.ended || (typeof seq === 'number' && seq > session.seq)) {
      this.resumeRefusals += 1;
      this.#send(live, { op: Op.InvalidSession, d: false, s: null, t: null });
      return;
    }
    // A session can only be attached to one socket.
    if (session.connection && session.connection !== live.info) {
      const old = this.#live.get(session.connection.id);
      if (old) this.#close(old, 4000, 'Session resumed elsewhere');
    }
    session.connection = live.info;
    session.disconnectedAt = null;
    session.resumes += 1;
    live.info.session = session;
    this.resumes += 1;
    this.currentSession = session;
    const from = typeof seq === 'number' ? seq : 0;
    for (const event of session.events) if ((event.s ?? 0) > from) this.#send(live, event);
    this.#dispatchTo(session, 'RESUMED', {});
  }

  #dispatchTo(session: GatewaySession, t: string, d: JsonObject): GatewayPayload {
    session.seq += 1;
    const payload: GatewayPayload = { op: Op.Dispatch, d, s: session.seq, t };
    session.events.push(payload);
    const live = session.connection ? this.#live.get(session.connection.id) : undefined;
    if (live) this.#send(live, payload);
    this.#hooks.onChange();
    return payload;
  }

  /**
   * Sends a dispatch to the current session. If its socket is down the event is
   * buffered and replayed on RESUME, like Discord does.
   */
  dispatch(t: string, d: JsonObject): GatewayPayload {
    const session = this.currentSession;
    if (!session)
      throw new Error(`fake-discord: cannot dispatch ${t}: no gateway session has identified yet`);
    return this.#dispatchTo(session, t, d);
  }

  hasIntent(intent: number): boolean {
    return this.currentSession !== null && (this.currentSession.intents & intent) === intent;
  }

  /** Whether the current session has an open socket. */
  get connected(): boolean {
    const conn = this.currentSession?.connection;
    return conn !== null && conn !== undefined && this.#live.has(conn.id);
  }

  /** Closes the current socket with a (by default resumable) close code. */
  disconnect(code = 4000, reason = 'Unknown error'): void {
    const conn = this.currentSession?.connection;
    const live = conn ? this.#live.get(conn.id) : undefined;
    if (!live) throw new Error('fake-discord: no open gateway connection to disconnect');
    this.#close(live, code, reason);
  }

  /** Sends op 1 HEARTBEAT: Discord may ask for one at any time, and the client must answer at once. */
  requestHeartbeat(): void {
    const conn = this.currentSession?.connection;
    const live = conn ? this.#live.get(conn.id) : undefined;
    if (!live) throw new Error('fake-discord: no open gateway connection');
    this.#send(live, { op: Op.Heartbeat, d: null, s: null, t: null });
  }

  /** Sends op 7 RECONNECT (client should reconnect and resume). */
  requestReconnect(): void {
    const conn = this.currentSession?.connection;
    const live = conn ? this.#live.get(conn.id) : undefined;
    if (!live) throw new Error('fake-discord: no open gateway connection');
    this.#send(live, { op: Op.Reconnect, d: null, s: null, t: null });
  }

  /** Sends op 9 INVALID_SESSION; with `resumable = false` the session is forgotten (client must re-identify). */
  invalidateSession(resumable: boolean): void {
    const session = this.currentSession;
    const live = session?.connection ? this.#live.get(session.connection.id) : undefined;
    if (!session || !live) throw new Error('fake-discord: no open gateway connection');
    if (!resumable) {
      session.ended = 'invalidated';
      this.sessions.delete(session.id);
      live.info.session = null;
      this.currentSession = null;
    }
    this.#send(live, { op: Op.InvalidSession, d: resumable, s: null, t: null });
  }

  /** Ends every session that has no socket, as if Discord's resume window had passed. */
  expireDisconnectedSessions(): void {
    for (const session of this.sessions.values())
      if (session.connection === null) session.ended ??= 'expired';
  }

  async close(): Promise<void> {
    for (const live of this.#live.values()) {
      live.deflate?.close();
      live.ws.terminate();
    }
    this.#live.clear();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
