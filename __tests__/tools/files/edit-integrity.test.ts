/**
 * edit's integrity guarantees: bytes that are not valid UTF-8 survive an edit untouched, a write
 * from outside at any moment of the read-modify-write makes the edit refuse (never overwrite), and
 * files over MAX_EDIT_FILE_BYTES are refused by name.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { promises as fsp, writeFileSync } from 'node:fs';
import path from 'node:path';
import { EditTool, MAX_EDIT_FILE_BYTES } from '../../../src/tools/files/edit.js';
import { ReadTool } from '../../../src/tools/files/read.js';
import { tempDir, makeCtx } from '../../support/helpers.js';

let base: { dir: string; cleanup: () => Promise<void> };
let edit: Awaited<ReturnType<typeof EditTool.init>>;
let read: Awaited<ReturnType<typeof ReadTool.init>>;

beforeAll(async () => {
  base = await tempDir('edit-integrity-');
  const init = { workspaceRoot: base.dir };
  [edit, read] = await Promise.all([EditTool.init(init), ReadTool.init(init)]);
});
afterAll(() => base.cleanup());

async function readThenEdit(file: string, oldString: string, newString: string, session = 'integrity') {
  await read.execute(read.parameters.parse({ filePath: file }), makeCtx({ sessionID: session }));
  return edit.execute(edit.parameters.parse({ filePath: file, oldString, newString }), makeCtx({ sessionID: session }));
}

describe('bytes that are not UTF-8', () => {
  const cases: Array<{ name: string; before: Buffer; oldString: string; newString: string; after: Buffer }> = [
    {
      name: 'Latin-1 text',
      before: Buffer.from('caf\xe9 cr\xe8me\nline two\nna\xefve end\n', 'latin1'),
      oldString: 'line two',
      newString: 'line 2 (édité)',
      after: Buffer.concat([
        Buffer.from('caf\xe9 cr\xe8me\n', 'latin1'),
        Buffer.from('line 2 (édité)', 'utf8'),
        Buffer.from('\nna\xefve end\n', 'latin1'),
      ]),
    },
    {
      name: 'UTF-8 text with a binary tail',
      before: Buffer.concat([
        Buffer.from('héllo\nworld\n', 'utf8'),
        Buffer.from([0xff, 0xfe, 0x80, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x0a]),
      ]),
      oldString: 'world',
      newString: 'there',
      after: Buffer.concat([
        Buffer.from('héllo\nthere\n', 'utf8'),
        Buffer.from([0xff, 0xfe, 0x80, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x0a]),
      ]),
    },
    {
      name: 'CRLF file with invalid bytes and a BOM',
      before: Buffer.concat([
        Buffer.from('\ufeffa\r\nb\xe9\r\n', 'latin1').subarray(0, 0),
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from('a\r\nb', 'utf8'),
        Buffer.from([0xe9]),
        Buffer.from('\r\nc\r\n'),
      ]),
      oldString: 'c',
      newString: 'd',
      after: Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from('a\r\nb', 'utf8'),
        Buffer.from([0xe9]),
        Buffer.from('\r\nd\r\n'),
      ]),
    },
  ];
  for (const c of cases) {
    it(`keeps every byte outside the replaced range: ${c.name}`, async () => {
      const file = path.join(base.dir, `${c.name.replace(/\W+/g, '-')}.txt`);
      writeFileSync(file, c.before);
      const res = await readThenEdit(file, c.oldString, c.newString);
      expect(res.output).toMatch(/^Edited /);
      expect((await fsp.readFile(file)).toString('hex')).toBe(c.after.toString('hex'));
    });
  }

  it('refuses an oldString that uses the characters reserved for raw bytes', async () => {
    const file = path.join(base.dir, 'reserved.txt');
    writeFileSync(file, 'abc\n');
    await expect(readThenEdit(file, 'abc\u{10FF41}', 'x')).rejects.toThrow(
      /reserves for bytes that are not valid UTF-8/,
    );
    expect(await fsp.readFile(file, 'utf8')).toBe('abc\n');
  });
});

describe('a write from outside during the edit', () => {
  it('makes the edit refuse and say to re-read; the outside write survives', async () => {
    const file = path.join(base.dir, 'raced.txt');
    writeFileSync(file, 'one\ntwo\nthree\n');
    await read.execute(read.parameters.parse({ filePath: file }), makeCtx({ sessionID: 'race' }));
    // Someone else writes the file while edit is writing its temp file (after edit read the file).
    const realOpen = fsp.open;
    let raced = false;
    fsp.open = async (...a: Parameters<typeof realOpen>) => {
      const handle = await realOpen(...a);
      if (String(a[0]).endsWith('.tmp') && !raced) {
        const realSync = handle.sync.bind(handle);
        handle.sync = async () => {
          raced = true;
          writeFileSync(file, 'one\ntwo\nthree\nfour (from outside)\n');
          return realSync();
        };
      }
      return handle;
    };
    try {
      await expect(
        edit.execute(
          edit.parameters.parse({ filePath: file, oldString: 'two', newString: 'TWO' }),
          makeCtx({ sessionID: 'race' }),
        ),
      ).rejects.toThrow(
        /was changed on disk by someone else while it was being edited\. Nothing was written; read it again/,
      );
    } finally {
      fsp.open = realOpen;
    }
    expect(raced).toBe(true);
    expect(await fsp.readFile(file, 'utf8')).toBe('one\ntwo\nthree\nfour (from outside)\n');
    expect((await fsp.readdir(base.dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});

describe('size cap', () => {
  it(`refuses files over MAX_EDIT_FILE_BYTES (${MAX_EDIT_FILE_BYTES}) by name, and lets one at the cap through`, async () => {
    const over = path.join(base.dir, 'over.txt');
    await fsp.writeFile(over, 'needle\n');
    await fsp.truncate(over, MAX_EDIT_FILE_BYTES + 1);
    await expect(
      edit.execute(edit.parameters.parse({ filePath: over, oldString: 'needle', newString: 'pin' }), makeCtx()),
    ).rejects.toThrow(`is ${MAX_EDIT_FILE_BYTES + 1} bytes, above the ${MAX_EDIT_FILE_BYTES}-byte limit of edit`);
    // At the cap the size check passes (the next check, read-before-edit, answers instead).
    const at = path.join(base.dir, 'at.txt');
    await fsp.writeFile(at, 'needle\n');
    await fsp.truncate(at, MAX_EDIT_FILE_BYTES);
    await expect(
      edit.execute(
        edit.parameters.parse({ filePath: at, oldString: 'needle', newString: 'pin' }),
        makeCtx({ sessionID: 'cap' }),
      ),
    ).rejects.toThrow(/has not been read in this session/);
    await fsp.rm(at);
    await fsp.rm(over);
  });
});
