/**
 * /tasks: the job centre. Pages of 10 newest first with Previous/Next for the
 * invoker only, other members' jobs never shown, `id:` by task id or job id
 * (owner or Manage Server), Re-post as a fresh public message, Refresh from the service.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTasksId } from '../src/services/discord/interactions/custom-ids.js';
import { LOCALES, translator } from '../src/i18n/index.js';
import type { Operation } from '../src/services/media/types.js';
import type { JobRecord, JobState } from '../src/services/store/types.js';
import { walkComponents } from './helpers/message-text.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import type { FakeMessage } from './fake-discord/index.js';
import { startHarness, type Harness } from './helpers/harness.js';
import { controls, customIds, isCardMessage, messageText } from './helpers/message-text.js';

const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});
const MEMBER = String(1n << 11n);
const MANAGE = String((1n << 5n) | (1n << 11n));

function buttons(m: FakeMessage): { custom_id: string; label: string; disabled?: boolean }[] {
  return controls<{ custom_id: string; label: string; disabled?: boolean }>(m);
}
const lineCount = (m: FakeMessage) => String(m.data['content']).split('\n').length - 1;

describe('/tasks job centre', () => {
  let h: Harness;
  let alice: string;
  let bob: string;
  let carol: string;
  let admin: string;

  const seed = async (userId: string, n: number, label: string) => {
    for (let k = 0; k < n; k++) {
      await h.app.jobs.create({
        operation: 'upscale',
        userId,
        params: { prompt: `${label} ${k}` },
        message: { channelId: h.fake.defaultChannelId, guildId: h.fake.guildId },
      });
    }
  };

  beforeAll(async () => {
    h = await startHarness({ webhooks: true, env: { DEFAULT_MAX_ACTIVE_JOBS: '10' } });
    alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
    bob = h.fake.addUser({ username: 'bob', permissions: MEMBER });
    carol = h.fake.addUser({ username: 'carol', permissions: MEMBER });
    admin = h.fake.addUser({ username: 'admin', permissions: MANAGE });
    await seed(alice, 23, 'alice');
    await seed(bob, 35, 'bob');
  });
  afterAll(async () => {
    await h?.close();
  });

  it.each([
    ['alice', 23, 3, 3],
    ['bob', 35, 4, 5],
  ])('%s: %i jobs → %i pages of 10, newest first, Previous/Next', async (who, total, pages, last) => {
    const userId = who === 'alice' ? alice : bob;
    const other = who === 'alice' ? 'bob' : 'alice';
    const cmd = h.fake.sendCommand({ name: 'tasks', userId });
    let msg = await cmd.message(10_000);
    expect(msg.ephemeral).toBe(true);
    expect(text(msg)).toContain(`page 1 of ${pages}`);
    expect(lineCount(msg)).toBe(10);
    expect(buttons(msg).find((b) => b.label === 'Previous')?.disabled).toBe(true);
    const seen: string[] = [];
    for (let p = 1; p <= pages; p++) {
      expect(text(msg)).toContain(`page ${p} of ${pages}`);
      expect(text(msg)).not.toContain(other);
      seen.push(String(msg.data['content']));
      if (p < pages) {
        const next = buttons(msg).find((b) => b.label === 'Next');
        const click = h.fake.sendButton({ customId: next?.custom_id ?? '', messageId: msg.id, userId });
        await click.response(10_000);
        msg = h.fake.messages.get(msg.id) ?? msg;
      }
    }
    expect(lineCount(msg)).toBe(last);
    expect(buttons(msg).find((b) => b.label === 'Next')?.disabled).toBe(true);
    // Newest first: the first line of page 1 is the last job seeded.
    expect(seen[0]?.split('\n')[1]).toBeDefined();
    expect(
      seen
        .join('\n')
        .split('\n')
        .filter((l) => l.includes('Upscale')).length,
    ).toBe(total);
  });

  it('another member cannot page someone else’s list', async () => {
    const msg = await h.fake.sendCommand({ name: 'tasks', userId: alice }).message(10_000);
    const next = buttons(msg).find((b) => b.label === 'Next');
    const click = h.fake.sendButton({ customId: next?.custom_id ?? '', messageId: msg.id, userId: carol });
    const reply = await click.message(10_000);
    expect(text(reply)).toContain('belongs to someone else');
  });

  it('a German member reads the list, its buttons and a refusal in German; an unknown language reads English', async () => {
    const de = translator('de');
    const msg = await h.fake.sendCommand({ name: 'tasks', userId: alice, locale: 'de' }).message(10_000);
    expect(String(msg.data['content'])).toContain(de.t('tasks.header', { page: 1, pages: 3 }));
    expect(buttons(msg).map((b) => b.label)).toEqual(
      expect.arrayContaining([de.t('buttons.previous'), de.t('buttons.next')]),
    );
    expect(text(msg)).toContain(de.t('tasks.open_placeholder'));
    expect(text(msg)).toContain(`· ${de.t('job.state.submitting')}`);
    // The list lines themselves (not only the menu) are German, whatever the server speaks.
    const listLines = String(msg.data['content']).split('\n').slice(1);
    expect(listLines).toHaveLength(10);
    for (const l of listLines) {
      expect(l).toContain(`**${de.t('operations.upscale.title')}** · ${de.t('job.state.submitting')}`);
    }
    // The list's owner pages in English; a German stranger is refused in German.
    const next = buttons(msg).find((b) => b.label === de.t('buttons.next'));
    const refused = await h.fake
      .sendButton({ customId: next?.custom_id ?? '', messageId: msg.id, userId: carol, locale: 'de' })
      .message(10_000);
    expect(refused.ephemeral).toBe(true);
    expect(String(refused.data['content'])).toBe(de.t('tasks.not_yours'));
    const unknown = await h.fake
      .sendCommand({ name: 'tasks', userId: carol, locale: 'de', options: { id: 'no-such-task' } })
      .message(10_000);
    expect(String(unknown.data['content'])).toBe(de.t('tasks.not_found', { id: 'no-such-task' }));
    // Korean is not one of the bot's languages and the server is English: English.
    const ko = await h.fake.sendCommand({ name: 'tasks', userId: alice, locale: 'ko' }).message(10_000);
    expect(String(ko.data['content'])).toContain('**Your jobs** · page 1 of 3 · newest first');
    expect(buttons(ko).map((b) => b.label)).toContain('Next');
  });

  it('id: by task id and by job id for the owner; someone else’s job answers like an unknown one; Manage Server sees it', async () => {
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: carol,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    const job = (await h.app.store.listByUser(carol, 1))[0];
    expect(job?.taskId).toBeDefined();
    for (const id of [job?.taskId ?? '', job?.id ?? '']) {
      const own = await h.fake.sendCommand({ name: 'tasks', userId: carol, options: { id } }).message(10_000);
      expect(own.ephemeral).toBe(true);
      // The result card itself, ephemeral (64 | 1 << 15), nothing beside it, each custom_id once.
      expect(own.flags & (64 | 32768)).toBe(64 | 32768);
      expect(own.content).toBe('');
      expect(own.embeds).toEqual([]);
      expect(messageText(own)).toContain('Timeline');
      expect(buttons(own).map((b) => b.label)).toEqual(
        expect.arrayContaining(['Extend song 1', 'Extend song 2', 'Retry', 'Re-post', 'Refresh']),
      );
      expect(new Set(customIds(own)).size).toBe(customIds(own).length);
    }
    // In the member's language: a German member gets the card, its timeline and its buttons in German.
    const de = await h.fake
      .sendCommand({ name: 'tasks', userId: carol, options: { id: job?.id ?? '' }, locale: 'de' })
      .message(10_000);
    expect(messageText(de)).toContain('**Verlauf:**');
    expect(messageText(de)).toContain('KI-generiert');
    expect(buttons(de).map((b) => b.label)).toEqual(
      expect.arrayContaining(['Song 2 verlängern', 'Erneut posten', 'Aktualisieren']),
    );
    const other = await h.fake
      .sendCommand({ name: 'tasks', userId: bob, options: { id: job?.taskId ?? '' } })
      .message(10_000);
    expect(text(other)).toContain('among your jobs');
    expect(text(other)).not.toContain('Timeline');
    const mod = await h.fake
      .sendCommand({ name: 'tasks', userId: admin, options: { id: job?.id ?? '' } })
      .message(10_000);
    expect(text(mod)).toContain('Timeline');

    // Re-post: a fresh public message with the result; Refresh: reads the task from the service now.
    const detail = await h.fake
      .sendCommand({ name: 'tasks', userId: carol, options: { id: job?.id ?? '' } })
      .message(10_000);
    const repost = buttons(detail).find((b) => b.label === 'Re-post');
    const rp = h.fake.sendButton({ customId: repost?.custom_id ?? '', messageId: detail.id, userId: carol });
    const fresh = await rp.message(10_000);
    expect(fresh.ephemeral).toBe(false);
    expect(isCardMessage(fresh)).toBe(true);
    expect(text(fresh)).toContain('Extend song 2');
    const fetchesBefore = h.emulator.requests.filter((r) => r.path === '/fetch').length;
    const refresh = buttons(detail).find((b) => b.label === 'Refresh');
    await h.fake
      .sendButton({ customId: refresh?.custom_id ?? '', messageId: detail.id, userId: carol })
      .response(10_000);
    await h.fake.waitFor(
      () => h.emulator.requests.filter((r) => r.path === '/fetch').length > fetchesBefore,
      {
        timeoutMs: 10_000,
      },
    );
    h.fake.assertNoViolations();
  });

  it('a removed result: the detail is the removed card without buttons, Re-post refuses', async () => {
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: carol,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[1] },
    });
    await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    const job = (await h.app.store.listByUser(carol, 1))[0];
    if (!job) throw new Error('no job');
    const detailBefore = await h.fake
      .sendCommand({ name: 'tasks', userId: carol, options: { id: job.id } })
      .message(10_000);
    const repost = buttons(detailBefore).find((b) => b.label === 'Re-post');
    await h.app.store.apply(job.id, { removed: { by: admin }, at: Date.now() });
    const detail = await h.fake
      .sendCommand({ name: 'tasks', userId: carol, options: { id: job.id } })
      .message(10_000);
    expect(isCardMessage(detail)).toBe(true);
    expect(messageText(detail)).toContain('removed by a moderator');
    expect(buttons(detail)).toEqual([]);
    expect(messageText(detail)).not.toMatch(/https:\/\/[^\s)]*\.(mp3|mp4|png|jpe?g)/);
    const publicCount = () => [...h.fake.messages.values()].filter((m) => !m.ephemeral).length;
    const before = publicCount();
    const refused = await h.fake
      .sendButton({ customId: repost?.custom_id ?? '', messageId: detailBefore.id, userId: carol })
      .message(10_000);
    expect(refused.ephemeral).toBe(true);
    expect(refused.content).toContain('cannot be re-posted');
    // Nothing public was posted.
    expect(publicCount()).toBe(before);
    h.fake.assertNoViolations();
  });

  it('Re-post of a result older than a day: refused unless a gallery post kept its files', async () => {
    const cmd = h.fake.sendCommand({
      name: 'extend-song',
      userId: carol,
      options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
    });
    await cmd.waitForMessage((m) => text(m).includes('Extend song 2'), 15_000);
    const ran = (await h.app.store.listByUser(carol, 1))[0];
    if (!ran) throw new Error('no job');
    const twoDaysAgo = Date.now() - 2 * 86_400_000;
    // The same result, finished two days ago: once without a gallery copy, once with one.
    const old = async (galleryPost?: { channelId: string; messageId: string }) => {
      const { taskId: _taskId, ...rest } = ran;
      const id = randomUUID();
      await h.app.store.create({
        ...rest,
        id,
        createdAt: twoDaysAgo - 60_000,
        updatedAt: twoDaysAgo,
        finishedAt: twoDaysAgo,
        ...(galleryPost ? { galleryPost } : {}),
      });
      const detail = await h.fake
        .sendCommand({ name: 'tasks', userId: carol, options: { id } })
        .message(10_000);
      const repost = buttons(detail).find((b) => b.label === 'Re-post');
      return h.fake
        .sendButton({ customId: repost?.custom_id ?? '', messageId: detail.id, userId: carol })
        .message(10_000);
    };
    const refused = await old();
    expect(refused.ephemeral).toBe(true);
    expect(refused.content).toContain('links may have expired');
    const kept = await old({ channelId: h.fake.defaultChannelId, messageId: '123456789012345678' });
    expect(kept.ephemeral).toBe(false);
    expect(text(kept)).toContain('Extend song 2');
    h.fake.assertNoViolations();
  });

  /** A 19-digit snowflake, as Discord's ids are today (the longest links). */
  const snowflake = (n: number) => String(1_300_000_000_000_000_000n + BigInt(n));
  const DISCORD_LINK = /^https:\/\/discord\.com\/channels\/\d{19}\/\d{19}\/\d{19}$/;
  /** A job with every part of its list line at its longest: a 64-character task id, an error code, 19-digit ids. */
  const longJob = async (userId: string, k: number, extra: Partial<JobRecord> = {}): Promise<JobRecord> => {
    const ops: Operation[] = ['video', 'song', 'upload', 'upscale'];
    const states: JobState[] = ['failed', 'finished', 'processing', 'queued'];
    const state = states[k % states.length] ?? 'failed';
    const now = Date.now();
    const job: JobRecord = {
      id: randomUUID(),
      secret: 'ab'.repeat(16),
      operation: ops[k % ops.length] ?? 'video',
      userId,
      message: { guildId: snowflake(0), channelId: snowflake(1), messageId: snowflake(1000 + k) },
      params: { prompt: `long job ${k}` },
      taskId: `${k}`.padStart(4, '0') + 'f'.repeat(60),
      state,
      percentage: state === 'processing' ? 55 : state === 'finished' ? 100 : 0,
      ...(state === 'failed' ? { error: { code: `E${k}_`.padEnd(40, 'X'), message: 'nope' } } : {}),
      createdAt: now - 3_600_000 + k * 1000,
      updatedAt: now,
      ...(state === 'failed' || state === 'finished'
        ? { finishedAt: now, finalShownAt: now, settledAt: now }
        : {}),
      version: 1,
      ...extra,
    };
    await h.app.store.create(job);
    return job;
  };

  it.each(LOCALES.map((l) => [l]))(
    '%s: 10 long jobs page on whole lines within 2000 characters, every job once, menus numbered alike',
    async (locale) => {
      const tr = translator(locale);
      const userId = h.fake.addUser({ username: `long-${locale}`, permissions: MEMBER });
      const jobs: JobRecord[] = [];
      for (let k = 0; k < 10; k++) jobs.push(await longJob(userId, k));
      let msg = await h.fake.sendCommand({ name: 'tasks', userId, locale }).message(10_000);
      const header = /^(.*)$/m.exec(String(msg.data['content']))?.[1] ?? '';
      const pages = [1, 2, 3, 4, 5].find((n) => header === tr.t('tasks.header', { page: 1, pages: n }));
      expect(pages, header).toBeDefined();
      const seen: string[] = [];
      for (let p = 1; p <= (pages ?? 0); p++) {
        const content = String(msg.data['content']);
        expect(content.length).toBeLessThanOrEqual(2000);
        const [head, ...lines] = content.split('\n');
        expect(head).toBe(tr.t('tasks.header', { page: p, pages: pages ?? 0 }));
        expect(lines.length).toBeGreaterThan(0);
        expect(lines.length).toBeLessThanOrEqual(10);
        // Each line whole: it ends with its message link, closed, and shows the whole task id.
        for (const line of lines) {
          const link = /\]\(([^)]+)\)$/.exec(line)?.[1] ?? '';
          expect(link, line).toMatch(DISCORD_LINK);
          expect(line).toMatch(/`\d{4}f{60}`/);
          seen.push(link);
        }
        // The menu offers the page's jobs, numbered on from the previous pages.
        const menu = walkComponents(msg.data['components']).find((c) => c['type'] === 3);
        const labels = (menu?.['options'] as { label: string }[] | undefined)?.map((o) => o.label) ?? [];
        expect(labels.map((l) => Number(l.split('.')[0]))).toEqual(
          lines.map((_, n) => seen.length - lines.length + n + 1),
        );
        const next = buttons(msg).find((b) => b.label === tr.t('buttons.next'));
        if (p < (pages ?? 0)) {
          expect(next?.disabled).toBe(false);
          await h.fake
            .sendButton({ customId: next?.custom_id ?? '', messageId: msg.id, userId, locale })
            .response(10_000);
          const id = msg.id;
          await h.fake.waitFor(
            () => !String(h.fake.messages.get(id)?.data['content']).startsWith(head ?? ''),
            {
              timeoutMs: 10_000,
            },
          );
          msg = h.fake.messages.get(id) ?? msg;
        } else if (next !== undefined) expect(next.disabled).toBe(true);
      }
      // Every job exactly once, newest first.
      expect(seen).toEqual(
        [...jobs]
          .reverse()
          .map(
            (j) =>
              `https://discord.com/channels/${j.message.guildId}/${j.message.channelId}/${j.message.messageId}`,
          ),
      );
      h.fake.assertNoViolations();
    },
  );

  it('a job’s detail with many follow-ups keeps whole lines and whole links within 2000 characters', async () => {
    const de = translator('de');
    const userId = h.fake.addUser({ username: 'parent-of-many', permissions: MEMBER });
    const parent = await longJob(userId, 2); // processing: a classic message, not a card
    const link = `https://discord.com/channels/${parent.message.guildId}/${parent.message.channelId}/${parent.message.messageId}`;
    for (let k = 0; k < 20; k++)
      await longJob(userId, 1, {
        message: { guildId: snowflake(0), channelId: snowflake(1), messageId: snowflake(2000 + k) },
        params: { extended_from: link },
      });
    const msg = await h.fake
      .sendCommand({ name: 'tasks', userId, locale: 'de', options: { id: parent.id } })
      .message(10_000);
    const content = String(msg.data['content']);
    expect(content.length).toBeLessThanOrEqual(2000);
    for (const url of content.match(/https:\/\/discord\.com\/channels\/[^\s)]*/g) ?? [])
      expect(url).toMatch(DISCORD_LINK);
    expect(content).toContain(de.t('tasks.detail.message', { link }));
    expect(content).toContain(de.t('result.more', { count: 12 }));
    h.fake.assertNoViolations();
  });

  it('custom ids: forged or oversized ones are not parsed', () => {
    expect(parseTasksId('tasks:page:123:1')).toBeUndefined();
    expect(parseTasksId(`tasks:page:${'1'.repeat(18)}:1`)).toEqual({
      kind: 'page',
      userId: '1'.repeat(18),
      page: 1,
    });
    expect(parseTasksId('tasks:repost:../../x')).toBeUndefined();
    expect(parseTasksId('tasks:open:123')).toBeUndefined();
    expect(parseTasksId(`tasks:open:${'1'.repeat(18)}:x`)).toBeUndefined();
    expect(parseTasksId(`tasks:open:${'1'.repeat(18)}`)).toEqual({ kind: 'open', userId: '1'.repeat(18) });
    expect(parseTasksId(`tasks:refresh:${'a'.repeat(90)}`)).toBeUndefined();
  });
});
