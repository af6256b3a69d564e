import type { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents, type SessionInfo } from '@discordjs/ws';
import { GatewayDispatchEvents, GatewayIntentBits, type APIInteraction } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { KeyValueStore } from '../../store/types.js';

/**
 * The Discord gateway connection (`@discordjs/ws`, the Guilds intent only: the
 * bot needs INTERACTION_CREATE and nothing else). Its session (id, sequence,
 * resume URL) is kept in the store: the next holder of the gateway — another
 * instance after a takeover, or this one after a restart — resumes it while
 * Discord still allows, instead of spending one of the day's 1,000 identifies.
 *
 * The session is saved behind the events, not before each one: @discordjs/ws
 * waits for `updateSessionInfo` before it hands an event over, so a write per
 * event put a store round trip in front of every interaction's answer (100
 * commands at once: 100 writes queued before the first claim). One save is in
 * flight at a time and the next takes the latest sequence; a graceful leave
 * saves the last one. After a crash the stored sequence may be a few events
 * behind: Discord replays them and each interaction's claim (gateway-intake)
 * keeps a handled one from running again.
 */

const sessionSchema = z.object({
  resumeURL: z.string(),
  sequence: z.number(),
  sessionId: z.string(),
  shardCount: z.number(),
  shardId: z.number(),
});

/** Discord keeps a session resumable for a short while after its connection drops. */
const SESSION_TTL_MS = 15 * 60_000;
const sessionKey = (shardId: number) => `gateway-session:${shardId}`;

export interface GatewayDeps {
  token: string;
  rest: REST;
  /** Where the session lives between holders (the store every instance shares). */
  kv: KeyValueStore;
  logger: Logger;
  onInteraction(raw: APIInteraction): void;
  /** Connection counts for /metrics and tests. */
  onConnected?(how: 'identified' | 'resumed'): void;
}

export class Gateway {
  #manager: WebSocketManager | undefined;
  /** Sessions as last known here, by shard (the store holds the same, for the next holder). */
  readonly #sessions = new Map<number, SessionInfo>();
  /** Set while leaving: the closing connection must not erase the session the next holder resumes. */
  #frozen = false;
  /** Shards whose session changed since it was last saved. */
  readonly #unsaved = new Set<number>();
  /** The save under way (one at a time). */
  #saving: Promise<void> | undefined;
  /** A disconnect under way: a connect waits for it, so the leave cannot clear the new connection's session. */
  #leaving: Promise<void> | undefined;
  #ready = false;

  constructor(private readonly deps: GatewayDeps) {}

  isReady(): boolean {
    return this.#ready;
  }

