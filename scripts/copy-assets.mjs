// Copies what the compiled bot reads at run time besides JavaScript (the Lua scripts under
// src/**/lua/) into dist/, beside the compiled modules that read them. Run by `npm run build`.
import { cpSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { luaFiles } from './bundle.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const files = luaFiles();
for (const file of files) cpSync(file, join(root, 'dist', 'src', relative(src, file)));
process.stdout.write(`copied ${files.length} asset file(s) into dist/\n`);
