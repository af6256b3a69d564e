import { SlashCommandBuilder } from '@discordjs/builders';
import {
  ButtonStyle,
  ComponentType,
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIComponentInMessageActionRow,
} from 'discord-api-types/v10';
import type { BotInteraction } from '../services/discord/interactions/interaction.js';
import { isPersonalPlace, mayActOnJob } from './preconditions.js';
import { isFinal } from '../services/store/merge.js';
import {
  JOB_ID,
  nextStepId,
  parseTasksId,
  tasksOpenId,
  tasksPageId,
  tasksRefreshId,
  tasksRepostId,
} from '../services/discord/interactions/custom-ids.js';
import { discordTimestamp } from '../services/shared/format.js';
import {
  cardPayload,
  isCard,
  jobMessageLink,
  renderJobSummaryLine,
  truncate,
  type ClassicPayload,
  type MessagePayload,
} from '../services/discord/render/job-render.js';
import { fitLines } from '../services/discord/render/card.js';
import { LIMITS } from '../services/discord/render/limits.js';
import { operations } from '../services/operations/index.js';
import { StoreUnavailableError } from '../services/store/errors.js';
import type { JobRecord, JobState } from '../services/store/types.js';
import { translatorFor, type Translator } from '../i18n/index.js';
import { toReplyOptions } from './run-job.js';
import { UserError, type BotContext, type Command, type ComponentHandler } from './types.js';
import { where } from './where.js';

/**
 * `/tasks`: the member's job centre. A list, 10 a page, newest first, with
 * Previous/Next and a menu opening one of the page's jobs, for the invoker only;
 * `id:` (task id or job id) shows one job in full with Retry, Re-post and
 * Refresh. Only the owner (or Manage Server) sees a job.
 */

/** A list page: buttons and the "open a job" menu. */
type ListMessage = Omit<ClassicPayload, 'components'> & {
  components: APIActionRowComponent<APIComponentInMessageActionRow>[];
};

const data = new SlashCommandBuilder()
  .setName('tasks')
  .setDescription('Your media jobs, newest first; or one of them in full by task id or job id')
  .addStringOption((o) =>
    o.setName('id').setDescription('A task id or job id to show in full').setMaxLength(200),
  )
  .toJSON();

const PAGE_SIZE = 10;
/** Jobs remembered per member by the store (its per-user list bound). */
const LIST_LIMIT = 50;

const button = (
  label: string,
  customId: string,
  disabled = false,
  style: ButtonStyle.Primary | ButtonStyle.Secondary = ButtonStyle.Secondary,
): APIButtonComponent => ({
  type: ComponentType.Button,
  style,
  label,
  custom_id: customId,
  disabled,
});

/** A job's state in the member's words (the store's `unconfirmed` reads "not confirmed"). */
const stateText = (tr: Translator, state: JobState): string =>
  tr.t(state === 'unconfirmed' ? 'job.state.not_confirmed' : `job.state.${state}`);

/** Jobs whose line reads a time that moves (queued or running for …); a final job's line stays. */
const MOVING_STATES: ReadonlySet<JobState> = new Set(['submitting', 'unconfirmed', 'queued', 'processing']);
/** A running time a line is measured with, for pages that stay put while time passes. */
const WIDE_DURATION_MS = 99 * 3_600_000 + 59 * 60_000 + 59_000;

/**
 * The list cut into pages: at most PAGE_SIZE whole lines each, within Discord's
 * 2000 characters under the header (a longer language gets fewer lines a page,
 * never a line cut inside its link). Returns each page's first index. A moving
 * line is measured at its widest running time, so the pages only move when the
 * list itself changes (a job added or changing state), not between two clicks.
 */