  /** Connects (resuming the stored session when there is one) and resolves once READY or RESUMED. */
  async connect(): Promise<void> {
    await this.#leaving;
    if (this.#manager) return;
    this.#frozen = false;
    const stored = await this.deps.kv.get<unknown>(sessionKey(0)).catch(() => undefined);
    const parsed = sessionSchema.safeParse(stored);
    if (parsed.success) this.#sessions.set(parsed.data.shardId, parsed.data);
    const manager = new WebSocketManager({
      token: this.deps.token,
      intents: GatewayIntentBits.Guilds,
      rest: this.deps.rest,
      shardCount: 1,
      retrieveSessionInfo: (shardId) => this.#sessions.get(shardId) ?? null,
      updateSessionInfo: (shardId, info) => this.#remember(shardId, info),
    });
    this.#manager = manager;
    const log = this.deps.logger;
    const connected = new Promise<void>((resolve, reject) => {
      manager.on(WebSocketShardEvents.Ready, () => {
        this.#ready = true;
        this.deps.onConnected?.('identified');
        log.info('gateway connected (identified)');
        resolve();
      });
      manager.on(WebSocketShardEvents.Resumed, () => {
        this.#ready = true;
        this.deps.onConnected?.('resumed');
        log.info('gateway connected (resumed the previous session)');
        resolve();
      });
      manager.on(WebSocketShardEvents.Closed, (code) => {
        this.#ready = false;
        log.warn({ code }, 'gateway connection closed; reconnecting');
        // Unrecoverable close codes (bad token, disallowed intents) end the start.
        if (code === 4004 || code === 4013 || code === 4014)
          reject(Object.assign(new Error(`gateway closed ${code}`), { code: String(code) }));
      });
      manager.on(WebSocketShardEvents.Error, (err) => log.warn({ err }, 'gateway error'));
    });
    manager.on(WebSocketShardEvents.Dispatch, (payload) => {
      if (payload.t !== GatewayDispatchEvents.InteractionCreate) return;
      if (log.isLevelEnabled('debug'))
        log.debug({ interactionId: payload.d.id, seq: payload.s }, 'interaction received');
      this.deps.onInteraction(payload.d);
    });
    await manager.connect();
    await connected;
  }

  /**
   * Leaves the gateway. `keepSession`: closed with a resumable code and the stored
   * session left for the next holder (a graceful stop or a handover); otherwise the
   * session is this instance's no more either way (a lost lease: another holder has it).
   */
  async disconnect(opts: { keepSession: boolean }): Promise<void> {
    const manager = this.#manager;
    this.#manager = undefined;
    this.#ready = false;
    if (!manager) return;
    this.#frozen = true;
    const leaving = this.#leave(manager, opts);
    this.#leaving = leaving;
    try {
      await leaving;
    } finally {
      if (this.#leaving === leaving) this.#leaving = undefined;
    }
  }

  async #leave(manager: WebSocketManager, opts: { keepSession: boolean }): Promise<void> {
    try {
      await manager.destroy(
        opts.keepSession
          ? { code: 4200, reason: 'handing the session over' }
          : { reason: 'gateway lease lost' },
      );
    } catch (err) {
      this.deps.logger.warn({ err }, 'gateway close failed');
    }
    await this.#saving;
    // Handing over: the next holder resumes from the last event seen here (every session again:
    // a save that failed earlier is not retried otherwise). A lost lease writes nothing more:
    // the session may be the new holder's already.
    if (opts.keepSession)
      for (const shardId of new Set([...this.#unsaved, ...this.#sessions.keys()])) await this.#save(shardId);
    this.#unsaved.clear();
    this.#sessions.clear();
  }

  /** @discordjs/ws's hook: kept here at once, saved behind (not awaited: see the class comment). */
  #remember(shardId: number, info: SessionInfo | null): void {
    if (this.#frozen) return;
    if (info) this.#sessions.set(shardId, info);
    else this.#sessions.delete(shardId);
    this.#unsaved.add(shardId);
    this.#saving ??= this.#saveChanged();
  }

  /**
   * Saves the changed sessions, the latest of each, one at a time, until none is left or the
   * connection is leaving. It lets go of `#saving` in the same step as it finds nothing left,
   * so a change made after that starts the next run instead of waiting for a later event.
   */
  async #saveChanged(): Promise<void> {
    for (;;) {
      const shardId = this.#frozen ? undefined : this.#takeUnsaved();
      if (shardId === undefined) {
        this.#saving = undefined;
        return;
      }
      await this.#save(shardId);
    }
  }

  #takeUnsaved(): number | undefined {
    const [shardId] = this.#unsaved;
    if (shardId !== undefined) this.#unsaved.delete(shardId);
    return shardId;
  }

  async #save(shardId: number): Promise<void> {
    const info = this.#sessions.get(shardId);
    try {
      if (info) await this.deps.kv.set(sessionKey(shardId), info, SESSION_TTL_MS);
      else await this.deps.kv.delete(sessionKey(shardId));
    } catch (err) {
      // The store is down: the session lives on here; a takeover meanwhile identifies afresh.
      this.deps.logger.debug({ err }, 'gateway session not saved');
    }
  }
}
