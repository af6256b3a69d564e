/**
 * AutoMod refusing text the service wrote (here a song's lyrics), not the member: the
 * message was refused again after the member's text was withheld, and the edit was
 * dropped, so a finished job stayed on its last percentage for good. Now the final goes
 * once more without any free text, on the in-process edit queue and on BullMQ alike.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import type { FakeMessage } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';

const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});

for (const redis of [false, true])
  describe(
    `AutoMod refusing the service's text, ${redis ? 'BullMQ edits (Redis)' : 'in-process edits'}`,
    redis ? needs('redis') : {},
    () => {
      let h: Harness;
      beforeAll(async () => {
        h = await startHarness({ webhooks: true, redis });
      }, 60_000);
      afterAll(async () => {
        await h?.close();
      });

      it('the final is shown without the lyrics, with its buttons and links; the job is done', async () => {
        // The emulator's lyrics read "Emulated lyrics, take N": a server rule against that word.
        h.fake.setAutoModKeywords(h.fake.guildId, ['emulated']);
        try {
          const cmd = h.fake.sendCommand({
            name: 'extend-song',
            options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
          });
          const first = await cmd.message(10_000);
          const final = await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 20_000);
          expect(text(final)).not.toMatch(/emulated/i);
          // The links are still there: every result URL stays in the message.
          expect(text(final)).toMatch(/https?:\/\/[^"]+\.wav/);
          const job = await eventually(
            async () => {
              const j = await h.app.store.getByMessageId(first.id);
              return j?.finalShownAt !== undefined ? j : undefined;
            },
            10_000,
            'the final recorded as shown',
          );
          expect(job.state).toBe('finished');
          // The record keeps the lyrics (the member's own /tasks is ephemeral): only the public message lost them.
          expect(JSON.stringify(job.result)).toMatch(/Emulated lyrics/);
          expect(h.fake.autoModBlocks.length).toBeGreaterThan(0);
          h.fake.assertNoViolations();
        } finally {
          h.fake.setAutoModKeywords(h.fake.guildId, []);
        }
      });
    },
  );
