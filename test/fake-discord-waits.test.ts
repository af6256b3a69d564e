import { describe, expect, it } from 'vitest';
import { ChangeFeed } from './fake-discord/changes.js';

describe('fake Discord: waits on its change feed', () => {
  it('holds many waits at once without a listener warning and rejects them all when closed', async () => {
    const feed = new ChangeFeed();
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      // A storm bench waits on 100 finals at once; Node warned past 10 'closed' listeners.
      const waits = Array.from({ length: 100 }, (_, i) =>
        feed.waitFor(() => false, { timeoutMs: 60_000, description: `final ${i}` }),
      );
      feed.close();
      const settled = await Promise.allSettled(waits);
      expect(settled.every((s) => s.status === 'rejected')).toBe(true);
      expect(String((settled[7] as PromiseRejectedResult).reason)).toContain(
        'fake-discord closed while waiting for final 7',
      );
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on a later tick
      expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a wait that succeeds is no longer rejected by a later close', async () => {
    const feed = new ChangeFeed();
    let ready = false;
    const wait = feed.waitFor(() => ready && 'yes');
    ready = true;
    feed.changed();
    await expect(wait).resolves.toBe('yes');
    feed.close();
  });
});
