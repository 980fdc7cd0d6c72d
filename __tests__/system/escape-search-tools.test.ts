/**
 * Path-escape suite for the search tools: every attack path from attack-paths.ts as `path` of
 * list, glob and grep (both grep backends), plus hostile glob patterns and include globs. Nothing
 * outside the workspace may be named or shown, and nothing outside may change.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { setupAttackPaths, type AttackFixture } from '../support/attack-paths.js';
import { ListTool } from '../../src/tools/files/list.js';
import { GlobTool } from '../../src/tools/files/glob.js';
import { GrepTool } from '../../src/tools/grep/grep.js';
import { findExecutable } from '../../src/platform/files.js';
import { duplicates, tempDir, makeCtx } from '../support/helpers.js';

const RG = await findExecutable('rg');
if (!RG)
  console.warn(
    'escape-search-tools.test: no `rg` on PATH; grep is checked with the JS backend only (ripgrep runs SKIPPED).',
  );

let base: { dir: string; cleanup: () => Promise<void> };
let ws: string;
let out: string;
let fx: AttackFixture;
let before: Map<string, string>;

/** Names that exist only outside the workspace. */
const OUTSIDE_ONLY_NAMES = ['secret.txt', 'deep.txt', 'nested', 'missing.txt', 'chain-missing.txt'];

type Runner = { name: string; run: (args: Record<string, unknown>) => Promise<{ output: string }> };
const runners: Runner[] = [];

beforeAll(async () => {
  base = await tempDir('escape-search-');
  ws = path.join(base.dir, 'ws');
  out = path.join(base.dir, 'outside');
  await mkdir(ws);
  await mkdir(out);
  fx = await setupAttackPaths(ws, out);
  before = await fx.snapshotOutside();
  const init = { workspaceRoot: ws };
  const list = await ListTool.init(init);
  const glob = await GlobTool.init(init);
  const grepJs = await GrepTool.init({ ...init, grepBackend: 'js' });
  runners.push(
    { name: 'list', run: (a) => list.execute(list.parameters.parse(a), makeCtx()) },
    { name: 'glob', run: (a) => glob.execute(glob.parameters.parse({ pattern: '**/*', ...a }), makeCtx()) },
    {
      name: 'grep(js)',
      run: (a) => grepJs.execute(grepJs.parameters.parse({ pattern: 'TOP-SECRET|inside|.', ...a }), makeCtx()),
    },
  );
  if (RG) {
    const grepRg = await GrepTool.init({ ...init, grepBackend: 'rg' });
    runners.push({
      name: 'grep(rg)',
      run: (a) => grepRg.execute(grepRg.parameters.parse({ pattern: 'TOP-SECRET|inside|.', ...a }), makeCtx()),
    });
  }
});

afterAll(async () => {
  await fx.cleanup();
  await base.cleanup();
});

/** Asserts a tool's answer (output or error text) reveals nothing from outside. */
function assertNoLeak(text: string, request: string): void {
  expect(text).not.toContain(fx.secret);
  for (const name of OUTSIDE_ONLY_NAMES) {
    if (!request.includes(name)) expect(text).not.toContain(name);
  }
}

async function attempt(runner: Runner, args: Record<string, unknown>): Promise<{ ok: boolean; text: string }> {
  try {
    return { ok: true, text: (await runner.run(args)).output };
  } catch (err) {
    return { ok: false, text: (err as Error).message };
  }
}

