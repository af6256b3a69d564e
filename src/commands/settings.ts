import { discordTimestamp as ts } from '../services/shared/format.js';
import { SlashCommandBuilder } from '@discordjs/builders';
import { ChannelType, PermissionFlagsBits } from 'discord-api-types/v10';
import { hasPermission, type BotInteraction } from '../services/discord/interactions/interaction.js';
import { requireManageServer } from './preconditions.js';
import { nextUtcMidnight } from '../services/community/fair-use.js';
import { SETTING_NAMES, type SettingName, type SettingsPatch } from '../services/community/settings.js';
import { translatorFor, type Translator } from '../i18n/index.js';
import { UserError, type BotContext, type Command } from './types.js';
import { where } from './where.js';

const data = new SlashCommandBuilder()
  .setName('settings')
  .setDescription("This server's media bot settings (Manage Server)")
  .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
  .addSubcommand((s) =>
    s.setName('show').setDescription('Every setting, today’s credit use and the gallery status'),
  )
  .addSubcommand((s) =>
    s
      .setName('set')
      .setDescription('Change one or more settings')
      .addBooleanOption((o) => o.setName('threads').setDescription('Give each job its own thread'))
      .addChannelOption((o) =>
        o
          .setName('gallery')
          .setDescription('Channel where every finished result is also posted')
          .addChannelTypes(
            ChannelType.GuildText,
            ChannelType.GuildAnnouncement,
            ChannelType.GuildForum,
            ChannelType.GuildMedia,
          ),
      )
      .addIntegerOption((o) =>
        o
          .setName('max_active_jobs')
          .setDescription('Unfinished jobs one member may have at once')
          .setMinValue(1)
          .setMaxValue(50),
      )
      .addIntegerOption((o) =>
        o
          .setName('cooldown_seconds')
          .setDescription('Pause between two submissions of one member')
          .setMinValue(0)
          .setMaxValue(3600),
      )
      .addIntegerOption((o) =>
        o
          .setName('daily_credits')
          .setDescription('Credits this server may spend per UTC day (0 = no budget)')
          .setMinValue(0)
          .setMaxValue(1_000_000),
      ),
  )
  .addSubcommand((s) =>
    s
      .setName('reset')
      .setDescription('Back to the default')
      .addStringOption((o) =>
        o
          .setName('setting')
          .setDescription('Which setting')
          .setRequired(true)
          .addChoices(...[...SETTING_NAMES, 'all' as const].map((n) => ({ name: n, value: n }))),
      ),
  )
  .toJSON();

async function show(ctx: BotContext, guildId: string, tr: Translator): Promise<string> {
  const view = await ctx.settings.view(guildId);
  const e = view.effective;
  const source = (n: SettingName) => (view.own.has(n) ? 'server' : 'default');
  const now = ctx.now();
  const [used, everyone, balance] = await Promise.all([
    ctx.ledger.creditsUsed(guildId, now),
    ctx.ledger.operatorCreditsUsed(now),
    balanceLine(ctx, tr),
  ]);
  const ceiling = ctx.ledger.operatorDailyCredits;
  const costs = Object.entries(ctx.costs)
    .map(([cmd, c]) => `/${cmd} ${c}`)
    .join(', ');
  const lines = [
    tr.t('settings.show.title'),
    tr.t('settings.show.threads', { state: e.threads ? 'on' : 'off', source: source('threads') }),
    e.gallery
      ? tr.t('settings.show.gallery', { channel: `<#${e.gallery}>`, source: source('gallery') })
      : tr.t('settings.show.gallery_none', { source: source('gallery') }),
    tr.t('settings.show.max_active_jobs', { max: e.maxActiveJobs, source: source('max_active_jobs') }),
    tr.t('settings.show.cooldown_seconds', {
      seconds: e.cooldownSeconds,
      source: source('cooldown_seconds'),
    }),
    e.dailyCredits === 0
      ? tr.t('settings.show.daily_credits_none', { source: source('daily_credits') })
      : tr.t('settings.show.daily_credits', { credits: e.dailyCredits, source: source('daily_credits') }),
    '',
    e.dailyCredits > 0
      ? tr.t('settings.show.credits_budget', {
          used,
          budget: e.dailyCredits,
          left: Math.max(0, e.dailyCredits - used),
          resetAt: ts(nextUtcMidnight(now)),
        })
      : tr.t('settings.show.credits_no_budget', { used }),
    // The operator's bounds above this server's own (design: "Operator limits").
    ceiling > 0
      ? tr.t('settings.show.operator_ceiling', {
          used: everyone,
          ceiling,
          left: Math.max(0, ceiling - everyone),
          resetAt: ts(nextUtcMidnight(now)),
        })
      : tr.t('settings.show.operator_no_ceiling', { used: everyone }),
    ...(ctx.community.allowsJobsIn(guildId) ? [] : [tr.t('settings.show.not_allowed')]),
    tr.t('settings.show.costs', { costs }),
    ...balance,
    view.galleryError
      ? tr.t('settings.show.gallery_error', {
          at: ts(view.galleryError.at),
          error: view.galleryError.message,
        })
      : e.gallery
        ? tr.t('settings.show.gallery_ok')
        : '',
  ];
  return lines.filter((l, idx, all) => l !== '' || (idx > 0 && all[idx - 1] !== '')).join('\n');
}

