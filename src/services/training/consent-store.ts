/**
 * Consent records: the proof that a member confirmed, before their training
 * photos were sent, that the photos show them or a person who agreed, aged 18
 * or older. Kept CONSENT_RETENTION_DAYS (config.privacy.consentRetentionMs),
 * each record expiring on its own.
 *
 * Key layout (in the store's KV space, so SQLite and Redis alike):
 *   consent:{userId}:{id}     one ConsentRecord, TTL until its expiresAt
 *   consent-index:{userId}    [{id, expiresAt}] oldest first (expired entries pruned on
 *                             write), TTL until the last expiresAt; changed only by
 *                             compare-and-set (the store's `update`), so records written
 *                             at once by two instances are both kept
 * One key per record keeps a member's many uploads from growing one value
 * without bound; the index is ids only.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { AtomicKeyValueStore, KvWrite } from '../store/types.js';

const recordSchema = z.object({
  v: z.literal(1),
  id: z.string(),
  userId: z.string(),
  /** The server the photos were submitted in. */
  guildId: z.string().optional(),
  /** Dropped by minimizeForMember. */
  channelId: z.string().optional(),
  /** The upload job the confirmation was for; dropped by minimizeForMember (the job is deleted then). */
  jobId: z.string().optional(),
  /** Epoch ms of the confirmation. */
  at: z.number(),
  /** Which consent text was shown and accepted (see ./consent.ts). */
  wording: z.string(),
  /** The language it was shown in (a catalog locale, e.g. `de`); absent on records made before. */
  language: z.string().optional(),
  photoCount: z.number().int().nonnegative(),
  /** SHA-256 (hex) of each image exactly as sent, in order. */
  sha256: z.array(z.string().regex(/^[0-9a-f]{64}$/)),
  expiresAt: z.number(),
  /** Reduced to what proves consent (after a member's data deletion). */
  minimized: z.literal(true).optional(),
});
export type ConsentRecord = z.output<typeof recordSchema>;

export interface ConsentInput {
  userId: string;
  guildId?: string;
  channelId?: string;
  jobId: string;
  wording: string;
  /** The language the wording was shown in. */
  language?: string;
  /** SHA-256 (hex) of each image exactly as sent, in order. */
  sha256: readonly string[];
  /** Default: now. */
  at?: number;
}

export interface ConsentStoreOptions {
  kv: AtomicKeyValueStore;
  /** CONSENT_RETENTION_DAYS in ms. */
  retentionMs: number;
  now?: () => number;
}

const indexSchema = z.array(z.object({ id: z.string(), expiresAt: z.number() }));
type IndexEntry = z.output<typeof indexSchema>[number];
const recordKey = (userId: string, id: string): string => `consent:${userId}:${id}`;
const indexKey = (userId: string): string => `consent-index:${userId}`;
const parseIndex = (stored: unknown): IndexEntry[] => {
  const parsed = indexSchema.safeParse(stored);
  return parsed.success ? parsed.data : [];
};
/** Records read at once when listing. */
const READ_BATCH = 50;

export class ConsentStore {
  readonly retentionMs: number;
  private readonly kv: AtomicKeyValueStore;
  private readonly now: () => number;

  constructor(opts: ConsentStoreOptions) {
    if (!(opts.retentionMs > 0)) throw new RangeError('retentionMs must be positive');
    this.kv = opts.kv;
    this.retentionMs = opts.retentionMs;
    this.now = opts.now ?? Date.now;
  }

