import type { REST } from '@discordjs/rest';
import type { Logger } from 'pino';
import type { BotContext } from '../commands/types.js';
import type { Metrics } from '../metrics.js';
import type { GatewayLease } from '../services/cluster/gateway-lease.js';
import type { EditQueue } from '../services/discord/edits/edit-queue.js';
import type { SyncResult } from '../services/discord/registration/command-sync.js';
import type { JobWatch } from '../services/jobs/job-watch.js';
import type { JobLifecycle } from '../services/jobs/lifecycle.js';
import type { CheckScheduler } from '../services/jobs/ports.js';
import type { AtomicKeyValueStore, JobStore } from '../services/store/types.js';
import type { AuthFailureLimit } from '../webhooks/auth-failures.js';
import type { HttpServer } from '../webhooks/server.js';
import type { EditDelivery } from './job-engine.js';

export interface AppOptions {
  logger: Logger;
  now?: () => number;
  /** Per-source budget of failed webhook authentications (default DEFAULT_AUTH_FAILURE_LIMIT). */
  webhookAuthFailures?: AuthFailureLimit;
  /** Key namespace in the store (tests isolate runs sharing one Redis). */
  storeNamespace?: string;
  /** A command not answering by then is acknowledged on its behalf (default 1500 gateway, 2500 http; 0: at once). */
  interactionAckDeadlineMs?: number;
  /** Between two readings of the service account's balance (default ACCOUNT_READ_EVERY_MS). */
  accountReadEveryMs?: number;
}

/** The running bot, as main.ts, tests and benches see it. */
export interface App {
  /** Embedded (SQLite, one process) or redis (BullMQ, any number of instances). */
  readonly mode: 'embedded' | 'redis';
  /** Redis gateway mode: the lease deciding which instance holds the gateway. */
  gatewayLease: GatewayLease | undefined;
  server: HttpServer;
  jobs: JobLifecycle;
  watch: JobWatch;
  /** Edits of job messages (in process or BullMQ) and of session messages (in process). */
  edits: EditDelivery & { sessions: EditQueue };
  checks: CheckScheduler;
  metrics: Metrics;
  context: BotContext;
  /** The job store itself (tests and benches inspect it; commands get a read-only view). */
  store: JobStore;
  /** The store's key/value space with its locks (fair use, settings, sessions); tests hold its locks. */
  kv: AtomicKeyValueStore;
  /** The bot-token REST (tests post messages with it). */
  rest: REST;
  /** Connected to Discord: the gateway is READY (or another instance holds it), or REST answered (http mode). */
  discordReady(): boolean;
  /** Listens, connects to Discord, syncs commands, resumes open jobs. */
  start(): Promise<{ url: string; commands: SyncResult[] | undefined }>;
  /** Stops taking webhooks and interactions, lets in-flight edits finish (bounded), closes everything. */
  stop(drainMs?: number): Promise<void>;
}
