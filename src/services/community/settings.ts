import { z } from 'zod';
import type { Config } from '../../config.js';
import type { AtomicKeyValueStore } from '../store/types.js';
import { SingleFlight } from '../shared/single-flight.js';

/**
 * Per-guild settings (/settings): a server's own values in the store, the
 * environment's DEFAULT_* for everything it has not set. The gallery has no
 * default; its last posting error is kept beside the settings for /settings show.
 */

export const SETTING_NAMES = [
  'threads',
  'gallery',
  'max_active_jobs',
  'cooldown_seconds',
  'daily_credits',
] as const;
export type SettingName = (typeof SETTING_NAMES)[number];

export interface GuildSettings {
  threads: boolean;
  /** Gallery channel id. */
  gallery?: string;
  maxActiveJobs: number;
  cooldownSeconds: number;
  /** 0 = no budget. */
  dailyCredits: number;
}

const storedSchema = z.object({
  threads: z.boolean().optional(),
  gallery: z
    .string()
    .regex(/^\d{1,20}$/)
    .optional(),
  maxActiveJobs: z.number().int().min(1).max(50).optional(),
  cooldownSeconds: z.number().int().min(0).max(3600).optional(),
  dailyCredits: z.number().int().min(0).max(1_000_000).optional(),
  galleryError: z.object({ at: z.number(), message: z.string() }).optional(),
});
type Stored = z.infer<typeof storedSchema>;

export type SettingsPatch = Partial<Omit<Stored, 'galleryError'>>;

/** What `show` needs: each value and whether the server set it. */
export interface SettingsView {
  effective: GuildSettings;
  own: Set<SettingName>;
  galleryError?: { at: number; message: string };
}

const FIELD: Record<SettingName, keyof SettingsPatch> = {
  threads: 'threads',
  gallery: 'gallery',
  max_active_jobs: 'maxActiveJobs',
  cooldown_seconds: 'cooldownSeconds',
  daily_credits: 'dailyCredits',
};

/** Settings live until a server resets them; ten years is "forever" for a TTL'd store. */
const KEEP_MS = 10 * 365 * 86_400_000;
const key = (guildId: string) => `guild-settings:${guildId}`;

export class GuildSettingsStore {
  constructor(
    private readonly deps: {
      kv: AtomicKeyValueStore;
      defaults: Config['community']['defaults'];
    },
  ) {}

  /**
   * Reads under way, by server: a burst of commands in one server reads its settings once.
   * A change made here drops the one under way (it may have read before the write), so a
   * read begun after `set` or `reset` resolved sees the change.
   */
  readonly #reading = new SingleFlight<Stored>();

  private read(guildId: string): Promise<Stored> {
    return this.#reading.run(guildId, async () => this.parse(await this.deps.kv.get(key(guildId))));
  }

  private parse(stored: unknown): Stored {
    const parsed = storedSchema.safeParse(stored);
    // A record that does not parse is ignored (defaults apply) rather than breaking every command.
    return parsed.success ? parsed.data : {};
  }

  async get(guildId: string): Promise<GuildSettings> {
    return (await this.view(guildId)).effective;
  }

  async view(guildId: string): Promise<SettingsView> {
    const s = await this.read(guildId);
    const d = this.deps.defaults;
    const own = new Set<SettingName>(SETTING_NAMES.filter((n) => s[FIELD[n]] !== undefined));
    return {
      effective: {
        threads: s.threads ?? d.threads,
        ...(s.gallery !== undefined ? { gallery: s.gallery } : {}),
        maxActiveJobs: s.maxActiveJobs ?? d.maxActiveJobs,
        cooldownSeconds: s.cooldownSeconds ?? d.cooldownSeconds,
        dailyCredits: s.dailyCredits ?? d.dailyCredits,
      },
      own,
      ...(s.galleryError ? { galleryError: s.galleryError } : {}),
    };
  }

  /**
   * A compare-and-set read-modify-write (the store's `update`), so two admins' changes,
   * on any instances, never lose each other: the later one decides again on the first.
   */
  private async modify(guildId: string, change: (s: Stored) => Stored): Promise<void> {
    try {
      await this.deps.kv.update([key(guildId)], ([stored]) => {
        const next = storedSchema.parse(change(this.parse(stored)));
        return { result: undefined, writes: [{ key: key(guildId), value: next, ttlMs: KEEP_MS }] };
      });
    } finally {
      this.#reading.forget(guildId);
    }
  }

  async set(guildId: string, patch: SettingsPatch): Promise<void> {
    await this.modify(guildId, (s) => {
      const next: Stored = { ...s, ...patch };
      // A new gallery channel starts with a clean error slate.
      if (patch.gallery !== undefined && patch.gallery !== s.gallery) delete next.galleryError;
      return next;
    });
  }

  async reset(guildId: string, setting: SettingName | 'all'): Promise<void> {
    await this.modify(guildId, (s) => {
      if (setting === 'all') return {};
      const next: Stored = { ...s };
      delete next[FIELD[setting]];
      if (setting === 'gallery') delete next.galleryError;
      return next;
    });
  }

  async recordGalleryError(guildId: string, message: string, at: number): Promise<void> {
    await this.modify(guildId, (s) => ({ ...s, galleryError: { at, message: message.slice(0, 300) } }));
  }

  async clearGalleryError(guildId: string): Promise<void> {
    const s = await this.read(guildId);
    if (s.galleryError) await this.modify(guildId, ({ galleryError: _drop, ...rest }) => rest);
  }
}
