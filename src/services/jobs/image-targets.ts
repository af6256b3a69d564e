import { z } from 'zod';
import type { KeyValueStore } from '../store/types.js';

/**
 * The image `Upscale image` found on a message, kept while the member fills in its prompt
 * form: a form carries no state and its submission no message, and the bot may not be able
 * to read that channel at all (a user install), so the image waits here, under the member
 * and the message, for as long as the command's form can be answered.
 */
const TTL_MS = 15 * 60_000;

const targetSchema = z.object({ imageUrl: z.string(), at: z.number() });
export type ImageTarget = z.output<typeof targetSchema>;

const key = (userId: string, messageId: string) => `upscale-image:${userId}:${messageId}`;

export class ImageTargets {
  constructor(private readonly deps: { kv: KeyValueStore; now: () => number }) {}

  async put(userId: string, messageId: string, imageUrl: string): Promise<void> {
    await this.deps.kv.set(key(userId, messageId), { imageUrl, at: this.deps.now() }, TTL_MS);
  }

  /** The member's image for that message, once (a form is submitted once). */
  async take(userId: string, messageId: string): Promise<ImageTarget | undefined> {
    const parsed = targetSchema.safeParse(await this.deps.kv.get(key(userId, messageId)));
    if (!parsed.success || this.deps.now() - parsed.data.at > TTL_MS) return undefined;
    await this.deps.kv.delete(key(userId, messageId));
    return parsed.data;
  }
}
