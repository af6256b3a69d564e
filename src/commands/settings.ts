import { discordTimestamp as ts } from '../services/shared/format.js';
import { ChannelType, InteractionContextType, PermissionFlagsBits, SlashCommandBuilder } from 'discord.js';
import type { BotInteraction } from '../services/discord/interactions/interaction.js';
import { requireManageServer } from './preconditions.js';
import { nextUtcMidnight } from '../services/community/fair-use.js';
import { SETTING_NAMES, type SettingName, type SettingsPatch } from '../services/community/settings.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import { UserError, type BotContext, type Command } from './types.js';

const data = new SlashCommandBuilder()
  .setName('settings')
  .setDescription("This server's media bot settings (Manage Server)")
  .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
  .setContexts(InteractionContextType.Guild)
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

async function show(ctx: BotContext, guildId: string): Promise<string> {
  const view = await ctx.settings.view(guildId);
  const e = view.effective;
  const src = (n: SettingName) => (view.own.has(n) ? 'this server' : 'default');
  const now = ctx.now();
  const used = await ctx.ledger.creditsUsed(guildId, now);
  const costs = Object.entries(ctx.costs)
    .map(([cmd, c]) => `/${cmd} ${c}`)
    .join(', ');
  const lines = [
    '**Media bot settings**',
    `• threads: **${e.threads ? 'on' : 'off'}** (${src('threads')})`,
    `• gallery: ${e.gallery ? `<#${e.gallery}>` : '**none**'} (${src('gallery')})`,
    `• max_active_jobs: **${e.maxActiveJobs}** per member (${src('max_active_jobs')})`,
    `• cooldown_seconds: **${e.cooldownSeconds}** (${src('cooldown_seconds')})`,
    `• daily_credits: **${e.dailyCredits === 0 ? '0 (no budget)' : e.dailyCredits}** (${src('daily_credits')})`,
    '',
    e.dailyCredits > 0
      ? `Credits today: **${used}** of ${e.dailyCredits} used, ${Math.max(0, e.dailyCredits - used)} left; resets ${ts(nextUtcMidnight(now))}.`
      : `Credits today: **${used}** used (no budget set).`,
    `Costs: ${costs}.`,
    ...balanceLine(ctx),
    view.galleryError
      ? `Gallery: last post failed ${ts(view.galleryError.at)}: ${view.galleryError.message}`
      : e.gallery
        ? 'Gallery: no errors.'
        : '',
  ];
  return lines.filter((l, idx, all) => l !== '' || (idx > 0 && all[idx - 1] !== '')).join('\n');
}

/** The service account's balance, for managers, when the operator shows it (SHOW_ACCOUNT_BALANCE). */
function balanceLine(ctx: BotContext): string[] {
  if (!ctx.showAccountBalance) return [];
  const r = ctx.account.latest();
  if (!r) return ['Service account: balance not known (the service does not report it, or not yet).'];
  return [`Service account: **${r.credits}** credits left${r.plan ? ` (${r.plan})` : ''}, read ${ts(r.at)}.`];
}

function patchFrom(i: BotInteraction): SettingsPatch {
  const patch: SettingsPatch = {};
  const threads = i.options.getBoolean('threads');
  if (threads !== null) patch.threads = threads;
  const gallery = i.options.getChannel('gallery');
  if (gallery !== null) patch.gallery = gallery.id;
  const maxActive = i.options.getInteger('max_active_jobs');
  if (maxActive !== null) patch.maxActiveJobs = maxActive;
  const cooldown = i.options.getInteger('cooldown_seconds');
  if (cooldown !== null) patch.cooldownSeconds = cooldown;
  const credits = i.options.getInteger('daily_credits');
  if (credits !== null) patch.dailyCredits = credits;
  return patch;
}

export const settings = {
  data,
  ephemeral: true,
  async execute(i, ctx) {
    // Discord hides the command from non-admins, but a server can change that: check again.
    const guildId = requireManageServer(i, '`/settings`');
    try {
      const sub = i.options.getSubcommand(true);
      let content: string;
      if (sub === 'show') {
        content = await show(ctx, guildId);
      } else if (sub === 'set') {
        const patch = patchFrom(i);
        if (Object.keys(patch).length === 0) {
          throw new UserError(
            'nothing_to_set',
            'Give at least one setting to change, e.g. `/settings set threads:True`.',
          );
        }
        await ctx.settings.set(guildId, patch);
        content = `Saved.\n\n${await show(ctx, guildId)}`;
      } else {
        const setting = i.options.getString('setting', true);
        if (setting !== 'all' && !(SETTING_NAMES as readonly string[]).includes(setting)) {
          throw new UserError('unknown_setting', `There is no setting \`${setting.replace(/`/g, '')}\`.`);
        }
        await ctx.settings.reset(guildId, setting as SettingName | 'all');
        content = `${setting === 'all' ? 'Every setting is' : `\`${setting}\` is`} back to the default.\n\n${await show(ctx, guildId)}`;
      }
      await i.reply({ content }, { ephemeral: true });
    } catch (err) {
      if (err instanceof StoreUnavailableError) {
        throw new UserError(
          'store_unavailable',
          'Settings are unavailable right now (storage is down). Please try again in a minute.',
        );
      }
      throw err;
    }
  },
} satisfies Command;