  /** Stores one record; throws StoreUnavailableError when the store cannot (then nothing may be sent). */
  async record(input: ConsentInput): Promise<ConsentRecord> {
    const at = input.at ?? this.now();
    const rec: ConsentRecord = {
      v: 1,
      id: randomUUID(),
      userId: input.userId,
      ...(input.guildId !== undefined ? { guildId: input.guildId } : {}),
      ...(input.channelId !== undefined ? { channelId: input.channelId } : {}),
      jobId: input.jobId,
      at,
      wording: input.wording,
      ...(input.language !== undefined ? { language: input.language } : {}),
      photoCount: input.sha256.length,
      sha256: [...input.sha256],
      expiresAt: at + this.retentionMs,
    };
    recordSchema.parse(rec);
    await this.kv.set(recordKey(rec.userId, rec.id), rec, this.ttl(rec.expiresAt));
    // The member's index: a compare-and-set read-modify-write, so records made at once on
    // several instances all land in it.
    await this.rewriteIndex(rec.userId, (entries) => [...entries, { id: rec.id, expiresAt: rec.expiresAt }]);
    return rec;
  }

  /** The member's live records, oldest first. */
  async listByMember(userId: string): Promise<ConsentRecord[]> {
    const now = this.now();
    const ids = (await this.index(userId)).filter((e) => e.expiresAt > now).map((e) => e.id);
    const out: ConsentRecord[] = [];
    for (let i = 0; i < ids.length; i += READ_BATCH) {
      const batch = await Promise.all(
        ids.slice(i, i + READ_BATCH).map((id) => this.kv.get<unknown>(recordKey(userId, id))),
      );
      for (const raw of batch) {
        const parsed = recordSchema.safeParse(raw);
        if (parsed.success && parsed.data.userId === userId && parsed.data.expiresAt > now)
          out.push(parsed.data);
      }
    }
    return out;
  }

  /**
   * Deletes every record of the member; returns how many there were. The records go first,
   * then their entries leave the index (compare-and-set): a record made meanwhile keeps its
   * entry, and a failure halfway leaves every remaining record still indexed.
   */
  async deleteForMember(userId: string): Promise<number> {
    const now = this.now();
    const entries = await this.index(userId);
    for (const e of entries) await this.kv.delete(recordKey(userId, e.id));
    const gone = new Set(entries.map((e) => e.id));
    await this.rewriteIndex(userId, (left) => left.filter((e) => !gone.has(e.id)));
    return entries.filter((e) => e.expiresAt > now).length;
  }

  /**
   * Reduces every record of the member to what proves the consent (who, where,
   * when, which wording in which language, how many images and their SHA-256), dropping the
   * channel and the job; returns how many records were kept. For a member's
   * data deletion, where consent records are kept as proof.
   */
  async minimizeForMember(userId: string): Promise<number> {
    const records = await this.listByMember(userId);
    for (const r of records) {
      const minimal: ConsentRecord = {
        v: 1,
        id: r.id,
        userId: r.userId,
        ...(r.guildId !== undefined ? { guildId: r.guildId } : {}),
        at: r.at,
        wording: r.wording,
        ...(r.language !== undefined ? { language: r.language } : {}),
        photoCount: r.photoCount,
        sha256: r.sha256,
        expiresAt: r.expiresAt,
        minimized: true,
      };
      await this.kv.set(recordKey(userId, r.id), minimal, this.ttl(r.expiresAt));
    }
    return records.length;
  }

  private async index(userId: string): Promise<IndexEntry[]> {
    return parseIndex(await this.kv.get<unknown>(indexKey(userId)));
  }

  /** Replaces the member's index with `change` of it (expired entries dropped; empty: deleted), atomically. */
  private async rewriteIndex(userId: string, change: (entries: IndexEntry[]) => IndexEntry[]): Promise<void> {
    const key = indexKey(userId);
    await this.kv.update([key], ([stored]) => {
      const now = this.now();
      const next = change(parseIndex(stored)).filter((e) => e.expiresAt > now);
      const write: KvWrite =
        next.length === 0
          ? { key, delete: true }
          : { key, value: next, ttlMs: this.ttl(Math.max(...next.map((e) => e.expiresAt))) };
      return { result: undefined, writes: [write] };
    });
  }

  private ttl(expiresAt: number): number {
    return Math.max(1000, expiresAt - this.now());
  }
}
