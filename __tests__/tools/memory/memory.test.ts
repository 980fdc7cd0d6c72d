import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdir, readFile, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createRegistry, registerBuiltinTools, type ToolUpdate } from '../../../src/index.js';
import {
  MAX_MEMORY_FILE_BYTES,
  MAX_MEMORY_LIST_ENTRIES,
  MAX_SUMMARY_CHARS,
  MEMORY_READ_ONLY_TOOLS,
  MEMORY_TOOLS,
} from '../../../src/tools/memory/store.js';
import { DEFAULT_MAX_BYTES } from '../../../src/constants.js';
import { tempDir } from '../../support/helpers.js';
import { callTool } from '../../support/tool-call.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('memory-'));
});
afterEach(() => cleanup());

async function memoryTools(initCtx: Record<string, unknown> = {}, onToolResult?: (u: ToolUpdate) => void) {
  const registry = registerBuiltinTools(createRegistry());
  return registry.tools({ ids: [...MEMORY_TOOLS], initCtx: { workspaceRoot: dir, ...initCtx }, onToolResult });
}
const note = (rel: string) => readFile(path.join(dir, '.agent-memory', rel), 'utf8');

describe('memory tools in an agent loop', () => {
  it('an agent appends with a summary, lists and reads its notes back, in .agent-memory of the workspace', async () => {
    const tools = await memoryTools();
    const model = fakeModel()
      .respondWithTools([
        {
          name: 'memory_append',
          args: { path: 'project.md', entry: '- tests run with npm test', summary: 'How this project is built' },
          id: 'a1',
        },
      ])
      .respondWithTools([{ name: 'memory_list', args: {}, id: 'l1' }])
      .respondWithTools([{ name: 'memory_read', args: { path: 'project.md' }, id: 'r1' }])
      .respond(new AIMessage('remembered'));
    const agent = createAgent({ model, tools });
    const out = await agent.invoke({ messages: [new HumanMessage('remember how to test')] });
    const byId = (id: string) =>
      out.messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === id)!;
    expect(byId('a1').status).toBe('success');
    expect(byId('a1').content).toBe('Created project.md (64 bytes now); summary: How this project is built.');
    expect(await note('project.md')).toBe('> Summary: How this project is built\n\n- tests run with npm test\n');
    expect(JSON.parse(byId('l1').text)).toEqual([
      { path: 'project.md', summary: 'How this project is built', size: 64 },
    ]);
    expect(byId('r1').content).toBe('> Summary: How this project is built\n\n- tests run with npm test\n');
  });
});

describe('memory_append', () => {
  it('appends on a new line and replaces the existing summary line instead of adding a second', async () => {
    const tools = await memoryTools();
    await callTool(tools, 'memory_write', { path: 'n.md', content: '# Notes\n> Summary: old\n\nfirst' });
    const res = await callTool(tools, 'memory_append', { path: 'n.md', entry: 'second', summary: 'new\nsummary' });
    expect(res.status).toBe('success');
    expect(await note('n.md')).toBe('# Notes\n> Summary: new summary\n\nfirst\nsecond\n');
    expect(res.result.metadata).toMatchObject({ created: false, summary: 'new summary' });
  });

  it('caps the summary at MAX_SUMMARY_CHARS characters', async () => {
    const tools = await memoryTools();
    await callTool(tools, 'memory_append', { path: 's.md', entry: 'x', summary: 'y'.repeat(MAX_SUMMARY_CHARS + 50) });
    const summary = /^> Summary: (.*)$/m.exec(await note('s.md'))![1];
    expect(summary).toHaveLength(MAX_SUMMARY_CHARS);
    expect(summary.endsWith('...')).toBe(true);
  });

  it('two agents appending to one note at the same time both land, every entry once', async () => {
    const a = await memoryTools();
    const b = await memoryTools();
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      calls.push(callTool(a, 'memory_append', { path: 'shared.md', entry: `- a${i}` }));
      calls.push(callTool(b, 'memory_append', { path: 'shared.md', entry: `- b${i}` }));
    }
    const results = (await Promise.all(calls)) as ToolMessage[];
    expect(results.filter((r) => r.status !== 'success')).toEqual([]);
    const lines = (await note('shared.md')).trimEnd().split('\n');
    expect(lines).toHaveLength(80);
    expect(new Set(lines).size).toBe(80);
    for (let i = 0; i < 40; i++) expect(lines).toEqual(expect.arrayContaining([`- a${i}`, `- b${i}`]));
    expect((await readdir(path.join(dir, '.agent-memory'))).filter((f) => f !== 'shared.md')).toEqual([]);
  });
});

