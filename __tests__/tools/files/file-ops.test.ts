import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { lstat, mkdir, readFile, readdir, readlink, symlink, writeFile, utimes, chmod, unlink } from 'node:fs/promises';
import path from 'node:path';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createRegistry, registerBuiltinTools, type ToolUpdate } from '../../../src/index.js';
import { MAX_DELETE_ENTRIES } from '../../../src/tools/files/delete.js';
import { timeIn } from '../../../src/tools/time/current-time.js';
import { tempDir } from '../../support/helpers.js';
import { callTool } from '../../support/tool-call.js';

let dir: string;
let outside: string;
let cleanup: () => Promise<void>;
let cleanupOutside: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('fileops-'));
  ({ dir: outside, cleanup: cleanupOutside } = await tempDir('fileops-outside-'));
  await writeFile(path.join(outside, 'secret.txt'), 'secret\n');
});
afterEach(async () => {
  await cleanup();
  await cleanupOutside();
});

async function fileTools(onToolResult?: (u: ToolUpdate) => void) {
  const registry = registerBuiltinTools(createRegistry());
  return registry.tools({
    ids: ['read', 'move', 'delete', 'file_info', 'current_time'],
    initCtx: { workspaceRoot: dir },
    onToolResult,
  });
}
const at = (p: string) => path.join(dir, p);
const exists = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );

describe('move', () => {
  it('an agent renames a file into a new directory', async () => {
    await writeFile(at('a.txt'), 'A\n');
    const model = fakeModel()
      .respondWithTools([{ name: 'move', args: { from: 'a.txt', to: 'sub/dir/b.txt' }, id: 'm1' }])
      .respond(new AIMessage('moved'));
    const out = await createAgent({ model, tools: await fileTools() }).invoke({ messages: [new HumanMessage('go')] });
    const tm = out.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(tm.content).toBe('Moved file a.txt to sub/dir/b.txt.');
    expect(await readFile(at('sub/dir/b.txt'), 'utf8')).toBe('A\n');
    expect(await exists(at('a.txt'))).toBe(false);
  });

  it('refuses to replace a file unless overwrite is true and the target was read and is unchanged', async () => {
    const tools = await fileTools();
    await writeFile(at('src.txt'), 'new\n');
    await writeFile(at('dst.txt'), 'old\n');
    expect((await callTool(tools, 'move', { from: 'src.txt', to: 'dst.txt' })).content).toBe(
      'dst.txt already exists. Pass overwrite: true to replace it, or choose another path.',
    );
    expect((await callTool(tools, 'move', { from: 'src.txt', to: 'dst.txt', overwrite: true })).content).toBe(
      'File dst.txt has not been read in this session. Read it first with the read tool, then retry the change.',
    );
    await callTool(tools, 'read', { filePath: 'dst.txt' });
    await utimes(at('dst.txt'), new Date(2001, 1, 1), new Date(2001, 1, 1));
    expect((await callTool(tools, 'move', { from: 'src.txt', to: 'dst.txt', overwrite: true })).content).toMatch(
      /^File dst\.txt has changed on disk since it was read/,
    );
    await callTool(tools, 'read', { filePath: 'dst.txt' });
    const ok = await callTool(tools, 'move', { from: 'src.txt', to: 'dst.txt', overwrite: true });
    expect(ok.content).toBe('Moved file src.txt to dst.txt (replacing the file that was there).');
    expect(await readFile(at('dst.txt'), 'utf8')).toBe('new\n');
  });

  it('refuses a source this session read that changed since', async () => {
    const tools = await fileTools();
    await writeFile(at('s.txt'), 'v1\n');
    await callTool(tools, 'read', { filePath: 's.txt' });
    await writeFile(at('s.txt'), 'v2, longer\n');
    expect((await callTool(tools, 'move', { from: 's.txt', to: 't.txt' })).content).toMatch(
      /^File s\.txt has changed on disk since it was read/,
    );
    expect(await exists(at('s.txt'))).toBe(true);
  });

  it('moves a symlink as a link, and cannot move anything out of or into places outside the workspace', async () => {
    const tools = await fileTools();
    await symlink(path.join(outside, 'secret.txt'), at('link'));
    expect((await callTool(tools, 'move', { from: 'link', to: 'renamed' })).content).toBe(
      'Moved symbolic link link to renamed.',
    );
    expect(await readlink(at('renamed'))).toBe(path.join(outside, 'secret.txt'));
    await mkdir(at('d'));
    await symlink(outside, at('out'));
    for (const args of [
      { from: path.join(outside, 'secret.txt'), to: 'stolen.txt' },
      { from: 'd', to: '../escaped' },
      { from: 'd', to: 'out/d' },
    ]) {
      const res = await callTool(tools, 'move', args);
      expect(res.status).toBe('error');
      expect(res.content).toMatch(/is outside the workspace/);
    }
    expect(await readdir(outside)).toEqual(['secret.txt']);
  });

  it('refuses moving a directory into itself and moving the workspace root', async () => {
    const tools = await fileTools();
    await mkdir(at('d'));
    expect((await callTool(tools, 'move', { from: 'd', to: 'd/inner' })).content).toBe(
      'Cannot move d into itself (d/inner). Choose a destination outside it.',
    );
    expect((await callTool(tools, 'move', { from: '.', to: 'x' })).content).toBe(
      '. is a workspace root; it cannot be moved or replaced.',
    );
  });
});

