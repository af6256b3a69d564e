/**
 * Scenario semantics (one scenario is fixed per asynchronous task when it is created):
 *
 * - t = 0: the task exists. `/fetch` shows `initialStatus` if set (and that state
 *   is webhooked at once, as a progress webhook), else `processing` at 0 % (not
 *   webhooked: nothing changed yet).
 * - t = stepMs × i (i = 1..steps.length): `steps[i-1]`: a number is `processing` at that
 *   percentage; a string is that status as the provider reports it (`pending`/`staged`
 *   are queued, `starting`/`retry`/anything else under way). Each is webhooked.
 * - t = stepMs × (steps.length + 1): the final state (`outcome`), unless `hold`,
 *   in which case the task waits for `finish(id)` / `fail(id)`. Those also cut a
 *   running timeline short.
 * - Webhooks go out one at a time per task, in state order, unless
 *   `shuffleWebhooks` (all sent when the task ends, in a non-chronological random
 *   order); `duplicateWebhooks` sends each twice; `dropWebhooks` skips some.
 *   Failed deliveries are logged, never retried.
 */
import { z } from 'zod';
import type { Scenario, ScenarioPatch } from './types.js';

export const DEFAULT_SCENARIO: Readonly<Scenario> = Object.freeze({
  steps: [10, 35, 60, 85],
  stepMs: 50,
  duplicateWebhooks: false,
  shuffleWebhooks: false,
  dropWebhooks: 'none',
  outcome: 'finished',
  failMessage: 'Generation failed',
  hold: false,
  videoTaskType: 'video-ext',
});

/** Validates a patch given over HTTP (or by a test) so a typo fails loudly instead of being ignored. */
export const scenarioPatchSchema = z
  .object({
    steps: z.array(z.union([z.number().int().min(0).max(100), z.string().min(1).max(40)])),
    stepMs: z.number().min(0),
    duplicateWebhooks: z.boolean(),
    shuffleWebhooks: z.boolean(),
    dropWebhooks: z.enum(['none', 'all', 'progress', 'final']),
    outcome: z.enum(['finished', 'failed']),
    failMessage: z.string(),
    hold: z.boolean(),
    videoTaskType: z.string().min(1).max(40),
    // null clears it (JSON has no undefined).
    initialStatus: z
      .string()
      .min(1)
      .nullable()
      .transform((value) => value ?? undefined),
  })
  .partial()
  .strict();

export function applyPatch(base: Readonly<Scenario>, patch: ScenarioPatch): Scenario {
  const parsed = scenarioPatchSchema.parse(patch);
  const merged: Scenario = { ...base, steps: [...base.steps] };
  if (parsed.steps !== undefined) merged.steps = parsed.steps;
  if (parsed.stepMs !== undefined) merged.stepMs = parsed.stepMs;
  if (parsed.duplicateWebhooks !== undefined) merged.duplicateWebhooks = parsed.duplicateWebhooks;
  if (parsed.shuffleWebhooks !== undefined) merged.shuffleWebhooks = parsed.shuffleWebhooks;
  if (parsed.dropWebhooks !== undefined) merged.dropWebhooks = parsed.dropWebhooks;
  if (parsed.outcome !== undefined) merged.outcome = parsed.outcome;
  if (parsed.failMessage !== undefined) merged.failMessage = parsed.failMessage;
  if (parsed.hold !== undefined) merged.hold = parsed.hold;
  if (parsed.videoTaskType !== undefined) merged.videoTaskType = parsed.videoTaskType;
  if ('initialStatus' in parsed) {
    if (parsed.initialStatus === undefined) delete merged.initialStatus;
    else merged.initialStatus = parsed.initialStatus;
  }
  return merged;
}

/** A random permutation that is never the identity (for 2+ items), so "shuffled" is observable. */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  if (out.length > 1 && out.every((item, index) => item === items[index])) {
    // Rotate right: the final result arrives first, the worst case for a client.
    out.unshift(out.pop() as T);
  }
  return out;
}