describe('search tools: attack paths as `path`', () => {
  it('uses the shared fixture with at least 30 attacks, each path tried once', () => {
    expect(duplicates(fx.attacks.map((a) => a.path))).toEqual([]);
    expect(fx.attacks.length).toBeGreaterThanOrEqual(30);
  });

  it('refuses every "outside" attack with the outside-the-workspace error, for every tool', async () => {
    let checked = 0;
    for (const attack of fx.attacks.filter((a) => a.expect === 'outside')) {
      for (const runner of runners) {
        const res = await attempt(runner, { path: attack.path });
        if (res.ok || !/outside the workspace/.test(res.text)) {
          throw new Error(
            `${runner.name} did not refuse "${attack.label}" (${JSON.stringify(attack.path)}): ${res.text.slice(0, 300)}`,
          );
        }
        assertNoLeak(res.text, attack.path);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(30 * 3);
  });

  it('"inside" attacks stay inside: whatever the tool answers, nothing from outside shows', async () => {
    for (const attack of fx.attacks.filter((a) => a.expect === 'inside')) {
      for (const runner of runners) {
        const res = await attempt(runner, { path: attack.path });
        assertNoLeak(res.text, attack.path);
      }
    }
  });

  it('walking the whole workspace never enters a symlink that points outside', async () => {
    for (const runner of runners) {
      const res = await attempt(runner, {});
      expect(res.ok).toBe(true);
      assertNoLeak(res.text, '');
    }
    const grepSecret = await attempt(runners.find((r) => r.name === 'grep(js)') as Runner, { pattern: fx.secret });
    expect(grepSecret.text).toMatch(/^No matches found/);
  });
});

describe('glob: hostile patterns', () => {
  const patterns = (): string[] => {
    const rel = path.relative(ws, out);
    return [
      '../**',
      '../*',
      `${rel}/**`,
      `${rel}/*.txt`,
      `./${rel}/**/*`,
      '../../**/*',
      `${out}/**`,
      `${out}/*`,
      '/**',
      '/*',
      '/etc/*',
      `${fx.evilDir}/*`,
      `${ws}-evil/**`,
      `${ws}/../${path.basename(out)}/**`,
      'link-dir/**',
      'link-dir/*',
      'link-dir-rel/**',
      'link-root/etc/*',
      'link-etc/*',
      'link-parent/**',
      'sub/link-up/**',
      'sub/deeper/link-deep/**',
      'link-*/**',
      '**/link-deep/*',
      '**/secret.txt',
      '*/*/*',
      '**/../../**',
      'sub/../../**',
      '{..,.}/**',
      `{${out},.}/*`,
      // Brace groups, extglobs and character classes that name a symlinked directory (or an
      // absolute branch) without a fixed leading part: the sandbox never sees them as a path.
      '{link-root,x}/etc/*',
      '{link-root,x}/etc/hostname',
      '{,link-root/}etc/hostname',
      // A walk of the workspace root lists link-dir (a symlink) before the static branch names a
      // file through it: only a real directory in a listing may vouch for its children.
      '{**/*.txt,link-dir/secret.txt}',
      '{**,link-dir/secret.txt}',
      '{link-root/etc,x}/host*',
      '{link-dir,sub}/*',
      '{link-dir,sub}/secret.txt',
      '{link-dir-rel,x}/nested/*',
      '{sub/link-up,x}/**',
      '{sub/deeper/link-deep,x}/*',
      '@(link-dir|sub)/*',
      '+(link-dir)/*.txt',
      '!(sub)/secret.txt',
      '[l]ink-dir/*',
      'link-d?r/*',
      '{link-file,inside.txt}',
      '{chain1,x}',
      `{x,${out}}/*`,
      `{x,${out}/dir}/**`,
      '{x,/etc}/*',
      `{x,${fx.evilDir}}/*`,
    ];
  };

  it('never lists a file from outside, whatever the pattern', async () => {
    const glob = runners[1];
    const escapes: string[] = [];
    for (const pattern of patterns()) {
      const res = await attempt(glob, { pattern });
      assertNoLeak(res.text, pattern);
      if (res.ok) {
        for (const line of res.text.split('\n')) {
          if (!line || line.startsWith('(') || line.startsWith('No files')) continue;
          // Judged by real path: a result named through a symlinked directory is an escape.
          const real = await realpath(path.resolve(ws, line)).catch(() => `unresolvable ${line}`);
          if (!real.startsWith(ws + path.sep)) escapes.push(`${pattern} -> ${line} (${real})`);
        }
      }
    }
    console.log(`glob hostile patterns: ${patterns().length} patterns, ${escapes.length} escapes`);
    expect(escapes).toEqual([]);
  });

  it('refuses the plainly outside ones with the sandbox error', async () => {
    const glob = runners[1];
    for (const pattern of [
      '../**',
      `${out}/**`,
      '/**',
      '/etc/*',
      `${fx.evilDir}/*`,
      'link-dir/**',
      'link-root/etc/*',
      'sub/link-up/**',
    ]) {
      const res = await attempt(glob, { pattern });
      expect(res.ok).toBe(false);
      expect(res.text).toMatch(/outside the workspace/);
    }
  });
});

describe('grep: hostile include globs', () => {
  it('an include glob can only narrow the search, never widen it', async () => {
    const rel = path.relative(ws, out);
    for (const runner of runners.filter((r) => r.name.startsWith('grep'))) {
      for (const include of [
        '../**',
        `${rel}/**`,
        `${out}/*`,
        'link-dir/*',
        '**/secret.txt',
        '/**',
        '*.txt',
        '{..,.}/**',
      ]) {
        const res = await attempt(runner, { include, pattern: 'TOP-SECRET' });
        assertNoLeak(res.text, include);
      }
    }
  });
});

describe('search tools change nothing outside', () => {
  it('the outside tree is byte-for-byte what it was', async () => {
    expect(await fx.snapshotOutside()).toEqual(before);
  });
});
