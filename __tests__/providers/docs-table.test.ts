/**
 * docs/providers.md's provider x feature table names, in each row, the tests that prove it
 * (`file.test.ts`: "part of a test's name", ...). This checks every named test exists under that name.
 * Must not run the named tests: jest does, in their own suites.
 */
import { it, expect } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/dist.js';
import { APIS } from './clients.js';

const DIR = path.join(ROOT, '__tests__', 'providers');

/** The titles of a suite's `it`/`describe` calls (first string argument, joined when prettier wrapped it). */
function titles(file: string): string[] {
  const source = readFileSync(path.join(DIR, file), 'utf8').replace(/\b(it|describe)(\.each)?\(\s*\n\s*/g, '$1$2(');
  const out: string[] = [];
  for (const m of source.matchAll(/\b(?:it|describe)(?:\.each\([^\n]*\))?\(\s*(['"`])((?:\\.|(?!\1).)*)\1/g))
    out.push(m[2].replace(/\\(.)/g, '$1'));
  // it.each([...])('title', ...) over several lines: the title follows the closing `])(`.
  for (const m of source.matchAll(/^\s*\]\)\(\s*(['"`])((?:\\.|(?!\1).)*)\1/gm)) out.push(m[2].replace(/\\(.)/g, '$1'));
  return out;
}

/** What the suites' titles interpolate (`${api}`, `${mode}`, `${subagentApi(api)}`); any other hole matches nothing. */
const HOLE_VALUES = [...APIS, 'streamed', 'non-streamed'];

/** Every title a templated title can become, its holes filled from HOLE_VALUES. */
function realise(title: string): string[] {
  const hole = /\$\{[^}]*\}/.exec(title);
  if (!hole) return [title];
  const rest = title.slice(hole.index + hole[0].length);
  return HOLE_VALUES.flatMap((v) => realise(rest).map((r) => title.slice(0, hole.index) + v + r));
}

/** Each row of the table: the feature and, per file, the test-name fragments it names. */
function rows(): Array<{ feature: string; refs: Array<{ file: string; names: string[] }> }> {
  const doc = readFileSync(path.join(ROOT, 'docs', 'providers.md'), 'utf8');
  const lines = doc.split('\n').filter((l) => l.startsWith('| ') && l.includes('.test.ts`'));
  return lines.map((line) => {
    const cells = line.split(' | ');
    const last = cells.at(-1)!;
    const refs = [...last.matchAll(/`([\w-]+\.test\.ts)`:?((?:[^`])*)/g)].map((m) => ({
      file: m[1],
      names: [...m[2].matchAll(/"([^"]+)"/g)].map((n) => n[1]),
    }));
    return { feature: cells[0].replace(/^\| /, ''), refs };
  });
}

it('every test docs/providers.md names exists in the file it names, under that name', () => {
  const table = rows();
  expect(table.length).toBeGreaterThanOrEqual(15);
  const problems: string[] = [];
  for (const row of table) {
    if (!row.refs.length || row.refs.some((r) => !r.names.length))
      problems.push(`row "${row.feature}": names a file without a test name`);
    for (const ref of row.refs) {
      if (!existsSync(path.join(DIR, ref.file))) {
        problems.push(`row "${row.feature}": no file __tests__/providers/${ref.file}`);
        continue;
      }
      const all = titles(ref.file).flatMap(realise);
      for (const name of ref.names)
        if (!all.some((t) => t.includes(name)))
          problems.push(`row "${row.feature}": ${ref.file} has no test "${name}"`);
    }
  }
  expect(problems).toEqual([]);
});
