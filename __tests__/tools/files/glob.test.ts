import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile, utimes, symlink, chmod, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { GlobTool, MAX_GLOB_RESULTS, splitPattern } from '../../../src/tools/files/glob.js';
import { tempDir, makeCtx } from '../../support/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const T0 = 1_700_000_000;
// One plain line (console.warn would print a block with a code frame under jest).
if (process.getuid?.() === 0)
  process.stderr.write(
    'glob.test: skipping "skips unreadable directories" here (root can read any directory); unprivileged.test.ts runs it as nobody.\n',
  );

async function put(rel: string, content = 'x\n', mtimeSec?: number): Promise<void> {
  const abs = path.join(dir, rel);
  await mkdir(path.dirname(abs), { recursive: true });
  await writeFile(abs, content);
  if (mtimeSec !== undefined) await utimes(abs, mtimeSec, mtimeSec);
}

async function glob(args: Record<string, unknown>, ctx = makeCtx(), init: Record<string, unknown> = {}) {
  const tool = await GlobTool.init({ workspaceRoot: dir, ...init });
  return tool.execute(tool.parameters.parse(args), ctx);
}

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('glob-'));
  await put('a.ts', 'x', T0 + 1);
  await put('src/b.ts', 'x', T0 + 3);
  await put('src/deep/c.ts', 'x', T0 + 2);
  await put('src/d.js', 'x', T0 + 4);
  await put('.hidden/h.ts', 'x', T0);
  await put('.git/hooks/g.ts', 'x', T0);
  await put('.gitignore', 'gen/\n*.gen.ts\n!keep.gen.ts\n');
  await put('gen/x.ts', 'x', T0);
  await put('src/y.gen.ts', 'x', T0);
  await put('src/keep.gen.ts', 'x', T0 - 10);
  await put('src/nested/.gitignore', 'local.ts\n');
  await put('src/nested/local.ts', 'x', T0);
  await put('src/nested/other.ts', 'x', T0 - 20);
});

afterAll(async () => {
  await cleanup();
});

