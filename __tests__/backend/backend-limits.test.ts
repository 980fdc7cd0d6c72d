/**
 * The backend limits at and one past their edges, on deepagents' real StoreBackend (InMemoryStore)
 * and on toDeepAgentsBackend: MAX_BACKEND_GREP_FILES, MAX_BACKEND_GREP_CHARS, MAX_BACKEND_MOVE_FILES,
 * MAX_REMEMBERED_BACKEND_CHARS, BACKEND_READ_DEFAULT_LIMIT. (MAX_BACKEND_FILE_CHARS and MAX_BACKEND_ENTRIES: backend-hostile.test.ts.)
 */
import { describe, it, expect } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InMemoryStore } from '@langchain/langgraph';
import { StoreBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools, toDeepAgentsBackend } from '../../src/index.js';
import { MAX_BACKEND_GREP_CHARS, MAX_BACKEND_GREP_FILES } from '../../src/tools/grep/backend.js';
import { MAX_BACKEND_MOVE_FILES } from '../../src/tools/files/backend/move.js';
import { MAX_REMEMBERED_BACKEND_CHARS, rememberedChars } from '../../src/tools/files/backend/common.js';
import { BACKEND_READ_DEFAULT_LIMIT } from '../../src/backend/local.js';
import { tempDir } from '../support/helpers.js';

const now = new Date(0).toISOString();
/** A StoreBackend holding `files` (path -> text), put straight into its store. */
async function storeWith(files: Array<[string, string]>): Promise<StoreBackend> {
  const store = new InMemoryStore();
  await store.batch(
    files.map(([p, content]) => ({
      namespace: ['lim'],
      key: p,
      value: { content, mimeType: 'text/plain', created_at: now, modified_at: now },
    })),
  );
  return new StoreBackend({ store, namespace: ['lim'] });
}

async function run(backend: StoreBackend, tool: string, args: Record<string, unknown>) {
  const registry = registerBuiltinTools(createRegistry({ loopGuard: false }));
  const u = await registry.execute(tool, args, { sessionID: 's' }, { backend });
  return { ok: u.success, output: u.result.output };
}

const files = (n: number, dir = '/d') =>
  Array.from({ length: n }, (_, i): [string, string] => [`${dir}/f${i}.txt`, `line ${i}\n`]);

describe('MAX_BACKEND_GREP_FILES', () => {
  it(`a regex grep reads ${MAX_BACKEND_GREP_FILES} files, and refuses one more`, async () => {
    const at = await run(await storeWith(files(MAX_BACKEND_GREP_FILES)), 'grep', { pattern: 'line 1\\d*$' });
    expect(at.output).toMatch(/^Found \d+ matches in \d+ files/);
    const past = await run(await storeWith(files(MAX_BACKEND_GREP_FILES + 1)), 'grep', { pattern: 'line 1\\d*$' });
    expect(past.output).toMatch(
      new RegExp(`holds ${MAX_BACKEND_GREP_FILES + 1} files, above the limit of ${MAX_BACKEND_GREP_FILES}`),
    );
    // A literal goes to the backend's own grep: no such limit.
    const literal = await run(await storeWith(files(MAX_BACKEND_GREP_FILES + 1)), 'grep', { pattern: 'line 7' });
    expect(literal.ok).toBe(true);
  }, 60_000);
});

describe('MAX_BACKEND_GREP_CHARS', () => {
  it('a regex grep reads files up to the limit in total, and refuses one character more', async () => {
    const half = MAX_BACKEND_GREP_CHARS / 2;
    const big = (extra: number): Array<[string, string]> => [
      ['/a.txt', `${'a'.repeat(half - 1)}\n`],
      ['/b.txt', `${'b'.repeat(half - 1 + extra)}\n`],
    ];
    const at = await run(await storeWith(big(0)), 'grep', { pattern: 'a+$' });
    expect(at.output).toMatch(/^Found 1 match in 1 file/);
    const past = await run(await storeWith(big(1)), 'grep', { pattern: 'a+$' });
    expect(past.output).toMatch(new RegExp(`pass the limit of ${MAX_BACKEND_GREP_CHARS} characters`));
  }, 60_000);
});

