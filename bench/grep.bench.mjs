// grep benchmark: our grep tool against the tools it wraps or replaces, in one run.
//   rg path:  GrepTool (ripgrep backend) vs `rg` run directly with the same walk settings. Target <= 1.3.
//   JS path:  GrepTool (JS fallback)      vs `grep -rn`.                                    Target <= 2.
// Tree: this repository's node_modules (override with BENCH_TREE). Build first: npm run build.
// Each side runs alternately, after a warm-up; the median of the runs is compared.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GrepTool } from '../dist/tools/grep/grep.js';
import { findExecutable } from '../dist/platform/files.js';
import { benchCtx, compare } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const tree = path.resolve(process.env.BENCH_TREE ?? path.join(here, '..', 'node_modules'));
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const PATTERN = process.env.BENCH_PATTERN ?? 'readFileSync|createRequire';

function run(cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'ignore'] });
    let bytes = 0;
    child.stdout.on('data', (c) => {
      bytes += c.length;
    });
    child.on('error', reject);
    child.on('close', () => resolve(bytes));
  });
}

console.log(`tree: ${tree}, pattern: ${JSON.stringify(PATTERN)}, runs: ${RUNS}`);
const rg = await findExecutable('rg');
if (rg) {
  const tool = await GrepTool.init({ workspaceRoot: tree, grepBackend: 'rg', searchIgnored: true });
  const res = await tool.execute({ pattern: PATTERN }, benchCtx());
  console.log(`rg backend: ${res.metadata.matches} matches in ${res.metadata.files} files`);
  await compare(
    'grep tool (rg) vs rg',
    1.3,
    () => tool.execute({ pattern: PATTERN }, benchCtx()),
    () => run(rg, ['--no-config', '--no-ignore-parent', '--hidden', '-n', '-e', PATTERN, '.'], tree),
    RUNS,
  );
} else {
  console.log('rg not on PATH: ripgrep comparison skipped');
}
const js = await GrepTool.init({ workspaceRoot: tree, grepBackend: 'js', searchIgnored: true });
const res = await js.execute({ pattern: PATTERN }, benchCtx());
console.log(`js backend: ${res.metadata.matches} matches in ${res.metadata.files} files`);
await compare(
  'grep tool (js) vs grep -rn',
  2,
  () => js.execute({ pattern: PATTERN }, benchCtx()),
  () => run('grep', ['-rnE', PATTERN, '.'], tree),
  RUNS,
);

// The policy's read filter (a deny rule with a pattern: every path the walk finds is judged) against
// the same search with no filter (no deny rule: nothing is judged). Target <= 1.3.
const { createPolicy } = await import('../dist/policy/policy.js');
const policy = createPolicy({
  rules: [
    { pattern: 'no-such-dir/**', action: 'deny' },
    { permission: 'read', pattern: '*.pem', action: 'deny' },
  ],
});
const env = { workspaceRoot: tree, toolFacts: () => ({ permissions: ['read'], danger: 'safe' }) };
const filtered = () => ({ ...benchCtx(), readFilter: () => policy.readFilter('grep', env) });
const withFilter = await js.execute({ pattern: PATTERN }, filtered());
console.log(
  `js backend with the policy filter: ${withFilter.metadata.matches} matches, ${withFilter.metadata.skippedByPolicy ?? 0} paths left out`,
);
await compare(
  'grep tool (js) with the policy read filter vs without',
  1.3,
  () => js.execute({ pattern: PATTERN }, filtered()),
  () => js.execute({ pattern: PATTERN }, benchCtx()),
  RUNS,
);

// The default policy alone (its asks about secret files: `.env*`, `*.pem`, `**/.ssh/**`, ... are
// judged for every path, so the filter is on by default), as the pipeline asks for it (with the
// call's arguments and session). Target <= 1.3 (JS; rg's results are filtered after it ran).
const defaults = createPolicy();
const byDefault = () => ({
  ...benchCtx(),
  readFilter: () => defaults.readFilter('grep', env, { args: { pattern: PATTERN }, sessionID: 'bench' }),
});
await compare(
  'grep tool (js) with the default policy read filter vs without',
  1.3,
  () => js.execute({ pattern: PATTERN }, byDefault()),
  () => js.execute({ pattern: PATTERN }, benchCtx()),
  RUNS,
);
if (rg) {
  const rgTool = await GrepTool.init({ workspaceRoot: tree, grepBackend: 'rg', searchIgnored: true });
  await compare(
    'grep tool (rg) with the default policy read filter vs without',
    1.3,
    () => rgTool.execute({ pattern: PATTERN }, byDefault()),
    () => rgTool.execute({ pattern: PATTERN }, benchCtx()),
    RUNS,
  );
}
