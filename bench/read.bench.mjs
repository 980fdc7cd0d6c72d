// read benchmark: lines 1,000,000-1,002,000 of a ~1 GB generated file.
// Targets: peak RSS growth < 64 MB; time ratio ours / `sed -n` on the same range <= 3.
// Run: npx tsc -p tsconfig.build.json && node scripts/copy-assets.mjs && node bench/read.bench.mjs
import { existsSync, statSync, createWriteStream, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ReadTool } from '../dist/tools/files/read.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, 'out');
const file = path.join(outDir, 'big-1gb.txt');
const LINES = 1_050_000;
const FROM = 1_000_000;
const COUNT = 2_001; // 1,000,000..1,002,000 inclusive

async function generate() {
  mkdirSync(outDir, { recursive: true });
  if (existsSync(file) && statSync(file).size > 1_000_000_000) return;
  const pad = 'x'.repeat(990);
  const ws = createWriteStream(file);
  for (let i = 1; i <= LINES; i++) {
    if (!ws.write(`${String(i).padStart(8, '0')} ${pad}\n`)) await new Promise((r) => ws.once('drain', r));
  }
  await new Promise((r) => ws.end(r));
}

await generate();
console.log(`file: ${(statSync(file).size / 1e9).toFixed(2)} GB`);
const tool = await ReadTool.init({ workspaceRoot: outDir });
const ctx = { sessionID: 'bench', messageID: 'm', agent: 'bench', abort: new AbortController().signal, metadata() {} };

// Warm the page cache for both contenders.
execFileSync('sed', ['-n', `${FROM},${FROM + COUNT - 1}p;${FROM + COUNT - 1}q`, file], { maxBuffer: 64 << 20 });

let peak = 0;
const rss0 = process.memoryUsage().rss;
const timer = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 5);
const ours = [];
let out;
for (let r = 0; r < 3; r++) {
  const t = performance.now();
  out = await tool.execute(tool.parameters.parse({ filePath: 'big-1gb.txt', offset: FROM, limit: COUNT }), ctx);
  ours.push(performance.now() - t);
}
clearInterval(timer);
peak = Math.max(peak, process.memoryUsage().rss);
if (!out.output.startsWith(`${FROM}: ${String(FROM).padStart(8, '0')}`)) throw new Error('wrong output');

const sed = [];
for (let r = 0; r < 3; r++) {
  const t = performance.now();
  // Fair baseline: sed stops at the last wanted line, as read does.
  execFileSync('sed', ['-n', `${FROM},${FROM + COUNT - 1}p;${FROM + COUNT - 1}q`, file], { maxBuffer: 64 << 20 });
  sed.push(performance.now() - t);
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const growth = (peak - rss0) / 1024 / 1024;
console.log(`lines shown: ${out.metadata.startLine}-${out.metadata.endLine} (output capped at 50 KB, as designed)`);
console.log(`ours: ${med(ours).toFixed(0)} ms, sed -n: ${med(sed).toFixed(0)} ms`);
console.log(`ratio = ${(med(ours) / med(sed)).toFixed(2)} (target <= 3)`);
console.log(`peak RSS growth = ${growth.toFixed(1)} MB (target < 64 MB)`);