function pageStarts(jobs: readonly JobRecord[], lines: readonly string[], tr: Translator): number[] {
  const room = LIMITS.content - tr.t('tasks.header', { page: LIST_LIMIT, pages: LIST_LIMIT }).length;
  const starts: number[] = [];
  let used = room;
  let count = PAGE_SIZE;
  jobs.forEach((j, n) => {
    const real = lines[n]?.length ?? 0;
    const cost =
      1 +
      (MOVING_STATES.has(j.state)
        ? Math.max(real, renderJobSummaryLine(j, j.createdAt + WIDE_DURATION_MS, tr).length)
        : real);
    if (count >= PAGE_SIZE || used + cost > room) {
      starts.push(n);
      used = 0;
      count = 0;
    }
    used += cost;
    count += 1;
  });
  return starts;
}

async function listPage(ctx: BotContext, tr: Translator, userId: string, page: number): Promise<ListMessage> {
  const jobs = await ctx.records.listByUser(userId, LIST_LIMIT);
  if (jobs.length === 0) {
    return {
      content: tr.t('tasks.empty'),
      embeds: [],
      components: [],
      allowed_mentions: { parse: [] },
    };
  }
  const now = ctx.now();
  const all = jobs.map((j) => renderJobSummaryLine(j, now, tr));
  const starts = pageStarts(jobs, all, tr);
  const pages = starts.length;
  const p = Math.min(Math.max(0, page), pages - 1);
  const first = starts[p] ?? 0;
  const end = starts[p + 1] ?? jobs.length;
  const shown = jobs.slice(first, end);
  const content = [tr.t('tasks.header', { page: p + 1, pages }), ...all.slice(first, end)].join('\n');
  const paging: APIActionRowComponent<APIButtonComponent>[] =
    pages > 1
      ? [
          {
            type: ComponentType.ActionRow,
            components: [
              button(tr.t('buttons.previous'), tasksPageId(userId, p - 1), p === 0),
              button(tr.t('buttons.next'), tasksPageId(userId, p + 1), p >= pages - 1),
            ],
          },
        ]
      : [];
  // Opening a job (Retry, Re-post, Refresh) is a click away, no id to type.
  const open: APIActionRowComponent<APIComponentInMessageActionRow> = {
    type: ComponentType.ActionRow,
    components: [
      {
        type: ComponentType.StringSelect,
        custom_id: tasksOpenId(userId),
        placeholder: tr.t('tasks.open_placeholder'),
        options: shown.map((j, n) => ({
          label: truncate(
            tr.t('tasks.option_label', {
              n: first + n + 1,
              title: tr.t(`operations.${j.operation}.title`),
              state: stateText(tr, j.state),
            }),
            100,
          ),
          value: j.id,
          description: truncate(
            j.taskId !== undefined
              ? tr.t('tasks.option_task', { id: j.taskId })
              : tr.t('tasks.option_job', { id: j.id }),
            100,
          ),
        })),
      },
    ],
  };
  return { content, embeds: [], components: [...paging, open], allowed_mentions: { parse: [] } };
}

const canSee = mayActOnJob;

/** Children a job's detail links to by name; the rest are counted. */
const CHILDREN_SHOWN = 8;

/** The service purges a result's files about a day after it finished. */
const SERVICE_LINKS_MS = 86_400_000;

/** A finished job's result links are the service's, older than a day, and no gallery post kept the files. */
function linksMayHaveExpired(job: JobRecord, now: number): boolean {
  return (
    job.state === 'finished' &&
    job.galleryPost === undefined &&
    now - (job.finishedAt ?? job.updatedAt) > SERVICE_LINKS_MS
  );
}

async function findJob(ctx: BotContext, id: string): Promise<JobRecord | undefined> {
  return (await ctx.records.getByTaskId(id)) ?? (JOB_ID.test(id) ? await ctx.records.get(id) : undefined);
}

/**
 * One job in full, in the member's language: its message (the result card once it
 * ended), plus its timeline, parent and children, and the job-centre buttons.
 */
