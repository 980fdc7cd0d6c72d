/**
 * undo_file and undo_turn over real deepagents backends (FilesystemBackend, StoreBackend over
 * InMemoryStore, CompositeBackend routing to both, StateBackend inside a LangGraph graph): an edit undone, a change made since makes
 * undo refuse (the local sentence), a turn's several changes undone together, moves and deletes put
 * back, a backend that throws part-way leaves a sentence and nothing half-restored, and a backend
 * lacking what undo needs gets tools that say what is missing. The host workspace is never touched.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InMemoryStore, MemorySaver } from '@langchain/langgraph';
import { CompositeBackend, FilesystemBackend, StoreBackend } from 'deepagents';
import { tempDir } from '../support/helpers.js';
import { direct, stateGraph, type Outcome } from '../support/backend-harness.js';
import { MAX_BACKEND_UNDO_FILES } from '../../src/constants.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

interface Subject {
  name: string;
  /** One call in turn `turn` (each call of the same turn string belongs to one model turn). */
  turn(calls: Array<[string, Record<string, unknown>]>, session?: string): Promise<Outcome[]>;
}

let turns = 0;

async function subjects(): Promise<Subject[]> {
  const fsDir = await tempDir('undo-fs-');
  const compDir = await tempDir('undo-comp-');
  cleanups.push(fsDir.cleanup, compDir.cleanup);
  const viaExecute = (name: string, backend: object): Subject => {
    const h = direct(name, { backend: backend as never });
    return {
      name,
      async turn(calls, session = 's1') {
        const t = `turn-${++turns}`;
        // Calls of one turn run at once, as a model's parallel tool calls do.
        return Promise.all(calls.map(([tool, args]) => h.call(tool, args, session, t)));
      },
    };
  };
  const graph = await stateGraph(new MemorySaver(), 'undo-thread');
  return [
    viaExecute('FilesystemBackend', new FilesystemBackend({ rootDir: fsDir.dir, virtualMode: true })),
    viaExecute('StoreBackend', new StoreBackend({ store: new InMemoryStore(), namespace: ['undo'] })),
    // Routed: t/ (the turn cases) to a store, the rest to disk.
    viaExecute(
      'CompositeBackend',
      new CompositeBackend(new FilesystemBackend({ rootDir: compDir.dir, virtualMode: true }), {
        '/t/': new StoreBackend({ store: new InMemoryStore(), namespace: ['routed'] }),
      }),
    ),
    { name: 'StateBackend', turn: (calls, session) => graph.turn(calls, session) },
  ];
}

/** A file's text as read shows it, or undefined when it does not exist. */
async function text(s: Subject, file: string): Promise<string | undefined> {
  const [r] = await s.turn([['read', { filePath: file }]]);
  if (!r.ok && /does not exist/.test(r.output)) return undefined;
  if (/does not exist/.test(r.output)) return undefined;
  return r.output
    .split('\n')
    .filter((l) => /^\d+: /.test(l))
    .map((l) => l.replace(/^\d+: /, ''))
    .join('\n');
}

async function one(s: Subject, tool: string, args: Record<string, unknown>): Promise<Outcome> {
  return (await s.turn([[tool, args]]))[0];
}

const all = await subjects();

