// Runs one of the TypeScript scripts beside this file: with tsx in a checkout,
// or its compiled copy (dist/scripts/*.js) where dev dependencies are not
// installed, as in the Docker image. Usage: node scripts/run.mjs <name> [args…]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const name = process.argv[2] ?? '';
if (!/^[\w-]+$/.test(name)) {
  process.stderr.write('usage: node scripts/run.mjs <script name> [args…]\n');
  process.exit(2);
}
const root = fileURLToPath(new URL('..', import.meta.url));
const source = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
const compiled = fileURLToPath(new URL(`../dist/scripts/${name}.js`, import.meta.url));

let hasTsx = true;
try {
  import.meta.resolve('tsx');
} catch {
  hasTsx = false;
}
const args = hasTsx && existsSync(source) ? ['--import', 'tsx', source] : [compiled];
if (!hasTsx && !existsSync(compiled)) {
  process.stderr.write(`scripts/${name}: neither tsx nor a compiled ${compiled} (run npm run build)\n`);
  process.exit(1);
}
const r = spawnSync(process.execPath, [...args, ...process.argv.slice(3)], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
