import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { readFile, writeFile, stat, chmod, readdir, utimes } from 'node:fs/promises';
import path from 'node:path';
import { tempDir, makeCtx } from '../../support/helpers.js';
import { WriteTool, MAX_WRITE_BYTES } from '../../../src/tools/files/write.js';
import { ReadTool } from '../../../src/tools/files/read.js';

let dir: string;
let cleanup: () => Promise<void>;
let write: Awaited<ReturnType<typeof WriteTool.init>>;
let read: Awaited<ReturnType<typeof ReadTool.init>>;
const doWrite = (args: Record<string, unknown>, ctx = makeCtx()) => write.execute(write.parameters.parse(args), ctx);
const doRead = (filePath: string, ctx = makeCtx()) => read.execute(read.parameters.parse({ filePath }), ctx);

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('write-'));
  write = await WriteTool.init({ workspaceRoot: dir });
  read = await ReadTool.init({ workspaceRoot: dir });
});
afterAll(() => cleanup());

describe('write', () => {
  it('creates a new file and its parent directories, with a +lines summary and a diff', async () => {
    const res = await doWrite({ filePath: 'a/b/c/new.txt', content: 'one\ntwo\n' });
    expect(await readFile(path.join(dir, 'a/b/c/new.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(res.output).toBe('Created a/b/c/new.txt (8 bytes, +2 lines).');
    expect(res.metadata).toMatchObject({ created: true, additions: 2, deletions: 0, truncated: false });
    expect(res.metadata.diff).toContain('+one');
  });

  it('refuses to overwrite a file the session has not read, and leaves it alone', async () => {
    await writeFile(path.join(dir, 'unread.txt'), 'original\n');
    await expect(doWrite({ filePath: 'unread.txt', content: 'x' })).rejects.toThrow(
      /File unread\.txt has not been read in this session\. Read it first/,
    );
    expect(await readFile(path.join(dir, 'unread.txt'), 'utf8')).toBe('original\n');
  });

  it('overwrites after a read, with a +/- summary; a second write needs no new read', async () => {
    await writeFile(path.join(dir, 'rw.txt'), 'a\nb\nc\n');
    await doRead('rw.txt');
    const res = await doWrite({ filePath: 'rw.txt', content: 'a\nB\nc\nd\n' });
    expect(res.output).toBe('Wrote rw.txt (+2 -1 lines).');
    expect(res.metadata.diff).toMatch(/-b\n\+B\n/);
    const again = await doWrite({ filePath: 'rw.txt', content: 'final\n' });
    expect(again.output).toMatch(/^Wrote rw\.txt/);
    expect(await readFile(path.join(dir, 'rw.txt'), 'utf8')).toBe('final\n');
  });

  it('refuses when the file changed on disk after the read', async () => {
    const p = path.join(dir, 'changed.txt');
    await writeFile(p, 'v1\n');
    await doRead('changed.txt');
    await writeFile(p, 'v2 by someone else\n');
    await expect(doWrite({ filePath: 'changed.txt', content: 'mine' })).rejects.toThrow(
      /File changed\.txt has changed on disk since it was read \(\d\d:\d\d:\d\d\)\. Read it again before editing\./,
    );
    expect(await readFile(p, 'utf8')).toBe('v2 by someone else\n');
  });

  it('notices a same-size change that only moved the mtime', async () => {
    const p = path.join(dir, 'touched.txt');
    await writeFile(p, 'same\n');
    await doRead('touched.txt');
    await utimes(p, new Date(2001, 1, 1), new Date(2001, 1, 1));
    await expect(doWrite({ filePath: 'touched.txt', content: 'x' })).rejects.toThrow(/has changed on disk/);
  });

  it('a read in another session does not count', async () => {
    await writeFile(path.join(dir, 'other.txt'), 'x\n');
    await doRead('other.txt', makeCtx({ sessionID: 'someone-else' }));
    await expect(doWrite({ filePath: 'other.txt', content: 'y' })).rejects.toThrow(/has not been read in this session/);
  });

  it('preserves the mode of the file it replaces and leaves no temp files behind', async () => {
    const p = path.join(dir, 'script.sh');
    await writeFile(p, '#!/bin/sh\necho hi\n');
    await chmod(p, 0o750);
    await doRead('script.sh');
    await doWrite({ filePath: 'script.sh', content: '#!/bin/sh\necho bye\n' });
    expect((await stat(p)).mode & 0o777).toBe(0o750);
    expect((await readdir(dir)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses a directory and content over the size limit (at and past the edge)', async () => {
    await expect(doWrite({ filePath: 'a/b', content: 'x' })).rejects.toThrow(/a\/b is a directory/);
    const edge = 'x'.repeat(MAX_WRITE_BYTES);
    await doWrite({ filePath: 'edge.bin.txt', content: edge });
    expect((await stat(path.join(dir, 'edge.bin.txt'))).size).toBe(MAX_WRITE_BYTES);
    await expect(doWrite({ filePath: 'over.txt', content: edge + 'x' })).rejects.toThrow(
      /above the 52428800-byte limit/,
    );
  });
});
