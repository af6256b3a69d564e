import type { Logger } from 'pino';

/**
 * Runs shutdown steps one after another, each within its own time limit: a step that
 * hangs (a peer that never answers a WebSocket close, a socket a server waits on) is
 * logged by name and left behind, so a stop always ends and the log says what stalled.
 */
export function shutdownSteps(logger: Logger, now: () => number = Date.now) {
  return async function step(name: string, run: () => Promise<unknown> | void, limitMs = 5000) {
    const started = now();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      Promise.resolve()
        .then(run)
        .then(
          () => 'done' as const,
          (err: unknown) => {
            logger.warn({ err, step: name }, 'shutdown step failed');
            return 'failed' as const;
          },
        ),
      new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), limitMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    if (outcome === 'late') {
      logger.warn({ step: name, limitMs }, 'shutdown step did not finish in time; going on');
    } else if (now() - started > limitMs / 2) {
      logger.info({ step: name, ms: now() - started }, 'shutdown step was slow');
    }
  };
}
