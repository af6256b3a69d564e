/**
 * The operator's limits through the real bot, the fake Discord and the emulator, on SQLite and
 * on Redis: ALLOWED_GUILD_IDS refuses jobs in a stranger's server before any service call
 * (and `/tasks`, `/privacy`, `/settings` still answer there); OPERATOR_DAILY_CREDITS refuses
 * the submission past the day's last credit, saying when it resets, in the member's language;
 * a submission the service refused gives its credits back; every command states
 * `integration_types`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextUtcMidnight } from '../src/services/community/fair-use.js';
import { t } from '../src/i18n/index.js';
import { FIXTURE_SONG_IDS, FIXTURE_SONG_TASK_ID } from './emulator/server.js';
import type { FakeMessage } from './fake-discord/index.js';
import { eventually, startHarness, type Harness } from './helpers/harness.js';
import { controls } from './helpers/message-text.js';
import { uniquePng } from './helpers/photos.js';
import { needs } from './helpers/requirements.js';

const ALLOWED = '900000000000000001';
const MANAGE = String((1n << 5n) | (1n << 10n) | (1n << 11n));
const MEMBER = String((1n << 10n) | (1n << 11n));
const text = (m: FakeMessage | undefined) => JSON.stringify(m?.data ?? {});

for (const redis of [false, true])
  describe(`operator limits on ${redis ? 'redis' : 'sqlite'}`, redis ? needs('redis') : {}, () => {
    let h: Harness;
    let stranger: string;
    let alice: string;
    let admin: string;
    let png: Buffer;
    /** Submissions that reached the media service (operation paths; reads and the account excluded). */
    const submissions = () =>
      h.emulator.requests.filter((r) => r.method === 'POST' && !r.path.startsWith('/fetch')).length;
    const upscale = (userId: string, extra: { guildId?: string; locale?: string } = {}) =>
      h.fake.sendCommand({
        name: 'upscale',
        userId,
        ...extra,
        options: { prompt: 'a lighthouse' },
        attachments: { image: { filename: 'l.png', contentType: 'image/png', bytes: png } },
      });
    const settingsShow = async (guildId?: string) =>
      (
        await h.fake
          .sendCommand({
            name: 'settings',
            subcommand: 'show',
            userId: admin,
            ...(guildId ? { guildId } : {}),
          })
          .message(10_000)
      ).content;

    beforeAll(async () => {
      png = await uniquePng();
      h = await startHarness({
        redis,
        webhooks: true,
        env: {
          // Global commands, so they are offered in the second server too.
          DISCORD_GUILD_ID: '',
          ALLOWED_GUILD_IDS: ALLOWED,
          OPERATOR_DAILY_CREDITS: '3',
          CREDIT_COSTS: 'upscale=1,extend-song=2',
        },
        fake: { guild: { id: ALLOWED, channels: [{ name: 'general' }] } },
      });
      alice = h.fake.addUser({ username: 'alice', permissions: MEMBER });
      admin = h.fake.addUser({ username: 'admin', permissions: MANAGE });
      stranger = h.fake.addGuild({ name: 'strangers' });
      h.fake.addMember(stranger, alice, { permissions: MEMBER });
      h.fake.addMember(stranger, admin, { permissions: MANAGE });
    }, 60_000);
    afterAll(async () => {
      await h?.close();
    });

    it('every command states integration_types [0] (server install) and where it works', () => {
      const registered = h.fake.globalCommands;
      expect(registered).toHaveLength(9);
      for (const c of registered) expect(c['integration_types'], String(c['name'])).toEqual([0]);
      const contexts = Object.fromEntries(registered.map((c) => [c['name'], c['contexts']]));
      expect(contexts).toMatchObject({
        upscale: [0],
        'extend-song': [0],
        'extend-video': [0],
        'training-photos': [0],
        settings: [0],
        'Remove result': [0],
        'Upscale image': [0],
        tasks: [0, 1],
        privacy: [0, 1],
      });
    });

    it('a stranger’s server: job commands refused before any service call; /tasks, /privacy and /settings answer', async () => {
      const before = submissions();
      const refused = await upscale(alice, { guildId: stranger }).message(10_000);
      expect(refused.ephemeral).toBe(true);
      expect(refused.content).toBe(t('en-US', 'refusal.server_not_allowed'));
      // In the member's language.
      const de = await upscale(alice, { guildId: stranger, locale: 'de' }).message(10_000);
      expect(de.content).toBe(t('de', 'refusal.server_not_allowed'));
      // A job form or next step would not start either: the song command, and no photo session.
      const song = await h.fake
        .sendCommand({
          name: 'extend-song',
          userId: alice,
          guildId: stranger,
          options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
        })
        .message(10_000);
      expect(song.content).toBe(t('en-US', 'refusal.server_not_allowed'));
      // Autocomplete reads no task from the service there (a read costs the operator's rate limit).
      const reads = h.emulator.requests.length;
      const ac = h.fake.sendAutocomplete({
        name: 'extend-song',
        userId: alice,
        guildId: stranger,
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: '' },
        focused: 'song_id',
      });
      await ac.response(10_000);
      expect(ac.choices).toEqual([]);
      await new Promise((r) => setTimeout(r, 200));
      expect(submissions()).toBe(before);
      expect(h.emulator.requests.slice(reads).filter((r) => r.path.startsWith('/fetch'))).toEqual([]);
      expect(await h.app.store.listByUser(alice)).toEqual([]);

      const tasks = await h.fake
        .sendCommand({ name: 'tasks', userId: alice, guildId: stranger })
        .message(10_000);
      expect(tasks.ephemeral).toBe(true);
      expect(text(tasks)).not.toContain(t('en-US', 'refusal.server_not_allowed'));
      const privacy = await h.fake
        .sendCommand({ name: 'privacy', subcommand: 'show', userId: alice, guildId: stranger })
        .message(10_000);
      expect(privacy.ephemeral).toBe(true);
      expect(privacy.content).toContain('keeps');
      const show = await settingsShow(stranger);
      expect(show).toContain(t('en-US', 'settings.show.not_allowed'));
      expect(await settingsShow()).not.toContain(t('en-US', 'settings.show.not_allowed'));
      h.fake.assertNoViolations();
    });

    it('the day’s last credit: a refused or failed submission gives it back; past it, refused with the reset time', async () => {
      // The service refuses the submission (unknown parent task): its 2 credits come back.
      const failed = h.fake.sendCommand({
        name: 'extend-song',
        userId: alice,
        options: { task_id: 'no-such-task', song_id: 'no-such-song' },
      });
      await failed.waitForMessage((m) => text(m).includes('not a known'), 10_000);
      await eventually(
        async () => (await settingsShow()).includes('**0** of 3 used'),
        10_000,
        'the failed submission’s credits back',
      );
      // 1 + 2 = the day's 3 credits.
      await upscale(alice).waitForMessage((m) => text(m).includes('Upscale again'), 20_000);
      const song = h.fake.sendCommand({
        name: 'extend-song',
        userId: admin,
        options: { task_id: FIXTURE_SONG_TASK_ID, song_id: FIXTURE_SONG_IDS[0] },
      });
      expect((await song.message(10_000)).ephemeral).toBe(false);
      expect(await settingsShow()).toContain('**3** of 3 used, 0 left');

      // Its submission follows its public reply: the count settles when its result is in.
      const finished = await song.waitForMessage((m) => text(m).includes('Extend song 1'), 20_000);
      const before = submissions();
      const past = await upscale(alice).message(10_000);
      expect(past.ephemeral).toBe(true);
      const resetAt = `<t:${Math.ceil(nextUtcMidnight(Date.now()) / 1000)}:R>`;
      expect(past.content).toBe(t('en-US', 'refusal.operator_credits', { resetAt }));
      const ja = await upscale(alice, { locale: 'ja' }).message(10_000);
      expect(ja.content).toBe(t('ja', 'refusal.operator_credits', { resetAt }));
      // A next step of the finished song is a submission too: refused the same way.
      const nextStep = h.fake.sendButton({
        customId: buttonId(finished, 'Extend song 1'),
        messageId: finished.id,
        userId: admin,
      });
      const refusedStep = await eventually(() => nextStep.followUps[0] ?? nextStep.originalMessage, 10_000);
      expect(refusedStep.content).toBe(t('en-US', 'refusal.operator_credits', { resetAt }));
      await new Promise((r) => setTimeout(r, 200));
      expect(submissions()).toBe(before);

      // The operator sees the bill: spent (refunds apart) and the ceiling.
      const metrics = await (await fetch(`${h.baseUrl}/metrics`)).text();
      expect(metric(metrics, 'mediabot_operator_credits_spent_total')).toBe(5);
      expect(metric(metrics, 'mediabot_operator_credits_refunded_total')).toBe(2);
      expect(metric(metrics, 'mediabot_operator_daily_credits')).toBe(3);
      h.fake.assertNoViolations();
    });

    it('Retry from /tasks in a stranger’s server is refused too; /tasks shows the job there', async () => {
      const job = (await h.app.store.listByUser(alice)).find((j) => j.state === 'finished');
      expect(job).toBeDefined();
      const card = await h.fake
        .sendCommand({ name: 'tasks', userId: alice, guildId: stranger, options: { id: job?.id ?? '' } })
        .message(10_000);
      expect(card.ephemeral).toBe(true);
      const before = submissions();
      const retry = h.fake.sendButton({
        customId: buttonId(card, 'Retry'),
        messageId: card.id,
        userId: alice,
        guildId: stranger,
      });
      const refusal = await eventually(() => retry.followUps[0] ?? retry.originalMessage, 10_000);
      expect(refusal.content).toBe(t('en-US', 'refusal.server_not_allowed'));
      await new Promise((r) => setTimeout(r, 200));
      expect(submissions()).toBe(before);
      h.fake.assertNoViolations();
    });
  });

/** The custom id of the button with this label on a message. */
function buttonId(m: FakeMessage, label: string): string {
  const c = controls<{ label?: string; custom_id?: string }>(m).find((x) => x.label === label);
  if (!c?.custom_id) throw new Error(`no button "${label}"`);
  return c.custom_id;
}

/** A metric's value (its first sample) from the Prometheus text. */
function metric(body: string, name: string): number {
  const line = body.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return Number(line?.split(' ').pop());
}
