/**
 * Hostile and broken backends: deepagents' real StoreBackend (over InMemoryStore) with one method
 * sabotaged at a time. A method that throws, hangs past the call's timeout, answers an error, a
 * malformed or a huge result, or a path outside what was asked -> one failed result whose sentence
 * names the backend and the operation; nothing half-written; caps hold; the registry keeps serving.
 */
import { describe, it, expect, beforeEach, afterEach, beforeAll, afterAll } from '@jest/globals';
import path from 'node:path';
import { tempDir } from '../support/helpers.js';
import { InMemoryStore } from '@langchain/langgraph';
import { StoreBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { MAX_BACKEND_ENTRIES, MAX_BACKEND_FILE_CHARS, MAX_BACKEND_OUTPUT_CHARS } from '../../src/backend/guard.js';
import { MAX_OUTPUT_CHARS } from '../../src/tools/bash/bash.js';

type Sabotage = Partial<Record<string, (...args: unknown[]) => unknown>>;

/** A real StoreBackend whose methods named in `sabotage` are replaced. */
class HostileBackend extends StoreBackend {
  sabotage: Sabotage = {};
  constructor(store: InMemoryStore) {
    super({ store, namespace: ['hostile'] });
    for (const m of ['ls', 'readRaw', 'read', 'write', 'edit', 'grep', 'glob', 'delete'] as const) {
      const real = (this[m] as (...a: unknown[]) => unknown).bind(this);
      (this as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => (this.sabotage[m] ?? real)(...args);
    }
  }
}

let outputs: { dir: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  outputs = await tempDir('hostile-outputs-');
});
afterAll(() => outputs.cleanup());

let store: InMemoryStore;
let backend: HostileBackend;
let registry: ReturnType<typeof createRegistry>;
const initCtx = () => ({ backend });

async function call(tool: string, args: Record<string, unknown>, timeoutMs?: number) {
  const u = await registry.execute(tool, args, { sessionID: 's' }, initCtx(), timeoutMs ? { timeoutMs } : {});
  return { ok: u.success, output: u.result.output };
}

/** What the store holds at `path` (what is really written), or undefined. */
async function stored(path: string): Promise<string | undefined> {
  const item = await store.get(['hostile'], path);
  return item ? (item.value as { content: string }).content : undefined;
}

beforeEach(async () => {
  store = new InMemoryStore();
  backend = new HostileBackend(store);
  registry = registerBuiltinTools(
    createRegistry({ loopGuard: false, truncate: { outputDir: path.join(outputs.dir, 'saved') } }),
  );
  expect((await call('write', { filePath: 'a.txt', content: 'one\ntwo\n' })).ok).toBe(true);
});

/** No stack trace ever reaches the model. */
function noStack(output: string): void {
  expect(output).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

describe('a backend method that throws', () => {
  it('readRaw throwing: read fails with a sentence naming the backend and the operation', async () => {
    backend.sabotage.readRaw = () => {
      throw new Error('disk on fire\n    at secret (/internal/file.js:1:2)');
    };
    const r = await call('read', { filePath: 'a.txt' });
    expect(r).toEqual({
      ok: false,
      output:
        'The backend HostileBackend failed at readRaw of /a.txt: disk on fire. Nothing more was done; check the backend, or retry.',
    });
    noStack(r.output);
  });

  it('write throwing a non-Error value: one failed result, nothing written', async () => {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a backend rejecting with a plain object
    backend.sabotage.write = () => Promise.reject({ code: 42 });
    const r = await call('write', { filePath: 'b.txt', content: 'new\n' });
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(
      /^The backend HostileBackend failed at write of \/b\.txt: {"code":42}\. Nothing more was done/,
    );
    expect(await stored('/b.txt')).toBeUndefined();
  });

  it('edit answering an error: "refused", and the file keeps its content', async () => {
    await call('read', { filePath: 'a.txt' });
    backend.sabotage.edit = () => ({ error: 'quota exceeded' });
    const r = await call('edit', { filePath: 'a.txt', oldString: 'two', newString: 'TWO' });
    expect(r.ok).toBe(false);
    expect(r.output).toBe(
      'File a.txt was not changed: the backend HostileBackend refused the edit (quota exceeded). The file may have changed there since it was read: read it again and retry. Nothing was written.',
    );
    expect(await stored('/a.txt')).toBe('one\ntwo\n');
  });

  it("write answering an error is refused in a sentence with the backend's own words", async () => {
    backend.sabotage.write = () => ({ error: 'quota exceeded\nsecond line' });
    const r = await call('write', { filePath: 'c.txt', content: 'x' });
    expect(r).toEqual({ ok: false, output: 'The backend HostileBackend refused write of /c.txt: quota exceeded' });
  });
});

describe('a backend method that hangs', () => {
  it('readRaw never answering: the call fails at its timeout naming readRaw, and the registry keeps serving', async () => {
    backend.sabotage.readRaw = () => new Promise(() => undefined);
    const r = await call('read', { filePath: 'a.txt' }, 300);
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(
      /The backend HostileBackend did not answer readRaw of \/a\.txt before the call was stopped/,
    );
    // Other calls still run: the same registry, a healthy operation.
    delete backend.sabotage.readRaw;
    expect((await call('read', { filePath: 'a.txt' })).output).toBe('1: one\n2: two\n\n(End of file - 2 lines total)');
    expect((await call('glob', { pattern: '*.txt' })).output).toBe('a.txt');
  });
});

describe('a backend that answers malformed results', () => {
  it('readRaw content that is neither text nor bytes', async () => {
    backend.sabotage.readRaw = () => ({ data: { content: 42 } });
    const r = await call('read', { filePath: 'a.txt' });
    expect(r.output).toBe(
      "The backend HostileBackend answered readRaw of /a.txt with a malformed result (its content is neither text, bytes nor lines); it was discarded. Check the backend's implementation of readRaw.",
    );
  });

  it('ls answering a string, and glob entries without a path', async () => {
    backend.sabotage.ls = () => 'nope';
    expect((await call('list', {})).output).toMatch(
      /^The backend HostileBackend answered ls of \/ with a malformed result \(it is string, not a result object\)/,
    );
    backend.sabotage.glob = () => ({ files: [{ size: 1 }] });
    expect((await call('glob', { pattern: '*' })).output).toMatch(
      /glob of \/ with a malformed result \(an entry lacks a string path\)/,
    );
  });

  it('grep matches with a non-numeric line, and execute-less bash', async () => {
    backend.sabotage.grep = () => ({ matches: [{ path: '/a.txt', line: 'x', text: 'one' }] });
    expect((await call('grep', { pattern: 'one' })).output).toMatch(
      /grep of \/ with a malformed result \(a match lacks a string path, a numeric line or a string text\)/,
    );
    const bash = await call('bash', { command: 'echo hi', description: 'echo' });
    expect(bash.output).toMatch(
      /^bash is not available: the files live on the backend HostileBackend, which cannot run commands/,
    );
  });
});

describe('a backend that answers huge results: caps hold', () => {
  it(`readRaw of more than MAX_BACKEND_FILE_CHARS (${MAX_BACKEND_FILE_CHARS}) is refused; at the limit it is read`, async () => {
    const atLimit = 'x'.repeat(MAX_BACKEND_FILE_CHARS);
    backend.sabotage.readRaw = () => ({ data: { content: atLimit, mimeType: 'text/plain' } });
    const ok = await call('read', { filePath: 'a.txt' });
    expect(ok.ok).toBe(true);
    expect(ok.output.length).toBeLessThan(60 * 1024); // read's own output cap
    backend.sabotage.readRaw = () => ({ data: { content: `${atLimit}y`, mimeType: 'text/plain' } });
    const r = await call('read', { filePath: 'a.txt' });
    expect(r.output).toMatch(
      new RegExp(
        `^The backend HostileBackend answered readRaw of /a\\.txt with ${MAX_BACKEND_FILE_CHARS + 1} characters, above the ${MAX_BACKEND_FILE_CHARS}-character limit`,
      ),
    );
  });

  it(`ls of more than MAX_BACKEND_ENTRIES (${MAX_BACKEND_ENTRIES}) entries is refused; at the limit the listing is capped`, async () => {
    const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `/f${i}.txt`, is_dir: false }));
    backend.sabotage.ls = () => ({ files: entries(MAX_BACKEND_ENTRIES) });
    const ok = await call('list', {});
    expect(ok.ok).toBe(true);
    expect(ok.output).toMatch(/the listing is truncated/);
    backend.sabotage.ls = () => ({ files: entries(MAX_BACKEND_ENTRIES + 1) });
    expect((await call('list', {})).output).toMatch(
      new RegExp(`ls of / with ${MAX_BACKEND_ENTRIES + 1} entries, above the limit of ${MAX_BACKEND_ENTRIES}`),
    );
  });

  it('a huge execute answer: bash shows head and tail within its cap and saves the whole text', async () => {
    const big = `${'line\n'.repeat(MAX_BACKEND_OUTPUT_CHARS / 5)}tail-marker\n`;
    const sandbox = Object.assign(new HostileBackend(store), {
      id: 'sbx-1',
      execute: () => ({ output: big, exitCode: 0, truncated: false }),
    });
    const u = await registry.execute(
      'bash',
      { command: 'yes', description: 'flood' },
      { sessionID: 's' },
      { backend: sandbox },
    );
    expect(u.success).toBe(true);
    expect(u.result.output.length).toBeLessThan(MAX_OUTPUT_CHARS + 1000);
    expect(u.result.output).toMatch(
      /characters omitted\] \.\.\.\nThe full output \(\d+ chars, \d+ lines\) is saved at /,
    );
    expect(u.result.metadata.truncated).toBe(true);
    // The backend's answer itself was cut at MAX_BACKEND_OUTPUT_CHARS: the tail marker is past it.
    expect(u.result.output).not.toContain('tail-marker');
  });
});

