import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { tempDir, makeCtx } from '../../support/helpers.js';
import { EditTool, MAX_LISTED_MATCHES } from '../../../src/tools/files/edit.js';
import { ReadTool } from '../../../src/tools/files/read.js';
import { findMatches } from '../../../src/tools/files/edit-match.js';
import { createRegistry, parseArguments, registerBuiltinTools } from '../../../src/index.js';
import { exactByteEdit, BYTE_EDIT_MAX_WINDOW } from '../../../src/tools/files/edit-bytes.js';
import { diffOfReplacements } from '../../../src/tools/files/diff.js';
import fc from 'fast-check';

let dir: string;
let cleanup: () => Promise<void>;
let edit: Awaited<ReturnType<typeof EditTool.init>>;
let read: Awaited<ReturnType<typeof ReadTool.init>>;
let n = 0;
// Arguments go through the pipeline's parser, which repairs sloppy input ("true") before validation.
const doEdit = (args: Record<string, unknown>, ctx = makeCtx()) =>
  edit.execute(parseArguments('edit', edit.parameters, args) as never, ctx);

/** Writes a fresh file, reads it through the read tool (session-1), returns its name. */
async function fixture(content: string | Buffer): Promise<string> {
  const name = `f${++n}.txt`;
  await writeFile(path.join(dir, name), content);
  await read.execute(read.parameters.parse({ filePath: name }), makeCtx());
  return name;
}
const contentOf = (name: string) => readFile(path.join(dir, name), 'utf8');

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('edit-'));
  edit = await EditTool.init({ workspaceRoot: dir });
  read = await ReadTool.init({ workspaceRoot: dir });
});
afterAll(() => cleanup());

describe('edit: exact matching', () => {
  it('replaces a unique exact match, returns a unified diff in metadata and a short summary', async () => {
    const f = await fixture('const a = 1;\nconst b = 2;\nconst c = 3;\n');
    const res = await doEdit({ filePath: f, oldString: 'const b = 2;', newString: 'const b = 20;' });
    expect(await contentOf(f)).toBe('const a = 1;\nconst b = 20;\nconst c = 3;\n');
    expect(res.output).toBe(`Edited ${f}: 1 replacement at line 2 (+1 -1 lines).`);
    expect(res.metadata.diff).toContain(`--- ${f}`);
    expect(res.metadata.diff).toContain('@@ -1,3 +1,3 @@');
    expect(res.metadata.diff).toContain('-const b = 2;\n+const b = 20;');
    expect(res.metadata.matcher).toBe('exact');
  });

  it('refuses an ambiguous match with the count and lines; replaceAll replaces all', async () => {
    const f = await fixture('x = 1\ny = 2\nx = 1\nx = 1\n');
    await expect(doEdit({ filePath: f, oldString: 'x = 1', newString: 'x = 9' })).rejects.toThrow(
      /Found 3 matches for oldString in f\d+\.txt \(at lines 1, 3, 4\)\. Add more surrounding lines/,
    );
    const res = await doEdit({ filePath: f, oldString: 'x = 1', newString: 'x = 9', replaceAll: 'true' });
    expect(await contentOf(f)).toBe('x = 9\ny = 2\nx = 9\nx = 9\n');
    expect(res.metadata.replacements).toBe(3);
  });

  it(`lists at most ${MAX_LISTED_MATCHES} match lines`, async () => {
    const f = await fixture('k\n'.repeat(MAX_LISTED_MATCHES + 1));
    const err = (await doEdit({ filePath: f, oldString: 'k', newString: 'j' }).catch((e: Error) => e)) as Error;
    expect(err.message).toContain(`Found ${MAX_LISTED_MATCHES + 1} matches`);
    expect(err.message).toContain(`at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...)`);
  });

  it('rejects identical oldString and newString', async () => {
    const f = await fixture('same\n');
    await expect(doEdit({ filePath: f, oldString: 'same', newString: 'same' })).rejects.toThrow(/identical/);
  });

  it('consecutive edits in one session work without re-reading', async () => {
    const f = await fixture('one\ntwo\nthree\n');
    await doEdit({ filePath: f, oldString: 'one', newString: 'ONE' });
    await doEdit({ filePath: f, oldString: 'two', newString: 'TWO' });
    expect(await contentOf(f)).toBe('ONE\nTWO\nthree\n');
  });
});

