/**
 * One default ignore list (DEFAULT_IGNORES) for list, glob and grep, local and over a backend: in a
 * tree without any .gitignore, node_modules, dist and .venv are not searched; naming one as the
 * path searches it; `initCtx.searchIgnored` searches some or all of them on purpose.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { FilesystemBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools, type Tool } from '../../../src/index.js';
import { DEFAULT_IGNORES } from '../../../src/tools/files/search-common.js';
import { LIST_DEFAULT_IGNORES } from '../../../src/constants.js';
import { tempDir } from '../../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  ws = await tempDir('toolbelt-ignores-');
  const files: Record<string, string> = {
    'src/retry.ts': 'export const retry = 1; // needle\n',
    'node_modules/lib/index.js': 'module.exports = "needle";\n',
    'node_modules/lib/node_modules/deep/index.js': 'needle\n',
    'dist/retry.js': 'export const retry = 1; // needle\n',
    '.venv/lib/site.py': 'needle = 1\n',
    'src/build/generated.ts': '// needle\n',
  };
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(ws.dir, rel)), { recursive: true });
    await writeFile(path.join(ws.dir, rel), text);
  }
});

afterAll(() => ws.cleanup());

type Where = 'local (rg)' | 'local (js)' | 'backend';

function initCtx(where: Where, extra: Tool.InitContext = {}): Tool.InitContext {
  if (where === 'backend') return { backend: new FilesystemBackend({ rootDir: ws.dir, virtualMode: true }), ...extra };
  return { workspaceRoot: ws.dir, grepBackend: where === 'local (rg)' ? 'rg' : 'js', ...extra };
}

/** The output of `tool` with `args` under `ctx`; fails the test when the call fails. */
async function output(tool: string, args: Record<string, unknown>, ctx: Tool.InitContext): Promise<string> {
  const registry = registerBuiltinTools(createRegistry({ loopGuard: false }), ['list', 'glob', 'grep']);
  const u = await registry.execute(tool, args, { sessionID: 's' }, ctx);
  if (!u.success) throw new Error(`${tool} failed: ${u.error}`);
  return u.result.output;
}

/** The file paths a grep or glob output names, as `a/b.ts` (leading `/` of backend paths dropped). */
function named(out: string): string[] {
  return [...out.matchAll(/^\/?([\w./-]+\.(?:ts|js|py))(?::|$)/gm)].map((m) => m[1]).sort();
}

describe('the default ignore list', () => {
  it('is the one list documents (LIST_DEFAULT_IGNORES is the same list)', () => {
    expect(LIST_DEFAULT_IGNORES).toBe(DEFAULT_IGNORES);
    expect(DEFAULT_IGNORES).toEqual(expect.arrayContaining(['node_modules', '.git', 'dist', 'build', '.venv']));
  });

  for (const where of ['local (rg)', 'local (js)', 'backend'] as const) {
    describe(where, () => {
      it('grep and glob skip node_modules, dist, .venv and build at any depth without a .gitignore', async () => {
        expect(named(await output('grep', { pattern: 'needle' }, initCtx(where)))).toEqual(['src/retry.ts']);
        expect(named(await output('glob', { pattern: '**/*.{ts,js,py}' }, initCtx(where)))).toEqual(['src/retry.ts']);
      });

      it('a directory named as the path is searched (its own nested node_modules still is not)', async () => {
        const lib = where === 'backend' ? '/node_modules/lib' : 'node_modules/lib';
        expect(named(await output('grep', { pattern: 'needle', path: lib }, initCtx(where)))).toEqual([
          'node_modules/lib/index.js',
        ]);
        expect(named(await output('glob', { pattern: '**/*.js', path: lib }, initCtx(where)))).toEqual([
          'node_modules/lib/index.js',
        ]);
      });

      it('initCtx.searchIgnored searches the names it gives, or all with true', async () => {
        expect(named(await output('grep', { pattern: 'needle' }, initCtx(where, { searchIgnored: ['dist'] })))).toEqual(
          ['dist/retry.js', 'src/retry.ts'],
        );
        expect(named(await output('glob', { pattern: '**/*.py' }, initCtx(where, { searchIgnored: true })))).toEqual([
          '.venv/lib/site.py',
        ]);
        const listing = await output('list', {}, initCtx(where, { searchIgnored: ['node_modules'] }));
        expect(listing).toMatch(/^ {2}node_modules\/$/m);
        expect(listing).not.toMatch(/^ {2}dist\/$/m);
      });
    });
  }
});
