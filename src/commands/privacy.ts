import { SlashCommandBuilder } from '@discordjs/builders';
import { ButtonStyle, ComponentType } from 'discord-api-types/v10';
import type { BotInteraction } from '../services/discord/interactions/interaction.js';
import {
  PRIVACY_CONFIRM_MS,
  parsePrivacyId,
  privacyCancelId,
  privacyDeleteId,
} from '../services/discord/interactions/custom-ids.js';
import { translatorFor, type Translator } from '../i18n/index.js';
import type { CleanupFailure } from '../services/privacy/public-cleanup.js';
import { EXPORT_INTERVAL_MS } from '../services/privacy/member-data.js';
import { UserError, type BotContext, type Command, type ComponentHandler } from './types.js';
import { where } from './where.js';

/**
 * `/privacy`: what the bot keeps about the member, from a server or a DM, always
 * ephemeral. `show` counts it and says how long each kind is kept, `export` hands
 * it over as a JSON file, `delete` deletes it after a confirmation button.
 */

const data = new SlashCommandBuilder()
  .setName('privacy')
  .setDescription('What the bot keeps about you: see it, export it or delete it')
  .addSubcommand((s) => s.setName('show').setDescription('What the bot keeps about you, and for how long'))
  .addSubcommand((s) =>
    s.setName('export').setDescription('Everything the bot keeps about you, as a JSON file'),
  )
  .addSubcommand((s) =>
    s.setName('delete').setDescription('Delete your jobs, photo sessions and gallery posts in every server'),
  )
  .toJSON();

/** Discord's smallest upload limit. */
const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

async function show(i: BotInteraction, ctx: BotContext, tr: Translator): Promise<void> {
  const s = await ctx.memberData.summary(i.user.id);
  const r = ctx.retention;
  const content = [
    tr.t('privacy.show.title'),
    tr.t('privacy.show.jobs', { count: s.jobs, days: r.jobDays }),
    tr.t('privacy.show.sessions', { count: s.sessions, hours: r.sessionHours }),
    tr.t('privacy.show.consents', { count: s.consents, days: r.consentDays }),
    tr.t('privacy.show.gallery', { count: s.posts }),
    '',
    tr.t('privacy.show.after_delete'),
    '',
    tr.t('privacy.show.service'),
  ].join('\n');
  await i.reply({ content }, { ephemeral: true });
}

async function exportData(i: BotInteraction, ctx: BotContext, tr: Translator): Promise<void> {
  const retryAt = await ctx.memberData.claimExport(i.user.id);
  if (retryAt !== undefined)
    throw new UserError(
      'export_too_soon',
      tr.t('privacy.export.too_soon', {
        minutes: Math.round(EXPORT_INTERVAL_MS / 60_000),
        when: `<t:${Math.ceil(retryAt / 1000)}:R>`,
      }),
    );
  let file: { name: string; data: Buffer };
  try {
    file = await ctx.memberData.exportFile(i.user.id);
  } catch (err) {
    await ctx.memberData.releaseExport(i.user.id).catch(() => undefined);
    throw err;
  }
  if (file.data.length > MAX_UPLOAD_BYTES) {
    ctx.logger.warn({ bytes: file.data.length }, 'privacy export larger than an upload even gzipped');
    throw new UserError('export_too_large', tr.t('privacy.export.too_large'));
  }
  await i.reply(
    {
      content: tr.t('privacy.export.done'),
      files: [{ name: file.name, data: file.data, contentType: 'application/gzip' }],
    },
    { ephemeral: true },
  );
}

async function askToDelete(i: BotInteraction, ctx: BotContext, tr: Translator): Promise<void> {
  const s = await ctx.memberData.summary(i.user.id);
  if (s.jobs === 0 && s.sessions === 0 && s.consents === 0 && s.posts === 0) {
    await i.reply({ content: tr.t('privacy.delete.nothing') }, { ephemeral: true });
    return;
  }
  await i.reply(
    {
      content: tr.t('privacy.delete.confirm', {
        jobs: s.jobs,
        sessions: s.sessions,
        days: ctx.retention.consentDays,
      }),
      components: [
        {
          type: ComponentType.ActionRow,
          components: [
            {
              type: ComponentType.Button,
              style: ButtonStyle.Danger,
              label: tr.t('buttons.confirm_delete'),
              custom_id: privacyDeleteId(i.user.id, ctx.now()),
            },
            {
              type: ComponentType.Button,
              style: ButtonStyle.Secondary,
              label: tr.t('buttons.cancel'),
              custom_id: privacyCancelId(i.user.id),
            },
          ],
        },
      ],
    },
    { ephemeral: true },
  );
}