describe('glob', () => {
  it('returns matching files newest first, relative to the workspace root', async () => {
    const res = await glob({ pattern: 'src/**/*.ts' });
    expect(res.output.split('\n')).toEqual(['src/b.ts', 'src/deep/c.ts', 'src/keep.gen.ts', 'src/nested/other.ts']);
    expect(res.metadata).toEqual({ count: 4, shown: 4, truncated: false });
  });

  it('respects .gitignore (root and nested files, negation), skips .git, includes hidden files', async () => {
    const out = (await glob({ pattern: '**/*.ts' })).output.split('\n');
    expect(out).toContain('.hidden/h.ts');
    expect(out).toContain('src/keep.gen.ts');
    expect(out).toContain('src/nested/other.ts');
    expect(out).not.toContain('gen/x.ts');
    expect(out).not.toContain('src/y.gen.ts');
    expect(out).not.toContain('src/nested/local.ts');
    expect(out.filter((l) => l.startsWith('.git/'))).toEqual([]);
  });

  it('searches under path, and "*" only matches the top level of it', async () => {
    expect((await glob({ pattern: '*.ts', path: 'src' })).output.split('\n')).toEqual(['src/b.ts', 'src/keep.gen.ts']);
    expect((await glob({ pattern: '*.ts' })).output).toBe('a.ts');
  });

  it('walks an ignored directory that the pattern or path names explicitly', async () => {
    expect((await glob({ pattern: 'gen/*.ts' })).output).toBe('gen/x.ts');
    expect((await glob({ pattern: '*.ts', path: 'gen' })).output).toBe('gen/x.ts');
  });

  it('applies the ignore files above the directories a brace group names', async () => {
    // fast-glob reads `{src,nothing}/**` from src and nothing, never listing the root with its .gitignore.
    expect((await glob({ pattern: '{src,nothing}/**/*.ts' })).output.split('\n')).toEqual([
      'src/b.ts',
      'src/deep/c.ts',
      'src/keep.gen.ts',
      'src/nested/other.ts',
    ]);
    expect((await glob({ pattern: '{gen,src}/*.ts' })).output.split('\n')).toEqual(['src/b.ts', 'src/keep.gen.ts']);
  });

  it('accepts a plain file path and an absolute pattern inside the workspace', async () => {
    expect((await glob({ pattern: 'src/d.js' })).output).toBe('src/d.js');
    expect((await glob({ pattern: path.join(dir, 'src', '*.js') })).output).toBe('src/d.js');
  });

  it('says clearly when nothing matches', async () => {
    const res = await glob({ pattern: '**/*.rs' });
    expect(res.output).toBe('No files found matching "**/*.rs" in the workspace root.');
    expect(res.metadata).toEqual({ count: 0, shown: 0, truncated: false });
    expect((await glob({ pattern: 'missing/**/*.ts' })).metadata.count).toBe(0);
  });

  it('does not follow or return symlinks', async () => {
    await put('links/real/r.txt');
    await symlink(path.join(dir, 'links', 'real'), path.join(dir, 'links', 'alias'));
    await symlink(path.join(dir, 'links', 'real', 'r.txt'), path.join(dir, 'links', 'alias.txt'));
    expect((await glob({ pattern: '**/*.txt', path: 'links' })).output).toBe('links/real/r.txt');
  });

  it(`returns ${MAX_GLOB_RESULTS} files without a note, and the ${MAX_GLOB_RESULTS} newest of ${MAX_GLOB_RESULTS + 1} with one`, async () => {
    for (let i = 0; i < MAX_GLOB_RESULTS; i++) await put(`cap/f${String(i).padStart(3, '0')}.txt`, 'x', T0 + i);
    const at = await glob({ pattern: '*.txt', path: 'cap' });
    expect(at.metadata).toEqual({ count: MAX_GLOB_RESULTS, shown: MAX_GLOB_RESULTS, truncated: false });
    expect(at.output).not.toContain('truncated');
    await put('cap/oldest.txt', 'x', T0 - 1000);
    const past = await glob({ pattern: '*.txt', path: 'cap' });
    expect(past.metadata).toEqual({
      count: MAX_GLOB_RESULTS + 1,
      shown: MAX_GLOB_RESULTS,
      truncated: true,
      fullListPath: expect.any(String),
    });
    const lines = past.output.split('\n');
    expect(lines[0]).toBe('cap/f099.txt');
    expect(lines).not.toContain('cap/oldest.txt');
    expect(past.output).toMatch(
      /\(Results are truncated: showing the 100 most recently modified of 101 files\. All 101 paths, newest first, are saved at \S+: read it with the read tool \(offset=101 continues this list\), or use a more specific pattern or path\.\)$/,
    );
  });

  it('returns a file once when brace alternatives overlap', async () => {
    const res = await glob({ pattern: '{src,src/deep}/**/*.ts' });
    expect(res.output.split('\n')).toEqual(['src/b.ts', 'src/deep/c.ts', 'src/keep.gen.ts', 'src/nested/other.ts']);
    expect(res.metadata.count).toBe(4);
  });

  it(`orders files with equal times by path, past the ${MAX_GLOB_RESULTS} cap and in the saved list`, async () => {
    // Package managers give every extracted file the same time: the order must still be total.
    const names = Array.from(
      { length: MAX_GLOB_RESULTS + 50 },
      (_, i) => `same/${i % 3}/f${String(i).padStart(3, '0')}.md`,
    );
    for (const n of [...names].reverse()) await put(n, 'x', T0);
    await put('same/z-newest.md', 'x', T0 + 1);
    const byPath = [...names].sort();
    const res = await glob({ pattern: '**/*.md', path: 'same' });
    expect(res.metadata).toMatchObject({ count: names.length + 1, shown: MAX_GLOB_RESULTS, truncated: true });
    const listed = res.output.split('\n\n')[0].split('\n');
    expect(listed).toEqual(['same/z-newest.md', ...byPath.slice(0, MAX_GLOB_RESULTS - 1)]);
    const saved = (await readFile(res.metadata.fullListPath as string, 'utf8')).split('\n').filter(Boolean);
    expect(saved).toEqual(['same/z-newest.md', ...byPath]);
  });

  it('shows absolute paths for files under another root', async () => {
    const other = await tempDir('glob-other-');
    try {
      await mkdir(path.join(other.dir, 'sub'));
      await writeFile(path.join(other.dir, 'sub', 'o.ts'), 'x');
      const res = await glob({ pattern: '**/*.ts', path: other.dir }, makeCtx(), { additionalRoots: [other.dir] });
      expect(res.output).toBe(path.join(await realpath(other.dir), 'sub', 'o.ts'));
    } finally {
      await other.cleanup();
    }
  });

  it('refuses patterns and paths that leave the workspace', async () => {
    await expect(glob({ pattern: '../**' })).rejects.toThrow(/outside the workspace/);
    await expect(glob({ pattern: '/etc/*' })).rejects.toThrow(/outside the workspace/);
    await expect(glob({ pattern: '/**/*' })).rejects.toThrow(/outside the workspace/);
    for (const pattern of ['**/../../*', '{..,.}/*', '*/{../*,x}', '@(..)/*', 'a/**/..']) {
      await expect(glob({ pattern })).rejects.toThrow(/"\.\." after a wildcard/);
    }
    expect((await glob({ pattern: '**/a..b*' })).metadata.count).toBe(0); // ".." inside a name is fine
    await expect(glob({ pattern: '*', path: '..' })).rejects.toThrow(/outside the workspace/);
  });

  it('reports a missing or non-directory path clearly', async () => {
    await expect(glob({ pattern: '*', path: 'nope' })).rejects.toThrow(/does not exist/);
    await expect(glob({ pattern: '*', path: 'a.ts' })).rejects.toThrow(/is a file, not a directory/);
  });

  // Root reads every directory, so the permission error cannot be produced: skipped visibly, and
  // run as nobody by unprivileged.test.ts (keep its name there in step).
  const itNonRoot = process.getuid?.() === 0 ? it.skip : it;
  itNonRoot('skips unreadable directories instead of failing', async () => {
    await put('locked/inner/z.md');
    await put('open/z.md');
    await chmod(path.join(dir, 'locked'), 0o000);
    try {
      expect((await glob({ pattern: '**/z.md' })).output).toBe('open/z.md');
    } finally {
      await chmod(path.join(dir, 'locked'), 0o755);
    }
  });

  it('streams directories scanned, and stops when aborted', async () => {
    const ctx = makeCtx();
    await glob({ pattern: '**/*' }, ctx, { progressIntervalMs: 0 });
    const scanned = ctx.updates
      .map((u) => u.metadata?.directoriesScanned)
      .filter((n): n is number => typeof n === 'number');
    expect(scanned.length).toBeGreaterThan(3);
    expect(scanned).toEqual([...scanned].sort((a, b) => a - b));
    const aborted = makeCtx();
    aborted.abortNow();
    await expect(glob({ pattern: '**/*' }, aborted)).rejects.toThrow(/aborted/);
  });
});

