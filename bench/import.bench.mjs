// Import cost: a fresh node process importing the package (dist/index.js) against one importing
// `@langchain/core/tools` alone, which every LangChain host loads anyway. Rounds alternate so that
// load on the machine hits both alike; the ratio of medians is the figure (target <= 1.2).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median } from './lib.mjs';

const ROUNDS = Number(process.env.IMPORT_BENCH_ROUNDS ?? 9);
const TARGET = 1.2;
const ours = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** Wall time (ms) of `node -e "await import(spec)"` in a fresh process, from spawn to exit. */
function importMs(spec) {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(spec)});`], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(performance.now() - t) : reject(new Error(`import of ${spec} exited ${code}`)),
    );
  });
}

const bare = [];
const base = [];
const pkg = [];
await importMs('node:path'); // warm the file cache
await importMs(ours);
for (let i = 0; i < ROUNDS; i++) {
  bare.push(await importMs('node:path'));
  base.push(await importMs('@langchain/core/tools'));
  pkg.push(await importMs(ours));
}
const ratio = median(pkg) / median(base);
console.log(
  `import: agent-toolbelt ${median(pkg).toFixed(0)} ms, @langchain/core/tools ${median(base).toFixed(0)} ms, ` +
    `bare node ${median(bare).toFixed(0)} ms (median of ${ROUNDS} fresh processes), ratio = ${ratio.toFixed(2)} ` +
    `(target <= ${TARGET}) ${ratio <= TARGET ? 'OK' : 'MISSED'}`,
);
