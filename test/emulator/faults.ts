import {
  API_PATHS,
  OPERATION_PATHS,
  type ApiPath,
  type FailureStatus,
  type LostAnswerMode,
  type RateLimitOptions,
} from './types.js';

interface Rule {
  remaining: number;
  path: ApiPath | undefined;
}
interface FailureRule extends Rule {
  status: FailureStatus;
}
interface RateLimitRule extends Rule {
  retryAfter: number | null;
  format: 'seconds' | 'date';
}
interface LostAnswerRule extends Rule {
  mode: LostAnswerMode;
  delayMs: number;
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

function checkCount(count: number, what: string): void {
  if (!Number.isInteger(count) || count < 1) throw new Error(`${what} count must be a positive integer`);
}

/** Takes one use of the first rule matching `path` (dropped when used up). */
function take<R extends Rule>(rules: R[], path: string): R | undefined {
  const rule = rules.find((r) => matches(r.path, path));
  if (!rule) return undefined;
  rule.remaining--;
  if (rule.remaining === 0) rules.splice(rules.indexOf(rule), 1);
  return rule;
}

/** One-shot failure, delay, rate-limit and lost-answer injections, consumed in the order they were added. */
export class Faults {
  private failures: FailureRule[] = [];
  private delays: DelayRule[] = [];
  private rateLimits: RateLimitRule[] = [];
  private lostAnswers: LostAnswerRule[] = [];

  failNext(count: number, status: FailureStatus, path?: ApiPath): void {
    checkPath(path);
    checkCount(count, 'failNext');
    this.failures.push({ remaining: count, status, path });
  }

  delayNext(ms: number, path?: ApiPath): void {
    checkPath(path);
    if (!(ms >= 0)) throw new Error('delayNext ms must be >= 0');
    this.delays.push({ ms, path });
  }

  rateLimitNext(count: number, options: RateLimitOptions = {}): void {
    checkPath(options.path);
    checkCount(count, 'rateLimitNext');
    const retryAfter = options.retryAfter === undefined ? 1 : options.retryAfter;
    if (retryAfter !== null && !(Number.isInteger(retryAfter) && retryAfter >= 0)) {
      throw new Error('rateLimitNext retryAfter must be whole seconds >= 0, or null');
    }
    this.rateLimits.push({
      remaining: count,
      path: options.path,
      retryAfter,
      format: options.format ?? 'seconds',
    });
  }

  loseNextAnswer(count: number, mode: LostAnswerMode, delayMs = 0, path?: ApiPath): void {
    checkPath(path);
    checkCount(count, 'loseNextAnswer');
    if (path !== undefined && !(OPERATION_PATHS as readonly string[]).includes(path)) {
      throw new Error('loseNextAnswer applies to the operation paths (submissions) only');
    }
    if (!(delayMs >= 0)) throw new Error('loseNextAnswer delayMs must be >= 0');
    this.lostAnswers.push({ remaining: count, path, mode, delayMs });
  }

  takeFailure(path: string): FailureStatus | undefined {
    return take(this.failures, path)?.status;
  }

  takeDelay(path: string): number | undefined {
    const rule = this.delays.find((r) => matches(r.path, path));
    if (!rule) return undefined;
    this.delays = this.delays.filter((r) => r !== rule);
    return rule.ms;
  }

  takeRateLimit(path: string): { retryAfter: number | null; format: 'seconds' | 'date' } | undefined {
    return take(this.rateLimits, path);
  }

  takeLostAnswer(path: string): { mode: LostAnswerMode; delayMs: number } | undefined {
    return take(this.lostAnswers, path);
  }

  clear(): void {
    this.failures = [];
    this.delays = [];
    this.rateLimits = [];
    this.lostAnswers = [];
  }
}
