/**
 * The published package: `npm publish --dry-run` passes, and the tarball holds the built code, the
 * tools' .txt descriptions (each built-in reads its own at run time), the README and docs, and
 * nothing else: no tests, benchmarks, sources, scripts or source maps.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDist, ROOT, sourceOf } from './dist.js';
import { docFiles } from './doc-blocks.js';

const run = promisify(execFile);
let files: string[] = [];

function srcFiles(dir = 'src'): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? srcFiles(`${dir}/${e.name}`) : [`${dir}/${e.name}`],
  );
}

beforeAll(async () => {
  await ensureDist();
  // --ignore-scripts: dist/ is fresh (ensureDist); --offline: a dry run needs no registry.
  const { stdout } = await run('npm', ['publish', '--dry-run', '--ignore-scripts', '--offline', '--json'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const info = JSON.parse(stdout.slice(stdout.indexOf('{')))['agent-toolbelt'] as { files: { path: string }[] };
  files = info.files.map((f) => f.path).sort();
}, 180_000);

describe('the packed package (npm publish --dry-run)', () => {
  it('has every module compiled, with type declarations, and the CLI', () => {
    const modules = srcFiles().filter((f) => f.endsWith('.ts'));
    const missing = modules.flatMap((f) => {
      const base = f.replace(/^src\//, 'dist/').replace(/\.ts$/, '');
      return [`${base}.js`, `${base}.d.ts`].filter((p) => !files.includes(p));
    });
    expect(missing).toEqual([]);
    expect(files).toContain('dist/cli.js');
    expect(files).toContain('package.json');
  });

  it("has every built-in tool's .txt description beside its module", () => {
    const txt = srcFiles().filter((f) => f.endsWith('.txt'));
    expect(txt.length).toBeGreaterThan(10);
    expect(txt.map((f) => f.replace(/^src\//, 'dist/')).filter((p) => !files.includes(p))).toEqual([]);
  });

  it('has the README and every docs page', () => {
    expect(docFiles(ROOT).filter((d) => !files.includes(d))).toEqual([]);
  });

  it('has no tests, benchmarks, sources, scripts, source maps or stale builds', () => {
    const unwanted = files.filter(
      (f) =>
        /(^|\/)(__tests__|bench|scripts|src|node_modules)\//.test(f) ||
        /\.test\.|\.map$|\.env$|\.tgz$/.test(f) ||
        (f.startsWith('dist/') && sourceOf(f) === undefined) ||
        (f.startsWith('dist/') && !srcFiles().includes(sourceOf(f)!)),
    );
    expect(unwanted).toEqual([]);
  });
});
