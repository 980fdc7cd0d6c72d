import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile, readFile, symlink, stat, chmod, readdir } from 'node:fs/promises';
import path from 'node:path';
import { bytesDiffer, tempDir } from '../support/helpers.js';
import {
  Workspace,
  PathOutsideWorkspaceError,
  atomicWriteFile,
  withFileLock,
  activeFileLocks,
  ReadTracker,
  StaleFileError,
  MAX_TRACKED_FILES_PER_SESSION,
} from '../../src/workspace/workspace.js';

let base: string;
let cleanup: () => Promise<void>;
let ws: Workspace;
let root: string;

beforeAll(async () => {
  ({ dir: base, cleanup } = await tempDir('workspace-'));
  root = path.join(base, 'ws');
  await mkdir(root);
  await mkdir(path.join(base, 'extra'));
  ws = await Workspace.create({ root, additionalRoots: [path.join(base, 'extra')] });
});
afterAll(() => cleanup());

describe('Workspace.resolve', () => {
  it('accepts relative and absolute paths inside, including additional roots', async () => {
    expect(await ws.resolve('a/b.txt')).toBe(path.join(root, 'a/b.txt'));
    expect(await ws.resolve(path.join(base, 'extra', 'x'), 'write')).toBe(path.join(base, 'extra', 'x'));
  });

  it('refuses a sibling sharing the prefix with the "outside the workspace" error naming the roots', async () => {
    await mkdir(`${root}-evil`, { recursive: true });
    const err = await ws.resolve(`${root}-evil/x`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PathOutsideWorkspaceError);
    expect((err as Error).message).toContain('is outside the workspace');
    expect((err as Error).message).toContain(root);
  });

  it('turns a symlink loop into a clear error', async () => {
    await symlink(path.join(root, 'loop-b'), path.join(root, 'loop-a'));
    await symlink(path.join(root, 'loop-a'), path.join(root, 'loop-b'));
    await expect(ws.resolve('loop-a/file')).rejects.toThrow(/symbolic link loop/);
  });
});

describe('atomicWriteFile', () => {
  it('creates a new file and reports its stat', async () => {
    const p = path.join(root, 'new.txt');
    const res = await atomicWriteFile(p, 'hello');
    expect(res.created).toBe(true);
    expect(await readFile(p, 'utf8')).toBe('hello');
    expect(res.stat.size).toBe(5n);
  });

  it('replaces an existing file via a temp file and rename (new inode), keeping its mode', async () => {
    const p = path.join(root, 'exist.txt');
    await writeFile(p, 'old');
    await chmod(p, 0o640);
    const before = await stat(p);
    const res = await atomicWriteFile(p, 'new content');
    expect(res.created).toBe(false);
    const after = await stat(p);
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o640);
    expect(await readFile(p, 'utf8')).toBe('new content');
    expect((await readdir(root)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('an aborted write leaves the target untouched and cleans up its temp file', async () => {
    const p = path.join(root, 'abort.txt');
    await writeFile(p, 'keep');
    const c = new AbortController();
    c.abort();
    await expect(atomicWriteFile(p, 'lost', { signal: c.signal })).rejects.toThrow(/aborted/);
    expect(await readFile(p, 'utf8')).toBe('keep');
    expect((await readdir(root)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('writes data given in parts in order, more parts than one writev takes (IOV_MAX 1024), empty ones included', async () => {
    const p = path.join(root, 'parts.txt');
    await writeFile(p, 'old');
    const big = Buffer.alloc(3 * 1024 * 1024, 'b');
    const parts = [big.subarray(0, 1024 * 1024), Buffer.alloc(0)];
    for (let i = 0; i < 3000; i++) parts.push(Buffer.from(`${i},`));
    parts.push(big.subarray(1024 * 1024), Buffer.alloc(0));
    const res = await atomicWriteFile(p, parts);
    const expected = Buffer.concat(parts);
    expect(res.stat.size).toBe(BigInt(expected.length));
    expect(bytesDiffer(await readFile(p), expected)).toBe('same bytes');
    await atomicWriteFile(p, []);
    expect((await readFile(p)).length).toBe(0);
  });

  it('refuses a directory target', async () => {
    await mkdir(path.join(root, 'adir'));
    await expect(atomicWriteFile(path.join(root, 'adir'), 'x')).rejects.toThrow(/is a directory/);
  });
});

describe('withFileLock', () => {
  it('serialises calls for one file in call order, and does not block other files', async () => {
    const events: string[] = [];
    let releaseFirst!: () => void;
    const gate = new Promise<void>((r) => (releaseFirst = r));
    const a1 = withFileLock('/x/a', async () => {
      events.push('a1 start');
      await gate;
      events.push('a1 end');
    });
    const a2 = withFileLock('/x/a', async () => {
      events.push('a2 start');
    });
    const b1 = withFileLock('/x/b', async () => {
      events.push('b1 start');
    });
    await b1;
    expect(events).toEqual(['a1 start', 'b1 start']);
    releaseFirst();
    await Promise.all([a1, a2]);
    expect(events).toEqual(['a1 start', 'b1 start', 'a1 end', 'a2 start']);
    expect(activeFileLocks()).toBe(0);
  });

  it('releases the lock when the holder throws', async () => {
    await expect(
      withFileLock('/x/c', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(withFileLock('/x/c', async () => 'next')).resolves.toBe('next');
  });
});

describe('ReadTracker', () => {
  it('says "not read", then "changed", then passes after a new record', async () => {
    const t = new ReadTracker();
    const p = path.join(root, 'tracked.txt');
    await writeFile(p, 'v1');
    await expect(t.assertFresh('s', p, 'tracked.txt')).rejects.toThrow(
      'File tracked.txt has not been read in this session. Read it first',
    );
    await t.recordNow('s', p);
    await expect(t.assertFresh('s', p)).resolves.toBeUndefined();
    await writeFile(p, 'v2 longer');
    const err = await t.assertFresh('s', p, 'tracked.txt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StaleFileError);
    expect((err as StaleFileError).reason).toBe('changed');
    expect((err as Error).message).toMatch(
      /^File tracked\.txt has changed on disk since it was read \(\d\d:\d\d:\d\d\)\. Read it again before editing\.$/,
    );
    await t.recordNow('s', p);
    await expect(t.assertFresh('s', p)).resolves.toBeUndefined();
    t.forget('s');
    await expect(t.assertFresh('s', p)).rejects.toThrow(/not been read/);
  });

  it(`keeps at most ${MAX_TRACKED_FILES_PER_SESSION} files per session, dropping the oldest`, () => {
    const t = new ReadTracker();
    const stamp = { mtimeNs: 1n, size: 1n, ino: 1n };
    for (let i = 0; i <= MAX_TRACKED_FILES_PER_SESSION; i++) t.record('s', `/f${i}`, stamp);
    expect(t.lastRead('s', '/f0')).toBeUndefined();
    expect(t.lastRead('s', '/f1')).toBeInstanceOf(Date);
    expect(t.lastRead('s', `/f${MAX_TRACKED_FILES_PER_SESSION}`)).toBeInstanceOf(Date);
  });
});