/** The service account's balance, for managers, when the operator shows it (SHOW_ACCOUNT_BALANCE). */
async function balanceLine(ctx: BotContext, tr: Translator): Promise<string[]> {
  if (!ctx.showAccountBalance) return [];
  const r = await ctx.account.latest();
  if (!r) return [tr.t('settings.show.account_unknown')];
  return [
    r.plan
      ? tr.t('settings.show.account_plan', { credits: r.credits, plan: r.plan, at: ts(r.at) })
      : tr.t('settings.show.account_credits', { credits: r.credits, at: ts(r.at) }),
  ];
}

/**
 * A gallery is a channel the manager can see and post in: Discord sends, with the chosen
 * channel, the invoking member's permissions there (overwrites included). A manager of the
 * server could otherwise aim the gallery at a channel hidden from them.
 */
function assertManagerCanPost(channel: { id: string; permissions?: string }): void {
  let perms: bigint | undefined;
  try {
    perms = channel.permissions !== undefined ? BigInt(channel.permissions) : undefined;
  } catch {
    perms = undefined;
  }
  const needed = PermissionFlagsBits.ViewChannel | PermissionFlagsBits.SendMessages;
  const ok =
    perms !== undefined &&
    (hasPermission(perms, PermissionFlagsBits.Administrator) || hasPermission(perms, needed));
  if (!ok) {
    throw new UserError('gallery_member_no_access', (t) =>
      t.t('settings.gallery_member_no_access', { channel: `<#${channel.id}>` }),
    );
  }
}

function patchFrom(i: BotInteraction): SettingsPatch {
  const patch: SettingsPatch = {};
  const threads = i.options.getBoolean('threads');
  if (threads !== null) patch.threads = threads;
  const gallery = i.options.getChannel('gallery');
  if (gallery !== null) {
    assertManagerCanPost(gallery);
    patch.gallery = gallery.id;
  }
  const maxActive = i.options.getInteger('max_active_jobs');
  if (maxActive !== null) patch.maxActiveJobs = maxActive;
  const cooldown = i.options.getInteger('cooldown_seconds');
  if (cooldown !== null) patch.cooldownSeconds = cooldown;
  const credits = i.options.getInteger('daily_credits');
  if (credits !== null) patch.dailyCredits = credits;
  return patch;
}

export const settings = {
  data: { ...data, ...where.serverOnly },
  ephemeral: true,
  async execute(i, ctx) {
    const tr = translatorFor(i);
    // Discord hides the command from non-admins, but a server can change that: check again.
    const guildId = requireManageServer(i, (t) => t.t('settings.guild_only'));
    const sub = i.options.getSubcommand(true);
    let content: string;
    if (sub === 'show') {
      content = await show(ctx, guildId, tr);
    } else if (sub === 'set') {
      const patch = patchFrom(i);
      if (Object.keys(patch).length === 0) {
        throw new UserError('nothing_to_set', (t) => t.t('settings.nothing_to_set'));
      }
      // The bot must be able to post there too (asked of Discord; when it cannot be asked,
      // the gallery's first post tells, in /settings show).
      const gallery = patch.gallery;
      if (gallery !== undefined && (await ctx.community.botMayPostInGallery(guildId, gallery)) === false) {
        throw new UserError('gallery_no_access', (t) =>
          t.t('settings.gallery_no_access', { channel: `<#${gallery}>` }),
        );
      }
      await ctx.settings.set(guildId, patch);
      content = `${tr.t('settings.saved')}\n\n${await show(ctx, guildId, tr)}`;
    } else {
      const setting = i.options.getString('setting', true);
      if (setting !== 'all' && !(SETTING_NAMES as readonly string[]).includes(setting)) {
        throw new UserError('unknown_setting', (t) =>
          t.t('settings.unknown_setting', { setting: setting.replace(/`/g, '') }),
        );
      }
      await ctx.settings.reset(guildId, setting as SettingName | 'all');
      const done = setting === 'all' ? tr.t('settings.reset_all') : tr.t('settings.reset_one', { setting });
      content = `${done}\n\n${await show(ctx, guildId, tr)}`;
    }
    // A store outage goes to the router, which says so in the member's language.
    await i.reply({ content }, { ephemeral: true });
  },
} satisfies Command;
