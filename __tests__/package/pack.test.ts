/**
 * The published package: `npm publish --dry-run` passes, and the tarball holds the built code, the
 * tools' .txt descriptions (each built-in reads its own at run time), the README and docs, and
 * nothing else: no tests, benchmarks, sources, scripts or source maps.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDist, ROOT, sourceOf } from '../support/dist.js';
import { docFiles } from '../support/doc-blocks.js';
import { repoPackage } from '../support/user-project.js';

const run = promisify(execFile);
let files: string[] = [];
/** Marks dist/cjs/ (the CommonJS copies of the declarations, scripts/cjs-types.mjs) as CommonJS. */
const CJS_MARKER = 'dist/cjs/package.json';

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

  it('has CommonJS type declarations for every entry, under a package.json that says so', () => {
    const pkg = repoPackage() as ReturnType<typeof repoPackage> & {
      exports: Record<string, string | { require: { types: string } }>;
    };
    const wanted = Object.values(pkg.exports).flatMap((e) => (typeof e === 'object' ? [e.require.types.slice(2)] : []));
    expect(wanted.length).toBeGreaterThan(1);
    expect(wanted.filter((t) => !t.startsWith('dist/cjs/') || !files.includes(t))).toEqual([]);
    expect(files).toContain(CJS_MARKER);
    expect(JSON.parse(readFileSync(path.join(ROOT, CJS_MARKER), 'utf8'))).toEqual({ type: 'commonjs' });
  });

  it('has the README and every docs page', () => {
    expect(docFiles(ROOT).filter((d) => !files.includes(d))).toEqual([]);
  });

  it('has no tests, benchmarks, sources, scripts, source maps or stale builds', () => {
    const unwanted = files.filter(
      (f) =>
        /(^|\/)(__tests__|bench|scripts|src|node_modules)\//.test(f) ||
        /\.test\.|\.map$|\.env$|\.tgz$/.test(f) ||
        (f.startsWith('dist/') && f !== CJS_MARKER && sourceOf(f) === undefined) ||
        (f.startsWith('dist/') && f !== CJS_MARKER && !srcFiles().includes(sourceOf(f)!)),
    );
    expect(unwanted).toEqual([]);
  });

  it('imports only packages it declares (dependencies or peers), in code and in type declarations', () => {
    const pkg = repoPackage() as ReturnType<typeof repoPackage> & { peerDependenciesMeta?: Record<string, unknown> };
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]);
    const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|require\.resolve\(\s*)['"]([^'"]+)['"]/g;
    const undeclared = new Set<string>();
    for (const file of files.filter((f) => /^dist\/.*\.(js|d\.ts|mjs)$/.test(f))) {
      for (const [, spec] of readFileSync(path.join(ROOT, file), 'utf8').matchAll(specifier)) {
        // Only what can be a package name (prose such as "... from 'a string'" is not).
        if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w./-]*)?$/.test(spec)) continue;
        if (spec.startsWith('node:') || builtinModules.includes(spec)) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        if (name !== pkg.name && !declared.has(name)) undeclared.add(`${name} (${file})`);
      }
    }
    expect([...undeclared]).toEqual([]);
    // The middleware subpath is its only user: a user without it need not install LangGraph.
    expect(pkg.peerDependencies['@langchain/langgraph']).toBeDefined();
    expect(pkg.peerDependenciesMeta?.['@langchain/langgraph']).toEqual({ optional: true });
  });
});
