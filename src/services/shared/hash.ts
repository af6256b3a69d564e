import { createHash, type Hash } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';

/** Bytes hashed between two turns of the event loop (~1 ms of SHA-256 with SHA-NI, a few without). */
const SLICE = 1024 * 1024;

/**
 * An incremental SHA-256 that lets the event loop turn after every MiB fed
 * (`update` is awaited): multi-MiB photos arriving at once from a fast link
 * are hashed without holding webhooks and interactions behind them.
 * (WebCrypto's digest runs off the loop but copies its input first, which on
 * the loop costs about what hashing it does.)
 */
export class YieldingSha256 {
  private readonly hash: Hash = createHash('sha256');
  private sinceTurn = 0;

  async update(data: Uint8Array): Promise<void> {
    for (let at = 0; at < data.byteLength; at += SLICE) {
      const part = data.subarray(at, Math.min(data.byteLength, at + SLICE));
      this.hash.update(part);
      this.sinceTurn += part.byteLength;
      if (this.sinceTurn >= SLICE) {
        this.sinceTurn = 0;
        await turn();
      }
    }
  }

  hex(): string {
    return this.hash.digest('hex');
  }
}

/** SHA-256 (hex) of `data`, yielding to the event loop every MiB. */
export async function sha256Hex(data: Uint8Array): Promise<string> {
  const h = new YieldingSha256();
  await h.update(data);
  return h.hex();
}