describe.each(all.map((s) => [s.name, s] as const))('undo over %s', (_name, s) => {
  it('undo_file puts back what an edit changed, then removes the file the write created', async () => {
    expect((await one(s, 'write', { filePath: 'e/a.txt', content: 'alpha\nbeta' })).ok).toBe(true);
    expect((await one(s, 'edit', { filePath: 'e/a.txt', oldString: 'beta', newString: 'BETA' })).ok).toBe(true);
    expect(await text(s, 'e/a.txt')).toBe('alpha\nBETA');
    const u = await one(s, 'undo_file', { path: 'e/a.txt' });
    expect(u.output).toMatch(/^Undid the edit of e\/a\.txt \(call [^)]+\): restored e\/a\.txt \(10 bytes\)\.$/);
    expect(await text(s, 'e/a.txt')).toBe('alpha\nbeta');
    const again = await one(s, 'undo_file', { path: '/e/a.txt' });
    expect(again.output).toMatch(
      /^Undid the write of e\/a\.txt \(call [^)]+\): removed e\/a\.txt \(the change had created it\)\.$/,
    );
    expect(await text(s, 'e/a.txt')).toBeUndefined();
    const none = await one(s, 'undo_file', { path: 'e/a.txt' });
    expect(none.ok).toBe(false);
    expect(none.output).toMatch(/^No change to e\/a\.txt is recorded for undo \(undo remembers the last 100 changes/);
  });

  it('undoes edits whose replacements change the UTF-8 size (multi-byte text in, out, with a BOM, several matches)', async () => {
    const start = '\uFEFFcafé = 1\nnaïve = 2\ncafé = 3\n';
    await one(s, 'write', { filePath: 'm/u.txt', content: start });
    for (const [oldString, newString, replaceAll] of [
      ['café', 'coffee ☕ 😀', true],
      ['naïve', 'n', false],
      ['= 3', '= ∞ €', false],
    ] as const) {
      const before = await text(s, 'm/u.txt');
      expect((await one(s, 'edit', { filePath: 'm/u.txt', oldString, newString, replaceAll })).ok).toBe(true);
      expect(await text(s, 'm/u.txt')).not.toBe(before);
    }
    for (let i = 0; i < 3; i++)
      expect((await one(s, 'undo_file', { path: 'm/u.txt' })).output).toMatch(/^Undid the edit/);
    expect(await text(s, 'm/u.txt')).toBe(start.replace(/^\uFEFF/, '').replace(/\n$/, ''));
  });

  it('refuses, with the local sentence, when the file changed after the edit; nothing is undone', async () => {
    await one(s, 'write', { filePath: 'r/b.txt', content: 'one\ntwo' });
    await one(s, 'edit', { filePath: 'r/b.txt', oldString: 'two', newString: 'TWO' });
    // Another session changes it since (its own write after reading it).
    await s.turn([['read', { filePath: 'r/b.txt' }]], 'other');
    expect((await s.turn([['write', { filePath: 'r/b.txt', content: 'someone else' }]], 'other'))[0].ok).toBe(true);
    const u = await one(s, 'undo_file', { path: 'r/b.txt' });
    expect(u.ok).toBe(false);
    expect(u.output).toMatch(
      /^r\/b\.txt changed since the edit of r\/b\.txt \(call [^)]+\): it now holds 12 bytes, not what that change left\. Nothing was undone; read the file and make the change you want with edit or write instead\.$/,
    );
    expect(await text(s, 'r/b.txt')).toBe('someone else');
  });

  it('undo_turn reverts the previous turn: several writes, an edit, a move and a delete, newest first', async () => {
    await s.turn([
      ['write', { filePath: 't/x.txt', content: 'x1' }],
      ['write', { filePath: 't/y.txt', content: 'y1' }],
      ['write', { filePath: 't/d/z.txt', content: 'z1' }],
    ]);
    await s.turn([
      ['edit', { filePath: 't/x.txt', oldString: 'x1', newString: 'x2' }],
      ['move', { from: 't/y.txt', to: 't/moved.txt' }],
      ['delete', { path: 't/d', recursive: true }],
      ['write', { filePath: 't/new.txt', content: 'new' }],
    ]);
    expect(await text(s, 't/x.txt')).toBe('x2');
    expect(await text(s, 't/y.txt')).toBeUndefined();
    expect(await text(s, 't/d/z.txt')).toBeUndefined();
    const [u] = await s.turn([['undo_turn', {}]]);
    expect(u.ok).toBe(true);
    expect(u.output).toMatch(/^Undid 4 changes of the previous turn, newest first:\n- /);
    expect(u.output).toMatch(/- delete of t\/d \(call [^)]+\): restored the directory t\/d and the 1 file in it\./);
    expect(u.output).toMatch(
      /- move of t\/y\.txt to t\/moved\.txt \(call [^)]+\): restored t\/y\.txt \(2 bytes\); removed t\/moved\.txt/,
    );
    expect(await text(s, 't/x.txt')).toBe('x1');
    expect(await text(s, 't/y.txt')).toBe('y1');
    expect(await text(s, 't/moved.txt')).toBeUndefined();
    expect(await text(s, 't/d/z.txt')).toBe('z1');
    expect(await text(s, 't/new.txt')).toBeUndefined();
    // The turn before: the three writes.
    const [v] = await s.turn([['undo_turn', {}]]);
    expect(v.output).toMatch(/^Undid 3 changes of the previous turn/);
    expect(await text(s, 't/x.txt')).toBeUndefined();
  });

  it('undo_file of a directory move puts its files back and removes the copies', async () => {
    await s.turn([
      ['write', { filePath: 'mv/src/one.txt', content: '1' }],
      ['write', { filePath: 'mv/src/two.txt', content: '22' }],
    ]);
    expect((await one(s, 'move', { from: 'mv/src', to: 'mv/dst' })).ok).toBe(true);
    expect(await text(s, 'mv/dst/two.txt')).toBe('22');
    const u = await one(s, 'undo_file', { path: 'mv/dst' });
    expect(u.output).toMatch(
      /^Undid the move of mv\/src to mv\/dst \(call [^)]+\): put the 2 files back in mv\/src and removed their copies\.$/,
    );
    expect(await text(s, 'mv/src/one.txt')).toBe('1');
    expect(await text(s, 'mv/src/two.txt')).toBe('22');
    expect(await text(s, 'mv/dst/one.txt')).toBeUndefined();
  });

  it('undo_turn is all or nothing: one file changed since makes it undo nothing', async () => {
    await s.turn([['write', { filePath: 'n/p.txt', content: 'p' }]]);
    await s.turn([
      ['edit', { filePath: 'n/p.txt', oldString: 'p', newString: 'P' }],
      ['write', { filePath: 'n/q.txt', content: 'q' }],
    ]);
    await s.turn([['read', { filePath: 'n/q.txt' }]], 'other');
    await s.turn([['write', { filePath: 'n/q.txt', content: 'changed' }]], 'other');
    const [u] = await s.turn([['undo_turn', {}]]);
    expect(u.ok).toBe(false);
    expect(u.output).toMatch(/^n\/q\.txt changed since the write of n\/q\.txt/);
    expect(await text(s, 'n/p.txt')).toBe('P');
    expect(await text(s, 'n/q.txt')).toBe('changed');
  });
});

