/** undo_file and undo_turn through the LangChain adapter: what they restore, when they refuse, their limits and isolation. */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import { MAX_UNDO_BYTES, MAX_UNDO_RECORDS } from '../../../src/constants.js';
import { callTool } from '../../support/tool-call.js';
import { tempDir } from '../../support/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
let tools: StructuredToolInterface[];
let registry: ReturnType<typeof createRegistry>;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('undo-'));
  registry = registerBuiltinTools(createRegistry());
  tools = await registry.tools({ initCtx: { workspaceRoot: dir } });
});
afterEach(() => cleanup());

const file = (name: string) => path.join(dir, name);
const text = (name: string) => fs.readFile(file(name), 'utf8');
const exists = (name: string) =>
  fs.lstat(file(name)).then(
    () => true,
    () => false,
  );

describe('undo_file', () => {
  it('puts back what write and edit changed, one change per call, and removes a file a write created', async () => {
    await fs.writeFile(file('a.txt'), 'one\n', { mode: 0o640 });
    await callTool(tools, 'read', { filePath: 'a.txt' });
    expect((await callTool(tools, 'write', { filePath: 'a.txt', content: 'two\n' })).status).toBe('success');
    expect((await callTool(tools, 'edit', { filePath: 'a.txt', oldString: 'two', newString: 'three' })).status).toBe(
      'success',
    );
    await callTool(tools, 'write', { filePath: 'new.txt', content: 'fresh' }, 'call_new');

    const first = await callTool(tools, 'undo_file', { path: 'a.txt' });
    expect(first.content).toMatch(/^Undid the edit of a\.txt \(call call_\d+\): restored a\.txt \(4 bytes\)\.$/);
    expect(await text('a.txt')).toBe('two\n');
    const second = await callTool(tools, 'undo_file', { path: 'a.txt' });
    expect(second.content).toMatch(/^Undid the write of a\.txt/);
    expect(await text('a.txt')).toBe('one\n');
    expect((await fs.stat(file('a.txt'))).mode & 0o777).toBe(0o640);
    const third = await callTool(tools, 'undo_file', { path: 'a.txt' });
    expect(third.status).toBe('error');
    expect(third.content).toBe(
      `No change to a.txt is recorded for undo (undo remembers the last ${MAX_UNDO_RECORDS} changes made by write, edit, move and delete in this session, up to ${MAX_UNDO_BYTES} bytes of earlier content; changes made through bash are not recorded). Nothing was undone.`,
    );

    const created = await callTool(tools, 'undo_file', { path: 'new.txt' });
    expect(created.content).toBe(
      'Undid the write of new.txt (call call_new): removed new.txt (the change had created it).',
    );
    expect(await exists('new.txt')).toBe(false);
  });

  it('keeps bytes exactly (CRLF, BOM, bytes that are not UTF-8)', async () => {
    const original = Buffer.concat([Buffer.from('\uFEFFa\r\nb\r\n'), Buffer.from([0xff, 0xfe, 0x0a])]);
    await fs.writeFile(file('raw.txt'), original);
    await callTool(tools, 'read', { filePath: 'raw.txt' });
    expect((await callTool(tools, 'edit', { filePath: 'raw.txt', oldString: 'b', newString: 'B' })).status).toBe(
      'success',
    );
    await callTool(tools, 'undo_file', { path: 'raw.txt' });
    expect(await fs.readFile(file('raw.txt'))).toEqual(original);
  });

  it('refuses, changing nothing, when the file changed since the change', async () => {
    await callTool(tools, 'write', { filePath: 'a.txt', content: 'mine' }, 'call_w');
    await fs.writeFile(file('a.txt'), 'theirs!');
    const res = await callTool(tools, 'undo_file', { path: 'a.txt' });
    expect(res.status).toBe('error');
    expect(res.content).toBe(
      'a.txt changed since the write of a.txt (call call_w): it now holds 7 bytes, not what that change left. Nothing was undone; read the file and make the change you want with edit or write instead.',
    );
    expect(await text('a.txt')).toBe('theirs!');
    // A deleted file counts as changed too.
    await callTool(tools, 'write', { filePath: 'b.txt', content: 'x' });
    await fs.rm(file('b.txt'));
    expect((await callTool(tools, 'undo_file', { path: 'b.txt' })).content).toMatch(
      /^b\.txt changed since the write of b\.txt .*: it no longer exists/,
    );
  });

  it('refuses when an edited file was rewritten with the same size and its mtime put back (the fingerprint is a hash)', async () => {
    await fs.writeFile(file('a.txt'), 'head\nvalue = 1;\ntail\n');
    await callTool(tools, 'read', { filePath: 'a.txt' });
    await callTool(tools, 'edit', { filePath: 'a.txt', oldString: 'value = 1;', newString: 'value = 2;' }, 'call_e');
    const edited = await fs.stat(file('a.txt'));
    await fs.writeFile(file('a.txt'), 'head\nvalue = 3;\ntail\n');
    await fs.utimes(file('a.txt'), edited.atime, edited.mtime);
    const res = await callTool(tools, 'undo_file', { path: 'a.txt' });
    expect(res.content).toBe(
      'a.txt changed since the edit of a.txt (call call_e): it now holds 21 bytes, not what that change left. Nothing was undone; read the file and make the change you want with edit or write instead.',
    );
    expect(await text('a.txt')).toBe('head\nvalue = 3;\ntail\n');
  });

  // An edit's fingerprint is hashed when undo compares it, or at once past 64 parts (31 and 32
  // replacements make 63 and 65) or 64 KiB of new text: the same answers either way.
  it.each([
    { name: '31 replacements', count: 31, newString: 'y' },
    { name: '32 replacements', count: 32, newString: 'y' },
    { name: 'new text of 64 KiB', count: 1, newString: 'y'.repeat(64 * 1024) },
    { name: 'new text of 64 KiB + 1', count: 1, newString: 'y'.repeat(64 * 1024 + 1) },
  ])('undoes an edit with $name exactly, and refuses after a same-size rewrite', async ({ count, newString }) => {
    const original = Array.from({ length: count }, (_, i) => `${i}:x\n`).join('');
    await fs.writeFile(file('m.txt'), original);
    await callTool(tools, 'read', { filePath: 'm.txt' });
    const edit = { filePath: 'm.txt', oldString: 'x', newString, replaceAll: true };
    expect((await callTool(tools, 'edit', edit)).content).toMatch(/^Edited m\.txt: /);
    expect((await callTool(tools, 'undo_file', { path: 'm.txt' })).status).toBe('success');
    expect(await fs.readFile(file('m.txt'))).toEqual(Buffer.from(original));

    await callTool(tools, 'edit', edit);
    const changed = await fs.readFile(file('m.txt'));
    changed[0] = changed[0] === 0x7a ? 0x79 : 0x7a;
    await fs.writeFile(file('m.txt'), changed);
    expect((await callTool(tools, 'undo_file', { path: 'm.txt' })).content).toMatch(/^m\.txt changed since the edit/);
    expect(await fs.readFile(file('m.txt'))).toEqual(changed);
  });

  it('moves a moved file or directory back, restoring a file the move replaced', async () => {
    await fs.writeFile(file('src.txt'), 'moved');
    await fs.writeFile(file('dst.txt'), 'replaced');
    await callTool(tools, 'read', { filePath: 'dst.txt' });
    expect((await callTool(tools, 'move', { from: 'src.txt', to: 'dst.txt', overwrite: true })).status).toBe('success');
    const res = await callTool(tools, 'undo_file', { path: 'src.txt' });
    expect(res.content).toMatch(/moved dst\.txt back to src\.txt and restored the dst\.txt it replaced\.$/);
    expect(await text('src.txt')).toBe('moved');
    expect(await text('dst.txt')).toBe('replaced');

    await fs.mkdir(file('d/e'), { recursive: true });
    await fs.writeFile(file('d/e/f.txt'), 'deep');
    await callTool(tools, 'move', { from: 'd', to: 'moved-d' });
    expect((await callTool(tools, 'undo_file', { path: 'moved-d' })).status).toBe('success');
    expect(await text('d/e/f.txt')).toBe('deep');
    expect(await exists('moved-d')).toBe(false);
  });

  it('restores what delete removed: a file, a symbolic link, a whole directory', async () => {
    await fs.writeFile(file('gone.txt'), 'keep me', { mode: 0o600 });
    await callTool(tools, 'delete', { path: 'gone.txt' });
    expect((await callTool(tools, 'undo_file', { path: 'gone.txt' })).content).toMatch(
      /^Undid the delete of gone\.txt \(call .*\): restored gone\.txt \(7 bytes\)\.$/,
    );
    expect(await text('gone.txt')).toBe('keep me');
    expect((await fs.stat(file('gone.txt'))).mode & 0o777).toBe(0o600);

    await fs.symlink('gone.txt', file('link'));
    await callTool(tools, 'delete', { path: 'link' });
    await callTool(tools, 'undo_file', { path: 'link' });
    expect(await fs.readlink(file('link'))).toBe('gone.txt');

    await fs.mkdir(file('tree/sub'), { recursive: true });
    await fs.writeFile(file('tree/sub/x.txt'), 'x');
    await fs.writeFile(file('tree/y.txt'), 'y');
    await fs.symlink('y.txt', file('tree/ly'));
    await callTool(tools, 'delete', { path: 'tree', recursive: true });
    expect(await exists('tree')).toBe(false);
    expect((await callTool(tools, 'undo_file', { path: 'tree' })).content).toMatch(
      /restored the directory tree and the 4 entries in it\.$/,
    );
    expect(await text('tree/sub/x.txt')).toBe('x');
    expect(await fs.readlink(file('tree/ly'))).toBe('y.txt');
  });

  it(`keeps a delete of exactly MAX_UNDO_BYTES (${MAX_UNDO_BYTES}) bytes undoable, and says why one byte more is not`, async () => {
    await fs.writeFile(file('at.bin'), Buffer.alloc(MAX_UNDO_BYTES, 1));
    await callTool(tools, 'delete', { path: 'at.bin' });
    expect((await callTool(tools, 'undo_file', { path: 'at.bin' })).status).toBe('success');
    expect((await fs.stat(file('at.bin'))).size).toBe(MAX_UNDO_BYTES);
    await fs.rm(file('at.bin'));

    await fs.writeFile(file('past.bin'), Buffer.alloc(MAX_UNDO_BYTES + 1, 1));
    await callTool(tools, 'delete', { path: 'past.bin' }, 'call_big');
    const res = await callTool(tools, 'undo_file', { path: 'past.bin' });
    expect(res.content).toBe(
      `The delete of past.bin (call call_big) cannot be undone: what it removed held more than the ${MAX_UNDO_BYTES} bytes undo keeps. Nothing was undone; restore it another way (e.g. from version control).`,
    );
  });

  it(`remembers the last MAX_UNDO_RECORDS (${MAX_UNDO_RECORDS}) changes of a registry and forgets older ones`, async () => {
    for (let i = 0; i <= MAX_UNDO_RECORDS; i++) await callTool(tools, 'write', { filePath: `f${i}.txt`, content: 'x' });
    expect((await callTool(tools, 'undo_file', { path: 'f0.txt' })).content).toMatch(/^No change to f0\.txt/);
    expect((await callTool(tools, 'undo_file', { path: 'f1.txt' })).status).toBe('success');
    expect(await exists('f1.txt')).toBe(false);
  });

  it('belongs to its registry and session: another registry or tool set cannot undo it', async () => {
    await callTool(tools, 'write', { filePath: 'a.txt', content: 'x' });
    const other = await registerBuiltinTools(createRegistry()).tools({ initCtx: { workspaceRoot: dir } });
    expect((await callTool(other, 'undo_file', { path: 'a.txt' })).content).toMatch(/^No change to a\.txt/);
    const otherSession = await registry.tools({ initCtx: { workspaceRoot: dir } });
    expect((await callTool(otherSession, 'undo_turn', {})).content).toMatch(/^No earlier turn of this session/);
    expect(await text('a.txt')).toBe('x');
  });

  it('refuses when a path now leads through a symbolic link planted since', async () => {
    const outside = await tempDir('undo-outside-');
    try {
      await callTool(tools, 'write', { filePath: 'sub/a.txt', content: 'x' });
      await fs.rm(file('sub'), { recursive: true });
      await fs.symlink(outside.dir, file('sub'));
      await fs.writeFile(path.join(outside.dir, 'a.txt'), 'x');
      const res = await callTool(tools, 'undo_turn', {});
      expect(res.status).toBe('error');
      expect(res.content).toMatch(/outside|resolves to another place/);
      expect(await fs.readFile(path.join(outside.dir, 'a.txt'), 'utf8')).toBe('x');
    } finally {
      await outside.cleanup();
    }
  });
});

