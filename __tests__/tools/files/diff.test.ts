import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { applyPatch, createTwoFilesPatch } from 'diff';
import {
  unifiedDiff,
  diffOfReplacements,
  DIFF_CONTEXT_LINES,
  type Replacement,
} from '../../../src/tools/files/diff.js';

/** The whole-file diff the `diff` package computes, in the same format as ours. */
const wholeFile = (before: string, after: string) =>
  createTwoFilesPatch('f', 'f', before, after, '', '', { context: DIFF_CONTEXT_LINES });
const apply = (content: string, ranges: Replacement[]) => {
  let out = '';
  let pos = 0;
  for (const r of ranges) {
    out += content.slice(pos, r.start) + r.replacement;
    pos = r.end;
  }
  return out + content.slice(pos);
};

const line = fc.constantFrom('', 'a', 'b', 'x = 1;', '  indented', '}', 'é😀');
const text = fc
  .tuple(fc.array(line, { maxLength: 30 }), fc.boolean())
  .map(([ls, nl]) => ls.join('\n') + (nl && ls.length ? '\n' : ''));

describe('diffOfReplacements: a diff built from the replaced ranges only', () => {
  it('is the same diff as a whole-file comparison for one changed line, with its line number', () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`);
    const content = lines.join('\n') + '\n';
    const start = content.indexOf('line 4000\n');
    const ranges = [{ start, end: start + 'line 4000'.length, replacement: 'changed\nand added' }];
    const { summary, startLines } = diffOfReplacements('f', content, ranges);
    const after = apply(content, ranges);
    expect(summary.diff).toBe(wholeFile(content, after));
    expect(summary.diff).toContain('@@ -3997,7 +3997,8 @@');
    expect(startLines).toEqual([4000]);
    expect(summary).toMatchObject({ additions: 2, deletions: 1 });
  });

  it('merges changes whose context overlaps into one hunk and keeps far ones apart', () => {
    const content = Array.from({ length: 100 }, (_, i) => `l${i + 1}`).join('\n') + '\n';
    const at = (l: string) => content.indexOf(`${l}\n`);
    const ranges = [
      { start: at('l10'), end: at('l10') + 3, replacement: 'A' },
      { start: at('l16'), end: at('l16') + 3, replacement: 'B' }, // 6 lines later: contexts touch
      { start: at('l60'), end: at('l60') + 3, replacement: 'C' },
    ];
    const { summary, startLines } = diffOfReplacements('f', content, ranges);
    expect(summary.diff).toBe(wholeFile(content, apply(content, ranges)));
    expect(summary.diff.match(/^@@/gm)).toHaveLength(2);
    expect(startLines).toEqual([10, 16, 60]);
  });

  it('marks a last line without a newline, and diffs a new file', () => {
    const { summary } = diffOfReplacements('f', 'a\nb', [{ start: 2, end: 3, replacement: 'c' }]);
    expect(summary.diff).toBe(wholeFile('a\nb', 'a\nc'));
    expect(summary.diff).toContain('\\ No newline at end of file');
    const created = diffOfReplacements('f', '', [{ start: 0, end: 0, replacement: 'x\ny\n' }]);
    expect(created.summary.diff).toBe(wholeFile('', 'x\ny\n'));
    expect(created.summary.additions).toBe(2);
  });

  it('always yields a patch that turns the old text into the new one (property)', () => {
    fc.assert(
      fc.property(
        text,
        fc.array(fc.tuple(fc.nat(), fc.nat(6), fc.constantFrom('', 'Z', 'new\nline', '\n', 'q\n')), { maxLength: 5 }),
        (content, picks) => {
          // Non-overlapping ranges from the picks, in order.
          const ranges: Replacement[] = [];
          let floor = 0;
          for (const [s, len, replacement] of picks
            .map(([s, l, r]) => [s % (content.length + 1), l, r] as const)
            .sort((a, b) => a[0] - b[0])) {
            if (s < floor) continue;
            const end = Math.min(content.length, s + len);
            ranges.push({ start: s, end, replacement });
            floor = end + 1;
          }
          const after = apply(content, ranges);
          const { summary, startLines } = diffOfReplacements('f', content, ranges);
          expect(applyPatch(content, summary.diff)).toBe(after);
          expect(startLines).toEqual(ranges.map((r) => content.slice(0, r.start).split('\n').length));
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('unifiedDiff: any two versions', () => {
  it('equals the whole-file diff for a single change and is empty for no change', () => {
    const before = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n'.repeat(2000);
    const after = before.replace('three\nfour', 'three\n4\nfour');
    expect(unifiedDiff('f', before, after).diff).toBe(wholeFile(before, after));
    expect(unifiedDiff('f', before, before)).toMatchObject({ additions: 0, deletions: 0 });
    expect(applyPatch(before, unifiedDiff('f', before, before).diff)).toBe(before);
  });

  it('always yields a patch that turns one into the other (property)', () => {
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(applyPatch(a, unifiedDiff('f', a, b).diff)).toBe(b);
      }),
      { numRuns: 500 },
    );
  });
});
