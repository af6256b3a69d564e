/**
 * stopChild (test/helpers/stop-child.ts), which the process suites, benches and the playground
 * use to stop the processes they started. Regression: a bot SIGKILLed by the test (exitCode null, signalCode set) made its stop
 * wait the whole grace period for an 'exit' that had already come, 15 s per killed bot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { stopChild } from './helpers/stop-child.js';

/** A node child that says "ready" once running (and, with `ignoreTerm`, once it ignores SIGTERM). */
async function child(ignoreTerm = false): Promise<ChildProcess> {
  const code = `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ''} setInterval(() => {}, 1000); console.log('ready');`;
  const c = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await once(c.stdout!, 'data');
  return c;
}

describe('stopChild', () => {
  it('returns at once for a child a signal has already killed (it does not wait out the grace)', async () => {
    const c = await child();
    c.kill('SIGKILL');
    await once(c, 'exit');
    expect(c.exitCode).toBeNull();
    // A grace longer than the test's timeout: waiting for it would fail the test.
    await stopChild(c, { graceMs: 120_000 });
  });

  it('stops a running child with SIGTERM', async () => {
    const c = await child();
    await stopChild(c, { graceMs: 120_000 });
    expect(c.signalCode).toBe('SIGTERM');
  });

  it('kills a child that ignores SIGTERM once the grace is over', async () => {
    const c = await child(true);
    const exited = once(c, 'exit');
    await stopChild(c, { graceMs: 200 });
    await exited;
    expect(c.signalCode).toBe('SIGKILL');
  });

  it('sends the signal it is given first (the playground kills its bot with SIGKILL)', async () => {
    const c = await child(true);
    await stopChild(c, { signal: 'SIGKILL', graceMs: 120_000 });
    expect(c.signalCode).toBe('SIGKILL');
  });
});
