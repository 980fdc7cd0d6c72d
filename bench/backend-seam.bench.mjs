// The backend seam's cost on the local path: the same read and edit calls through the built-in list
// (whose lazy init checks initCtx.backend once per init context) and through the tools' own modules
// registered directly (no seam), in one process, alternating (who goes first swaps every round);
// ratio = seam / direct, of the medians (target <= 1.05), with the single rounds' quartiles.
// Build first: node bench/backend-seam.bench.mjs
import { mkdtempSync, writeFileSync, rmSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRegistry, registerBuiltinTools } from '../dist/index.js';
import { ReadTool } from '../dist/tools/files/read.js';
import { EditTool } from '../dist/tools/files/edit.js';
import { median, timeMs } from './lib.mjs';

/**
 * `compare` of lib.mjs with the order alternating every round (the machine's load drifts; whoever
 * ran first would pay for it) and the single rounds' ratios shown as quartiles; returns the ratio
 * of the medians.
 */
async function compareAlternating(label, target, ours, baseline, runs) {
  await ours();
  await baseline();
  const a = [];
  const b = [];
  for (let i = 0; i < runs; i++) {
    if (i % 2) {
      b.push(await timeMs(baseline));
      a.push(await timeMs(ours));
    } else {
      a.push(await timeMs(ours));
      b.push(await timeMs(baseline));
    }
  }
  const ratio = median(a) / median(b);
  const rounds = a.map((t, i) => t / b[i]).sort((x, y) => x - y);
  const q = (f) => rounds[Math.min(rounds.length - 1, Math.floor(f * rounds.length))].toFixed(2);
  console.log(
    `${label}: ours ${median(a).toFixed(1)} ms, baseline ${median(b).toFixed(1)} ms, ratio = ${ratio.toFixed(2)} ` +
      `(single rounds: median ${q(0.5)}, quartiles ${q(0.25)}-${q(0.75)}) (target <= ${target}) ${ratio <= target ? 'OK' : 'MISSED'}`,
  );
  return ratio;
}

const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'toolbelt-seam-')));
try {
  writeFileSync(path.join(dir, 'a.txt'), Array.from({ length: 200 }, (_, i) => `line ${i}`).join('\n') + '\n');
  writeFileSync(path.join(dir, 'b.txt'), 'counter = 0;\n');
  writeFileSync(path.join(dir, 'c.txt'), 'counter = 0;\n');
  const initCtx = { workspaceRoot: dir };
  const seam = registerBuiltinTools(createRegistry({ loopGuard: false }), ['read', 'edit']);
  const direct = createRegistry({ loopGuard: false });
  direct.register(ReadTool);
  direct.register(EditTool);
  const ctx = { sessionID: 'bench' };
  const N = 200;
  const reads = (registry) => async () => {
    for (let i = 0; i < N; i++) await registry.execute('read', { filePath: 'a.txt' }, ctx, initCtx);
  };
  await seam.execute('read', { filePath: 'b.txt' }, ctx, initCtx);
  await direct.execute('read', { filePath: 'c.txt' }, ctx, initCtx);
  let s = 0;
  let d = 0;
  const edits = (registry, file, next) => async () => {
    for (let i = 0; i < N / 4; i++) {
      const n = next();
      const u = await registry.execute(
        'edit',
        { filePath: file, oldString: `counter = ${n};`, newString: `counter = ${n + 1};` },
        ctx,
        initCtx,
      );
      if (!u.success) throw new Error(u.error);
    }
  };
  const r1 = await compareAlternating(
    `${N} reads of a 200-line file, seam / direct`,
    1.05,
    reads(seam),
    reads(direct),
    31,
  );
  const r2 = await compareAlternating(
    `${N / 4} edits, seam / direct`,
    1.05,
    edits(seam, 'b.txt', () => s++),
    edits(direct, 'c.txt', () => d++),
    21,
  );
  console.log(`backend seam on the local path: read ${r1.toFixed(2)}, edit ${r2.toFixed(2)} (target <= 1.05)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