/** A real FilesystemBackend whose methods can be made to throw (the engine broken mid-undo). */
function breakable(root: string) {
  const real = new FilesystemBackend({ rootDir: root, virtualMode: true });
  const broken = new Set<string>();
  let writesLeft = Infinity;
  const backend = {
    ls: (p: string) => real.ls(p),
    read: (p: string, o?: number, l?: number) => real.read(p, o, l),
    readRaw: (p: string) => real.readRaw(p),
    grep: (p: string, d?: string | null, g?: string | null) => real.grep(p, d ?? undefined, g),
    glob: (p: string, d?: string) => real.glob(p, d),
    write: (p: string, c: string) => {
      if (broken.has('write') && writesLeft-- <= 0) throw new Error('disk quota exceeded');
      return real.write(p, c);
    },
    edit: (p: string, o: string, n: string, r?: boolean) => {
      if (broken.has('edit')) throw new Error('connection reset');
      return real.edit(p, o, n, r);
    },
    delete: (p: string) => real.delete(p),
  };
  return { backend, broken, failWritesAfter: (n: number) => (writesLeft = n) };
}

describe('a backend that fails during undo', () => {
  it('leaves a sentence and nothing half-restored: the files already restored are put back', async () => {
    const dir = await tempDir('undo-broken-');
    cleanups.push(dir.cleanup);
    const b = breakable(dir.dir);
    const h = direct('broken', { backend: b.backend });
    await h.call('write', { filePath: 'a.txt', content: 'a1' }, 's1', 'T1');
    await h.call('write', { filePath: 'c.txt', content: 'c1' }, 's1', 'T1');
    await h.call('delete', { path: 'a.txt' }, 's1', 'T2');
    await h.call('edit', { filePath: 'c.txt', oldString: 'c1', newString: 'c2' }, 's1', 'T2');
    // Restoring a.txt (a write) succeeds, c.txt (an edit of its whole content) fails.
    b.broken.add('edit');
    const u = await h.call('undo_turn', {}, 's1', 'T3');
    expect(u.ok).toBe(false);
    expect(u.output).toBe(
      'Undo failed: The backend backend failed at edit of /c.txt: connection reset. Nothing was undone (the 1 file already restored was put back as it was); retry once the backend works.',
    );
    // a.txt was written back, then removed again (the rollback); c.txt untouched.
    await expect(readFile(path.join(dir.dir, 'a.txt'), 'utf8')).rejects.toThrow();
    expect(await readFile(path.join(dir.dir, 'c.txt'), 'utf8')).toBe('c2');
    // Once the backend works again, the same undo succeeds: nothing was forgotten.
    b.broken.delete('edit');
    const again = await h.call('undo_turn', {}, 's1', 'T3');
    expect(again.ok).toBe(true);
    expect(await readFile(path.join(dir.dir, 'a.txt'), 'utf8')).toBe('a1');
    expect(await readFile(path.join(dir.dir, 'c.txt'), 'utf8')).toBe('c1');
  });

  it('says which file could not be put back when the rollback fails too', async () => {
    const dir = await tempDir('undo-broken2-');
    cleanups.push(dir.cleanup);
    const b = breakable(dir.dir);
    const h = direct('broken', { backend: b.backend });
    await h.call('write', { filePath: 'a.txt', content: 'a1' }, 's1', 'T1');
    await h.call('write', { filePath: 'b.txt', content: 'b1' }, 's1', 'T1');
    await h.call('edit', { filePath: 'a.txt', oldString: 'a1', newString: 'a2' }, 's1', 'T2');
    await h.call('delete', { path: 'b.txt' }, 's1', 'T2');
    // a.txt is restored through edit; b.txt through write, which now fails (and edit, for the rollback of a.txt).
    b.broken.add('write');
    b.failWritesAfter(0);
    const orig = b.backend.edit;
    let edits = 0;
    b.backend.edit = (p, o, n, r) => {
      if (++edits > 1) throw new Error('connection reset');
      return orig(p, o, n, r);
    };
    const u = await h.call('undo_turn', {}, 's1', 'T3');
    expect(u.ok).toBe(false);
    expect(u.output).toBe(
      'Undo failed part-way: The backend backend failed at write of /b.txt: disk quota exceeded. a.txt could not be put back as it was before the undo. Check those files with read, and retry once the backend works.',
    );
    // What a.txt holds is said: the restored content (the undo's own), never a torn mix.
    expect(await readFile(path.join(dir.dir, 'a.txt'), 'utf8')).toBe('a1');
  });
});

