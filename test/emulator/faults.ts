import { API_PATHS, OPERATION_PATHS, type ApiPath, type FailureStatus } from './types.js';

interface FailureRule {
  remaining: number;
  status: FailureStatus;
  path: ApiPath | undefined;
}
interface DelayRule {
  ms: number;
  path: ApiPath | undefined;
}

/** A rule without a path covers the four operations but not /fetch, so background polling doesn't eat it. */
function matches(rulePath: ApiPath | undefined, path: string): boolean {
  if (rulePath !== undefined) return rulePath === path;
  return (OPERATION_PATHS as readonly string[]).includes(path);
}

function checkPath(path: string | undefined): void {
  if (path !== undefined && !(API_PATHS as readonly string[]).includes(path)) {
    throw new Error(`unknown API path ${path}; expected one of ${API_PATHS.join(', ')}`);
  }
}

/** One-shot failure and delay injections, consumed in the order they were added. */
export class Faults {
  private failures: FailureRule[] = [];
  private delays: DelayRule[] = [];

  failNext(count: number, status: FailureStatus, path?: ApiPath): void {
    checkPath(path);
    if (!Number.isInteger(count) || count < 1) throw new Error('failNext count must be a positive integer');
    this.failures.push({ remaining: count, status, path });
  }

  delayNext(ms: number, path?: ApiPath): void {
    checkPath(path);
    if (!(ms >= 0)) throw new Error('delayNext ms must be >= 0');
    this.delays.push({ ms, path });
  }

  takeFailure(path: string): FailureStatus | undefined {
    const rule = this.failures.find((r) => matches(r.path, path));
    if (!rule) return undefined;
    rule.remaining--;
    if (rule.remaining === 0) this.failures = this.failures.filter((r) => r !== rule);
    return rule.status;
  }

  takeDelay(path: string): number | undefined {
    const rule = this.delays.find((r) => matches(r.path, path));
    if (!rule) return undefined;
    this.delays = this.delays.filter((r) => r !== rule);
    return rule.ms;
  }

  clear(): void {
    this.failures = [];
    this.delays = [];
  }
}
