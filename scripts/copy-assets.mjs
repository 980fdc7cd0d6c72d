// Copies the built-in tools' .txt descriptions (and plain-JS worker scripts, .mjs) next to their compiled modules, so that
// `dist/tools/<name>.js` finds `dist/tools/<name>.txt` exactly as `src/tools/<name>.ts` does.
import { cpSync, readdirSync, mkdirSync, chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';

function copyTxt(from, to) {
  if (!existsSync(from)) return;
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory()) copyTxt(join(from, entry.name), join(to, entry.name));
    else if (entry.name.endsWith('.txt') || entry.name.endsWith('.mjs'))
      cpSync(join(from, entry.name), join(to, entry.name));
  }
}
copyTxt('src', 'dist');
if (existsSync('dist/cli.js')) chmodSync('dist/cli.js', 0o755);
