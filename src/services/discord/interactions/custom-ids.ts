/**
 * The custom_id scheme of every button and modal of the bot (≤ 100 chars each),
 * in one place: `next:*` under a job's message (next steps, Retry), `tasks:*` in
 * the job centre (buttons and its menu), `modal:extend-video:*`, `training:*`. A custom id carries ids
 * only (all state is in the store) and is parsed strictly: anything forged or
 * oversized is refused.
 */
import type { PostedMessage } from '../../shared/message-ref.js';

export type NextStep =
  | { kind: 'extend-song'; jobId: string; songIndex: number }
  | { kind: 'extend-video'; jobId: string }
  | { kind: 'upscale-again'; jobId: string }
  | { kind: 'retry'; jobId: string };

export function nextStepId(step: NextStep): string {
  switch (step.kind) {
    case 'extend-song':
      return `next:extend-song:${step.jobId}:${step.songIndex}`;
    case 'extend-video':
      return `next:extend-video:${step.jobId}`;
    case 'upscale-again':
      return `next:upscale-again:${step.jobId}`;
    case 'retry':
      return `next:retry:${step.jobId}`;
  }
}

/** Job ids are UUIDs (tests use short slugs): anything with other characters is forged. */
export const JOB_ID = /^[\w-]{1,64}$/;

export function parseNextStepId(customId: string): NextStep | undefined {
  if (customId.length > 100) return undefined;
  const parts = customId.split(':');
  const [ns, kind, jobId, extra] = parts;
  if (ns !== 'next' || !jobId || !JOB_ID.test(jobId) || parts.length > 4) return undefined;
  if (extra !== undefined && kind !== 'extend-song') return undefined;
  if (kind === 'extend-song' && (extra === '0' || extra === '1'))
    return { kind, jobId, songIndex: Number(extra) };
  if (kind === 'extend-video' || kind === 'upscale-again' || kind === 'retry') return { kind, jobId };
  return undefined;
}

/** Modal asking for the prompt of a video extension started from a button. */
export const extendVideoModalId = (jobId: string): string => `modal:extend-video:${jobId}`;
export function parseExtendVideoModalId(customId: string): string | undefined {
  const m = /^modal:extend-video:([\w-]{1,64})$/.exec(customId);
  return m?.[1];
}

/**
 * The prompt form of `Upscale image`: `modal:upscale-image:{channelId}:{messageId}`, the message
 * it was used on (a form carries no state: the image found there waits in the store under the
 * member and that message, see ImageTargets).
 */
export const upscaleImageModalId = (t: PostedMessage): string =>
  `modal:upscale-image:${t.channelId}:${t.messageId}`;
export function parseUpscaleImageModalId(customId: string): PostedMessage | undefined {
  const m = /^modal:upscale-image:(\d{17,20}):(\d{17,20})$/.exec(customId);
  return m?.[1] && m[2] ? { channelId: m[1], messageId: m[2] } : undefined;
}

/** The job centre (/tasks): paging (the invoker's own list), Re-post and Refresh of one job. */
export type TasksButton =
  | { kind: 'page'; userId: string; page: number }
  | { kind: 'open'; userId: string }
  | { kind: 'repost' | 'refresh'; jobId: string };

const SNOWFLAKE = /^\d{17,20}$/;

export const tasksPageId = (userId: string, page: number): string => `tasks:page:${userId}:${page}`;
/** The list's "open a job" menu (its values are job ids). */
export const tasksOpenId = (userId: string): string => `tasks:open:${userId}`;
export const tasksRepostId = (jobId: string): string => `tasks:repost:${jobId}`;
export const tasksRefreshId = (jobId: string): string => `tasks:refresh:${jobId}`;

export function parseTasksId(customId: string): TasksButton | undefined {
  if (customId.length > 100) return undefined;
  const parts = customId.split(':');
  if (parts[0] !== 'tasks') return undefined;
  if (
    parts[1] === 'page' &&
    parts.length === 4 &&
    SNOWFLAKE.test(parts[2] ?? '') &&
    /^\d{1,2}$/.test(parts[3] ?? '')
  ) {
    return { kind: 'page', userId: parts[2] ?? '', page: Number(parts[3]) };
  }
  if (parts[1] === 'open' && parts.length === 3 && SNOWFLAKE.test(parts[2] ?? '')) {
    return { kind: 'open', userId: parts[2] ?? '' };
  }
  if (
    (parts[1] === 'repost' || parts[1] === 'refresh') &&
    parts.length === 3 &&
    JOB_ID.test(parts[2] ?? '')
  ) {
    return { kind: parts[1], jobId: parts[2] ?? '' };
  }
  return undefined;
}

/**
 * Training-photo session buttons and modal, `training:add:{userId}` etc.: the owner
 * is in the id so that another member pressing a button on someone's public
 * session message is told so.
 */
export type TrainingAction = 'add' | 'submit' | 'modal';

export const trainingCustomId = (action: TrainingAction, ownerId: string): string =>
  `training:${action}:${ownerId}`;

export function parseTrainingCustomId(
  customId: string,
): { action: TrainingAction; ownerId: string } | undefined {
  const m = /^training:(add|submit|modal):(\d{1,20})$/.exec(customId);
  if (!m?.[1] || !m[2]) return undefined;
  return { action: m[1] as TrainingAction, ownerId: m[2] };
}

/**
 * `/privacy delete`'s confirmation: `privacy:delete:{userId}:{issued, epoch s}` and
 * `privacy:cancel:{userId}`. The member is in the id so that only they can confirm; the
 * time lets an old confirmation expire (PRIVACY_CONFIRM_MS).
 */
export type PrivacyButton =
  { kind: 'delete'; userId: string; issuedAt: number } | { kind: 'cancel'; userId: string };
export const PRIVACY_CONFIRM_MS = 10 * 60_000;
export const privacyDeleteId = (userId: string, issuedAtMs: number): string =>
  `privacy:delete:${userId}:${Math.floor(issuedAtMs / 1000)}`;
export const privacyCancelId = (userId: string): string => `privacy:cancel:${userId}`;

export function parsePrivacyId(customId: string): PrivacyButton | undefined {
  const del = /^privacy:delete:(\d{17,20}):(\d{1,12})$/.exec(customId);
  if (del?.[1] && del[2]) return { kind: 'delete', userId: del[1], issuedAt: Number(del[2]) * 1000 };
  const cancel = /^privacy:cancel:(\d{17,20})$/.exec(customId);
  if (cancel?.[1]) return { kind: 'cancel', userId: cancel[1] };
  return undefined;
}
