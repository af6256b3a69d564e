import type { Operation } from '../services/media/types.js';
import { operationOf } from '../services/operations/index.js';
import { startOperation } from './run-job.js';
import type { Command } from './types.js';
import { where } from './where.js';

/** The slash command of an operation declared with slash options: options → parameters → job. */
export function operationCommand(op: Exclude<Operation, 'upload'>): Command {
  const input = operationOf(op).input;
  if (input.kind !== 'slash') throw new Error(`${op} is not started by a slash command`);
  return {
    // Paid work runs in servers only: fair use and credits are a server's (design: "Where commands work").
    data: { ...input.data, ...where.jobs },
    job: true,
    userInstall: 'job',
    async execute(i, ctx) {
      const params = input.fromOptions(i.options, { maxImageBytes: ctx.limits.maxImageBytes });
      await startOperation(i, ctx, op, params);
    },
  };
}
