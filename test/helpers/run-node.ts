import { spawn } from 'node:child_process';

export interface NodeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs this Node on `args` to its exit and gives back what it printed. Killed, and rejected
 * with its output, when it has not exited in `timeoutMs`.
 */
export function runNode(
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<NodeRun> {
  const timeoutMs = opts.timeoutMs ?? 45_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`process did not exit in ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    // 'close', not 'exit': a process may exit before its parent has read all it wrote to the
    // pipes ('exit' then comes first, and the last lines, a start failure's one line among them,
    // were missing from the run under load).
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
