import type { ChildProcess } from 'node:child_process';

/**
 * Stops a child process: `signal` (SIGTERM), then SIGKILL if it has not exited within `graceMs`.
 * A child that has exited already, by a signal too (its exitCode stays null, its signalCode is
 * set, and its 'exit' will not come again), returns at once. The benches, the process suites
 * and the playground stop the processes they start with it.
 */
export async function stopChild(
  child: ChildProcess,
  opts: { signal?: NodeJS.Signals; graceMs?: number } = {},
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(opts.signal ?? 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, opts.graceMs ?? 15_000)))]);
  clearTimeout(timer);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
