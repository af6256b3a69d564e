// Copies what the compiled bot reads at run time besides JavaScript (the Lua scripts under
// src/**/lua/) into dist/, beside the compiled modules that read them. Run by `npm run build`.
import { cpSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
let n = 0;
for (const file of walk(src).filter((f) => f.endsWith('.lua'))) {
  cpSync(file, join(root, 'dist', 'src', relative(src, file)));
  n++;
}
process.stdout.write(`copied ${n} asset file(s) into dist/\n`);
