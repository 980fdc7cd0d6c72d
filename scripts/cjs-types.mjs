// CommonJS type declarations: a copy of the .d.ts files the package's entries reach, in dist/cjs/
// under a package.json that says "commonjs". A CommonJS project's TypeScript then reads our types as
// CommonJS, and resolves @langchain/core (and the other dual packages) to the same CommonJS types its
// own `import { createAgent } from 'langchain'` gets: one copy of each type, not an ESM one and a
// CommonJS one that do not match (TS2769). The code stays the ES module build: Node's require(esm)
// loads it (Node 20.19+ / 22.12+).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The folder, under dist/, that holds the CommonJS declarations. */
export const CJS_TYPES_DIR = 'cjs';

/** A relative specifier in a declaration file: `from './x.js'`, `import('./x.js')`. */
const RELATIVE = /(\bfrom\s*|\bimport\s*\(\s*)(['"])(\.{1,2}\/[^'"]+)\2/g;

/** Writes dist/cjs/: the declarations reachable from every entry of package.json's `exports`. */
export function writeCjsTypes(root = '.') {
  const dist = path.join(root, 'dist');
  const out = path.join(dist, CJS_TYPES_DIR);
  rmSync(out, { recursive: true, force: true });
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const entries = Object.values(pkg.exports)
    .map((e) => (typeof e === 'object' ? e.import?.types : undefined))
    .filter((t) => typeof t === 'string');
  const queue = entries.map((t) => path.relative(dist, path.join(root, t)));
  const seen = new Set();
  while (queue.length) {
    const rel = queue.pop();
    if (seen.has(rel)) continue;
    seen.add(rel);
    const text = readFileSync(path.join(dist, rel), 'utf8');
    for (const m of text.matchAll(RELATIVE)) {
      const target = path.join(path.dirname(rel), m[3].replace(/\.js$/, '.d.ts'));
      if (existsSync(path.join(dist, target))) queue.push(target);
    }
    mkdirSync(path.dirname(path.join(out, rel)), { recursive: true });
    // The maps are not shipped: drop the line that points at one.
    writeFileSync(path.join(out, rel), text.replace(/\n\/\/# sourceMappingURL=.*\s*$/, '\n'));
  }
  writeFileSync(path.join(out, 'package.json'), '{ "type": "commonjs" }\n');
  return seen.size;
}
