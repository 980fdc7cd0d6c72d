// bash tool benchmark: what the tool costs on top of a bare child_process.spawn of the same
// command, measured in the same process. Build first: npx tsc -p tsconfig.build.json && node scripts/copy-assets.mjs
//   node bench/bash.bench.mjs
// Targets: per-command overhead ratio <= 1.5 (short commands); flood: <= 1.5 against a bare
// spawn piped into a file (the same work), <= 2.0 against one that only counts bytes; memory held
// by the tool for a 200 MB flood under 0.2 MB.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BashTool } from '../dist/tools/bash/bash.js';

const SHORT_RUNS = Number(process.env.BENCH_RUNS ?? 40);
const FLOOD_BYTES = Number(process.env.BENCH_FLOOD_BYTES ?? 200 * 1024 * 1024);

function bare(command, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let bytes = 0;
    child.stdout.on('data', (b) => {
      bytes += b.length;
    });
    child.stderr.on('data', (b) => {
      bytes += b.length;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, bytes }));
  });
}

/** The same flood with the plain Node way of saving output: spawn, pipe both streams into a file. */
function bareToFile(command, cwd, file) {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = createWriteStream(file);
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.on('error', reject);
    child.on('close', (code) => out.end(() => resolve({ code })));
  });
}

const ctx = () => ({
  sessionID: 'bench',
  messageID: 'm',
  agent: 'bench',
  abort: new AbortController().signal,
  metadata() {},
});

async function time(fn) {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, r };
}

const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'bash-bench-')));
const tool = await BashTool.init({ workspaceRoot: dir });
const ours = (command) => tool.execute(tool.parameters.parse({ command, description: 'bench' }), ctx());

try {
  // Warm up both paths.
  for (let i = 0; i < 3; i++) {
    await bare('true', dir);
    await ours('true');
  }

  // Short commands, interleaved so machine noise hits both sides alike.
  const cmd = 'echo hello; ls >/dev/null';
  let bareMs = 0,
    oursMs = 0;
  for (let i = 0; i < SHORT_RUNS; i++) {
    bareMs += (await time(() => bare(cmd, dir))).ms;
    oursMs += (await time(() => ours(cmd))).ms;
  }
  console.log(
    `short command x${SHORT_RUNS}: bare spawn ${(bareMs / SHORT_RUNS).toFixed(2)} ms/run, bash tool ${(oursMs / SHORT_RUNS).toFixed(2)} ms/run`,
  );
  console.log(`  ratio = ${(oursMs / bareMs).toFixed(2)} (target <= 1.5)`);

  // Flood: the tool keeps head + tail in memory and streams the rest to a file.
  const flood = `yes | head -c ${FLOOD_BYTES}`;
  const b = await time(() => bare(flood, dir));
  const bf = await time(() => bareToFile(flood, dir, path.join(dir, 'flood.txt')));
  await rm(path.join(dir, 'flood.txt'), { force: true });
  const rssBefore = process.memoryUsage().rss;
  const o = await time(() => ours(flood));
  const rssAfter = process.memoryUsage().rss;
  const m = o.r.metadata;
  console.log(
    `flood ${(FLOOD_BYTES / 1048576).toFixed(0)} MB: bare spawn (count bytes only) ${b.ms.toFixed(0)} ms, bash tool (head+tail kept, all saved to file) ${o.ms.toFixed(0)} ms`,
  );
  console.log(`  ratio vs counting only = ${(o.ms / b.ms).toFixed(2)} (target <= 2.0)`);
  console.log(
    `  bare spawn piped to a file ${bf.ms.toFixed(0)} ms: ratio = ${(o.ms / bf.ms).toFixed(2)} (target <= 1.5; same work: every byte saved)`,
  );
  console.log(
    `  tool held at most ${m.maxBufferedChars} chars of ${m.outputChars} (${(m.maxBufferedChars / 1048576).toFixed(3)} MB; target < 0.2 MB); rss delta ${((rssAfter - rssBefore) / 1048576).toFixed(1)} MB`,
  );
  if (m.outputPath) await rm(m.outputPath, { force: true });
} finally {
  await rm(dir, { recursive: true, force: true });
}
