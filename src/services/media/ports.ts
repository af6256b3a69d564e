/**
 * What the media layer needs of the operations registry, as ports: the registry
 * (src/services/operations/) implements them and the app passes them in, so
 * media/ never imports the registry (no import cycle, no upward arrow).
 */
import type { ResultOutputs } from './schemas.js';
import type { BodyOptions, Operation, ParamsOf, RequestBody, TaskResult } from './types.js';

export type { ResultOutputs } from './schemas.js';

/** How one operation is sent to the service (to its endpoint: the client's `paths.submit`). */
export interface Submission<K extends Operation> {
  /** `sync`: the response is the finished result (upscale); `async`: a task id, then webhooks/polls. */
  readonly mode: 'sync' | 'async';
  /** Parameters → the service request body. */
  body(params: ParamsOf<K>, opts: BodyOptions): RequestBody;
}

/** Parameters checked against their operation's schema: cleaned, or what is wrong (in English). */
export type CheckedParams<K extends Operation> =
  { ok: true; params: ParamsOf<K> } | { ok: false; problems: string[] };

/**
 * What the media layer needs to know of each operation: how its parameters are
 * checked, how it is sent, and what a finished result of it carries. The
 * operations registry (src/services/operations/) implements it and the app
 * passes it in, so media/ never imports the registry (no import cycle).
 */
export interface MediaOperations extends ResultOutputs {
  checkParams<K extends Operation>(op: K, params: ParamsOf<K>): CheckedParams<K>;
  submission<K extends Operation>(op: K): Submission<K>;
}

/** Reads a task's current result from the service (batched where the service allows it). */
export interface TaskReading {
  read(operation: Operation, taskId: string): Promise<TaskResult>;
}