describe('what undo needs from a backend', () => {
  it('a backend without write gets undo tools that say what is missing', async () => {
    const files = new Map([['/a.txt', 'x']]);
    const readOnly = {
      ls: () => ({ files: [] }),
      read: () => ({ content: 'x' }),
      readRaw: (p: string) => (files.has(p) ? { data: { content: files.get(p)! } } : { error: 'not found' }),
      grep: () => ({ matches: [] }),
      glob: () => ({ files: [] }),
      edit: () => ({ error: 'read only' }),
    };
    const h = direct('ro', { backend: readOnly as never });
    for (const tool of ['undo_file', 'undo_turn']) {
      const u = await h.call(tool, tool === 'undo_file' ? { path: 'a.txt' } : {});
      expect(u.output).toBe(
        `${tool} is not available: the backend backend has no write method, which undo needs to check a file and put its earlier content back.`,
      );
      expect((await h.registry.initialized(tool, { backend: readOnly as never })).unavailable).toBe(u.output);
    }
  });

  it('a backend without delete undoes edits but refuses to undo a create, changing nothing', async () => {
    const files = new Map<string, string>();
    const noDelete = {
      ls: (p: string) => ({
        files: [...files.keys()].filter((k) => k.startsWith(p === '/' ? '/' : `${p}/`)).map((k) => ({ path: k })),
      }),
      read: (p: string) => ({ content: files.get(p) ?? '' }),
      readRaw: (p: string) => (files.has(p) ? { data: { content: files.get(p)! } } : { error: 'not found' }),
      grep: () => ({ matches: [] }),
      glob: () => ({ files: [...files.keys()].map((k) => ({ path: k })) }),
      write: (p: string, c: string) => (files.has(p) ? { error: 'exists' } : (files.set(p, c), { path: p })),
      edit: (p: string, o: string, n: string) => {
        const t = files.get(p);
        if (t === undefined || t.split(o).length !== 2) return { error: 'not found once' };
        files.set(p, t.replace(o, n));
        return { path: p, occurrences: 1 };
      },
    };
    const h = direct('nodel', { backend: noDelete as never });
    await h.call('write', { filePath: 'a.txt', content: 'one' });
    await h.call('edit', { filePath: 'a.txt', oldString: 'one', newString: 'two' });
    expect((await h.call('undo_file', { path: 'a.txt' })).ok).toBe(true);
    expect(files.get('/a.txt')).toBe('one');
    const u = await h.call('undo_file', { path: 'a.txt' });
    expect(u.output).toBe(
      'Undoing would remove a.txt (created by the change), but the backend backend has no delete method. Nothing was undone; empty the file with write instead.',
    );
    expect(files.get('/a.txt')).toBe('one');
  });

  it(`keeps a directory delete of MAX_BACKEND_UNDO_FILES (${MAX_BACKEND_UNDO_FILES}) files undoable, and says why one more is not`, async () => {
    for (const n of [MAX_BACKEND_UNDO_FILES, MAX_BACKEND_UNDO_FILES + 1]) {
      const store = new InMemoryStore();
      const backend = new StoreBackend({ store, namespace: ['many'] });
      for (let i = 0; i < n; i++) await backend.write(`/big/f${i}.txt`, `${i}`);
      const h = direct('many', { backend });
      expect((await h.call('delete', { path: 'big', recursive: true })).ok).toBe(true);
      const u = await h.call('undo_file', { path: 'big' });
      if (n === MAX_BACKEND_UNDO_FILES) {
        expect(u.output).toMatch(new RegExp(`restored the directory big and the ${n} files in it\\.$`));
        expect((await backend.readRaw('/big/f7.txt')).data?.content).toBe('7');
      } else {
        expect(u.output).toBe(
          `The delete of big (call ${u.output.match(/\(call ([^)]+)\)/)?.[1]}) cannot be undone: it removed ${n} files, more than the ${MAX_BACKEND_UNDO_FILES} undo keeps on a backend. Nothing was undone; restore it another way (e.g. from version control).`,
        );
      }
    }
  }, 60_000);
});

