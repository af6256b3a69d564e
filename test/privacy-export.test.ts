/**
 * `/privacy export` of a member with 20,000 jobs, through the real bot on SQLite and on
 * Redis: the file is gzipped JSON holding every job without signed links, and building it
 * never holds the event loop (the bot shares its process with this test, so the delay
 * measured here is the delay every other member's interaction would have met).
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';
import type { JobRecord } from '../src/services/store/types.js';

const JOBS = 20_000;
/**
 * Longest the event loop may stall while the export is built. Built at once (as before:
 * JSON.stringify and gzipSync of the whole document) 20,000 jobs held it 0.4 to 1.3 s on a
 * 2-core machine; a page at a time through the asynchronous gzip its longest stall stays
 * under about 90 ms even with other work on the machine.
 */
const MAX_STALL_MS = 250;
/**
 * On a machine this suite's other files keep busy, the process itself is descheduled now
 * and then, whatever it runs: the bound grows to 3× the longest stall of an idle window
 * measured just before (built at once, the stall is one block of 0.4 s or more, which
 * grows with that load too).
 */
async function idleStallMs(ms: number): Promise<number> {
  const idle = monitorEventLoopDelay({ resolution: 10 });
  idle.enable();
  await new Promise((r) => setTimeout(r, ms));
  idle.disable();
  return idle.max / 1e6;
}

function record(i: number, userId: string, guildId: string, now: number): JobRecord {
  const id = `${randomBytes(8).toString('hex')}-${String(i).padStart(5, '0')}`;
  const at = now - i * 1000;
  return {
    id,
    secret: randomBytes(16).toString('hex'),
    operation: 'upscale',
    userId,
    message: { channelId: '200000000000000001', guildId, messageId: `3${String(i).padStart(17, '0')}` },
    params: {
      prompt: `a lighthouse in the fog, take ${i}`,
      resemblance: 60,
      image_url: `https://cdn.discordapp.com/attachments/1/${i}/cat.png?ex=6790a1b2&is=678f5032&hm=${randomBytes(32).toString('hex')}&`,
    },
    taskId: `task-${id}`,
    state: 'finished',
    percentage: 100,
    result: { kind: 'upscale', imageUrls: [`https://media.example/results/${id}.png`] },
    createdAt: at,
    updatedAt: at + 30_000,
    finishedAt: at + 30_000,
    finalShownAt: at + 30_000,
    settledAt: at + 30_000,
    version: 3,
  };
}

for (const backend of ['sqlite', 'redis'] as const) {
  describe(`/privacy export of ${JOBS} jobs on ${backend}`, backend === 'redis' ? needs('redis') : {}, () => {
    let h: Harness;
    let member: string;

    beforeAll(async () => {
      h = await startHarness({ redis: backend === 'redis' });
      member = h.fake.addUser({ username: 'prolific' });
      const now = Date.now();
      for (let i = 0; i < JOBS; i += 250) {
        await Promise.all(
          Array.from({ length: Math.min(250, JOBS - i) }, (_, k) =>
            h.app.store.create(record(i + k, member, h.fake.guildId, now)),
          ),
        );
      }
    }, 240_000);
    afterAll(async () => {
      await h?.close();
    });

    it('is a gzipped JSON file of every job, without signed links, built without stalling the bot', async () => {
      const bound = Math.max(MAX_STALL_MS, 3 * (await idleStallMs(2000)));
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const m = await h.fake
        .sendCommand({ name: 'privacy', subcommand: 'export', userId: member })
        .waitForMessage((msg) => msg.attachments.length > 0, 120_000);
      delay.disable();
      const stallMs = delay.max / 1e6;
      expect(m.ephemeral).toBe(true);
      const [file] = m.attachments;
      expect(String(file?.['filename'])).toMatch(/\.json\.gz$/);
      const raw = Buffer.from(await (await fetch(String(file?.['url']))).arrayBuffer());
      // gzip's magic bytes, then the whole document.
      expect([raw[0], raw[1]]).toEqual([0x1f, 0x8b]);
      const text = gunzipSync(raw).toString();
      const data = JSON.parse(text) as { member: string; jobs: { id: string; parameters: object }[] };
      expect(data.member).toBe(member);
      expect(data.jobs).toHaveLength(JOBS);
      expect(new Set(data.jobs.map((j) => j.id)).size).toBe(JOBS);
      expect(text).toContain('https://cdn.discordapp.com/attachments/1/19999/cat.png');
      expect(text).not.toMatch(/[?&](ex|is|hm)=/);
      expect(stallMs).toBeLessThan(bound);
    }, 180_000);
  });
}
