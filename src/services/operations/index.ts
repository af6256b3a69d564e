/**
 * The registry of media operations: one module each (./types.ts says what a
 * module declares), the one source of their commands, costs and service paths.
 * Typed against every `Operation` (the names the modules declare in `OperationTypes`,
 * src/services/media/types.ts), so a module declaring its types without its line here,
 * or a module without a piece, does not compile. Adding one: see "Adding an operation"
 * in CONTRIBUTING.md.
 */
import type { NextStep } from '../discord/interactions/custom-ids.js';
import type { Translator } from '../../i18n/index.js';
import type { ResultParts } from '../discord/render/card.js';
import type { RenderOperations } from '../discord/render/job-render.js';
import type { MediaOperations } from '../media/ports.js';
import type { Operation, TaskOutputs } from '../media/types.js';
import type { JobOperations } from '../store/schema.js';
import type { JobRecord } from '../store/types.js';
import { songOperation } from './extend-song.js';
import { videoOperation } from './extend-video.js';
import { uploadOperation } from './training-upload.js';
import type {
  OperationModule,
  OperationRegistry,
  OutputsOf,
  Parsed,
  ParamsOf,
  SomeOperationModule,
} from './types.js';
import { upscaleOperation } from './upscale.js';
import { inEnglish, problemText } from './fields.js';
import type { MemberText } from './input.js';

export const operations = {
  upscale: upscaleOperation,
  song: songOperation,
  video: videoOperation,
  upload: uploadOperation,
} as const satisfies OperationRegistry;

/**
 * The modules in the registry's order: what the command list (src/commands/index.ts) and
 * the configuration's MEDIA_PATH_* and CREDIT_COSTS (parseConfig, from main) are read from.
 */
export const operationModules: readonly SomeOperationModule[] = Object.values(operations);

/** The module of `op`, typed for generic callers. */
export function operationOf<K extends Operation>(op: K): OperationModule<K> {
  return (operations as OperationRegistry)[op];
}

/** The operation a next-step button starts. */
export const NEXT_STEP_TARGETS = {
  'upscale-again': 'upscale',
  'extend-song': 'song',
  'extend-video': 'video',
} as const satisfies Record<Exclude<NextStep['kind'], 'retry'>, Operation>;

/** Validates parameters against the operation's schema: the cleaned parameters, or the problems. */
export function checkParams<K extends Operation>(
  op: K,
  params: ParamsOf<K>,
): { ok: true; params: ParamsOf<K> } | { ok: false; problems: MemberText[] } {
  return checkWith(operationOf(op), params);
}

function checkWith<K extends Operation>(
  m: OperationModule<K>,
  params: ParamsOf<K>,
): { ok: true; params: ParamsOf<K> } | { ok: false; problems: MemberText[] } {
  const r = m.schema.safeParse(params);
  if (!r.success) return { ok: false, problems: r.error.issues.map((i) => problemText(i.message)) };
  return { ok: true, params: dropUndefined(r.data) };
}

/** zod keeps optional keys as `undefined`; the parameters' type (exactOptionalPropertyTypes) does not. */
function dropUndefined<T>(v: Parsed<T>): T {
  return Object.fromEntries(Object.entries(v as object).filter(([, x]) => x !== undefined)) as T;
}

/** The kind of a result is its operation: the module that parsed it renders it. */
function moduleOfResult<K extends Operation>(out: OutputsOf<K>): OperationModule<K> {
  return operationOf(out.kind as K);
}

/** What a finished result adds to its job's card (each operation shows its own result). */
export function resultParts(job: JobRecord, out: TaskOutputs, tr: Translator): ResultParts {
  return moduleOfResult(out).card(job, out, tr);
}

/** Result files of a finished job (for the gallery), in the order shown. */
export function resultFiles(out: TaskOutputs | undefined): string[] {
  return out ? moduleOfResult(out).files(out) : [];
}

/**
 * What the media client and result parsing need of `modules` (the registry's, or a
 * test's own list with an operation of its making).
 */
export function mediaOperationsOf(modules: readonly SomeOperationModule[]): MediaOperations {
  const byOperation = new Map<string, SomeOperationModule>(modules.map((m) => [m.operation, m]));
  function moduleOf<K extends Operation>(op: K): OperationModule<K> {
    const m = byOperation.get(op);
    if (m === undefined) throw new Error(`no module for operation ${op}`);
    // Keyed by its own `operation`.
    return m as unknown as OperationModule<K>;
  }
  return {
    checkParams(op, params) {
      const checked = checkWith(moduleOf(op), params);
      return checked.ok ? checked : { ok: false, problems: checked.problems.map(inEnglish) };
    },
    submission: moduleOf,
    outputsOf: (op, body) => moduleOf(op).outputs(body),
  };
}

/** What the media client and result parsing need of the operations (passed in by the app). */
export const mediaOperations: MediaOperations = mediaOperationsOf(operationModules);

/**
 * What the store checks of `modules`' jobs (the registry's, or a test's own list): the
 * operations a stored job may name and the schema of each one's result.
 */
export function jobOperationsOf(modules: readonly SomeOperationModule[]): JobOperations {
  const byOperation = new Map<string, SomeOperationModule>(modules.map((m) => [m.operation, m]));
  return {
    names: modules.map((m) => m.operation),
    resultSchema(op) {
      const m = byOperation.get(op);
      if (m === undefined) throw new Error(`no module for operation ${op}`);
      return m.resultSchema;
    },
  };
}

/** What the store checks of the jobs' operations (passed in by the app: openStore). */
export const jobOperations: JobOperations = jobOperationsOf(operationModules);

/** What rendering a job needs of its operation (passed in by the app: createJobRenderer). */
export const renderOperations: RenderOperations = {
  resultParts,
  resultWithoutText: (out) => moduleOfResult(out).resultWithoutText(out),
  retryable: (op) => operations[op].retryable,
  command: (op) => operations[op].command,
};