describe('MAX_REMEMBERED_BACKEND_CHARS', () => {
  /** `chars` characters in lines of 64 (the last one shorter), starting with `head`. */
  const text = (chars: number, head: string) => {
    const line = `${'x'.repeat(63)}\n`;
    const body = line.repeat(Math.floor((chars - head.length) / 64));
    return head + body + 'y'.repeat(chars - head.length - body.length);
  };
  /** Replaces the stored content behind the tools' back (a change by someone else). */
  const change = async (store: InMemoryStore, key: string, content: string) =>
    store.put(['lim'], key, { content, mimeType: 'text/plain', created_at: now, modified_at: now });

  it('content up to the limit is remembered and compared; past it, hashed; both refuse a same-size change', async () => {
    const at = text(MAX_REMEMBERED_BACKEND_CHARS, 'count = 1;\n');
    const past = text(MAX_REMEMBERED_BACKEND_CHARS + 1, 'count = 1;\n');
    const store = new InMemoryStore();
    for (const [key, content] of [
      ['/at.txt', at],
      ['/past.txt', past],
      ['/small.txt', 'count = 1;\n'],
    ])
      await change(store, key, content);
    const backend = new StoreBackend({ store, namespace: ['lim'] });
    const registry = registerBuiltinTools(createRegistry({ loopGuard: false }));
    const call = async (tool: string, args: Record<string, unknown>) =>
      (await registry.execute(tool, args, { sessionID: 's' }, { backend })).result.output;
    const edit = (filePath: string, from: number) =>
      call('edit', { filePath, oldString: `count = ${from};`, newString: `count = ${from + 1};` });

    // At the limit: the whole content is kept (it alone fills the budget).
    expect(await call('read', { filePath: 'at.txt', limit: 1 })).toMatch(/^1: count = 1;/);
    expect(rememberedChars()).toBe(MAX_REMEMBERED_BACKEND_CHARS);
    expect(await edit('at.txt', 1)).toMatch(/^Edited at\.txt: 1 replacement at line 1/);
    expect(rememberedChars()).toBe(MAX_REMEMBERED_BACKEND_CHARS);
    // A same-size change behind the tools' back is refused by the direct comparison.
    await change(store, '/at.txt', at.replace('count = 1;', 'count = 7;'));
    expect(await edit('at.txt', 7)).toMatch(/^File at\.txt has changed on disk since it was read/);
    // Re-read, then another read pushes it out of the budget: it is hashed in place, and the check
    // still passes when unchanged and refuses when changed.
    expect(await call('read', { filePath: 'at.txt', limit: 1 })).toMatch(/^1: count = 7;/);
    expect(await call('read', { filePath: 'small.txt' })).toMatch(/^1: count = 1;/);
    expect(rememberedChars()).toBe('count = 1;\n'.length);
    expect(await edit('at.txt', 7)).toMatch(/^Edited at\.txt/);
    await call('read', { filePath: 'small.txt' }); // pushes at.txt out again
    await change(store, '/at.txt', at.replace('count = 1;', 'count = 9;'));
    expect(await edit('at.txt', 9)).toMatch(/^File at\.txt has changed on disk since it was read/);

    // One past the limit: never kept, checked by hash (an unchanged file edits, a changed one is refused).
    const before = rememberedChars();
    expect(await call('read', { filePath: 'past.txt', limit: 1 })).toMatch(/^1: count = 1;/);
    expect(rememberedChars()).toBe(before);
    expect(await edit('past.txt', 1)).toMatch(/^Edited past\.txt/);
    await change(store, '/past.txt', past.replace('count = 1;', 'count = 5;'));
    expect(await edit('past.txt', 5)).toMatch(/^File past\.txt has changed on disk since it was read/);
  }, 120_000);
});

describe('MAX_BACKEND_MOVE_FILES', () => {
  it(`a directory move copies ${MAX_BACKEND_MOVE_FILES} files, and refuses one more (nothing moved)`, async () => {
    const at = await run(await storeWith(files(MAX_BACKEND_MOVE_FILES)), 'move', { from: 'd', to: 'e' });
    expect(at.output).toBe('Moved directory d to e.');
    const backend = await storeWith(files(MAX_BACKEND_MOVE_FILES + 1));
    const past = await run(backend, 'move', { from: 'd', to: 'e' });
    expect(past.output).toBe(
      `d holds ${MAX_BACKEND_MOVE_FILES + 1} files, above the ${MAX_BACKEND_MOVE_FILES} one move copies on a backend (it has no rename); nothing was moved. Move its subdirectories one by one.`,
    );
    expect((await run(backend, 'glob', { pattern: '**/*', path: 'e' })).output).toMatch(/^No files found/);
  }, 60_000);
});

describe('BACKEND_READ_DEFAULT_LIMIT', () => {
  it(`toDeepAgentsBackend's read answers ${BACKEND_READ_DEFAULT_LIMIT} lines without a limit, with the next offset`, async () => {
    const { dir, cleanup } = await tempDir('backend-limit-');
    try {
      const lines = (n: number) => Array.from({ length: n }, (_, i) => `l${i}`).join('\n') + '\n';
      await writeFile(path.join(dir, 'at.txt'), lines(BACKEND_READ_DEFAULT_LIMIT));
      await writeFile(path.join(dir, 'past.txt'), lines(BACKEND_READ_DEFAULT_LIMIT + 1));
      const b = await toDeepAgentsBackend({ workspaceRoot: dir, execute: false });
      const at = await b.read('/at.txt');
      expect(at).toMatchObject({ endLine: BACKEND_READ_DEFAULT_LIMIT, totalLines: BACKEND_READ_DEFAULT_LIMIT });
      expect(at.nextOffset).toBeUndefined();
      const past = await b.read('/past.txt');
      expect(past).toMatchObject({ endLine: BACKEND_READ_DEFAULT_LIMIT, nextOffset: BACKEND_READ_DEFAULT_LIMIT });
    } finally {
      await cleanup();
    }
  });
});
