/**
 * Start failures as one human line: what failed, why, and which variable to
 * check. main.ts prints that line (the stack only at debug level) and exits 1.
 * Each start phase wraps its error in a StartError so the line can name the
 * right variable even when the underlying error is a bare ECONNREFUSED.
 */

import { errorChain, messageOf } from './services/shared/error-chain.js';
import { DataDirInUseError } from './services/store/data-dir-lock.js';
import { isRedisAuthError, redactUrl } from './services/store/redis-errors.js';

export type StartPhase = 'store' | 'http' | 'metrics-http' | 'discord';

export class StartError extends Error {
  constructor(
    readonly phase: StartPhase,
    cause: unknown,
  ) {
    super(`${phase} failed to start`, { cause });
    this.name = 'StartError';
  }
}

/** Attaches a phase to whatever `run` throws. */
export async function inPhase<T>(phase: StartPhase, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw err instanceof StartError ? err : new StartError(phase, err);
  }
}

export interface StartContext {
  discordApiUrl: string;
  host: string;
  port: number;
  metricsPort?: number;
  redisUrl?: string;
  dataDir: string;
  redisWaitSeconds: number;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);
const FS_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'ENOSPC', 'EISDIR', 'ENOENT']);

function codeOf(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : typeof code === 'number' ? String(code) : undefined;
}

function statusOf(e: unknown): number | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const status = (e as { status?: unknown }).status;
  return typeof status === 'number' ? status : undefined;
}

const firstCode = (err: unknown, codes: ReadonlySet<string>): string | undefined =>
  errorChain(err)
    .map(codeOf)
    .find((c): c is string => c !== undefined && codes.has(c));

/** One line, no trailing period juggling: "<what failed> (<why>): check <VARIABLE>…". */
export function describeStartFailure(err: unknown, ctx: StartContext): string {
  const phase = err instanceof StartError ? err.phase : undefined;
  const inner = err instanceof StartError ? err.cause : err;
  const all = errorChain(inner);
  const short = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s);
  const last = short(messageOf(all[all.length - 1] ?? inner));

  switch (phase) {
    case 'discord': {
      const invalidToken = all.some(
        (e) => codeOf(e) === 'TokenInvalid' || statusOf(e) === 401 || codeOf(e) === '4004',
      );
      if (invalidToken) {
        return 'Discord rejected the bot token (401 Unauthorized): check DISCORD_TOKEN (Developer Portal → Bot → Reset Token).';
      }
      if (all.some((e) => codeOf(e) === 'DisallowedIntents' || codeOf(e) === '4014')) {
        return 'Discord refused the gateway intents the bot asked for: check the application in the Developer Portal (Bot → Privileged Gateway Intents).';
      }
      const net = firstCode(inner, NETWORK_CODES);
      if (net) {
        return `Cannot reach Discord at ${ctx.discordApiUrl} (${net}): check DISCORD_API_URL and this machine's network.`;
      }
      return `Could not connect to Discord (${last}): check DISCORD_TOKEN and DISCORD_API_URL.`;
    }
    case 'http':
    case 'metrics-http': {
      const port = phase === 'http' ? ctx.port : (ctx.metricsPort ?? ctx.port);
      const variable = phase === 'http' ? 'PORT' : 'METRICS_PORT';
      const code = all.map(codeOf).find((c) => c !== undefined);
      if (code === 'EADDRINUSE') {
        return `Port ${port} on ${ctx.host} is already in use (EADDRINUSE): check ${variable} (and HOST), or stop the process using it.`;
      }
      if (code === 'EACCES') {
        return `Not allowed to listen on ${ctx.host}:${port} (EACCES): check ${variable}; ports below 1024 need privileges.`;
      }
      if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
        return `${ctx.host} is not an address of this machine (${code}): check HOST.`;
      }
      return `Could not open the HTTP server on ${ctx.host}:${port} (${last}): check HOST and ${variable}.`;
    }
    case 'store':
    case undefined: {
      if (ctx.redisUrl !== undefined) {
        const where = redactUrl(ctx.redisUrl);
        const policy = all.find(
          (e): e is { policy: string } & Error => e instanceof Error && e.name === 'RedisEvictionPolicyError',
        );
        if (policy) {
          return `Redis at ${where} evicts keys (maxmemory-policy ${policy.policy}); the bot needs noeviction, or an evicted lock, budget or job would lose work or money: set \`maxmemory-policy noeviction\` in redis.conf (or run \`redis-cli CONFIG SET maxmemory-policy noeviction\`), or give the bot a Redis of its own.`;
        }
        if (isRedisAuthError(inner)) {
          return `Redis at ${where} refused the credentials (${last}): check the user and password in REDIS_URL.`;
        }
        const net = firstCode(inner, NETWORK_CODES);
        return `Cannot reach Redis at ${where}${net ? ` (${net})` : ` (${last})`} after waiting ${ctx.redisWaitSeconds} s: check REDIS_URL and that Redis is running.`;
      }
      const inUse = all.find((e): e is DataDirInUseError => e instanceof DataDirInUseError);
      if (inUse) {
        return `DATA_DIR ${ctx.dataDir} is in use by another bot process${inUse.pid ? ` (pid ${inUse.pid})` : ''}; the embedded store serves one process: stop the other one, give this one its own DATA_DIR, or set REDIS_URL to run several instances.`;
      }
      const fs = firstCode(inner, FS_CODES);
      const sqlite = all.map(codeOf).find((c) => c?.startsWith('SQLITE_'));
      if (sqlite === 'SQLITE_BUSY') {
        return `DATA_DIR ${ctx.dataDir} holds a database another process keeps locked (SQLITE_BUSY): check that no other bot runs on this DATA_DIR; several instances need REDIS_URL.`;
      }
      if (fs !== undefined || sqlite !== undefined || phase === 'store') {
        return `DATA_DIR ${ctx.dataDir} is not usable (${fs ?? sqlite ?? last}): check DATA_DIR; it must be a writable directory (or set REDIS_URL).`;
      }
      return `Unexpected error while starting (${last}); run with LOG_LEVEL=debug for details.`;
    }
  }
}
