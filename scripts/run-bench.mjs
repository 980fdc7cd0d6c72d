// Runs every benchmark in bench/ (or those whose names contain an argument) one after another,
// against the freshly built dist/. Each prints its own ratio against a same-run baseline.
// Usage: npm run bench [-- grep adapter]
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const filters = process.argv.slice(2);
const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => !filters.length || filters.some((x) => f.includes(x)))
  .sort();
let failed = 0;
for (const file of files) {
  console.log(`\n=== ${file} ===`);
  const run = spawnSync(process.execPath, [`bench/${file}`], { stdio: 'inherit' });
  if (run.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
