// Copies the built-in tools' .txt descriptions (and plain-JS worker scripts, .mjs) next to their compiled modules, so that
// `dist/tools/<name>.js` finds `dist/tools/<name>.txt` exactly as `src/tools/<name>.ts` does;
// then removes built files whose source is gone (a renamed or split module), so they are never packed;
// then writes the CommonJS copies of the type declarations (scripts/cjs-types.mjs).
import { cpSync, readdirSync, mkdirSync, chmodSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CJS_TYPES_DIR, writeCjsTypes } from './cjs-types.mjs';

function copyTxt(from, to) {
  if (!existsSync(from)) return;
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory()) copyTxt(join(from, entry.name), join(to, entry.name));
    else if (entry.name.endsWith('.txt') || entry.name.endsWith('.mjs'))
      cpSync(join(from, entry.name), join(to, entry.name));
  }
}
function pruneStale(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (p === join('dist', CJS_TYPES_DIR)) continue; // rewritten whole by writeCjsTypes
    if (entry.isDirectory()) {
      pruneStale(p);
      continue;
    }
    const m = /^dist\/(.*?)(?:\.d\.ts|\.js)(?:\.map)?$|^dist\/(.*\.(?:txt|mjs))$/.exec(p.split('\\').join('/'));
    if (m && !existsSync(m[2] ? join('src', m[2]) : join('src', `${m[1]}.ts`))) rmSync(p);
  }
}

copyTxt('src', 'dist');
pruneStale('dist');
writeCjsTypes();
if (existsSync('dist/cli.js')) chmodSync('dist/cli.js', 0o755);
