import type { Operation } from '../services/media/types.js';
import type { OperationModule } from '../services/operations/types.js';
import { choicesFrom } from './autocomplete.js';
import { startOperation } from './run-job.js';
import type { Command } from './types.js';
import { where } from './where.js';

/**
 * The slash command of an operation declared with slash options (options → parameters → job,
 * autocomplete from its declared sources); undefined for one gathered otherwise (a session).
 */
export function operationCommand<K extends Operation>(m: OperationModule<K>): Command | undefined {
  const input = m.input;
  if (input.kind !== 'slash') return undefined;
  const sources = input.autocomplete ?? {};
  const undeclared = (input.data.options ?? [])
    .filter((o) => 'autocomplete' in o && o.autocomplete === true && sources[o.name] === undefined)
    .map((o) => o.name);
  if (undeclared.length > 0)
    throw new Error(`/${input.data.name}: no choice source for ${undeclared.join(', ')} (its autocomplete)`);
  return {
    // Paid work runs in servers only: fair use and credits are a server's (design: "Where commands work").
    data: { ...input.data, ...where.jobs },
    job: true,
    userInstall: 'job',
    async execute(i, ctx) {
      const params = input.fromOptions(i.options, { maxImageBytes: ctx.limits.maxImageBytes });
      await startOperation(i, ctx, m.operation, params);
    },
    ...(input.autocomplete === undefined
      ? {}
      : {
          async autocomplete(i, ctx) {
            const focused = i.options.getFocused();
            const source = sources[focused.name];
            await i.respond(source ? await choicesFrom(ctx, i, source, focused.value) : []);
          },
        }),
  };
}