describe('memory_patch', () => {
  it('replaces exactly one occurrence', async () => {
    const tools = await memoryTools();
    await callTool(tools, 'memory_write', { path: 'p.md', content: 'alpha\nbeta\ngamma\n' });
    const res = await callTool(tools, 'memory_patch', { path: 'p.md', old_str: 'beta', new_str: 'BETA' });
    expect(res.content).toBe('Patched p.md at line 2 (17 bytes now).');
    expect(await note('p.md')).toBe('alpha\nBETA\ngamma\n');
  });

  it('refuses an ambiguous old_str, saying how many times it occurs and to add context', async () => {
    const tools = await memoryTools();
    await callTool(tools, 'memory_write', { path: 'p.md', content: 'x = 1\nx = 1\nx = 1\n' });
    const res = await callTool(tools, 'memory_patch', { path: 'p.md', old_str: 'x = 1', new_str: 'x = 2' });
    expect(res.status).toBe('error');
    expect(res.content).toBe(
      'old_str occurs 3 times in p.md; it must occur exactly once. Add surrounding text to old_str so it matches only the passage you mean.',
    );
    expect(await note('p.md')).toBe('x = 1\nx = 1\nx = 1\n');
  });

  it('a missing passage or note is an error that says what to do', async () => {
    const tools = await memoryTools();
    await callTool(tools, 'memory_write', { path: 'p.md', content: 'abc' });
    const missing = await callTool(tools, 'memory_patch', { path: 'p.md', old_str: 'zzz', new_str: 'y' });
    expect(missing.content).toMatch(/^old_str was not found in p\.md\. Read the note with memory_read/);
    const noNote = await callTool(tools, 'memory_patch', { path: 'nope.md', old_str: 'a', new_str: 'b' });
    expect(noNote.content).toBe(
      'Memory note nope.md does not exist. Call memory_list to see the notes, or create it with memory_write.',
    );
  });
});

