/**
 * The backend tools' shortcuts give the answers the long way gives: glob orders its answer newest
 * first, then by path, with one string sort (`newestFirst`, checked against the comparator sort on
 * generated answers: unnormalised and relative paths, duplicates, directories, equal, missing,
 * invalid and pre-1970 times); a literal grep looks its path up only when the backend found
 * nothing or refused, and still says a missing path is missing; after an edit, the content
 * remembered for the stale check (pieces of the text read around the replacements) is exactly what
 * the backend holds, so the next edit passes, and a change made meanwhile is still refused; one
 * exact match goes to the backend's edit with the text around it, and when that text changed
 * meanwhile, the bare match is sent as before.
 * Must not test the sentences every backend shares (backend-conformance.test.ts does).
 */
import { describe, it, expect } from '@jest/globals';
import posix from 'node:path/posix';
import fc from 'fast-check';
import { InMemoryStore } from '@langchain/langgraph';
import { StoreBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { newestFirst } from '../../src/tools/files/backend/glob.js';
import { shownPath } from '../../src/tools/files/backend/common.js';
import type { FileInfo } from '../../src/backend/protocol.js';

/** The order as a comparator states it (what the string sort must equal). */
function reference(base: string, infos: FileInfo[]) {
  return infos
    .filter((f) => f.is_dir !== true && !f.path.endsWith('/'))
    .map((f) => ({ path: shownPath(posix.resolve(base, f.path)), mtime: Date.parse(f.modified_at ?? '') || 0 }))
    .sort((a, b) => b.mtime - a.mtime || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

const segment = fc.constantFrom('a', 'b', 'é', 'Z', '.', '..', '', '.hidden', 'x y', '😀', 'a.ts', 'n\nl', '\n');
const info = fc.record({
  path: fc
    .tuple(fc.boolean(), fc.array(segment, { minLength: 1, maxLength: 4 }))
    .map(([rooted, parts]) => `${rooted ? '/' : ''}${parts.join('/')}`),
  is_dir: fc.option(fc.boolean(), { nil: undefined }),
  modified_at: fc.option(
    fc.oneof(
      fc.constantFrom('', 'not a date', '2026-01-01T00:00:00.000Z', '1969-12-31T23:59:59.999Z'),
      fc.integer({ min: -5e12, max: 5e12 }).map((ms) => new Date(ms).toISOString()),
    ),
    { nil: undefined },
  ),
});

describe('newestFirst', () => {
  it('orders like the comparator sort: newest first, then by path, duplicates kept', () => {
    fc.assert(
      fc.property(fc.constantFrom('/', '/d', '/d/e'), fc.array(info, { maxLength: 40 }), (base, infos) => {
        expect(newestFirst(base, infos)).toEqual(reference(base, infos));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps two answers for one path, and drops directories', () => {
    const t = '2026-01-01T00:00:00.000Z';
    const infos: FileInfo[] = [
      { path: '/d/b', modified_at: t },
      { path: '/d/a', modified_at: '2025-01-01T00:00:00.000Z' },
      { path: '/d/b', modified_at: t },
      { path: '/d/sub/', is_dir: true },
      { path: '/d/c', modified_at: '1960-01-01T00:00:00.000Z' },
    ];
    expect(newestFirst('/d', infos).map((f) => f.path)).toEqual(['d/b', 'd/b', 'd/a', 'd/c']);
  });
});

describe('grep over a backend, literal pattern: the path is looked up only when nothing was found', () => {
  const now = new Date(0).toISOString();
  /** A StoreBackend whose grep answers an error for a path holding no file (as some backends do). */
  class RefusingStoreBackend extends StoreBackend {
    override async grep(pattern: string, path?: string, glob?: string | null) {
      const r = await super.grep(pattern, path, glob);
      return r.matches?.length ? r : { error: `no such directory: ${path}` };
    }
  }
  async function grep(backend: StoreBackend, args: Record<string, unknown>) {
    const registry = registerBuiltinTools(createRegistry({ loopGuard: false }));
    const u = await registry.execute('grep', args, { sessionID: 's' }, { backend });
    return { ok: u.success, output: u.result.output };
  }
  async function withFile(Backend: typeof StoreBackend) {
    const store = new InMemoryStore();
    await store.put(['g'], '/d/a.txt', {
      content: 'one\ntwo\n',
      mimeType: 'text/plain',
      created_at: now,
      modified_at: now,
    });
    return new Backend({ store, namespace: ['g'] });
  }

  for (const Backend of [StoreBackend, RefusingStoreBackend]) {
    it(`${Backend.name}: a match, no match, and a missing path each get their own answer`, async () => {
      const backend = await withFile(Backend);
      expect((await grep(backend, { pattern: 'two', path: 'd' })).output).toMatch(/^Found 1 match in 1 file\./);
      const none = await grep(backend, { pattern: 'three', path: 'd' });
      if (Backend === StoreBackend) expect(none.output).toMatch(/^No matches found/);
      else expect(none.output).toMatch(/refused grep of \/d: no such directory: \/d/);
      // A literal is not compiled for the backend's grep, but still validated: a line break is refused.
      expect((await grep(backend, { pattern: 'one\ntwo', path: 'd' })).output).toMatch(
        /^Invalid regular expression "one\\ntwo": it contains a line break/,
      );
      expect(await grep(backend, { pattern: 'two', path: 'nowhere' })).toEqual({
        ok: false,
        output: 'Path "nowhere" does not exist (resolved to /nowhere). Check the path, or use glob to find it.',
      });
    });
  }
});

describe('edit over a backend remembers the edited text as pieces, exactly what the backend holds', () => {
  const now = new Date(0).toISOString();
  const cases: Array<[string, string, Array<Record<string, unknown>>]> = [
    ['a BOM file, one exact match', '\uFEFFone\ntwo\nthree\n', [{ oldString: 'two', newString: 'TWO' }]],
    [
      'every match (replaceAll), at the start and the end',
      'x = 1;\ny = x;\nx',
      [{ oldString: 'x', newString: 'xx', replaceAll: true }],
    ],
    ['a CRLF file', 'one\r\ntwo\r\nthree\r\n', [{ oldString: 'two\nthree', newString: 'TWO\nTHREE' }]],
    [
      'a match found by the indentation-tolerant matcher',
      'function f() {\n    if (a) {\n        b();\n    }\n}\n',
      [{ oldString: 'if (a) {\n    b();\n}', newString: 'if (a) {\n    c();\n}' }],
    ],
    [
      'a BOM file, two edits in a row',
      '\uFEFFa\nb\n',
      [
        { oldString: 'a', newString: 'A' },
        { oldString: 'b', newString: 'B' },
      ],
    ],
  ];
  for (const [what, content, edits] of cases) {
    it(`${what}: the next edit passes the stale check, a change meanwhile does not`, async () => {
      const store = new InMemoryStore();
      const put = (text: string) =>
        store.put(['e'], '/f.txt', { content: text, mimeType: 'text/plain', created_at: now, modified_at: now });
      await put(content);
      const backend = new StoreBackend({ store, namespace: ['e'] });
      const registry = registerBuiltinTools(createRegistry({ loopGuard: false }));
      const call = async (tool: string, args: Record<string, unknown>) =>
        (await registry.execute(tool, { filePath: 'f.txt', ...args }, { sessionID: 's' }, { backend })).result.output;
      expect(await call('read', {})).toMatch(/^1: /);
      for (const e of edits) expect(await call('edit', e)).toMatch(/^Edited f\.txt/);
      // Remembered = held: an edit that changes the first line back and forth passes.
      const held = (await store.get(['e'], '/f.txt'))!.value as { content: string };
      const first = held.content.replace(/^\uFEFF/, '').split(/\r?\n/)[0];
      expect(await call('edit', { oldString: first, newString: `${first}!` })).toMatch(/^Edited f\.txt/);
      expect(await call('edit', { oldString: `${first}!`, newString: first })).toMatch(/^Edited f\.txt/);
      // A same-length change by someone else is refused.
      const now2 = ((await store.get(['e'], '/f.txt'))!.value as { content: string }).content;
      await put(
        now2.replace(
          first,
          first.replace(/./, (c) => (c === 'Z' ? 'Y' : 'Z')),
        ),
      );
      expect(await call('edit', { oldString: 'zzz', newString: 'y' })).toMatch(
        /^File f\.txt has changed on disk since it was read/,
      );
    });
  }
});

describe('edit over a backend sends one exact match with the text around it', () => {
  const now = new Date(0).toISOString();
  const lines = Array.from({ length: 40 }, (_, i) => `line ${i} ${'x'.repeat(20)}`);
  lines[20] = 'target = 1;';
  const content = `${lines.join('\n')}\n`;

  /** A StoreBackend recording each edit's oldString; `meanwhile` runs before the first one. */
  class WatchedStoreBackend extends StoreBackend {
    edits: string[] = [];
    meanwhile?: () => Promise<void>;
    override async edit(filePath: string, oldString: string, newString: string, replaceAll?: boolean) {
      this.edits.push(oldString);
      const before = this.meanwhile;
      this.meanwhile = undefined;
      await before?.();
      return super.edit(filePath, oldString, newString, replaceAll);
    }
  }
  async function setup() {
    const store = new InMemoryStore();
    const put = (text: string) =>
      store.put(['w'], '/f.txt', { content: text, mimeType: 'text/plain', created_at: now, modified_at: now });
    await put(content);
    const backend = new WatchedStoreBackend({ store, namespace: ['w'] });
    const registry = registerBuiltinTools(createRegistry({ loopGuard: false }));
    const call = async (tool: string, args: Record<string, unknown>) =>
      (await registry.execute(tool, { filePath: 'f.txt', ...args }, { sessionID: 's' }, { backend })).result.output;
    const held = async () => ((await store.get(['w'], '/f.txt'))!.value as { content: string }).content;
    await call('read', {});
    return { backend, put, call, held };
  }

  it('the match goes with up to 256 characters on each side, and the result is the plain replacement', async () => {
    const { backend, call, held } = await setup();
    expect(await call('edit', { oldString: 'target = 1;', newString: 'target = 2;' })).toMatch(/^Edited f\.txt/);
    expect(backend.edits).toHaveLength(1);
    expect(backend.edits[0]).toContain('target = 1;');
    expect(backend.edits[0].length).toBe('target = 1;'.length + 2 * 256);
    expect(await held()).toBe(content.replace('target = 1;', 'target = 2;'));
  });

  it('when the text around the match changed meanwhile, the bare match is sent: the change and the edit both stay', async () => {
    const { backend, put, call, held } = await setup();
    const changed = content.replace('line 19', 'LINE 19');
    backend.meanwhile = () => put(changed);
    expect(await call('edit', { oldString: 'target = 1;', newString: 'target = 2;' })).toMatch(/^Edited f\.txt/);
    expect(backend.edits).toEqual([expect.stringContaining('line 19'), 'target = 1;']);
    expect(await held()).toBe(changed.replace('target = 1;', 'target = 2;'));
  });
});
