import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile, symlink, utimes, appendFile } from 'node:fs/promises';
import fc from 'fast-check';
import { z } from 'zod';
import path from 'node:path';
import { tempDir, makeCtx } from '../../support/helpers.js';
import {
  ReadTool,
  DEFAULT_READ_LIMIT,
  MAX_LINE_LENGTH,
  LINE_CUT_MARKER,
  MAX_OUTPUT_BYTES,
  BINARY_SNIFF_BYTES,
  MAX_ATTACHMENT_BYTES,
} from '../../../src/tools/files/read.js';
import {
  TAIL_BLOCK_BYTES,
  TAIL_COUNT_MAX_BYTES,
  LINE_COUNT_SETTLE_MS,
  LINE_COUNT_CACHE_ENTRIES,
  LineCounts,
} from '../../../src/tools/files/read-tail.js';
import type { BigIntStats } from 'node:fs';
import { readTracker } from '../../../src/workspace/workspace.js';
import { createRegistry } from '../../../src/registry/registry.js';
import { registerBuiltinTools } from '../../../src/tools/index.js';
import { callTool } from '../../support/tool-call.js';

let dir: string;
let cleanup: () => Promise<void>;
let tool: Awaited<ReturnType<typeof ReadTool.init>>;
const run = (args: Record<string, unknown>, ctx = makeCtx()) => tool.execute(tool.parameters.parse(args), ctx);
const numbered = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `line ${from + i}`).join('\n') + '\n';

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('read-'));
  tool = await ReadTool.init({ workspaceRoot: dir });
});
afterAll(() => cleanup());

