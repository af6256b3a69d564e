/**
 * A burst of commands is answered before the first of its jobs' follow-up work (the service
 * call and what comes with it) competes with the rest: FirstAnswers and its use in runJob.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { FirstAnswers } from '../src/services/discord/interactions/first-answers.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { needs } from './helpers/requirements.js';

describe('FirstAnswers', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('settles at once when nothing is owed, else when the last answer is paid (each once)', async () => {
    const answers = new FirstAnswers();
    let settled = false;
    await answers.settled(1000);
    const a = answers.owe();
    const b = answers.owe();
    void answers.settled(60_000).then(() => (settled = true));
    a();
    a();
    await Promise.resolve();
    expect(answers.owed).toBe(1);
    expect(settled).toBe(false);
    b();
    await vi.waitFor(() => expect(settled).toBe(true));
    expect(answers.owed).toBe(0);
  });

  it('waits only for the interactions that arrived before it began: a steady stream holds no one', async () => {
    const answers = new FirstAnswers();
    const first = answers.owe();
    let settled = false;
    void answers.settled(60_000).then(() => (settled = true));
    // Commands keep arriving (and some stay unanswered) after the wait began.
    const later = [answers.owe(), answers.owe()];
    later[0]?.();
    await Promise.resolve();
    expect(settled).toBe(false);
    first();
    await vi.waitFor(() => expect(settled).toBe(true));
    expect(answers.owed).toBe(1);
    // A wait that began after them waits for the one still owed.
    let second = false;
    void answers.settled(60_000).then(() => (second = true));
    answers.owe();
    await Promise.resolve();
    expect(second).toBe(false);
    later[1]?.();
    await vi.waitFor(() => expect(second).toBe(true));
  });

  it('waits no longer than asked for an answer that does not come', async () => {
    vi.useFakeTimers();
    const answers = new FirstAnswers();
    answers.owe();
    let settled = false;
    void answers.settled(1000).then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(true);
  });
});

for (const redis of [false, true]) {
  describe(`a burst of job commands on ${redis ? 'redis' : 'sqlite'}`, redis ? needs('redis') : {}, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await startHarness({ webhooks: true, ...(redis ? { redis: true } : {}) });
    }, 60_000);
    afterAll(async () => {
      await h?.close();
    });

    it('every command is answered before the first job goes to the service', async () => {
      const count = 20;
      const submissionsBefore = h.emulator.requests.length;
      const requestsBefore = h.fake.requests.length;
      const commands = Array.from({ length: count }, (_, i) =>
        h.fake.sendCommand({
          name: 'extend-song',
          userId: h.fake.addUser({ username: `burst-${i}` }),
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        }),
      );
      const submissions = () =>
        h.emulator.requests.slice(submissionsBefore).filter((r) => r.path === '/song-extend');
      // Every job is submitted in the end.
      await eventually(() => submissions().length >= count, 20_000, 'every job submitted');
      const answers = h.fake.requests
        .slice(requestsBefore)
        .filter((r) => r.method === 'POST' && r.path.endsWith('/callback'));
      expect(answers).toHaveLength(count);
      for (const c of commands) expect(answers.some((a) => a.path.includes(`/${c.id}/`))).toBe(true);
      const lastAnswer = Math.max(...answers.map((a) => a.at));
      const firstSubmission = Math.min(...submissions().map((s) => s.receivedAt));
      expect(firstSubmission).toBeGreaterThanOrEqual(lastAnswer);
    });
  });
}
