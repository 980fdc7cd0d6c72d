// Cost of the progress-aware loop guard (issue 21, item 5): every call in a session now has its
// result kept to compare with the next (a hash past LOOP_RESULT_KEPT_CHARS). N calls of a tool returning a 4 KB output, through `registry.execute` with a
// session, on a registry with the guard on vs one with `loopGuard: false`, interleaved in rounds
// in one process (CPU time). Prints the ratio (target <= 1.25; the guard on also serialises each
// call's arguments, which it did before this issue too).
// Run: npm run build && node bench/loop-guard.bench.mjs [N]
import { z } from 'zod';
import { Tool, createRegistry } from '../dist/index.js';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = 20;
const OUTPUT = 'x'.repeat(4096);

function registryWith(loopGuard) {
  const registry = createRegistry({ concurrency: 8, loopGuard });
  registry.register(
    Tool.define('page', {
      description: 'Returns a page of text',
      parameters: z.object({ n: z.number() }),
      execute: async () => ({ title: 'page', metadata: {}, output: OUTPUT }),
    }),
    { permissions: { required: ['read'] } },
  );
  return registry;
}
const guarded = registryWith(undefined);
const unguarded = registryWith(false);

let seq = 0;
async function time(registry, n) {
  const start = process.cpuUsage();
  // A different argument each call, as a working agent's calls are: the guard records, never trips.
  for (let i = 0; i < n; i++) await registry.execute('page', { n: seq++ }, { sessionID: 'bench' });
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

for (let w = 0; w < 3; w++) {
  await time(unguarded, 2000);
  await time(guarded, 2000);
}
let offMs = 0;
let onMs = 0;
const ratios = [];
for (let r = 0; r < ROUNDS; r++) {
  const off = await time(unguarded, N / ROUNDS);
  const on = await time(guarded, N / ROUNDS);
  offMs += off;
  onMs += on;
  ratios.push(on / off);
}
ratios.sort((x, y) => x - y);
const ratio = ratios[Math.floor(ROUNDS / 2)];
console.log(`loop guard cost: ${N} calls with a session, 4 KB output each (CPU time)`);
console.log(`  loopGuard: false: ${offMs.toFixed(0)} ms (${((offMs * 1000) / N).toFixed(1)} us/call)`);
console.log(`  loop guard on:    ${onMs.toFixed(0)} ms (${((onMs * 1000) / N).toFixed(1)} us/call)`);
console.log(
  `  ratio = ${ratio.toFixed(3)} (median of ${ROUNDS} rounds; target <= 1.25) ${ratio <= 1.25 ? 'OK' : 'OVER TARGET'}`,
);