describe('splitPattern', () => {
  it('separates the fixed leading directories from the wildcard part', () => {
    expect(splitPattern('src/**/*.ts')).toEqual({ fixed: 'src', dynamic: '**/*.ts' });
    expect(splitPattern('*.ts')).toEqual({ fixed: '', dynamic: '*.ts' });
    expect(splitPattern('/etc/*')).toEqual({ fixed: '/etc', dynamic: '*' });
    expect(splitPattern('a/b.txt')).toEqual({ fixed: 'a/b.txt', dynamic: '' });
    expect(splitPattern('../x/{a,b}/*')).toEqual({ fixed: '../x', dynamic: '{a,b}/*' });
  });
});

describe('glob: a list longer than deepagents shows (80,000 chars) stays complete', () => {
  it('counts every file, shows the newest, and saves all paths newest first with a pointer', async () => {
    const names = Array.from(
      { length: 1800 },
      (_, i) => `big/pkg-${String(i).padStart(4, '0')}/types/a-rather-long-module-name-here.d.ts`,
    );
    for (const [i, n] of names.entries()) await put(n, 'x', T0 + i);
    const res = await glob({ pattern: 'big/**/*.d.ts' });
    expect(names.join('\n').length).toBeGreaterThan(80_000);
    expect(res.metadata).toMatchObject({ count: 1800, shown: MAX_GLOB_RESULTS, truncated: true });
    const listed = res.output.split('\n\n')[0].split('\n');
    expect(listed).toEqual(names.slice(-MAX_GLOB_RESULTS).reverse());
    const file = res.metadata.fullListPath as string;
    expect(res.output).toContain(`All 1800 paths, newest first, are saved at ${file}`);
    expect(res.output).toContain(`offset=${MAX_GLOB_RESULTS + 1}`);
    expect((await readFile(file, 'utf8')).split('\n').filter(Boolean)).toEqual([...names].reverse());
  });
});