describe('read: lines, offset, limit, footers', () => {
  it('numbers lines as "N: text" and ends with the end-of-file footer', async () => {
    await writeFile(path.join(dir, 'small.txt'), 'alpha\nbeta\ngamma\n');
    const res = await run({ filePath: 'small.txt' });
    expect(res.output).toBe('1: alpha\n2: beta\n3: gamma\n\n(End of file - 3 lines total)');
    expect(res.metadata.truncated).toBe(false);
  });

  it('counts a last line without a newline, strips CR and a BOM', async () => {
    await writeFile(path.join(dir, 'crlf.txt'), '\uFEFFone\r\ntwo\r\nthree');
    const res = await run({ filePath: path.join(dir, 'crlf.txt') });
    expect(res.output).toBe('1: one\n2: two\n3: three\n\n(End of file - 3 lines total)');
  });

  it(`returns ${DEFAULT_READ_LIMIT} lines by default and says how to continue (at and past the limit)`, async () => {
    await writeFile(path.join(dir, 'exact.txt'), numbered(DEFAULT_READ_LIMIT));
    const exact = await run({ filePath: 'exact.txt' });
    expect(exact.output).toMatch(/\(End of file - 2000 lines total\)$/);
    await writeFile(path.join(dir, 'over.txt'), numbered(DEFAULT_READ_LIMIT + 1));
    const over = await run({ filePath: 'over.txt' });
    expect(over.output).toContain('2000: line 2000');
    expect(over.output).not.toContain('2001: line 2001');
    expect(over.output).toMatch(/\(Showing lines 1-2000 of the file\. Use offset=2001 to continue\.\)$/);
    expect(over.metadata.truncated).toBe(true);
    const rest = await run({ filePath: 'over.txt', offset: 2001 });
    expect(rest.output).toBe('2001: line 2001\n\n(End of file - 2001 lines total)');
  });

  it('honours offset and limit, accepts numeric strings, and rejects an offset past the end', async () => {
    await writeFile(path.join(dir, 'ten.txt'), numbered(10));
    // Through the registry pipeline, as an agent calls it: numeric strings and null optionals are repaired.
    const registry = createRegistry().register(ReadTool, { permissions: { required: ['read'] } });
    const viaPipeline = await registry.execute('read', { filePath: 'ten.txt', offset: '4', limit: '3' }, makeCtx(), {
      workspaceRoot: dir,
    });
    const res = viaPipeline.result;
    expect(
      (
        await registry.execute('read', { filePath: 'ten.txt', offset: null, limit: null }, makeCtx(), {
          workspaceRoot: dir,
        })
      ).success,
    ).toBe(true);
    expect(res.output).toBe(
      '4: line 4\n5: line 5\n6: line 6\n\n(Showing lines 4-6 of the file. Use offset=7 to continue.)',
    );
    const tail = await run({ filePath: 'ten.txt', offset: 10, limit: 1 });
    expect(tail.output).toBe('10: line 10\n\n(End of file - 10 lines total)');
    await expect(run({ filePath: 'ten.txt', offset: 11 })).rejects.toThrow(
      /Offset 11 is past the end of ten\.txt, which has 10 lines/,
    );
    await expect(run({ filePath: 'ten.txt', offset: 0 })).rejects.toThrow(
      /offset 0 is not a line.*offset=1 for the start, or a negative offset such as -100 for the last 100 lines/,
    );
  });

  it('reports an empty file', async () => {
    await writeFile(path.join(dir, 'empty.txt'), '');
    expect((await run({ filePath: 'empty.txt' })).output).toMatch(/is empty/);
  });

  it(`cuts lines longer than ${MAX_LINE_LENGTH} chars with a marker (at and past the edge)`, async () => {
    const atEdge = 'a'.repeat(MAX_LINE_LENGTH);
    const past = 'b'.repeat(MAX_LINE_LENGTH + 1);
    const huge = 'é'.repeat(3 * 1024 * 1024); // one 6 MB line: kept only as far as needed
    await writeFile(path.join(dir, 'long.txt'), `${atEdge}\n${past}\n${huge}\nafter\n`);
    const res = await run({ filePath: 'long.txt' });
    const lines = res.output.split('\n');
    expect(lines[0]).toBe(`1: ${atEdge}`);
    expect(lines[1]).toBe(`2: ${'b'.repeat(MAX_LINE_LENGTH)}${LINE_CUT_MARKER}`);
    expect(lines[2]).toBe(`3: ${'é'.repeat(MAX_LINE_LENGTH)}${LINE_CUT_MARKER}`);
    expect(lines[3]).toBe('4: after');
    expect(res.metadata.cutLines).toBe(2);
  });

  it(`caps output at ${MAX_OUTPUT_BYTES / 1024} KB and points at the next offset`, async () => {
    const line = 'x'.repeat(1000);
    await writeFile(path.join(dir, 'wide.txt'), Array.from({ length: 100 }, () => line).join('\n'));
    const res = await run({ filePath: 'wide.txt' });
    expect(Buffer.byteLength(res.output)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES + 200);
    const m = /Output capped at 50 KB\. Showing lines 1-(\d+) of the file\. Use offset=(\d+) to continue\./.exec(
      res.output,
    );
    expect(m).not.toBeNull();
    expect(Number(m![2])).toBe(Number(m![1]) + 1);
    expect(Number(m![1])).toBe(50); // 50 lines of ~1006 bytes fit, the 51st does not
    expect(res.metadata.truncated).toBe(true);
  });
});