async function detail(ctx: BotContext, job: JobRecord, tr: Translator): Promise<MessagePayload> {
  const link = jobMessageLink(job);
  const children = link
    ? (await ctx.records.listByUser(job.userId, LIST_LIMIT)).filter((j) => j.params['extended_from'] === link)
    : [];
  const when = (ms: number): string => discordTimestamp(ms, 'f');
  const timeline = [
    tr.t('tasks.timeline.created', { when: when(job.createdAt) }),
    job.submittedAt !== undefined
      ? tr.t('tasks.timeline.accepted', { when: when(job.submittedAt) })
      : undefined,
    job.finishedAt !== undefined
      ? tr.t(job.state === 'failed' ? 'tasks.timeline.failed' : 'tasks.timeline.finished', {
          when: when(job.finishedAt),
        })
      : undefined,
  ].filter((x): x is string => x !== undefined);
  const parent = job.params['extended_from'];
  // The card names the parent in its heading already; a classic message does not.
  const parentLine =
    typeof parent === 'string' ? tr.t('tasks.detail.extended_from', { link: parent }) : undefined;
  const extra = [
    tr.t('tasks.detail.timeline', { items: timeline.join(' · ') }),
    children.length > 0
      ? tr.t('tasks.detail.continued_by', {
          // A few whole links and a count: up to 50 children would not fit any message.
          links: [
            ...children.slice(0, CHILDREN_SHOWN).map((c) => jobMessageLink(c) ?? c.id),
            ...(children.length > CHILDREN_SHOWN
              ? [tr.t('result.more', { count: children.length - CHILDREN_SHOWN })]
              : []),
          ].join(' · '),
        })
      : undefined,
    link ? tr.t('tasks.detail.message', { link }) : undefined,
    job.personal ? tr.t('tasks.detail.personal') : undefined,
    job.dmRefused === true ? tr.t('tasks.detail.dm_refused') : undefined,
  ].filter((x): x is string => x !== undefined);
  // Retry on every ended job (a reroll of a finished one), once: a failed job's own row may carry it already.
  const retryId = nextStepId({ kind: 'retry', jobId: job.id });
  const actions = (hasRetry: boolean): APIButtonComponent[] =>
    // A removed result offers nothing to do with it.
    job.removed !== undefined
      ? []
      : [
          ...(isFinal(job.state) && operations[job.operation].retryable && !hasRetry
            ? [button(tr.t('buttons.retry'), retryId, false, ButtonStyle.Primary)]
            : []),
          button(tr.t('buttons.repost'), tasksRepostId(job.id)),
          ...(job.taskId !== undefined ? [button(tr.t('buttons.refresh'), tasksRefreshId(job.id))] : []),
        ];
  const card = ctx.render.jobCardSpec(job, tr);
  if (card !== undefined) {
    // The card itself, nothing beside it (a V2 message has no content): the details and buttons go inside.
    const hasRetry = card.rows.some((row) => row.some((b) => 'custom_id' in b && b.custom_id === retryId));
    const more = actions(hasRetry);
    return cardPayload({
      ...card,
      details: [...card.details, ...extra],
      rows: more.length > 0 ? [...card.rows, more] : card.rows,
    });
  }
  const base = ctx.render.renderJob(job, ctx.now(), tr);
  if (isCard(base)) return base;
  const hasRetry = JSON.stringify(base.components).includes(`"${retryId}"`);
  return {
    ...base,
    // Whole lines under the job's own message, as many as fit: a cut line would be a broken link.
    content: [
      base.content,
      ...fitLines(
        [extra[0], parentLine, ...extra.slice(1)].filter((x): x is string => x !== undefined),
        LIMITS.content - base.content.length - 1,
        (count) => tr.t('result.more', { count }),
      ),
    ].join('\n'),
    components: [
      ...base.components.slice(0, 4),
      { type: ComponentType.ActionRow, components: actions(hasRetry) },
    ],
  };
}