describe('memory sandbox', () => {
  it('refuses paths that leave the memory root, lexically or through a symlink, for reads and writes', async () => {
    const tools = await memoryTools();
    const outside = path.join(dir, 'outside');
    await mkdir(outside);
    await writeFile(path.join(outside, 'secret.md'), 'secret');
    await mkdir(path.join(dir, '.agent-memory'));
    await symlink(outside, path.join(dir, '.agent-memory', 'link'));
    await symlink(path.join(outside, 'secret.md'), path.join(dir, '.agent-memory', 'file-link.md'));
    const attempts: Array<[string, Record<string, unknown>]> = [
      ['memory_read', { path: '../outside/secret.md' }],
      ['memory_read', { path: path.join(outside, 'secret.md') }],
      ['memory_read', { path: 'link/secret.md' }],
      ['memory_read', { path: 'file-link.md' }],
      ['memory_write', { path: 'link/new.md', content: 'x' }],
      ['memory_write', { path: 'file-link.md', content: 'x' }],
      ['memory_append', { path: '../escape.md', entry: 'x' }],
      ['memory_patch', { path: 'link/secret.md', old_str: 'secret', new_str: 'gone' }],
    ];
    for (const [name, args] of attempts) {
      const res = await callTool(tools, name, args);
      expect([name, res.status]).toEqual([name, 'error']);
      expect(res.content).toMatch(/is outside the memory directory .*\.agent-memory\. Use a path relative to it/);
    }
    expect(await readFile(path.join(outside, 'secret.md'), 'utf8')).toBe('secret');
    expect(await readdir(outside)).toEqual(['secret.md']);
    // Links that stay outside are not listed either.
    const list = await callTool(tools, 'memory_list', {});
    expect(list.content).toBe('No memory notes under ..');
  });

  it('a default memory root that is a symlink out of the workspace is refused', async () => {
    const { dir: elsewhere, cleanup: c2 } = await tempDir('memory-elsewhere-');
    try {
      await symlink(elsewhere, path.join(dir, '.agent-memory'));
      const registry = registerBuiltinTools(createRegistry());
      const res = await registry.execute('memory_list', {}, {}, { workspaceRoot: dir });
      expect(res.status).toBe('error');
      expect(res.error).toMatch(/could not be initialised: Path .*\.agent-memory.* is outside the workspace/);
    } finally {
      await c2();
    }
  });

  describe('a memory root swapped for a link after init is refused by every memory tool, the decoy untouched', () => {
    const calls: Array<[string, Record<string, unknown>]> = [
      ['memory_list', {}],
      ['memory_read', { path: 'secret.md' }],
      ['memory_write', { path: 'planted.md', content: 'x' }],
      ['memory_patch', { path: 'secret.md', old_str: 'secret', new_str: 'gone' }],
      ['memory_append', { path: 'secret.md', entry: 'x' }],
    ];
    async function expectAllRefused(tools: Awaited<ReturnType<typeof memoryTools>>, decoy: string) {
      for (const [name, args] of calls) {
        const res = await callTool(tools, name, args);
        expect([name, res.status]).toEqual([name, 'error']);
        expect(res.content).toMatch(
          /^The memory directory .* is no longer the directory the memory tools started with \(.*\): it or a directory above it was moved or replaced by a link/,
        );
      }
      expect((await readdir(decoy)).sort()).toEqual(['secret.md']);
      expect(await readFile(path.join(decoy, 'secret.md'), 'utf8')).toBe('secret');
    }
    let decoy: string;
    let decoyCleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ dir: decoy, cleanup: decoyCleanup } = await tempDir('memory-decoy-'));
      await writeFile(path.join(decoy, 'secret.md'), 'secret');
    });
    afterEach(() => decoyCleanup());

    it('the root itself, after the tools were used', async () => {
      const tools = await memoryTools();
      expect((await callTool(tools, 'memory_write', { path: 'mine.md', content: 'mine' })).status).toBe('success');
      await rename(path.join(dir, '.agent-memory'), path.join(dir, 'moved'));
      await symlink(decoy, path.join(dir, '.agent-memory'));
      await expectAllRefused(tools, decoy);
    });

    it('a parent of a configured root, before the first use', async () => {
      await mkdir(path.join(dir, 'state'));
      const tools = await memoryTools({ memoryRoot: 'state/mem' });
      await rename(path.join(dir, 'state'), path.join(dir, 'moved'));
      await mkdir(path.join(decoy, 'mem'));
      await writeFile(path.join(decoy, 'mem', 'secret.md'), 'secret');
      await symlink(decoy, path.join(dir, 'state'));
      await expectAllRefused(tools, path.join(decoy, 'mem'));
      expect(await readdir(decoy)).toEqual(['mem', 'secret.md']);
    });

    it('a parent of an absolute root inside the workspace, after use', async () => {
      const tools = await memoryTools({ memoryRoot: path.join(dir, 'abs', 'mem') });
      expect((await callTool(tools, 'memory_write', { path: 'mine.md', content: 'mine' })).status).toBe('success');
      await rename(path.join(dir, 'abs'), path.join(dir, 'moved'));
      await mkdir(path.join(decoy, 'mem'));
      await writeFile(path.join(decoy, 'mem', 'secret.md'), 'secret');
      await symlink(decoy, path.join(dir, 'abs'));
      await expectAllRefused(tools, path.join(decoy, 'mem'));
    });

    it('restored, the root works again', async () => {
      const tools = await memoryTools();
      await callTool(tools, 'memory_write', { path: 'mine.md', content: 'mine' });
      await rename(path.join(dir, '.agent-memory'), path.join(dir, 'moved'));
      await symlink(decoy, path.join(dir, '.agent-memory'));
      expect((await callTool(tools, 'memory_read', { path: 'mine.md' })).status).toBe('error');
      await rm(path.join(dir, '.agent-memory'));
      await rename(path.join(dir, 'moved'), path.join(dir, '.agent-memory'));
      expect((await callTool(tools, 'memory_read', { path: 'mine.md' })).content).toBe('mine');
    });
  });

  it('only .md notes: another extension is refused with a suggestion', async () => {
    const tools = await memoryTools();
    const res = await callTool(tools, 'memory_write', { path: 'notes.txt', content: 'x' });
    expect(res.content).toBe(
      'Memory notes are Markdown files: "notes.txt" does not end in ".md". Use a path like "notes.md".',
    );
  });

  it('memoryRoot may be configured, relative to the workspace or absolute', async () => {
    const rel = await memoryTools({ memoryRoot: 'state/mem' });
    await callTool(rel, 'memory_write', { path: 'a.md', content: 'rel' });
    expect(await readFile(path.join(dir, 'state/mem/a.md'), 'utf8')).toBe('rel');
    const { dir: abs, cleanup: c2 } = await tempDir('memory-abs-');
    try {
      const absTools = await memoryTools({ memoryRoot: abs });
      await callTool(absTools, 'memory_write', { path: 'b.md', content: 'abs' });
      expect(await readFile(path.join(abs, 'b.md'), 'utf8')).toBe('abs');
    } finally {
      await c2();
    }
  });
});