describe('read: negative offset (the last lines, read from the end)', () => {
  /** The numbered body of an output, without its footer. */
  const body = (out: string) => out.slice(0, out.lastIndexOf('\n\n'));

  it('returns exactly the last N lines with their absolute numbers, with or without a final newline', async () => {
    await writeFile(path.join(dir, 'log.txt'), numbered(1000));
    const res = await run({ filePath: 'log.txt', offset: -100 });
    expect(res.output.split('\n\n')[0].split('\n')).toHaveLength(100);
    expect(res.output).toMatch(/^901: line 901\n/);
    expect(res.output).toMatch(/\n1000: line 1000\n\n\(End of file - 1000 lines total\)$/);
    expect(res.metadata).toMatchObject({ startLine: 901, endLine: 1000, totalLines: 1000 });
    await writeFile(path.join(dir, 'log-nonl.txt'), numbered(1000).slice(0, -1));
    const nonl = await run({ filePath: 'log-nonl.txt', offset: -100 });
    expect(nonl.output).toBe(res.output);
  });

  it('returns the whole file, numbered from 1, when it is shorter than N', async () => {
    await writeFile(path.join(dir, 'short.txt'), numbered(3));
    const res = await run({ filePath: 'short.txt', offset: -100 });
    expect(res.output).toBe('1: line 1\n2: line 2\n3: line 3\n\n(End of file - 3 lines total)');
    await writeFile(path.join(dir, 'one-empty-line.txt'), '\n');
    expect((await run({ filePath: 'one-empty-line.txt', offset: -5 })).output).toBe(
      '1: \n\n(End of file - 1 line total)',
    );
  });

  it('reports an empty file', async () => {
    await writeFile(path.join(dir, 'empty-tail.txt'), '');
    expect((await run({ filePath: 'empty-tail.txt', offset: -10 })).output).toBe('(File empty-tail.txt is empty.)');
  });

  it('strips CR from CRLF lines and a BOM from line 1', async () => {
    await writeFile(path.join(dir, 'crlf-tail.txt'), '\uFEFFone\r\ntwo\r\nthree\r\n');
    expect((await run({ filePath: 'crlf-tail.txt', offset: -2 })).output).toBe(
      '2: two\n3: three\n\n(End of file - 3 lines total)',
    );
    expect((await run({ filePath: 'crlf-tail.txt', offset: -3 })).output).toMatch(/^1: one\n2: two\n/);
  });

  it(`finds a last line longer than the ${TAIL_BLOCK_BYTES / 1024} KB block and numbers it right`, async () => {
    const huge = 'z'.repeat(TAIL_BLOCK_BYTES * 3 + 17);
    await writeFile(path.join(dir, 'long-last.txt'), `${numbered(5)}${huge}`);
    const res = await run({ filePath: 'long-last.txt', offset: -2 });
    expect(res.output).toBe(
      `5: line 5\n6: ${'z'.repeat(MAX_LINE_LENGTH)}${LINE_CUT_MARKER}\n\n(End of file - 6 lines total)`,
    );
  });

  it('combines with limit, and the footer points at the next absolute offset', async () => {
    await writeFile(path.join(dir, 'fifty.txt'), numbered(50));
    const res = await run({ filePath: 'fifty.txt', offset: -10, limit: 3 });
    expect(res.output).toBe(
      '41: line 41\n42: line 42\n43: line 43\n\n(Showing lines 41-43 of the file. Use offset=44 to continue.)',
    );
  });

  it('spans many blocks and always agrees with the same range read forwards', async () => {
    await writeFile(path.join(dir, 'many.txt'), numbered(40_000));
    for (const n of [1, 999, 12_345, 40_000, 40_001]) {
      const back = await run({ filePath: 'many.txt', offset: -n, limit: 5 });
      const from = Math.max(1, 40_000 - n + 1);
      expect(back.output).toBe((await run({ filePath: 'many.txt', offset: from, limit: 5 })).output);
    }
  });

  it('matches a forward read for any content (property)', async () => {
    const line = fc.constantFrom('', 'a', 'bb b', 'é€😀', 'x'.repeat(300), '\r');
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 40 }),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        fc.integer({ min: 1, max: 45 }),
        async (lines, eol, finalEol, n) => {
          const text = lines.join(eol) + (finalEol && lines.length ? eol : '');
          await writeFile(path.join(dir, 'prop.txt'), text);
          const back = await run({ filePath: 'prop.txt', offset: -n });
          if (text === '') return expect(back.output).toMatch(/is empty/);
          const total = back.metadata.totalLines as number;
          const forward = await run({ filePath: 'prop.txt', offset: Math.max(1, total - n + 1) });
          expect(back.output).toBe(forward.output);
          expect(body(back.output).split('\n').length).toBeGreaterThanOrEqual(Math.min(n, total));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('keeps absolute numbers right after the file changes, even with its old size and mtime', async () => {
    const file = path.join(dir, 'changing.log');
    const old = new Date(Date.now() - 10 * LINE_COUNT_SETTLE_MS);
    await writeFile(file, numbered(201));
    await utimes(file, old, old);
    expect((await run({ filePath: 'changing.log', offset: -1 })).output).toMatch(/^201: line 201\n/);
    // Same size, same mtime and the same last bytes; one newline fewer near the start.
    await writeFile(file, numbered(201).replace('line 1\nline 2\n', 'line 1 line 2\n'));
    await utimes(file, old, old);
    expect((await run({ filePath: 'changing.log', offset: -1 })).output).toMatch(/^200: line 201\n/);
    await appendFile(file, 'line 202\n');
    expect((await run({ filePath: 'changing.log', offset: -1 })).output).toMatch(/^201: line 202\n/);
  });

  it('trusts a cached count only for the same file, unchanged, and settled', () => {
    const counts = new LineCounts();
    const now = Date.now();
    const ns = (ms: number) => BigInt(ms) * 1_000_000n;
    const st = { dev: 1n, ino: 2n, size: 100n, mtimeNs: ns(now - 60_000), ctimeNs: ns(now - 60_000) } as BigIntStats;
    const probe = Buffer.from('tail\n');
    counts.set(st, probe, 42, now);
    expect(counts.get(st, probe)).toBe(42);
    expect(counts.get({ ...st, ino: 3n }, probe)).toBeUndefined();
    expect(counts.get(st, Buffer.from('tall\n'))).toBeUndefined(); // a mismatch also drops the entry
    counts.set(st, probe, 42, now);
    for (const changed of [{ size: 101n }, { mtimeNs: st.mtimeNs + 1n }, { ctimeNs: st.ctimeNs + 1n }]) {
      expect(counts.get({ ...st, ...changed }, probe)).toBeUndefined();
      counts.set(st, probe, 42, now);
    }
    const racy = { ...st, ctimeNs: ns(now - LINE_COUNT_SETTLE_MS + 1) };
    counts.set(racy, probe, 7, now);
    expect(counts.get(racy, probe)).toBeUndefined();
    for (let i = 0; i < LINE_COUNT_CACHE_ENTRIES + 1; i++) counts.set({ ...st, ino: BigInt(100 + i) }, probe, i, now);
    expect(counts.get({ ...st, ino: 100n }, probe)).toBeUndefined(); // oldest dropped
    expect(counts.get({ ...st, ino: 101n }, probe)).toBe(1);
  });

  describe(`past TAIL_COUNT_MAX_BYTES (${TAIL_COUNT_MAX_BYTES / 1024 / 1024} MB) before the last lines`, () => {
    /** `bytes` of 64-byte filler lines (the first one longer by `extra`), then the lines `tail`. */
    const bigFile = async (name: string, extra: number, tail: string) => {
      const line = 'f'.repeat(63) + '\n';
      const filler = 'f'.repeat(extra) + line.repeat(TAIL_COUNT_MAX_BYTES / line.length);
      await writeFile(path.join(dir, name), filler + tail);
      return TAIL_COUNT_MAX_BYTES / line.length; // filler lines
    };

    it('counts the lines at the edge: absolute numbers', async () => {
      const filler = await bigFile('edge.log', 0, 'tail 1\ntail 2\ntail 3\n');
      const res = await run({ filePath: 'edge.log', offset: -3 });
      expect(res.output).toBe(
        `${filler + 1}: tail 1\n${filler + 2}: tail 2\n${filler + 3}: tail 3\n\n(End of file - ${filler + 3} lines total)`,
      );
    });

    it('one byte past it: numbered from the end, and the footer says why and how to go on', async () => {
      await bigFile('past.log', 1, 'tail 1\ntail 2\ntail 3');
      const res = await run({ filePath: 'past.log', offset: -3 });
      expect(res.output).toBe(
        '-3: tail 1\n-2: tail 2\n-1: tail 3\n\n(End of file. Lines are numbered from the end (-1 is the last line): ' +
          'past.log is 8.0 MB, and absolute numbers would mean counting every line before these (done only up to 8 MB). ' +
          'Use offset=-2003 limit=2000 for the 2000 lines before line -3.)',
      );
      expect(res.metadata).toMatchObject({ startLine: -3, endLine: -1, numberedFromEnd: true, truncated: false });
      expect(res.metadata.totalLines).toBeUndefined();
    });

    it('a window cut by limit continues from the end, and CRLF is stripped', async () => {
      await bigFile('past-crlf.log', 1, 'tail 1\r\ntail 2\r\ntail 3\r\n');
      const first = await run({ filePath: 'past-crlf.log', offset: -3, limit: 2 });
      expect(first.output).toMatch(
        /^-3: tail 1\n-2: tail 2\n\n\(Showing lines -3 to -2\. Use offset=-1 to continue\. Lines are numbered from the end/,
      );
      expect(first.metadata).toMatchObject({ truncated: true, numberedFromEnd: true });
      expect((await run({ filePath: 'past-crlf.log', offset: -1 })).output).toMatch(/^-1: tail 3\n\n\(End of file\. /);
    });

    it('reaches a model through the adapter the same way, and the description says so', async () => {
      const tools = await registerBuiltinTools(createRegistry()).tools({
        ids: ['read'],
        initCtx: { workspaceRoot: dir },
      });
      const msg = await callTool(tools, 'read', { filePath: 'past.log', offset: -1 });
      expect(msg.status).not.toBe('error');
      expect(msg.content).toMatch(
        /^-1: tail 3\n\n\(End of file\. Lines are numbered from the end \(-1 is the last line\)/,
      );
      expect(tools[0].description).toContain(
        `in a file over ${TAIL_COUNT_MAX_BYTES / 1024 / 1024} MB they can be numbered from the end`,
      );
    });
  });

  it('lists the last entries of a directory', async () => {
    await mkdir(path.join(dir, 'entries'));
    for (const n of ['a', 'b', 'c']) await writeFile(path.join(dir, 'entries', n), '');
    expect((await run({ filePath: 'entries', offset: -2 })).output).toBe('Directory entries/:\nb\nc\n\n(3 entries)');
  });

  it('declares offset as a plain integer a provider accepts (no minimum, no transform)', () => {
    const schema = z.toJSONSchema(tool.parameters) as { properties: Record<string, Record<string, unknown>> };
    const offset = schema.properties.offset;
    expect(offset).toMatchObject({ type: 'integer', description: expect.stringMatching(/negative.*last 100 lines/) });
    expect(Object.keys(offset).filter((k) => k.startsWith('exclusive'))).toEqual([]);
    expect(offset.minimum ?? -Infinity).toBeLessThan(-1e9);
  });
});

describe('read: binary, attachments, directories, missing files', () => {
  it('refuses files with a NUL byte, mostly control bytes, or a binary extension', async () => {
    await writeFile(path.join(dir, 'nul.txt'), Buffer.from('hello\0world'));
    await expect(run({ filePath: 'nul.txt' })).rejects.toThrow(/binary file \(it contains NUL bytes\)/);
    await writeFile(path.join(dir, 'archive.zip'), 'plain text really');
    await expect(run({ filePath: 'archive.zip' })).rejects.toThrow(/binary file \(\.zip\)/);
  });

  it('uses the 30% non-printable threshold on the first 4 KB only', async () => {
    const ctl = (n: number) => Buffer.alloc(n, 0x01);
    const txt = (n: number) => Buffer.alloc(n, 0x61);
    // exactly 30% of 1000 bytes: still text
    await writeFile(path.join(dir, 'at30.txt'), Buffer.concat([ctl(300), txt(700)]));
    const at30 = await run({ filePath: 'at30.txt' });
    expect(at30.output).toContain('a'.repeat(700));
    expect(at30.metadata.totalLines).toBe(1);
    await writeFile(path.join(dir, 'over30.txt'), Buffer.concat([ctl(301), txt(699)]));
    await expect(run({ filePath: 'over30.txt' })).rejects.toThrow(/30% of its first 1000 bytes are not printable/);
    // control bytes after the sniffed prefix do not matter
    await writeFile(path.join(dir, 'late.txt'), Buffer.concat([txt(BINARY_SNIFF_BYTES), ctl(BINARY_SNIFF_BYTES)]));
    const late = await run({ filePath: 'late.txt' });
    expect(late.output).toContain('a'.repeat(100));
  });

  it('returns images and PDFs as base64 attachments, up to the size cap', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    await writeFile(path.join(dir, 'pic.png'), png);
    const res = await run({ filePath: 'pic.png' });
    expect(res.attachments).toEqual([
      expect.objectContaining({ type: 'image', mime: 'image/png', data: png.toString('base64') }),
    ]);
    await writeFile(path.join(dir, 'doc.pdf'), '%PDF-1.4\n');
    expect((await run({ filePath: 'doc.pdf' })).attachments?.[0].mime).toBe('application/pdf');
    await writeFile(path.join(dir, 'edge.png'), Buffer.alloc(MAX_ATTACHMENT_BYTES));
    expect((await run({ filePath: 'edge.png' })).attachments).toHaveLength(1);
    await writeFile(path.join(dir, 'big.png'), Buffer.alloc(MAX_ATTACHMENT_BYTES + 1));
    await expect(run({ filePath: 'big.png' })).rejects.toThrow(/above the 5 MB limit/);
  });

  it('lists a directory, directories first', async () => {
    await mkdir(path.join(dir, 'listme', 'zsub'), { recursive: true });
    await writeFile(path.join(dir, 'listme', 'a.txt'), 'a');
    const res = await run({ filePath: 'listme' });
    expect(res.output).toBe('Directory listme/:\nzsub/\na.txt\n\n(2 entries)');
  });

  it('suggests up to 3 similar names for a missing file', async () => {
    await mkdir(path.join(dir, 'sug'));
    for (const n of ['config.ts', 'config.test.ts', 'configs.ts', 'conflict.ts', 'unrelated.md'])
      await writeFile(path.join(dir, 'sug', n), '');
    const err = await run({ filePath: 'sug/config.js' }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const msg = (err as Error).message;
    expect(msg).toMatch(/File sug\/config\.js does not exist\. Did you mean/);
    const suggestions = msg.split('\n').slice(1);
    expect(suggestions).toHaveLength(3);
    expect(suggestions).toContain('sug/config.ts');
    expect(msg).not.toContain('unrelated.md');
    await expect(run({ filePath: 'nodir/x.ts' })).rejects.toThrow(/neither does its directory nodir/);
  });

  it('follows symlinks that stay inside the workspace', async () => {
    await writeFile(path.join(dir, 'target.txt'), 'via link\n');
    await symlink(path.join(dir, 'target.txt'), path.join(dir, 'inner-link'));
    expect((await run({ filePath: 'inner-link' })).output).toContain('1: via link');
  });
});

describe('read: session tracking and abort', () => {
  it('records the read for the calling session only', async () => {
    await writeFile(path.join(dir, 'tracked.txt'), 'x\n');
    const abs = path.join(dir, 'tracked.txt');
    await run({ filePath: 'tracked.txt' }, makeCtx({ sessionID: 'reader-A' }));
    await expect(readTracker.assertFresh('reader-A', abs)).resolves.toBeUndefined();
    await expect(readTracker.assertFresh('reader-B', abs)).rejects.toThrow(/has not been read in this session/);
  });

  it('stops when the call is aborted', async () => {
    await writeFile(path.join(dir, 'abort.txt'), numbered(10));
    const ctx = makeCtx();
    ctx.abortNow();
    await expect(run({ filePath: 'abort.txt' }, ctx)).rejects.toThrow(/aborted/);
  });
});
