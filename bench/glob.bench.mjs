// glob benchmark: our glob tool (gitignore-aware walk, newest-first sort, sandbox) vs raw
// fast-glob with the same walk settings (dot files, symlinks not followed), `**/*.ts` over this
// repository's node_modules (override with BENCH_TREE). Target ratio <= 1.3. Build first: npm run build.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fg from 'fast-glob';
import { GlobTool } from '../dist/tools/files/glob.js';
import { benchCtx, compare } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const tree = path.resolve(process.env.BENCH_TREE ?? path.join(here, '..', 'node_modules'));
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const PATTERN = process.env.BENCH_PATTERN ?? '**/*.ts';

// searchIgnored: the whole tree (node_modules inside node_modules, dist, ...), as the raw fast-glob baseline walks it.
const tool = await GlobTool.init({ workspaceRoot: tree, searchIgnored: true });
const ours = () => tool.execute({ pattern: PATTERN }, benchCtx());
const baseline = () => fg(PATTERN, { cwd: tree, dot: true, onlyFiles: true, followSymbolicLinks: false });
const r = await ours();
const raw = await baseline();
console.log(
  `tree: ${tree}, pattern: ${PATTERN}: ours ${r.metadata.count} files, fast-glob ${raw.length} files, runs: ${RUNS}`,
);
await compare('glob tool vs fast-glob', 1.3, ours, baseline, RUNS);

// The policy's read filter (a deny rule with a pattern: every entry the walk lists is judged)
// against the same glob with no filter (no deny rule). Target <= 1.3.
const { createPolicy } = await import('../dist/policy/policy.js');
const policy = createPolicy({
  rules: [
    { pattern: 'no-such-dir/**', action: 'deny' },
    { permission: 'read', pattern: '*.pem', action: 'deny' },
  ],
});
const env = { workspaceRoot: tree, toolFacts: () => ({ permissions: ['read'], danger: 'safe' }) };
const filtered = () =>
  tool.execute({ pattern: PATTERN }, { ...benchCtx(), readFilter: () => policy.readFilter('glob', env) });
await compare('glob tool with the policy read filter vs without', 1.3, filtered, ours, RUNS);

// The default policy alone (its asks about secret files: `.env*`, `*.pem`, `**/.ssh/**`, ... are
// judged for every entry, so the filter is on by default), as the pipeline asks for it (with the
// call's arguments and session). Target <= 1.3.
const defaults = createPolicy();
const byDefault = () =>
  tool.execute(
    { pattern: PATTERN },
    {
      ...benchCtx(),
      readFilter: () => defaults.readFilter('glob', env, { args: { pattern: PATTERN }, sessionID: 'bench' }),
    },
  );
await compare('glob tool with the default policy read filter vs without', 1.3, byDefault, ours, RUNS);