describe('edit: stale reads, creation', () => {
  it('refuses an unread file and a file changed since the read', async () => {
    await writeFile(path.join(dir, 'unread.txt'), 'a\n');
    await expect(doEdit({ filePath: 'unread.txt', oldString: 'a', newString: 'b' })).rejects.toThrow(
      /has not been read in this session/,
    );
    const f = await fixture('a\n');
    await writeFile(path.join(dir, f), 'a changed\n');
    await expect(doEdit({ filePath: f, oldString: 'a', newString: 'b' })).rejects.toThrow(
      /has changed on disk since it was read/,
    );
    expect(await contentOf(f)).toBe('a changed\n');
  });

  it('creates a missing file (and parents) from an empty oldString; a non-empty oldString on a missing file is an error', async () => {
    const res = await doEdit({ filePath: 'new/dir/created.txt', oldString: '', newString: 'hello\n' });
    expect(await contentOf('new/dir/created.txt')).toBe('hello\n');
    expect(res.output).toBe('Created new/dir/created.txt (1 lines).');
    await expect(doEdit({ filePath: 'missing.txt', oldString: 'x', newString: 'y' })).rejects.toThrow(
      /does not exist\. To create it, call edit with an empty oldString/,
    );
    // the created file counts as read: it can be edited straight away
    await doEdit({ filePath: 'new/dir/created.txt', oldString: 'hello', newString: 'bye' });
    expect(await contentOf('new/dir/created.txt')).toBe('bye\n');
  });

  it('an empty oldString on a non-empty existing file is refused', async () => {
    const f = await fixture('content\n');
    await expect(doEdit({ filePath: f, oldString: '', newString: 'x' })).rejects.toThrow(/already has content/);
  });
});