/** Refusals listed one by one in the deletion's answer; the rest are counted. */
const FAILURES_SHOWN = 10;
const FAILURE_KEY = {
  gallery: 'privacy.delete.failure.gallery',
  repost: 'privacy.delete.failure.repost',
  thread: 'privacy.delete.failure.thread',
  message: 'privacy.delete.failure.message',
} as const satisfies Record<CleanupFailure['what'], string>;

export const privacy: Command = {
  data: { ...data, ...where.serverAndDm },
  userInstall: 'member',
  ephemeral: true,
  async execute(interaction, ctx) {
    const tr = translatorFor(interaction);
    const sub = interaction.options.getSubcommand();
    if (sub === 'show') await show(interaction, ctx, tr);
    else if (sub === 'export') await exportData(interaction, ctx, tr);
    else await askToDelete(interaction, ctx, tr);
  },
};

/** The confirmation's buttons: only the member who asked, within PRIVACY_CONFIRM_MS. */
export const privacyButtons: ComponentHandler = {
  prefix: 'privacy:',
  async button(interaction, ctx) {
    const tr = translatorFor(interaction);
    const parsed = parsePrivacyId(interaction.customId);
    if (!parsed) throw new UserError('unknown_component', tr.t('privacy.delete.expired'));
    if (parsed.userId !== interaction.user.id) {
      throw new UserError('not_yours', tr.t('privacy.delete.not_yours'));
    }
    if (parsed.kind === 'cancel') {
      await interaction.update({ content: tr.t('privacy.delete.cancelled'), components: [] });
      return;
    }
    if (ctx.now() - parsed.issuedAt > PRIVACY_CONFIRM_MS) {
      await interaction.update({ content: tr.t('privacy.delete.expired'), components: [] });
      return;
    }
    // The buttons go at once (a second press cannot start a second deletion from this message).
    await interaction.update({ content: tr.t('privacy.delete.working'), components: [] });
    const report = await ctx.memberData.delete(interaction.user.id);
    const lines = [
      tr.t('privacy.delete.done', {
        jobs: report.jobs,
        sessions: report.sessions,
        posts: report.posts,
        running: report.running,
      }),
      tr.t('privacy.delete.public', {
        reposts: report.reposts,
        messages: report.messages,
        threads: report.threads,
      }),
    ];
    if (report.failures.length > 0) {
      lines.push(tr.t('privacy.delete.failed', { count: report.failures.length }));
      // Each refusal named (Discord's own words), within one message's length.
      for (const f of report.failures.slice(0, FAILURES_SHOWN))
        lines.push(
          `• ${tr.t(FAILURE_KEY[f.what], { channel: `<#${f.channelId}>` })}: ${f.reason.slice(0, 120)}`,
        );
      if (report.failures.length > FAILURES_SHOWN)
        lines.push(tr.t('result.more', { count: report.failures.length - FAILURES_SHOWN }));
    }
    if (report.keptByDiscord.length > 0) {
      // Personal jobs' messages past their interaction: the bot has no way to them, nor retries.
      lines.push(tr.t('privacy.delete.kept_by_discord', { count: report.keptByDiscord.length }));
      for (const k of report.keptByDiscord.slice(0, FAILURES_SHOWN))
        lines.push(`• ${tr.t(FAILURE_KEY[k.what], { channel: `<#${k.channelId}>` })}`);
      if (report.keptByDiscord.length > FAILURES_SHOWN)
        lines.push(tr.t('result.more', { count: report.keptByDiscord.length - FAILURES_SHOWN }));
    }
    if (report.consentsKept > 0)
      lines.push(
        tr.t('privacy.delete.kept', { consents: report.consentsKept, days: ctx.retention.consentDays }),
      );
    await interaction.editReply({ content: lines.join('\n') });
  },
};