describe('undo_turn', () => {
  it('in a createAgent loop, undoes the previous turn (parallel calls of one AIMessage), newest first, then the one before', async () => {
    await fs.writeFile(file('a.txt'), 'a0');
    const model = fakeModel()
      .respondWithTools([{ name: 'read', args: { filePath: 'a.txt' }, id: 'r1' }])
      .respondWithTools([
        { name: 'write', args: { filePath: 'a.txt', content: 'a1' }, id: 't1a' },
        { name: 'write', args: { filePath: 'b.txt', content: 'b1' }, id: 't1b' },
      ])
      .respondWithTools([{ name: 'edit', args: { filePath: 'a.txt', oldString: 'a1', newString: 'a2' }, id: 't2' }])
      .respondWithTools([{ name: 'undo_turn', args: {}, id: 'u1' }])
      .respondWithTools([{ name: 'undo_turn', args: {}, id: 'u2' }])
      .respond(new AIMessage('done'));
    const agent = createAgent({ model, tools });
    const out = await agent.invoke({ messages: [new HumanMessage('go')] });
    const reply = (id: string) =>
      out.messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === id)!;
    expect(reply('u1').content).toBe(
      'Undid 1 change of the previous turn, newest first:\n- edit of a.txt (call t2): restored a.txt (2 bytes).',
    );
    const second = String(reply('u2').content).split('\n');
    expect(second[0]).toBe('Undid 2 changes of the previous turn, newest first:');
    expect(second.slice(1).sort()).toEqual([
      '- write of a.txt (call t1a): restored a.txt (2 bytes).',
      '- write of b.txt (call t1b): removed b.txt (the change had created it).',
    ]);
    expect(await text('a.txt')).toBe('a0');
    expect(await exists('b.txt')).toBe(false);
  });

  it('undoes many concurrent writes and same-file edits of one turn, all of them, in the reverse of the order they landed', async () => {
    const inTurn = (turn: string) =>
      registry.tools({ initCtx: { workspaceRoot: dir }, createContext: () => ({ sessionID: 'c', messageID: turn }) });
    const turn1 = await inTurn('turn-1');
    await fs.writeFile(file('log.txt'), 'END');
    await callTool(turn1, 'read', { filePath: 'log.txt' });
    const results = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => callTool(turn1, 'write', { filePath: `w${i}.txt`, content: `${i}` })),
      ...Array.from({ length: 10 }, (_, i) =>
        callTool(turn1, 'edit', { filePath: 'log.txt', oldString: 'END', newString: `${i}-END` }),
      ),
    ]);
    expect(results.filter((r) => r.status !== 'success').map((r) => r.content)).toEqual([]);
    expect((await text('log.txt')).split('-')).toHaveLength(11);
    // Within turn-1 there is no earlier turn to undo.
    expect((await callTool(turn1, 'undo_turn', {})).content).toMatch(/^No earlier turn of this session changed files/);
    const undone = await callTool(await inTurn('turn-2'), 'undo_turn', {});
    expect(undone.status).toBe('success');
    expect(String(undone.content).split('\n')[0]).toBe('Undid 20 changes of the previous turn, newest first:');
    expect(await text('log.txt')).toBe('END');
    for (let i = 0; i < 10; i++) expect(await exists(`w${i}.txt`)).toBe(false);
  });

  it('is all or nothing: one file changed since makes it undo nothing', async () => {
    const turn = await registry.tools({
      initCtx: { workspaceRoot: dir },
      createContext: () => ({ sessionID: 's', messageID: 't1' }),
    });
    await callTool(turn, 'write', { filePath: 'a.txt', content: 'a' });
    await callTool(turn, 'write', { filePath: 'b.txt', content: 'b' }, 'call_b');
    await fs.writeFile(file('b.txt'), 'changed');
    const next = await registry.tools({
      initCtx: { workspaceRoot: dir },
      createContext: () => ({ sessionID: 's', messageID: 't2' }),
    });
    const res = await callTool(next, 'undo_turn', {});
    expect(res.content).toMatch(/^b\.txt changed since the write of b\.txt \(call call_b\)/);
    expect(await text('a.txt')).toBe('a');
  });
});