describe('delete', () => {
  it('deletes a file; a directory only with recursive: true, saying how many entries it holds', async () => {
    const tools = await fileTools();
    await writeFile(at('f.txt'), 'x');
    expect((await callTool(tools, 'delete', { path: 'f.txt' })).content).toBe('Deleted file f.txt (1 bytes).');
    await mkdir(at('d/e'), { recursive: true });
    await writeFile(at('d/e/1.txt'), '1');
    await writeFile(at('d/2.txt'), '2');
    const refused = await callTool(tools, 'delete', { path: 'd' });
    expect(refused.content).toBe(
      'd is a directory with 3 entries. Pass recursive: true to delete it and everything in it, or give the path of a file.',
    );
    expect(await exists(at('d/e/1.txt'))).toBe(true);
    const done = await callTool(tools, 'delete', { path: 'd', recursive: true });
    expect(done.content).toBe('Deleted directory d and the 3 entries in it.');
    expect(done.result.metadata).toMatchObject({ danger: 'dangerous', entries: 4 });
    expect(await readdir(dir)).toEqual([]);
  });

  it('deletes a symlink, never its target, and a recursive delete does not follow links inside the tree', async () => {
    const tools = await fileTools();
    await symlink(path.join(outside, 'secret.txt'), at('link'));
    await mkdir(at('tree'));
    await symlink(outside, at('tree/out'));
    expect((await callTool(tools, 'delete', { path: 'link' })).content).toBe('Deleted symbolic link link.');
    expect((await callTool(tools, 'delete', { path: 'tree', recursive: true })).status).toBe('success');
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
    const res = await callTool(tools, 'delete', { path: path.join(outside, 'secret.txt') });
    expect(res.content).toMatch(/is outside the workspace/);
    const through = await callTool(tools, 'delete', { path: 'tree2/../../' + path.basename(outside) + '/secret.txt' });
    expect(through.content).toMatch(/is outside the workspace/);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
  });

  it('refuses a file the session read that changed since, and the workspace root', async () => {
    const tools = await fileTools();
    await writeFile(at('r.txt'), 'v1\n');
    await callTool(tools, 'read', { filePath: 'r.txt' });
    await writeFile(at('r.txt'), 'v2, changed\n');
    expect((await callTool(tools, 'delete', { path: 'r.txt' })).content).toMatch(
      /has changed on disk since it was read/,
    );
    expect((await callTool(tools, 'delete', { path: '.', recursive: true })).content).toBe(
      '. is a workspace root; it cannot be deleted.',
    );
    expect((await callTool(tools, 'delete', { path: 'missing.txt' })).content).toBe(
      'missing.txt does not exist; nothing was deleted. Check the path with list or glob.',
    );
  });

  it(`removes a tree of exactly MAX_DELETE_ENTRIES (${MAX_DELETE_ENTRIES}) entries with progress, refuses one more untouched`, async () => {
    const updates: ToolUpdate[] = [];
    const tools = await fileTools((u) => updates.push(u));
    const fill = async (d: string, n: number) => {
      await mkdir(at(d));
      for (let i = 0; i < n; i += 500) {
        await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, k) => writeFile(at(`${d}/${i + k}`), '')));
      }
    };
    await fill('big', MAX_DELETE_ENTRIES + 1);
    const refused = await callTool(tools, 'delete', { path: 'big', recursive: true });
    expect(refused.content).toBe(
      `big holds more than ${MAX_DELETE_ENTRIES} entries, the most one delete removes; nothing was deleted. Delete its subdirectories one at a time, or ask the user to remove it.`,
    );
    expect((await readdir(at('big'))).length).toBe(MAX_DELETE_ENTRIES + 1);
    await unlink(at('big/0'));
    const ok = await callTool(tools, 'delete', { path: 'big', recursive: true });
    expect(ok.content).toBe(`Deleted directory big and the ${MAX_DELETE_ENTRIES} entries in it.`);
    const progress = updates.filter((u) => u.status === 'running' && u.toolId === 'delete');
    expect(progress).toHaveLength(MAX_DELETE_ENTRIES / 500);
    expect(progress[progress.length - 1].result.metadata).toMatchObject({ removed: MAX_DELETE_ENTRIES });
  }, 60_000);
});