describe('edit: tolerant matchers', () => {
  it('trailing whitespace differences', async () => {
    const f = await fixture('function f() {   \n  return 1;\t\n}\n');
    const res = await doEdit({
      filePath: f,
      oldString: 'function f() {\n  return 1;\n}',
      newString: 'function f() {\n  return 2;\n}',
    });
    expect(await contentOf(f)).toBe('function f() {\n  return 2;\n}\n');
    expect(res.metadata.matcher).toBe('trailing-whitespace');
  });

  it('indentation-flexible: re-indents newString to the file', async () => {
    const f = await fixture('class A {\n    method() {\n        return 1;\n    }\n}\n');
    const res = await doEdit({
      filePath: f,
      oldString: 'method() {\n    return 1;\n}',
      newString: 'method() {\n    return 2;\n}',
    });
    expect(await contentOf(f)).toBe('class A {\n    method() {\n        return 2;\n    }\n}\n');
    expect(res.metadata.matcher).toBe('indentation-flexible');
  });

  it('whitespace-normalised, across lines (tabs vs spaces) and inside one line', async () => {
    const f = await fixture('if (a) {\n\tcall(x,  y);\n}\nlet  z   =  1;\n');
    const r1 = await doEdit({
      filePath: f,
      oldString: 'if (a) {\n  call(x, y);\n}',
      newString: 'if (a) {\n  call(y, x);\n}',
    });
    expect(r1.metadata.matcher).toBe('whitespace-normalised');
    const r2 = await doEdit({ filePath: f, oldString: 'z = 1', newString: 'z = 2' });
    expect(r2.metadata.matcher).toBe('whitespace-normalised');
    expect(await contentOf(f)).toContain('let  z = 2;\n');
  });

  it('escape-normalised: a doubly-escaped oldString/newString', async () => {
    const f = await fixture('const s = "a";\nconst t = 1;\n');
    const res = await doEdit({
      filePath: f,
      oldString: 'const s = \\"a\\";\\nconst t = 1;',
      newString: 'const s = \\"b\\";\\nconst t = 2;',
    });
    expect(res.metadata.matcher).toBe('escape-normalised');
    expect(await contentOf(f)).toBe('const s = "b";\nconst t = 2;\n');
  });

  it('unicode-normalised: NBSP and smart quotes in the file, ASCII in oldString', async () => {
    const f = await fixture('say(\u201Chello\u201D);\nconst\u00A0x = \u2018y\u2019;\n');
    const res = await doEdit({ filePath: f, oldString: "const x = 'y';", newString: "const x = 'z';" });
    expect(res.metadata.matcher).toBe('unicode-normalised');
    expect(await contentOf(f)).toBe("say(\u201Chello\u201D);\nconst x = 'z';\n");
    await doEdit({ filePath: f, oldString: 'say("hello");', newString: 'say("bye");' });
    expect(await contentOf(f)).toContain('say("bye");');
  });

  it('anchored block: first and last lines match, the middle is similar', async () => {
    const f = await fixture(
      'start();\nfunction go() {\n  const value = compute(1);\n  log(value);\n  return value;\n}\nend();\n',
    );
    const res = await doEdit({
      filePath: f,
      oldString: 'function go() {\n  const value = compute(2);\n  log(value)\n  return value;\n}',
      newString: 'function go() {\n  return 42;\n}',
    });
    expect(res.metadata.matcher).toBe('anchored-block');
    expect(res.output).toMatch(/similarity 0\.\d\d/);
    expect(await contentOf(f)).toBe('start();\nfunction go() {\n  return 42;\n}\nend();\n');
  });

  it('anchored block with a dissimilar middle is not a match', async () => {
    const content = 'function go() {\n  totally();\n  different();\n  stuff();\n}\n';
    expect(
      findMatches(content, 'function go() {\n  alpha = beta * gamma;\n  omega.run(delta);\n  zeta++;\n}', 'x'),
    ).toBeUndefined();
  });

  it('prefers an exact match over tolerant ones', async () => {
    const content = 'a  b\na b\n';
    const m = findMatches(content, 'a b', 'c');
    expect(m?.matcher).toBe('exact');
    expect(m?.ranges).toHaveLength(1);
  });

  it('not found: quotes the closest candidate with line numbers and says to re-read', async () => {
    const f = await fixture('line one\nfunction compute(a, b) {\n  return a + b;\n}\nline five\n');
    const err = (await doEdit({
      filePath: f,
      oldString: 'function compute(a, b) {\n  return a * b * 2;\n  // extra\n}',
      newString: 'x',
    }).catch((e: Error) => e)) as Error;
    expect(err.message).toMatch(/oldString was not found in f\d+\.txt/);
    expect(err.message).toMatch(
      /closest candidate is at lines 2-5:\n2: function compute\(a, b\) \{\n3: {3}return a \+ b;/,
    );
    expect(err.message).toMatch(/Re-read the file \(read with offset=1\)/);
  });
});

describe('edit: line endings, BOM, locking, size', () => {
  it('keeps CRLF line endings and a BOM', async () => {
    const f = await fixture('\uFEFFfirst\r\nsecond\r\nthird\r\n');
    await doEdit({ filePath: f, oldString: 'second\nthird', newString: 'SECOND\nTHIRD\nFOURTH' });
    expect(await readFile(path.join(dir, f), 'utf8')).toBe('\uFEFFfirst\r\nSECOND\r\nTHIRD\r\nFOURTH\r\n');
  });

  it('leaves the other lines of a mixed-ending file alone', async () => {
    const f = await fixture('a\r\nb\nc\r\n');
    await doEdit({ filePath: f, oldString: 'b', newString: 'B' });
    expect(await contentOf(f)).toBe('a\r\nB\nc\r\n');
  });

  it('100 concurrent edits with distinct targets on one file through registry.execute: all 100 land', async () => {
    const r = registerBuiltinTools(createRegistry());
    const init = { workspaceRoot: dir };
    const lines = Array.from({ length: 100 }, (_, i) => `item ${i} = pending;`);
    const name = `many-${++n}.txt`;
    await writeFile(path.join(dir, name), lines.join('\n') + '\n');
    expect((await r.execute('read', { filePath: name }, { sessionID: 'many' }, init)).success).toBe(true);
    const results = await Promise.all(
      lines.map((_, i) =>
        r.execute(
          'edit',
          { filePath: name, oldString: `item ${i} = pending;`, newString: `item ${i} = done;` },
          { sessionID: 'many' },
          init,
        ),
      ),
    );
    expect(results.filter((res) => !res.success).map((res) => res.error)).toEqual([]);
    expect(await contentOf(name)).toBe(lines.map((_, i) => `item ${i} = done;`).join('\n') + '\n');
  });

  it('a fuzzy edit in a 10 MB file is applied correctly (only the target line changes)', async () => {
    const body = Array.from({ length: 250_000 }, (_, i) => `    value_${i} = compute(${i}, "padding text");`);
    body[200_000] = '    special_target = compute(-1, "padding text");';
    const original = body.join('\n') + '\n';
    expect(original.length).toBeGreaterThan(10_000_000);
    const f = await fixture(original);
    const res = await doEdit({
      filePath: f,
      oldString: 'special_target  =  compute(-1, "padding text");',
      newString: 'special_target = compute(-2, "padding text");',
    });
    expect(res.metadata.matcher).toBe('whitespace-normalised');
    expect(res.output).toContain('line 200001');
    const after = await contentOf(f);
    expect(after).toBe(original.replace('special_target = compute(-1,', 'special_target = compute(-2,'));
    expect(res.metadata.diff).toContain('@@ -199998,7 +199998,7 @@');
  });
});

describe('edit: the byte path for exact matches', () => {
  const lineArb = fc.constantFrom('', 'alpha', 'beta beta', 'é€😀', '\tx = 1;', 'ω');
  it('gives the same file, diff and line as the string path (property)', () => {
    fc.assert(
      fc.property(
        fc.array(lineArb, { minLength: 1, maxLength: 25 }),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        fc.nat(),
        fc.nat(12),
        fc.constantFrom('Z', 'new text', 'two\nlines', 'ü'),
        fc.boolean(),
        (lines, eol, bom, at, len, newString, replaceAll) => {
          const content = (bom ? '\uFEFF' : '') + lines.join(eol) + eol;
          const body = bom ? content.slice(1) : content;
          const start = at % body.length;
          const oldString = [...body.slice(start)].slice(0, len + 1).join('');
          if (oldString === newString) return;
          const res = exactByteEdit(Buffer.from(content), oldString, newString, replaceAll, 'f');
          const count = body.split(oldString).length - 1;
          if (count > 1 && !replaceAll) return expect(res).toBeUndefined(); // the string path words the error
          if (/[\r\n]/.test(oldString + newString) && eol === '\r\n') return expect(res).toBeUndefined();
          if (/^[\uDC00-\uDFFF]/.test(oldString)) return; // a cut surrogate pair: not a string a model sends
          expect(res).toBeDefined();
          const updated = body.split(oldString).join(newString);
          expect(Buffer.concat(res!.parts).toString('utf8')).toBe((bom ? '\uFEFF' : '') + updated);
          const first = body.indexOf(oldString);
          const ranges = [];
          for (let i = first; i !== -1; i = body.indexOf(oldString, i + oldString.length))
            ranges.push({ start: i, end: i + oldString.length, replacement: newString });
          const expected = diffOfReplacements('f', body, ranges);
          expect(res!.diff).toEqual(expected.summary);
          expect(res!.firstLine).toBe(expected.startLines[0]);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('keeps bytes that are not UTF-8 outside the match exactly as they were', async () => {
    const bytes = Buffer.concat([
      Buffer.from('head\n'),
      Buffer.from([0xff, 0xfe, 0x80, 0x0a]),
      Buffer.from('x = 1;\n'),
    ]);
    const f = await fixture(bytes);
    const res = await doEdit({ filePath: f, oldString: 'x = 1;', newString: 'x = 2;' });
    expect(res.output).toBe(`Edited ${f}: 1 replacement at line 3 (+1 -1 lines).`);
    const after = await readFile(path.join(dir, f));
    expect(after).toEqual(Buffer.concat([bytes.subarray(0, 9), Buffer.from('x = 2;\n')]));
  });

  it(`takes the string path when the matches span more than ${BYTE_EDIT_MAX_WINDOW / 1024 / 1024} MB, with the same result`, async () => {
    const filler = 'filler line\n'.repeat(BYTE_EDIT_MAX_WINDOW / 12 + 10);
    const content = `a = 1;\n${filler}a = 1;\n`;
    expect(exactByteEdit(Buffer.from(content), 'a = 1;', 'a = 2;', true, 'f')).toBeUndefined();
    const f = await fixture(content);
    const res = await doEdit({ filePath: f, oldString: 'a = 1;', newString: 'a = 2;', replaceAll: true });
    expect(res.output).toMatch(/2 replacements/);
    expect(await contentOf(f)).toBe(`a = 2;\n${filler}a = 2;\n`);
  });
});