describe('a backend that answers for paths outside what was asked', () => {
  it('glob under notes answering /etc/passwd: discarded, the sentence names the path', async () => {
    await call('write', { filePath: 'notes/n.txt', content: 'n\n' });
    backend.sabotage.glob = () => ({ files: [{ path: '/etc/passwd' }] });
    const r = await call('glob', { pattern: '*', path: 'notes' });
    expect(r.output).toBe(
      'The backend HostileBackend answered glob of /notes with the path "/etc/passwd", which is outside what was asked; the answer was discarded. Check the backend\'s path handling.',
    );
  });

  it('grep answering a ".." path and write answering another file are refused', async () => {
    await call('write', { filePath: 'notes/n.txt', content: 'k\n' });
    backend.sabotage.grep = () => ({ matches: [{ path: '/notes/../../secret.txt', line: 1, text: 'k' }] });
    expect((await call('grep', { pattern: 'k', path: 'notes' })).output).toBe(
      'The backend HostileBackend answered grep of /notes with the path "/notes/../../secret.txt", which is outside what was asked; the answer was discarded. Check the backend\'s path handling.',
    );
    backend.sabotage.write = () => ({ path: '/elsewhere.txt' });
    expect((await call('write', { filePath: 'w.txt', content: 'w' })).output).toMatch(
      /answered write of \/w\.txt for another path, "\/elsewhere\.txt"/,
    );
  });
});

