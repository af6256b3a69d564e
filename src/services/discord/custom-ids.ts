/**
 * custom_id scheme of the bot's buttons and modals (≤ 100 chars each).
 * `next:*` buttons sit under a finished job and start the natural next step.
 */
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
  const m = /^modal:extend-video:([\w-]+)$/.exec(customId);
  return m?.[1];
}

/** Training-photo session buttons and modal. */
export const TRAINING_ADD_BUTTON = 'training:add';
export const TRAINING_SUBMIT_BUTTON = 'training:submit';
export const TRAINING_MODAL = 'training:modal';
