/**
 * `npm run build` builds once per change: `npm install` (prepare), `npm run demo` and `npm pack`
 * each ask for a build, and dist/ is rebuilt only when src/, a tsconfig, package.json or a build
 * script changed after the last build (scripts/build.mjs).
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdirSync, utimesSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { BUILD_INPUTS, BUILD_STAMP, distUpToDate } from '../../scripts/build.mjs';
import { tempDir } from '../support/helpers.js';

let root: { dir: string; cleanup: () => Promise<void> };
const at = (p: string) => path.join(root.dir, p);
/** Sets a file's times `s` seconds after a fixed instant. */
const age = (p: string, s: number) => utimesSync(at(p), 1_700_000_000 + s, 1_700_000_000 + s);

beforeEach(async () => {
  root = await tempDir('toolbelt-build-');
  for (const dir of ['src/tools', 'scripts', 'dist']) mkdirSync(at(dir), { recursive: true });
  for (const f of [
    'src/index.ts',
    'src/tools/grep.txt',
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
    'scripts/build.mjs',
  ])
    writeFileSync(at(f), '');
  for (const p of [
    'src/index.ts',
    'src/tools/grep.txt',
    'src/tools',
    'src',
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
    'scripts/build.mjs',
    'scripts',
  ])
    age(p, 0);
});
afterEach(() => root.cleanup());

describe('the build script', () => {
  it('skips a build when dist/ was built after every input, and builds after any change', () => {
    expect(BUILD_INPUTS).toEqual(expect.arrayContaining(['src', 'tsconfig.build.json', 'package.json']));
    expect(distUpToDate(root.dir)).toBe(false); // never built
    writeFileSync(at(BUILD_STAMP), '');
    age(BUILD_STAMP, 10);
    expect(distUpToDate(root.dir)).toBe(true);
    for (const changed of ['src/tools/grep.txt', 'tsconfig.build.json', 'package.json', 'scripts/build.mjs']) {
      age(changed, 20);
      expect([changed, distUpToDate(root.dir)]).toEqual([changed, false]);
      age(changed, 0);
    }
    rmSync(at('src/tools/grep.txt')); // a deleted source changes its directory
    age('src/tools', 20);
    expect(distUpToDate(root.dir)).toBe(false);
  });
});
