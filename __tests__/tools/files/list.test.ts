import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { ListTool, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT } from '../../../src/tools/files/list.js';
import { tempDir, makeCtx } from '../../support/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;

async function put(rel: string, content = 'x\n'): Promise<void> {
  const abs = path.join(dir, rel);
  await mkdir(path.dirname(abs), { recursive: true });
  await writeFile(abs, content);
}

async function list(args: Record<string, unknown> = {}, init: Record<string, unknown> = {}, ctx = makeCtx()) {
  const tool = await ListTool.init({ workspaceRoot: dir, ...init });
  return tool.execute(tool.parameters.parse(args), ctx);
}

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('list-'));
  await put('proj/README.md');
  await put('proj/b.txt');
  await put('proj/src/index.ts');
  await put('proj/src/util/u.ts');
  await put('proj/assets/logo.svg');
  await put('proj/.env.example');
  await put('proj/node_modules/pkg/index.js');
  await put('proj/.git/HEAD');
  await put('proj/dist/out.js');
  await put('proj/__pycache__/m.pyc');
  await put('proj/.gitignore', '*.log\nsecret/\n');
  await put('proj/debug.log');
  await put('proj/secret/key.txt');
});

afterAll(async () => {
  await cleanup();
});

describe('list', () => {
  it('prints a tree, directories first, names sorted, without default-ignored or .gitignored entries', async () => {
    const res = await list({ path: 'proj' });
    expect(res.output).toBe(
      [
        `${path.join(dir, 'proj')}/`,
        '  assets/',
        '    logo.svg',
        '  src/',
        '    util/',
        '      u.ts',
        '    index.ts',
        '  .env.example',
        '  .gitignore',
        '  README.md',
        '  b.txt',
      ].join('\n'),
    );
    expect(res.metadata).toEqual({ count: 10, truncated: false });
  });

  it('takes extra ignore globs, and "!name" brings back a default-ignored name', async () => {
    const res = await list({ path: 'proj', ignore: ['*.md', 'assets/', '!dist'] });
    expect(res.output).not.toContain('README.md');
    expect(res.output).not.toContain('assets/');
    expect(res.output).toContain('  dist/\n    out.js');
    expect(res.output).not.toContain('node_modules');
  });

  it('lists a default-ignored directory when it is the path', async () => {
    const res = await list({ path: 'proj/node_modules' });
    expect(res.output).toBe(`${path.join(dir, 'proj', 'node_modules')}/\n  pkg/\n    index.js`);
  });

  it('shows symlinks without following them', async () => {
    await put('links/real/inside.txt');
    await symlink(path.join(dir, 'links', 'real'), path.join(dir, 'links', 'alias'));
    const res = await list({ path: 'links' });
    expect(res.output).toBe(`${path.join(dir, 'links')}/\n  real/\n    inside.txt\n  alias@ (symlink, not followed)`);
  });

  it('marks an empty directory', async () => {
    await mkdir(path.join(dir, 'empty'));
    expect((await list({ path: 'empty' })).output).toBe(`${path.join(dir, 'empty')}/\n  (empty directory)`);
  });

  it(`shows ${LIST_DEFAULT_LIMIT} entries without a note and truncates at ${LIST_DEFAULT_LIMIT + 1}, breadth first`, async () => {
    for (let i = 0; i < LIST_DEFAULT_LIMIT - 1; i++) await put(`cap/a-big/f${String(i).padStart(3, '0')}.txt`);
    const at = await list({ path: 'cap' });
    expect(at.metadata).toEqual({ count: LIST_DEFAULT_LIMIT, truncated: false });
    expect(at.output).not.toContain('truncated');
    await put('cap/z-top.txt');
    const past = await list({ path: 'cap' });
    expect(past.metadata).toEqual({ count: LIST_DEFAULT_LIMIT, truncated: true });
    // The top level is complete even though the first directory alone could fill the cap.
    expect(past.output).toContain('\n  z-top.txt');
    expect(past.output).toContain('    ... 1 more entry not shown');
    expect(past.output).toMatch(/\(Showing 100 entries; the listing is truncated\./);
  });

  it('marks directories it did not get to read as not expanded, and says how many entries were left out', async () => {
    await put('wide/a/x.txt');
    await put('wide/b/y.txt');
    await mkdir(path.join(dir, 'wide2', 'empty'), { recursive: true });
    await put('wide2/z.txt');
    // Exactly at the cap with only an empty directory left: nothing is hidden, so no truncation.
    expect((await list({ path: 'wide2', limit: 2 })).metadata).toEqual({ count: 2, truncated: false });
    const res = await list({ path: 'wide', limit: 2 });
    expect(res.output).toBe(
      `${path.join(dir, 'wide')}/\n  a/\n    ... 1 more entry not shown\n  b/ (not expanded)\n\n` +
        '(Showing 2 entries; the listing is truncated. Directories marked "(not expanded)" were not read. ' +
        `List one of them with path, leave entries out with ignore, or raise limit (max ${LIST_MAX_LIMIT}).)`,
    );
  });

  it('takes the cap from limit or from the init option listLimit, bounded by the schema', async () => {
    expect((await list({ path: 'cap', limit: 5 })).metadata).toEqual({ count: 5, truncated: true });
    expect((await list({ path: 'cap' }, { listLimit: 3 })).metadata).toEqual({ count: 3, truncated: true });
    expect((await list({ path: 'cap', limit: 101 })).metadata).toEqual({ count: 101, truncated: false });
    const tool = await ListTool.init({ workspaceRoot: dir });
    expect(() => tool.parameters.parse({ limit: LIST_MAX_LIMIT + 1 })).toThrow();
    expect(() => tool.parameters.parse({ limit: 0 })).toThrow();
    expect(tool.parameters.parse({ limit: LIST_MAX_LIMIT }).limit).toBe(LIST_MAX_LIMIT);
  });

  it('reports missing paths, files and outside paths clearly', async () => {
    await expect(list({ path: 'nope' })).rejects.toThrow(/does not exist/);
    await expect(list({ path: 'proj/b.txt' })).rejects.toThrow(/is a file, not a directory\. Use read/);
    await expect(list({ path: '..' })).rejects.toThrow(/outside the workspace/);
  });

  it('stops when aborted', async () => {
    const ctx = makeCtx();
    ctx.abortNow();
    await expect(list({ path: 'proj' }, {}, ctx)).rejects.toThrow(/aborted/);
  });
});