export const tasks = {
  // Your own jobs, from a server or a DM with the bot.
  data: { ...data, ...where.serverAndDm },
  userInstall: 'member',
  ephemeral: true,
  async execute(i, ctx) {
    const tr = translatorFor(i);
    const id = i.options.getString('id')?.trim();
    if (id) {
      const job = await findJob(ctx, id);
      // Someone else's job answers like an unknown one: ids are not a way to read others' work.
      if (!job || !canSee(i, job)) {
        throw new UserError('task_not_found', (t) => t.t('tasks.not_found', { id: id.replace(/`/g, '') }));
      }
      await i.reply(toReplyOptions(await detail(ctx, job, tr)), { ephemeral: true });
      return;
    }
    await i.reply(toReplyOptions(await listPage(ctx, tr, i.user.id, 0)), { ephemeral: true });
  },
} satisfies Command;

/** Previous/Next, the "open a job" menu, Re-post and Refresh of the job centre. */
export const tasksButtons: ComponentHandler = {
  prefix: 'tasks:',
  async select(i: BotInteraction, ctx: BotContext) {
    const b = parseTasksId(i.customId);
    const jobId = i.values[0] ?? '';
    if (b?.kind !== 'open' || !JOB_ID.test(jobId))
      throw new UserError('unknown_component', (tr) => tr.t('errors.foreign_menu'));
    if (b.userId !== i.user.id) throw new UserError('not_yours', (tr) => tr.t('tasks.not_yours'));
    const job = await ctx.records.get(jobId);
    if (!job || !canSee(i, job)) throw new UserError('job_unavailable', (tr) => tr.t('jobs.not_stored'));
    await i.reply(toReplyOptions(await detail(ctx, job, translatorFor(i))), { ephemeral: true });
  },
  async button(i: BotInteraction, ctx: BotContext) {
    const b = parseTasksId(i.customId);
    if (!b || b.kind === 'open') throw new UserError('unknown_button', (tr) => tr.t('errors.foreign_button'));
    const tr = translatorFor(i);
    if (b.kind === 'page') {
      if (b.userId !== i.user.id) throw new UserError('not_yours', (t) => t.t('tasks.not_yours'));
      await i.update(toReplyOptions(await listPage(ctx, tr, b.userId, b.page)));
      return;
    }
    const job = await ctx.records.get(b.jobId);
    if (!job) throw new UserError('job_unavailable', (t) => t.t('jobs.not_stored'));
    if (!canSee(i, job)) throw new UserError('not_owner', (t) => t.t('refusal.stranger'));
    if (b.kind === 'repost') {
      // A result a moderator took down is never posted again.
      if (job.removed !== undefined) throw new UserError('removed', (t) => t.t('tasks.repost_removed'));
      // The service's links last about a day: past that, only a gallery copy is sure to work.
      if (linksMayHaveExpired(job, ctx.now()))
        throw new UserError('links_expired', (t) => t.t('tasks.repost_links_expired'));
      // A fresh public message in this channel, for a result that scrolled away or was deleted.
      const posted = await i.reply(toReplyOptions(ctx.render.renderJob(job, ctx.now())));
      // Indexed with the job: Remove result and /privacy delete take Re-posts down too.
      const channelId = posted?.channel_id ?? i.channelId;
      if (posted && channelId !== null)
        await ctx.publicPosts
          .recordRepost(job, {
            channelId,
            messageId: posted.id,
            // Posted through this interaction: where the bot is not in, only that interaction reaches it.
            ...(isPersonalPlace(i) ? { personal: true as const } : {}),
          })
          .catch((err: unknown) => ctx.logger.warn({ err, jobId: job.id }, 'could not index a Re-post'));
      else ctx.logger.warn({ jobId: job.id }, 'a Re-post whose message Discord did not name is not indexed');
      return;
    }
    if (job.taskId === undefined) throw new UserError('no_task', (t) => t.t('tasks.no_task'));
    await i.deferUpdate();
    try {
      const result = await ctx.tasks.read(job.operation, job.taskId);
      await ctx.jobs.applyResult(job.id, result, 'refresh');
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      ctx.logger.warn({ err, jobId: job.id }, 'refresh from the service failed');
      await i.followUp({ content: tr.t('tasks.refresh_failed') }, { ephemeral: true });
    }
    const fresh = (await ctx.records.get(job.id)) ?? job;
    await i.editReply(toReplyOptions(await detail(ctx, fresh, tr)));
  },
};
