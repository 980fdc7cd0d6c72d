// Per-call overhead of the LangChain adapter: N invocations of a no-op tool through our
// registry adapter vs a bare DynamicStructuredTool with the same schema, both via
// `.invoke(toolCall)`, interleaved in rounds in one process. Prints the ratio (target <= 1.15).
// Run: npm run build && node bench/adapter.bench.mjs [N]
import { z } from 'zod';
import { DynamicStructuredTool } from '@langchain/core/tools';
import { Tool, createRegistry } from '../dist/index.js';

const N = Number(process.argv[2] ?? 10_000);
// Interleaved rounds and the median of per-round ratios: the machine is shared and noisy.
const ROUNDS = 20;
const schema = z.object({ text: z.string().describe('Text to echo') });

const bare = new DynamicStructuredTool({
  name: 'noop',
  description: 'No-op',
  schema,
  responseFormat: 'content_and_artifact',
  func: async (args) => [args.text, { title: 'noop', metadata: {}, output: args.text }],
});
const registry = createRegistry({ concurrency: 8 });
registry.register(
  Tool.define('noop', {
    description: 'No-op',
    parameters: schema,
    execute: async (args) => ({ title: 'noop', metadata: {}, output: args.text }),
  }),
  { permissions: { required: [] } },
);
const [ours] = await registry.tools();

// CPU time of this process (user + system), not wall time: on a shared machine other processes
// stretch wall time at random, while the CPU this loop itself burns stays comparable.
async function time(tool, n) {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await tool.invoke({ type: 'tool_call', id: `c${i}`, name: 'noop', args: { text: 'x' } });
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

// Warm-up both paths until the JIT has settled (not counted).
for (let w = 0; w < 5; w++) {
  await time(bare, 2000);
  await time(ours, 2000);
}
let bareMs = 0;
let oursMs = 0;
const ratios = [];
for (let r = 0; r < ROUNDS; r++) {
  const b = await time(bare, N / ROUNDS);
  const o = await time(ours, N / ROUNDS);
  bareMs += b;
  oursMs += o;
  ratios.push(o / b);
}
ratios.sort((x, y) => x - y);
const ratio = ratios[Math.floor(ROUNDS / 2)];
console.log(`adapter overhead: ${N} invokes (CPU time)`);
console.log(`  bare DynamicStructuredTool: ${bareMs.toFixed(0)} ms (${((bareMs * 1000) / N).toFixed(1)} us/call)`);
console.log(`  agent-toolbelt adapter:     ${oursMs.toFixed(0)} ms (${((oursMs * 1000) / N).toFixed(1)} us/call)`);
console.log(`  total ratio = ${(oursMs / bareMs).toFixed(3)}`);
console.log(
  `  ratio = ${ratio.toFixed(3)} (median of ${ROUNDS} rounds; target <= 1.15) ${ratio <= 1.15 ? 'OK' : 'OVER TARGET'}`,
);

// Wall time against a plain DynamicStructuredTool that returns a string (no artifact), the way a
// user's own tool is most often written: what an agent's loop waits for per call, idle waits
// included (a macrotask hop per call costs wall time, not CPU).
const plain = new DynamicStructuredTool({
  name: 'noop',
  description: 'No-op',
  schema,
  func: async (args) => args.text,
});
async function wall(tool, n) {
  const start = performance.now();
  for (let i = 0; i < n; i++) await tool.invoke({ type: 'tool_call', id: `w${i}`, name: 'noop', args: { text: 'x' } });
  return performance.now() - start;
}
for (let w = 0; w < 3; w++) {
  await wall(plain, 2000);
  await wall(ours, 2000);
}
const wallRatios = [];
let plainWall = 0;
let oursWall = 0;
for (let r = 0; r < ROUNDS; r++) {
  const p = await wall(plain, N / ROUNDS);
  const o = await wall(ours, N / ROUNDS);
  plainWall += p;
  oursWall += o;
  wallRatios.push(o / p);
}
wallRatios.sort((x, y) => x - y);
const wallRatio = wallRatios[Math.floor(ROUNDS / 2)];
console.log(`adapter overhead: ${N} invokes (wall time, plain string-returning tool as baseline)`);
console.log(
  `  plain DynamicStructuredTool: ${plainWall.toFixed(0)} ms (${((plainWall * 1000) / N).toFixed(1)} us/call)`,
);
console.log(`  agent-toolbelt adapter:      ${oursWall.toFixed(0)} ms (${((oursWall * 1000) / N).toFixed(1)} us/call)`);
console.log(
  `  wall ratio = ${wallRatio.toFixed(3)} (median of ${ROUNDS} rounds; target <= 1.15) ${wallRatio <= 1.15 ? 'OK' : 'OVER TARGET'}`,
);
