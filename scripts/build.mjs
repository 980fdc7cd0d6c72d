// `npm run build`: compiles src/ into dist/ (tsc, then scripts/copy-assets.mjs), unless dist/ was
// built after the last change to its inputs (src/, the tsconfig files, package.json and these
// scripts): `npm install`, `npm run demo` and `npm pack` each ask for a build, and only the first
// after a change does one. `--force` builds anyway.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Written after a successful build, dated when the build began. */
export const BUILD_STAMP = 'dist/.build-stamp';
/** What a build reads besides src/: a change to any of them makes dist/ stale. */
export const BUILD_INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts'];

function newestMtime(p) {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs; // a deleted or renamed file changes its directory
  for (const e of readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, e)));
  return newest;
}

/** Whether dist/ under `root` was built after the last change to any build input. */
export function distUpToDate(root = '.') {
  const stamp = statSync(path.join(root, BUILD_STAMP), { throwIfNoEntry: false });
  if (!stamp) return false;
  return BUILD_INPUTS.every((p) => newestMtime(path.join(root, p)) <= stamp.mtimeMs);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  if (!process.argv.includes('--force') && distUpToDate(root)) {
    console.log(
      'dist/ is up to date (built after the last change to src/ and the build config); `npm run build -- --force` rebuilds it.',
    );
  } else {
    const began = new Date();
    const node = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
    node([path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json']);
    node([path.join(root, 'scripts', 'copy-assets.mjs')]);
    const stamp = path.join(root, BUILD_STAMP);
    writeFileSync(stamp, `built ${began.toISOString()}\n`);
    utimesSync(stamp, began, began);
  }
}
