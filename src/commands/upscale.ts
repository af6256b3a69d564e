import { operationCommand } from './operation-command.js';
import type { Command } from './types.js';

/** `/upscale`: declared in src/services/operations/upscale.ts. */
export const upscale = operationCommand('upscale') satisfies Command;
