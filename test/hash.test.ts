import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { YieldingSha256, sha256Hex } from '../src/services/shared/hash.js';

describe('YieldingSha256', () => {
  it('hashes like createHash, whatever the sizes fed', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17);
    const expected = createHash('sha256').update(data).digest('hex');
    expect(await sha256Hex(data)).toBe(expected);
    const h = new YieldingSha256();
    for (let at = 0; at < data.length; at += 70_001) await h.update(data.subarray(at, at + 70_001));
    expect(h.hex()).toBe(expected);
    expect(await sha256Hex(Buffer.alloc(0))).toBe(createHash('sha256').digest('hex'));
  });

  it('lets the event loop turn while hashing several MiB', async () => {
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    try {
      await sha256Hex(randomBytes(8 * 1024 * 1024));
    } finally {
      clearInterval(ticker);
    }
    expect(turns).toBeGreaterThan(0);
  });
});