describe('undo over a backend never touches the host', () => {
  it('a host workspace file of the same name is left alone; undo works on the backend file', async () => {
    const host = await tempDir('undo-host-');
    const store = await tempDir('undo-store-');
    cleanups.push(host.cleanup, store.cleanup);
    await writeFile(path.join(host.dir, 'same.txt'), 'host file\n');
    const h = direct('fs', {
      workspaceRoot: host.dir,
      backend: new FilesystemBackend({ rootDir: store.dir, virtualMode: true }),
    });
    expect((await h.call('write', { filePath: 'same.txt', content: 'backend' })).ok).toBe(true);
    expect((await h.call('undo_file', { path: 'same.txt' })).ok).toBe(true);
    await expect(readFile(path.join(store.dir, 'same.txt'), 'utf8')).rejects.toThrow();
    expect(await readFile(path.join(host.dir, 'same.txt'), 'utf8')).toBe('host file\n');
    // The host path given as an absolute path is a backend path there: nothing recorded under it.
    const u = await h.call('undo_file', { path: path.join(host.dir, 'same.txt') });
    expect(u.output).toMatch(/^No change to .*same\.txt is recorded for undo/);
    expect(await readFile(path.join(host.dir, 'same.txt'), 'utf8')).toBe('host file\n');
  });
});