describe('any thrown value becomes a sentence', () => {
  /** Values whose String() throws, or that are not errors at all. */
  const hostileValues = (): Array<[string, unknown, RegExp]> => [
    ['an object without a prototype', Object.create(null), /an object without a text form/],
    [
      'an object whose toString throws',
      {
        toString() {
          throw new Error('no text for you');
        },
      },
      /an object without a text form/,
    ],
    ['a symbol', Symbol('boom'), /the symbol boom/],
    [
      'a proxy whose every trap throws',
      new Proxy(
        {},
        {
          get() {
            throw Object.create(null);
          },
          getPrototypeOf() {
            throw Object.create(null);
          },
          ownKeys() {
            throw Object.create(null);
          },
          has() {
            throw Object.create(null);
          },
        },
      ),
      /a value that cannot be shown as text|an object without a text form/,
    ],
  ];
  let unhandled: unknown[];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeEach(() => {
    unhandled = [];
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(async () => {
    // Rejections nobody handled are reported after the microtasks of the turn: let them surface.
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    process.off('unhandledRejection', onUnhandled);
    expect(unhandled).toEqual([]);
  });

  it('thrown or rejected by readRaw: read fails naming the backend, the host keeps running', async () => {
    for (const [, value, described] of hostileValues()) {
      for (const how of ['throws', 'rejects'] as const) {
        backend.sabotage.readRaw = () => {
          if (how === 'throws') throw value;
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- what a hostile backend does
          return Promise.reject(value);
        };
        const r = await call('read', { filePath: 'a.txt' });
        expect(r.ok).toBe(false);
        expect(r.output).toMatch(/^The backend HostileBackend failed at readRaw of \/a\.txt: /);
        expect(r.output).toMatch(described);
        noStack(r.output);
      }
    }
    delete backend.sabotage.readRaw;
    expect((await call('read', { filePath: 'a.txt' })).ok).toBe(true);
  });

  it('an answer whose fields throw when read, and an error field that is not text', async () => {
    // A proxy answer: awaiting it reads its `then`, which throws.
    backend.sabotage.ls = () =>
      new Proxy(
        {},
        {
          get() {
            throw Symbol('getter');
          },
        },
      );
    expect((await call('list', { path: '.' })).output).toBe(
      'The backend HostileBackend failed at ls of /: the symbol getter. Nothing more was done; check the backend, or retry.',
    );
    // A plain answer whose `files` getter throws once the guard reads it.
    backend.sabotage.ls = () => ({
      get files(): unknown {
        throw Object.create(null);
      },
    });
    const listed = await call('list', { path: '.' });
    expect(listed.ok).toBe(false);
    expect(listed.output).toBe(
      "The backend HostileBackend answered ls of / with a malformed result (reading it threw: an object without a text form); it was discarded. Check the backend's implementation of ls.",
    );
    delete backend.sabotage.ls;
    const noText = Object.create(null) as Record<string, unknown>;
    backend.sabotage.write = () => ({ error: noText });
    const w = await call('write', { filePath: 'new.txt', content: 'x' });
    expect(w.output).toMatch(/^The backend HostileBackend refused write of \/new\.txt: an object without a text form/);
  });
});

describe('a sibling directory is not inside (a prefix without the separator)', () => {
  it('ls, glob and grep of /notes answering a path under /notes-x are discarded', async () => {
    await call('write', { filePath: 'notes/n.txt', content: 'k\n' });
    const leak = '/notes-x/secret.txt';
    backend.sabotage.ls = (p) => (p === '/notes' ? { files: [{ path: leak, is_dir: false }] } : { files: [] });
    backend.sabotage.glob = () => ({ files: [{ path: leak }] });
    backend.sabotage.grep = () => ({ matches: [{ path: leak, line: 1, text: 'k' }] });
    for (const [tool, args] of [
      ['list', { path: 'notes' }],
      ['glob', { pattern: '*', path: 'notes' }],
      ['grep', { pattern: 'k', path: 'notes' }],
    ] as const) {
      const r = await call(tool, args);
      expect(r.ok).toBe(false);
      expect(r.output).toContain(`with the path "${leak}", which is outside what was asked; the answer was discarded.`);
    }
  });
});

describe('a failed read is reported, not papered over', () => {
  it("read and readRaw throwing, and ls of the file answering the file itself: read fails with the backend's sentence", async () => {
    // deepagents' BaseSandbox lists a file path as that one file (find -maxdepth 1 on a file).
    backend.sabotage.read = backend.sabotage.readRaw = () => {
      throw new Error('the sandbox is unreachable');
    };
    backend.sabotage.ls = (p) => ({
      files: [p === '/a.txt' ? { path: '/a.txt', is_dir: false } : { path: '/a.txt', is_dir: false, size: 8 }],
    });
    const r = await call('read', { filePath: 'a.txt' });
    expect(r).toEqual({
      ok: false,
      output:
        'The backend HostileBackend failed at readRaw of /a.txt: the sandbox is unreachable. Nothing more was done; check the backend, or retry.',
    });
  });

  it('ls of a directory naming the directory itself is discarded', async () => {
    await call('write', { filePath: 'notes/n.txt', content: 'k\n' });
    backend.sabotage.ls = () => ({ files: [{ path: '/notes/', is_dir: true }] });
    expect((await call('list', { path: 'notes' })).output).toBe(
      'The backend HostileBackend answered ls of /notes with the path "/notes/", the directory itself, not an entry under it; the answer was discarded. Check the backend\'s path handling.',
    );
  });
});

describe('nothing half-written', () => {
  it('a directory move whose second copy fails removes the copies made and keeps the source', async () => {
    await call('write', { filePath: 'd/one.txt', content: '1\n' });
    await call('write', { filePath: 'd/two.txt', content: '2\n' });
    const realWrite = StoreBackend.prototype.write.bind(backend);
    let writes = 0;
    backend.sabotage.write = (p, c) => (++writes === 2 ? { error: 'disk full' } : realWrite(p as string, c as string));
    const r = await call('move', { from: 'd', to: 'e' });
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(/^The backend HostileBackend refused write of \/e\/(one|two)\.txt: disk full$/);
    expect(writes).toBe(2); // the first copy was made, then removed
    expect(await stored('/d/one.txt')).toBe('1\n');
    expect(await stored('/d/two.txt')).toBe('2\n');
    expect(await stored('/e/one.txt')).toBeUndefined();
    expect(await stored('/e/two.txt')).toBeUndefined();
  });

  it('an edit racing a change on the backend (compare-and-swap by content) leaves the newer content', async () => {
    await call('read', { filePath: 'a.txt' });
    const realEdit = StoreBackend.prototype.edit.bind(backend);
    backend.sabotage.edit = async (p, o, n, all) => {
      // Someone else changes the file between our read and our write.
      await store.put(['hostile'], '/a.txt', {
        content: 'changed\n',
        mimeType: 'text/plain',
        created_at: '',
        modified_at: '',
      });
      return realEdit(p as string, o as string, n as string, all as boolean);
    };
    const r = await call('edit', { filePath: 'a.txt', oldString: 'two', newString: 'TWO' });
    expect(r.output).toMatch(
      /^File a\.txt was not changed: the backend HostileBackend refused the edit \(Error: String not found in file: 'two'\)\. The file may have changed there since it was read/,
    );
    expect(await stored('/a.txt')).toBe('changed\n');
  });
});