describe('file_info', () => {
  it('reports type, size, mtime, mode and line count of a text file; a missing path exists: false', async () => {
    const tools = await fileTools();
    await writeFile(at('t.txt'), 'a\nb\nc');
    await chmod(at('t.txt'), 0o640);
    await utimes(at('t.txt'), new Date('2020-01-02T03:04:05Z'), new Date('2020-01-02T03:04:05Z'));
    const res = await callTool(tools, 'file_info', { path: 't.txt' });
    expect(res.content).toBe('t.txt: file, 5 bytes, modified 2020-01-02T03:04:05.000Z, mode 640, 3 lines.');
    expect(res.result.metadata).toMatchObject({ exists: true, type: 'file', size: 5, lines: 3, binary: false });
    const missing = await callTool(tools, 'file_info', { path: 'nope' });
    expect(missing.content).toBe('nope does not exist.');
    expect(missing.result.metadata).toMatchObject({ exists: false });
  });

  it('binary files, directories and symlinks (target named only when inside)', async () => {
    const tools = await fileTools();
    await writeFile(at('b.bin'), Buffer.from([0, 1, 2, 3]));
    await mkdir(at('d'));
    await writeFile(at('d/x'), '');
    await symlink('d/x', at('in-link'));
    await symlink(path.join(outside, 'secret.txt'), at('out-link'));
    expect((await callTool(tools, 'file_info', { path: 'b.bin' })).result.metadata).toMatchObject({
      binary: true,
      lines: null,
    });
    expect((await callTool(tools, 'file_info', { path: 'd' })).result.metadata).toMatchObject({
      type: 'directory',
      entries: 1,
    });
    expect((await callTool(tools, 'file_info', { path: 'in-link' })).result.metadata).toMatchObject({
      type: 'symlink',
      target: 'd/x',
    });
    const out = await callTool(tools, 'file_info', { path: 'out-link' });
    expect(out.content).toMatch(/symlink, .*target outside the workspace or missing\.$/);
    expect(out.content).not.toContain(outside);
    expect((await callTool(tools, 'file_info', { path: path.join(outside, 'secret.txt') })).content).toMatch(
      /is outside the workspace/,
    );
  });
});

describe('current_time', () => {
  it('answers in UTC by default and in a named IANA zone with its offset', async () => {
    const tools = await fileTools();
    const utc = await callTool(tools, 'current_time', {});
    expect(utc.result.metadata).toMatchObject({ timezone: 'UTC', offset: '+00:00' });
    expect(Math.abs(Date.parse(utc.result.metadata.iso as string) - Date.now())).toBeLessThan(60_000);
    const kolkata = await callTool(tools, 'current_time', { timezone: 'Asia/Kolkata' });
    expect(kolkata.result.metadata).toMatchObject({ timezone: 'Asia/Kolkata', offset: '+05:30' });
    expect(kolkata.content).toMatch(/^\w+day \d{4}-\d\d-\d\d \d\d:\d\d:\d\d Asia\/Kolkata \(UTC\+05:30\); ISO /);
  });

  it('computes wall clock and offset for a fixed instant, across a DST change', () => {
    expect(timeIn(new Date('2024-07-01T12:00:00Z'), 'America/New_York')).toMatchObject({
      local: '2024-07-01 08:00:00',
      offset: '-04:00',
      weekday: 'Monday',
    });
    expect(timeIn(new Date('2024-01-01T12:00:00Z'), 'America/New_York')).toMatchObject({ offset: '-05:00' });
  });

  it('a bad zone is an error naming it', async () => {
    const tools = await fileTools();
    const res = await callTool(tools, 'current_time', { timezone: 'Mars/Olympus_Mons' });
    expect(res.status).toBe('error');
    expect(res.content).toBe(
      'Unknown time zone "Mars/Olympus_Mons". Use an IANA name like "Europe/Berlin", "America/New_York" or "Asia/Tokyo", or omit timezone for UTC.',
    );
  });
});

describe('permissions', () => {
  it('move and delete need write, file_info read, current_time nothing', () => {
    const registry = registerBuiltinTools(createRegistry());
    expect(registry.enabled(['read'])).toEqual(expect.arrayContaining(['file_info', 'current_time']));
    expect(registry.enabled(['read'])).not.toEqual(expect.arrayContaining(['move']));
    expect(registry.enabled(['read'])).not.toEqual(expect.arrayContaining(['delete']));
    expect(registry.enabled(['write'])).toEqual(expect.arrayContaining(['move', 'delete', 'current_time']));
  });
});
