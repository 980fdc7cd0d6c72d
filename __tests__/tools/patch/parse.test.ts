/** The apply_patch parser and hunk placement: rules and their line numbers, leniency, and properties over generated edits. */
import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { parsePatch, PatchSyntaxError, type PatchOperation } from '../../../src/tools/patch/parse.js';
import { applyHunks } from '../../../src/tools/patch/locate.js';

const patch = (...body: string[]) => ['*** Begin Patch', ...body, '*** End Patch'].join('\n');

/** The message parsePatch throws for `text`. */
function refusal(text: string): string {
  try {
    parsePatch(text);
  } catch (err) {
    expect(err).toBeInstanceOf(PatchSyntaxError);
    return (err as Error).message;
  }
  throw new Error('parsed');
}

describe('parsePatch', () => {
  it('reads every kind of section', () => {
    expect(
      parsePatch(
        patch(
          '*** Add File: a/new.txt',
          '+one',
          '+',
          '*** Delete File: gone.txt',
          '*** Update File: src/app.py',
          '*** Move to: src/main.py',
          '@@ def greet():',
          ' keep',
          '-old',
          '+new',
          '*** End of File',
        ),
      ),
    ).toEqual([
      { kind: 'add', path: 'a/new.txt', line: 2, contents: 'one\n\n' },
      { kind: 'delete', path: 'gone.txt', line: 5 },
      {
        kind: 'update',
        path: 'src/app.py',
        line: 6,
        moveTo: 'src/main.py',
        hunks: [
          {
            line: 8,
            header: '@@ def greet():',
            anchors: ['def greet():'],
            lines: [
              { kind: ' ', text: 'keep' },
              { kind: '-', text: 'old' },
              { kind: '+', text: 'new' },
            ],
            endOfFile: true,
          },
        ],
      },
    ]);
  });

  it.each([
    ['', "line 1: the patch is empty: it must start with '*** Begin Patch'."],
    ['hello', `line 1: the patch must start with '*** Begin Patch', found "hello".`],
    [
      '*** Begin Patch\n*** Add File: a\n+x',
      `line 3: the patch must end with '*** End Patch' on a line of its own; the last line is "+x". Send the whole patch again.`,
    ],
    [
      patch('*** Add File: a', '+x') + '\nmore',
      `line 5: found "more" after '*** End Patch' (line 4); nothing may follow it. Put every file section before '*** End Patch'.`,
    ],
    [
      patch(),
      "line 2: the patch changes no file: put at least one '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>' section between '*** Begin Patch' and '*** End Patch'.",
    ],
    [
      patch('*** Change File: a'),
      `line 2: expected a file header ('*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>'), found "*** Change File: a". Every file section starts with one.`,
    ],
    [patch('*** Add File:  '), "line 2: '*** Add File:' must be followed by the file's path."],
    [
      patch('*** Update File: a'),
      "line 2: '*** Update File: a' has no hunks: follow it with '@@' and the lines to change (or with '*** Move to: <path>' to rename it).",
    ],
    [
      patch('*** Update File: a', '@@', ' x', 'y'),
      `line 5: expected a line starting with ' ' (context), '-' (removed), '+' (added) or '@@' (a new hunk), found "y".`,
    ],
    [
      patch('*** Update File: a', '@@', '*** Add File: b', '+x'),
      `line 4: the hunk '@@' (line 3) has no lines: expected a line starting with ' ' (context), '-' (removed), '+' (added) or '@@' (a new hunk), found "*** Add File: b".`,
    ],
    [
      patch('*** Update File: a', '@@', '-x', '*** Move to: b'),
      "line 5: '*** Move to:' must come right after its '*** Update File:' line.",
    ],
  ])('refuses %j naming the line and the rule', (text, message) => {
    expect(refusal(text)).toBe(message);
  });

  it('is lenient where models drift: padding, a heredoc or a fence, unified headers, stacked anchors, bare blank lines', () => {
    const body = ['*** Update File: a', '@@ -3,4 +3,4 @@ class A', '@@ def f():', ' x', '', '-y', '+z'];
    const expected = parsePatch(patch(...body));
    expect(expected[0]).toMatchObject({
      hunks: [
        {
          anchors: ['class A', 'def f():'],
          lines: [{ text: 'x' }, { kind: ' ', text: '' }, { text: 'y' }, { text: 'z' }],
        },
      ],
    });
    for (const wrapped of [
      `  *** Begin Patch  \n${body.join('\n')}\n *** End Patch \n`,
      `<<'EOF'\n${patch(...body)}\nEOF`,
      `\`\`\`diff\n${patch(...body)}\n\`\`\``,
      patch(...body).replace(/\n/g, '\r\n'),
    ]) {
      expect(parsePatch(wrapped)).toEqual(
        parsePatch(patch(...body))
          .map((op) => ({ ...op, line: op.line + (wrapped.startsWith('<<') || wrapped.startsWith('```') ? 1 : 0) }))
          .map((op) => ({
            ...op,
            hunks: (op as { hunks: Array<{ line: number }> }).hunks.map((h) => ({
              ...h,
              line: h.line + (wrapped.startsWith('<<') || wrapped.startsWith('```') ? 1 : 0),
            })),
          })),
      );
    }
  });

  it('refuses anything that is not a patch with a PatchSyntaxError, never another error', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 200 }),
        fc.array(
          fc.constantFrom(
            '*** Begin Patch',
            '*** End Patch',
            '@@',
            '+a',
            '-a',
            ' a',
            '*** Update File: f',
            '*** Add File: g',
            '*** Delete File: h',
            '*** End of File',
            '',
          ),
          { maxLength: 12 },
        ),
        (junk, lines) => {
          for (const text of [junk, [...lines, junk].join('\n')]) {
            try {
              parsePatch(text);
            } catch (err) {
              if (!(err instanceof PatchSyntaxError)) throw err;
              expect(err.message).toMatch(/^line \d+: /);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** A patch hunk that replaces lines [at, at + remove) of `lines` with `add`, with up to 3 lines of context. */
function hunkFor(lines: string[], at: number, remove: number, add: string[]): string[] {
  const before = lines.slice(Math.max(0, at - 3), at).map((l) => ` ${l}`);
  const after = lines.slice(at + remove, at + remove + 3).map((l) => ` ${l}`);
  return ['@@', ...before, ...lines.slice(at, at + remove).map((l) => `-${l}`), ...add.map((l) => `+${l}`), ...after];
}

describe('applyHunks', () => {
  const line = fc.stringMatching(/^[a-z][a-z0-9 =();]{0,20}$/);

  it('applies a generated hunk exactly when its context is unique', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(line, { minLength: 1, maxLength: 40 }),
        fc.nat(),
        fc.nat(3),
        fc.array(line, { maxLength: 4 }),
        (lines, rawAt, rawRemove, add) => {
          const at = rawAt % lines.length;
          const remove = Math.min(rawRemove, lines.length - at);
          if (remove === 0 && add.length === 0) return;
          const ops = parsePatch(patch('*** Update File: f', ...hunkFor(lines, at, remove, add)));
          const op = ops[0] as Extract<(typeof ops)[0], { kind: 'update' }>;
          const result = applyHunks(`${lines.join('\n')}\n`, op.hunks);
          const expected = [...lines.slice(0, at), ...add, ...lines.slice(at + remove)];
          expect(result).toEqual({
            ok: true,
            text: expected.length ? `${expected.join('\n')}\n` : '',
            levels: [expect.any(String)],
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("finds context whose whitespace drifted, and keeps the file's own context lines", () => {
    fc.assert(
      fc.property(fc.uniqueArray(line, { minLength: 5, maxLength: 30 }), fc.nat(), (lines, rawAt) => {
        const at = 1 + (rawAt % (lines.length - 2));
        const drifted = lines.map((l, i) => (i % 2 ? `  ${l}\t ` : l));
        const ops = parsePatch(patch('*** Update File: f', ...hunkFor(lines, at, 1, ['NEW'])));
        const op = ops[0] as Extract<(typeof ops)[0], { kind: 'update' }>;
        const result = applyHunks(`${drifted.join('\n')}\n`, op.hunks);
        const expected = [...drifted.slice(0, at), 'NEW', ...drifted.slice(at + 1)];
        expect(result).toMatchObject({ ok: true, text: `${expected.join('\n')}\n` });
      }),
      { numRuns: 200 },
    );
  });

  it('says, for a hunk that is not there, where the nearest lines are', () => {
    const ops = parsePatch(patch('*** Update File: f', '@@', ' alpha one', '-beta twoo', '+beta 2'));
    const op = ops[0] as Extract<(typeof ops)[0], { kind: 'update' }>;
    const result = applyHunks('zero\nalpha one\nbeta two\ngamma\n', op.hunks);
    expect(result).toEqual({
      ok: false,
      failures: [
        {
          hunk: op.hunks[0],
          index: 1,
          message:
            'its 2 lines to match (context and removed) were not found (also not with trailing whitespace, surrounding whitespace or Unicode punctuation ignored). The nearest lines are 2-3:\n2: alpha one\n3: beta two',
        },
      ],
    });
  });

  it("reads every Unicode dash, quote and odd space Codex folds as its ASCII look-alike, keeping the file's own", () => {
    const file = 'a \u2015 b\u205Fc\u2004d \u201Cq\u201D \u2018r\u2019\nnext\n';
    const [op] = parsePatch(patch('*** Update File: f', '@@', ' a - b c d "q" \'r\'', '-next', '+after')) as Array<
      Extract<PatchOperation, { kind: 'update' }>
    >;
    expect(applyHunks(file, op.hunks)).toEqual({
      ok: true,
      text: 'a \u2015 b\u205Fc\u2004d \u201Cq\u201D \u2018r\u2019\nafter\n',
      levels: ['unicode-punctuation'],
    });
  });

  it('places an addition-only hunk after its anchor, or at the end without one', () => {
    const [op] = parsePatch(patch('*** Update File: f', '@@ b', '+after b', '@@', '+at end')) as Array<
      Extract<PatchOperation, { kind: 'update' }>
    >;
    expect(applyHunks('a\nb\nc\n', op.hunks)).toMatchObject({ ok: true, text: 'a\nb\nafter b\nc\nat end\n' });
  });
});
