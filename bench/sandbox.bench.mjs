// OS sandbox benchmark: the bash tool with the sandbox on (bubblewrap, probed once per registry)
// against the same tool with it off, in the same process and the same registry set-up.
// Build first: npm run build
//   node bench/sandbox.bench.mjs
// Targets: a short command sandboxed <= 1.5x wall per call (the absolute overhead in ms printed
// beside it); 200 MB of output through the sandbox <= 1.2x of unsandboxed, memory held < 1 MB.
import { mkdtemp, rm, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRegistry, registerBuiltinTools } from '../dist/index.js';
import { compare, median, timeMs } from './lib.mjs';

const SHORT_RUNS = Number(process.env.BENCH_RUNS ?? 40);
const FLOOD_BYTES = Number(process.env.BENCH_FLOOD_BYTES ?? 200 * 1024 * 1024);

const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'sandbox-bench-')));
const on = registerBuiltinTools(createRegistry({ sandbox: { mode: 'required' } }));
const off = registerBuiltinTools(createRegistry({ sandbox: { mode: 'off' } }));
const initCtx = { workspaceRoot: dir };
const bash = (registry, command) => registry.execute('bash', { command, description: 'bench' }, {}, initCtx);

try {
  const status = await on.sandboxStatus(initCtx);
  if (!status.enabled) throw new Error(`the sandbox cannot run here: ${status.reason}`);
  const check = await bash(on, 'echo ok');
  if (!check.result.metadata.sandboxed) throw new Error('the sandboxed registry did not sandbox');

  const cmd = 'echo hello; ls >/dev/null';
  const short = { on: [], off: [] };
  const ratio = await compare(
    `short command x${SHORT_RUNS} (sandboxed vs not, bash tool through the registry)`,
    1.5,
    async () => short.on.push(await timeMs(() => bash(on, cmd))),
    async () => short.off.push(await timeMs(() => bash(off, cmd))),
    SHORT_RUNS,
  );
  console.log(
    `  overhead = ${(median(short.on) - median(short.off)).toFixed(1)} ms per call (ratio ${ratio.toFixed(2)})`,
  );

  const flood = `yes | head -c ${FLOOD_BYTES}`;
  const plain = await timeMs(() => bash(off, flood));
  let result;
  const boxed = await timeMs(async () => (result = await bash(on, flood)));
  const m = result.result.metadata;
  const floodRatio = boxed / plain;
  console.log(
    `flood ${(FLOOD_BYTES / 1048576).toFixed(0)} MB: sandboxed ${boxed.toFixed(0)} ms, not ${plain.toFixed(0)} ms, ratio = ${floodRatio.toFixed(2)} (target <= 1.2) ${floodRatio <= 1.2 ? 'OK' : 'MISSED'}`,
  );
  const heldMB = m.maxBufferedChars / 1048576;
  console.log(
    `  held at most ${m.maxBufferedChars} chars of ${m.outputChars} (${heldMB.toFixed(3)} MB; target < 1 MB) ${heldMB < 1 ? 'OK' : 'MISSED'}`,
  );
} finally {
  await on.dispose();
  await off.dispose();
  await rm(dir, { recursive: true, force: true });
}