describe('memory size caps', () => {
  it('accepts a note of exactly MAX_MEMORY_FILE_BYTES and refuses one byte more, leaving the note as it was', async () => {
    const tools = await memoryTools();
    const full = 'x'.repeat(MAX_MEMORY_FILE_BYTES);
    expect((await callTool(tools, 'memory_write', { path: 'big.md', content: full })).status).toBe('success');
    const over = await callTool(tools, 'memory_append', { path: 'big.md', entry: 'y' });
    expect(over.status).toBe('error');
    expect(over.content).toBe(
      `This append would make big.md ${MAX_MEMORY_FILE_BYTES + 3} bytes, above the ${MAX_MEMORY_FILE_BYTES}-byte limit of a memory note. Keep notes short: summarise or split the note into several files.`,
    );
    expect(await note('big.md')).toBe(full);
    const tooBig = await callTool(tools, 'memory_write', { path: 'b2.md', content: full + 'z' });
    expect(tooBig.content).toMatch(/^This write would make b2\.md 262145 bytes, above the 262144-byte limit/);
  });

  it("memory_read of a note past the registry's output cap is cut by the cap, the whole note saved", async () => {
    const tools = await memoryTools();
    const lines = Array.from({ length: 4000 }, (_, i) => `line ${i} ${'x'.repeat(40)}`).join('\n');
    expect(Buffer.byteLength(lines)).toBeLessThan(MAX_MEMORY_FILE_BYTES);
    expect(Buffer.byteLength(lines)).toBeGreaterThan(DEFAULT_MAX_BYTES);
    await callTool(tools, 'memory_write', { path: 'long.md', content: lines });
    const read = await callTool(tools, 'memory_read', { path: 'long.md' });
    expect(read.status).toBe('success');
    expect(Buffer.byteLength(String(read.content))).toBeLessThan(DEFAULT_MAX_BYTES + 1024);
    expect(String(read.content)).toContain('output truncated');
    expect(read.result.metadata.truncated).toBe(true);
    expect(await readFile(read.result.metadata.outputPath as string, 'utf8')).toBe(lines);
  });
});

describe('memory_list', () => {
  it('says there are no notes yet without creating the directory', async () => {
    const tools = await memoryTools();
    const res = await callTool(tools, 'memory_list', {});
    expect(res.content).toBe('No memory notes yet. Create one with memory_write or memory_append.');
    expect(await readdir(dir)).toEqual([]);
  });

  it('lists notes in subdirectories in path order, skipping other files; dir narrows it', async () => {
    const tools = await memoryTools();
    await callTool(tools, 'memory_write', { path: 'z.md', content: '> Summary: last\n' });
    await callTool(tools, 'memory_write', { path: 'people/alice.md', content: 'no summary' });
    await writeFile(path.join(dir, '.agent-memory', 'ignored.txt'), 'x');
    const res = await callTool(tools, 'memory_list', {});
    expect(res.result.metadata.entries).toEqual([
      { path: 'people/alice.md', summary: '', size: 10 },
      { path: 'z.md', summary: 'last', size: 16 },
    ]);
    const sub = await callTool(tools, 'memory_list', { dir: 'people' });
    expect(JSON.parse(sub.text)).toEqual([{ path: 'people/alice.md', summary: '', size: 10 }]);
    const bad = await callTool(tools, 'memory_list', { dir: '../..' });
    expect(bad.content).toBe(
      'dir "../.." is outside the memory directory. Give a subdirectory relative to it, or omit dir.',
    );
  });

  it(`stops at MAX_MEMORY_LIST_ENTRIES (${MAX_MEMORY_LIST_ENTRIES}) notes with a note, reporting progress`, async () => {
    const updates: ToolUpdate[] = [];
    const tools = await memoryTools({}, (u) => updates.push(u));
    const root = path.join(dir, '.agent-memory');
    await mkdir(root);
    await Promise.all(
      Array.from({ length: MAX_MEMORY_LIST_ENTRIES + 1 }, (_, i) =>
        writeFile(path.join(root, `n${String(i).padStart(4, '0')}.md`), ''),
      ),
    );
    const res = await callTool(tools, 'memory_list', {});
    expect(res.result.metadata).toMatchObject({ count: MAX_MEMORY_LIST_ENTRIES, truncated: true });
    expect(res.text).toMatch(/\(Showing the first 500 notes in path order; pass dir to list a subdirectory\.\)$/);
    expect(updates.filter((u) => u.status === 'running').map((u) => u.result.title)).toEqual(
      [100, 200, 300, 400, 500].map((n) => `memory: ${n} notes so far`),
    );
  });
});

describe('memory permissions and presets', () => {
  it('the memory tag filters the memory tools; the read-only preset has no writers', async () => {
    const registry = registerBuiltinTools(createRegistry());
    // Tools that require no permission (current_time) are enabled by every grant, the memory tag adds the memory tools.
    const needNothing = registry.enabled([]);
    expect(registry.enabled(['memory'])).toEqual([...needNothing, ...MEMORY_TOOLS]);
    expect(registry.enabled(['read', 'write'])).not.toContain('memory_read');
    const readOnly = await registry.tools({ ids: [...MEMORY_READ_ONLY_TOOLS], initCtx: { workspaceRoot: dir } });
    expect(readOnly.map((t) => t.name)).toEqual(['memory_list', 'memory_read']);
  });
});
