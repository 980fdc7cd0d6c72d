// Undo's cost, in one process, alternating: (1) the local no-store path: write calls through the
// built-in list (whose write waits for undo's store saves: one WeakMap lookup without a store) vs
// the tool's own module registered directly (target <= 1.05); (2) what a store costs: the same
// writes with the registry given an InMemoryStore (each change saved as one ~undo record, then the
// caps trimmed) vs none (reported, no target: it is the price of undo that outlives the process).
// CPU time of this process, alternating rounds (median).
// Build first: npm run build && node bench/undo.bench.mjs
import { mkdtempSync, writeFileSync, rmSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InMemoryStore } from '@langchain/langgraph';
import { createRegistry, registerBuiltinTools } from '../dist/index.js';
import { WriteTool } from '../dist/tools/files/write.js';
import { ReadTool } from '../dist/tools/files/read.js';
import { median } from './lib.mjs';

/** CPU time (this process, ms) of `fn`: the machine is shared, and a write's fsync wait is not ours to measure. */
async function cpuMs(fn) {
  const start = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** Alternating rounds of `ours` and `baseline`; prints the median CPU times and their ratio. */
async function compare(label, target, ours, baseline, runs) {
  await ours();
  await baseline();
  const a = [];
  const b = [];
  for (let i = 0; i < runs; i++) {
    a.push(await cpuMs(ours));
    b.push(await cpuMs(baseline));
  }
  const ratio = median(a) / median(b);
  console.log(
    `${label}: ours ${median(a).toFixed(1)} ms CPU, baseline ${median(b).toFixed(1)} ms CPU, ratio = ${ratio.toFixed(2)}${Number.isFinite(target) ? ` (target <= ${target}) ${ratio <= target ? 'OK' : 'MISSED'}` : ''}`,
  );
}

const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'toolbelt-undo-bench-')));
try {
  for (const f of ['a', 'b', 'c']) writeFileSync(path.join(dir, `${f}.txt`), 'x\n');
  const initCtx = { workspaceRoot: dir };
  const builtin = registerBuiltinTools(createRegistry({ loopGuard: false }), ['write', 'read']);
  const direct = createRegistry({ loopGuard: false });
  direct.register(WriteTool);
  direct.register(ReadTool);
  const stored = registerBuiltinTools(
    createRegistry({ loopGuard: false, store: new InMemoryStore(), namespace: ['bench'] }),
    ['write', 'read'],
  );
  const ctx = { sessionID: 'bench' };
  const N = 100;
  const content = 'line\n'.repeat(200);
  const writes = (registry, file) => async () => {
    for (let i = 0; i < N; i++) {
      const u = await registry.execute('write', { filePath: file, content: `${i}\n${content}` }, ctx, initCtx);
      if (!u.success) throw new Error(u.error);
    }
  };
  for (const [r, f] of [
    [builtin, 'a.txt'],
    [stored, 'c.txt'],
    [direct, 'b.txt'],
  ])
    await r.execute('read', { filePath: f }, ctx, initCtx);
  await compare(
    `local write, no store: built-in vs direct module (${N} calls)`,
    1.05,
    writes(builtin, 'a.txt'),
    writes(direct, 'b.txt'),
    15,
  );
  await compare(
    `local write with an InMemoryStore vs none (${N} calls)`,
    Infinity,
    writes(stored, 'c.txt'),
    writes(builtin, 'a.txt'),
    15,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
