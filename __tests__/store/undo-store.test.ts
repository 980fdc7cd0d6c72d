/**
 * Undo history on the store: with a store bound (the registry's, or a graph's own), each change
 * write, edit, move and delete make is saved as one `~undo` record before the tool answers, so
 * another registry on the same store and namespace (and the same files: one workspace directory, or
 * one backend) can undo it; the caps hold on the store (oldest removed); a malformed record is
 * named and the others keep working; namespaces never see each other's undo; a store failing at
 * save time leaves the change made and says so. Engines: InMemoryStore and a real PostgreSQL.
 */
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InMemoryStore, MemorySaver } from '@langchain/langgraph';
import { StoreBackend } from 'deepagents';
import {
  createRegistry,
  registerBuiltinTools,
  type OpenedStore,
  type StoreNamespace,
  type Tool,
  type ToolStore,
} from '../../src/index.js';
import { MAX_UNDO_BYTES, MAX_UNDO_RECORDS } from '../../src/constants.js';
import { tempDir } from '../support/helpers.js';
import {
  PG_MISSING,
  startStoreFixture,
  stopStoreFixture,
  type PgServer,
  type StoreFixture,
} from '../support/postgres-server.js';
import { stateGraph } from '../support/backend-harness.js';
import { spawn } from 'node:child_process';
import { CLI, ROOT, ensureDist } from '../support/dist.js';

if (PG_MISSING) console.warn(PG_MISSING);

let ws: StoreFixture['ws'];
let pg: PgServer | undefined;
let pgStore: OpenedStore | undefined;

beforeAll(async () => ({ ws, pg, pgStore } = await startStoreFixture('toolbelt-undo-store-')), 60_000);
afterAll(() => stopStoreFixture({ ws, pg, pgStore }), 60_000);

let n = 0;
/** A label no other test uses (the Postgres database is shared by the suite). */
const fresh = (tag: string) => `${tag}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

function registry(store: ToolStore | undefined, namespace?: StoreNamespace) {
  return registerBuiltinTools(createRegistry({ store, namespace, loopGuard: false }));
}
const initCtx = () => ({ workingDir: ws.dir, workspaceRoot: ws.dir });
async function call(
  r: ReturnType<typeof registry>,
  id: string,
  args: unknown,
  turn?: string,
  init: Tool.InitContext = initCtx(),
) {
  const u = await r.execute(id, args, { sessionID: 's-1', ...(turn ? { messageID: turn } : {}) }, init);
  return { ok: u.success, output: u.success ? u.result.output : (u.error ?? '') };
}
const undoNs = (label: string) => ['toolbelt', label, '~undo'];

const ENGINES: Array<[string, () => ToolStore]> = [
  ['InMemoryStore', () => new InMemoryStore()],
  ...(PG_MISSING ? [] : [['PostgresStore', () => pgStore!] as [string, () => ToolStore]]),
];

describe.each(ENGINES)('undo history on %s', (_name, engine) => {
  it('a change made through one registry is undone through another on the same store and namespace; another namespace sees nothing', async () => {
    const store = engine();
    const label = fresh('team');
    const a = registry(store, [label]);
    const b = registry(store, [label]);
    const other = registry(store, [fresh('other')]);
    const file = `${fresh('shared')}.txt`;
    const abs = path.join(ws.dir, file);
    await writeFile(abs, 'alpha\nbeta\n');
    expect((await call(a, 'read', { filePath: file })).ok).toBe(true);
    expect((await call(a, 'edit', { filePath: file, oldString: 'beta', newString: 'BETA' })).ok).toBe(true);
    // Saved before edit answered: the record is already there, whole (content base64, fingerprints hex).
    const items = await store.search(undoNs(label));
    expect(items).toHaveLength(1);
    const value = items[0].value as { effects: Array<{ before: { data: string; sha256: string } }> };
    expect(Buffer.from(value.effects[0].before.data, 'base64').toString()).toBe('alpha\nbeta\n');
    expect(value.effects[0].before.sha256).toMatch(/^[0-9a-f]{64}$/);

    expect((await call(other, 'undo_file', { path: file })).output).toMatch(/^No change to .* is recorded for undo/);
    const u = await call(b, 'undo_file', { path: file });
    expect(u.output).toMatch(/^Undid the edit of .* \(call [^)]+\): restored .* \(11 bytes\)\.$/);
    expect(await readFile(abs, 'utf8')).toBe('alpha\nbeta\n');
    // Undone: gone from the store, so the first registry cannot undo it a second time.
    expect(await store.search(undoNs(label))).toHaveLength(0);
    expect((await call(a, 'undo_file', { path: file })).output).toMatch(/^No change to .* is recorded for undo/);
  });

  it('a turn of several changes (write, move, delete) is undone by another registry', async () => {
    const store = engine();
    const label = fresh('turn');
    const a = registry(store, [label]);
    const b = registry(store, [label]);
    const dir = fresh('dir');
    await call(a, 'write', { filePath: `${dir}/x.txt`, content: 'x' }, 'T1');
    await call(a, 'write', { filePath: `${dir}/sub/y.txt`, content: 'y' }, 'T1');
    await call(a, 'move', { from: `${dir}/x.txt`, to: `${dir}/z.txt` }, 'T2');
    await call(a, 'delete', { path: `${dir}/sub`, recursive: true }, 'T2');
    const u = await call(b, 'undo_turn', {}, 'T3');
    expect(u.output).toMatch(/^Undid 2 changes of the previous turn, newest first:\n- delete of .*\n- move of /);
    expect(await readFile(path.join(ws.dir, dir, 'x.txt'), 'utf8')).toBe('x');
    expect(await readFile(path.join(ws.dir, dir, 'sub', 'y.txt'), 'utf8')).toBe('y');
    expect(existsSync(path.join(ws.dir, dir, 'z.txt'))).toBe(false);
  });

  it('over a shared backend: a StoreBackend edit is undone by a second registry', async () => {
    const store = engine();
    const label = fresh('backend');
    const files = new StoreBackend({ store: new InMemoryStore(), namespace: ['shared-files'] });
    const a = registry(store, [label]);
    const b = registry(store, [label]);
    const init = { backend: files };
    await call(a, 'write', { filePath: 'doc.md', content: 'draft' }, 'T1', init);
    await call(a, 'edit', { filePath: 'doc.md', oldString: 'draft', newString: 'final' }, 'T2', init);
    expect((await call(b, 'undo_file', { path: 'doc.md' }, 'T3', init)).ok).toBe(true);
    expect((await files.readRaw('/doc.md')).data?.content).toBe('draft');
    // A local registry on the same namespace never takes a backend's change for a host path.
    const local = await call(b, 'undo_file', { path: 'doc.md' }, 'T4');
    expect(local.output).toMatch(/^No change to doc\.md is recorded for undo/);
    // ... nor as a turn of its own (the backend's write of T1 is still recorded).
    expect((await call(b, 'undo_turn', {}, 'T5')).output).toMatch(/^No earlier turn of this session changed files/);
    expect((await call(b, 'undo_turn', {}, 'T5', init)).output).toMatch(/^Undid 1 change of the previous turn/);
  });

  it('a malformed record is named; the other records keep working', async () => {
    const store = engine();
    const label = fresh('bad');
    const a = registry(store, [label]);
    const file = `${fresh('m')}.txt`;
    await call(a, 'write', { filePath: file, content: 'one' });
    await call(a, 'write', { filePath: file, content: 'two' });
    const good = (await store.search(undoNs(label))).find(
      (i) => (i.value as { effects: Array<{ before: { type: string } }> }).effects[0].before.type === 'file',
    )!;
    // One from an older version, one edited by hand (content no longer what its fingerprint says).
    await store.put(undoNs(label), 'from-an-older-version', { summary: 'something' });
    const tampered = structuredClone(good.value) as { effects: Array<{ before: Record<string, unknown> }> };
    await store.put(undoNs(label), 'edited-by-hand', {
      ...tampered,
      effects: [{ ...tampered.effects[0], before: { ...tampered.effects[0].before, data: 'b3ducw==' } }],
    });
    const b = registry(store, [label]);
    const u = await call(b, 'undo_file', { path: file });
    expect(u.output).toMatch(/^Undid the write of .*: restored .* \(3 bytes\)\.\n\n/);
    expect(u.output).toContain(
      `The undo record "from-an-older-version" in the state store (namespace toolbelt/${label}/~undo) is not in the shape this version writes (written by an older version, or edited by hand). Fix or delete that record; other records are unaffected.`,
    );
    expect(u.output).toContain('The undo record "edited-by-hand" in the state store');
    expect(await readFile(path.join(ws.dir, file), 'utf8')).toBe('one');
  });
});

describe.each(ENGINES)('caps on %s', (_name, engine) => {
  it(`keeps MAX_UNDO_RECORDS (${MAX_UNDO_RECORDS}) records on the store and removes the oldest past it`, async () => {
    const store = engine();
    const label = fresh('cap');
    const a = registry(store, [label]);
    const file = `${fresh('c')}.txt`;
    for (let i = 0; i < MAX_UNDO_RECORDS; i++) await call(a, 'write', { filePath: file, content: `v${i}` });
    const at = await store.search(undoNs(label), { limit: 1000 });
    expect(at).toHaveLength(MAX_UNDO_RECORDS);
    const oldest = at.sort((x, y) => (x.value.time as number) - (y.value.time as number))[0];
    expect((oldest.value as { effects: Array<{ before: { type: string } }> }).effects[0].before.type).toBe('absent');
    await call(a, 'write', { filePath: file, content: 'one more' });
    const past = await store.search(undoNs(label), { limit: 1000 });
    expect(past).toHaveLength(MAX_UNDO_RECORDS);
    // The oldest (the create) is gone; the newest is there.
    expect(past.map((i) => i.key)).not.toContain(oldest.key);
    expect(past.map((i) => i.value.summary as string)).toContain(`write of ${file}`);
  });

  it(`keeps MAX_UNDO_BYTES (${MAX_UNDO_BYTES}) bytes of earlier content on the store and removes the oldest past it`, async () => {
    for (const extra of [0, 1]) {
      const store = engine();
      const label = fresh('bytes');
      const a = registry(store, [label]);
      const file = `${fresh('b')}.txt`;
      const half = MAX_UNDO_BYTES / 2;
      // Three writes: a create (0 bytes kept), then two rewrites keeping `half` bytes each (+1 byte past the edge).
      await call(a, 'write', { filePath: file, content: 'a'.repeat(half) });
      await call(a, 'write', { filePath: file, content: 'b'.repeat(half + extra) });
      await call(a, 'write', { filePath: file, content: 'c' });
      const kept = await store.search(undoNs(label), { limit: 10 });
      const bytes = kept.reduce((s, i) => s + (i.value.bytes as number), 0);
      if (extra === 0) {
        expect(kept).toHaveLength(3);
        expect(bytes).toBe(MAX_UNDO_BYTES);
      } else {
        // 2*half+1 bytes is one past the cap: the oldest go (the create, then the first rewrite).
        expect(kept).toHaveLength(1);
        expect(bytes).toBe(half + 1);
      }
    }
  }, 60_000);
});

describe('a store that fails', () => {
  it('at save time: the change is made, the result says its undo record was not saved, and this process can still undo it', async () => {
    const real = new InMemoryStore();
    const broken: ToolStore = {
      get: (ns, k) => real.get(ns, k),
      search: (ns, o) => real.search(ns, o),
      delete: (ns, k) => real.delete(ns, k),
      put: () => Promise.reject(new Error('connection refused')),
    };
    const a = registry(broken, [fresh('down')]);
    const file = `${fresh('d')}.txt`;
    const w = await call(a, 'write', { filePath: file, content: 'kept' });
    expect(w.ok).toBe(true);
    expect(w.output).toMatch(
      /\n\nThe change was made, but its undo record could not be saved in the state store \(The state store failed while saving undo record "[^"]+" \(connection refused\), so the call did not complete\. Try again once the store is reachable\.\); it can be undone from this process only\.$/,
    );
    expect(await readFile(path.join(ws.dir, file), 'utf8')).toBe('kept');
    const u = await call(a, 'undo_file', { path: file });
    expect(u.output).toMatch(/removed .* \(the change had created it\)\.$/);
    expect(existsSync(path.join(ws.dir, file))).toBe(false);
  });
});

describe('order', () => {
  it('changes recorded within one millisecond come back from the store in the order they were made', async () => {
    const store = new InMemoryStore();
    const label = fresh('order');
    const a = registry(store, [label]);
    const file = `${fresh('o')}.txt`;
    await call(a, 'write', { filePath: file, content: 'v0' }, 'T1');
    // The clock stands still: every record of the turn has the same time, and only its count orders it.
    jest.useFakeTimers({
      doNotFake: [
        'nextTick',
        'setImmediate',
        'setTimeout',
        'setInterval',
        'queueMicrotask',
        'clearTimeout',
        'clearInterval',
        'clearImmediate',
        'performance',
        'hrtime',
      ],
    });
    try {
      for (let i = 0; i < 11; i++)
        await call(a, 'edit', { filePath: file, oldString: `v${i}`, newString: `v${i + 1}` }, 'T2');
    } finally {
      jest.useRealTimers();
    }
    const u = await call(registry(store, [label]), 'undo_turn', {}, 'T3');
    expect(u.output).toMatch(/^Undid 11 changes of the previous turn, newest first:/);
    expect(await readFile(path.join(ws.dir, file), 'utf8')).toBe('v0');
  });
});

describe('a store that goes down before an undo', () => {
  it('the undo fails with one sentence naming the store and the operation, and restores nothing', async () => {
    const real = new InMemoryStore();
    let down = false;
    const flaky: ToolStore = {
      get: (ns, k) => real.get(ns, k),
      put: (ns, k, v) => real.put(ns, k, v),
      delete: (ns, k) => real.delete(ns, k),
      search: (ns, o) => (down ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')) : real.search(ns, o)),
    };
    const label = fresh('flaky');
    const a = registry(flaky, [label]);
    const file = `${fresh('f')}.txt`;
    await call(a, 'write', { filePath: file, content: 'one' });
    await call(a, 'write', { filePath: file, content: 'two' });
    down = true;
    const u = await call(registry(flaky, [label]), 'undo_file', { path: file });
    expect(u.output).toBe(
      'The state store failed while listing undo records (connect ECONNREFUSED 127.0.0.1:5432), so the call did not complete. Try again once the store is reachable.',
    );
    expect(await readFile(path.join(ws.dir, file), 'utf8')).toBe('two');
    down = false;
    expect((await call(registry(flaky, [label]), 'undo_file', { path: file })).ok).toBe(true);
    expect(await readFile(path.join(ws.dir, file), 'utf8')).toBe('one');
  });
});

describe("a graph's own store", () => {
  it('our tools in a LangGraph graph with a store save undo records there (StateBackend files), and undo_turn reads them back', async () => {
    const store = new InMemoryStore();
    const saver = new MemorySaver();
    const label = fresh('graph');
    const g1 = await stateGraph(saver, 'undo-graph', { namespace: [label] }, store);
    await g1.turn([
      ['write', { filePath: 'a.md', content: 'A' }],
      ['write', { filePath: 'b.md', content: 'B' }],
    ]);
    expect(await store.search(undoNs(label))).toHaveLength(2);
    // A new registry on the same thread and store (a restarted process) undoes that turn.
    const g2 = await stateGraph(saver, 'undo-graph', { namespace: [label] }, store);
    const [u] = await g2.turn([['undo_turn', {}]]);
    expect(u.output).toMatch(/^Undid 2 changes of the previous turn/);
    expect((await g2.call('read', { filePath: 'a.md' })).output).toMatch(/^File a\.md does not exist/);
  });
});

/** The parts of a record the hostile tests rewrite. */
interface Tamper extends Record<string, unknown> {
  effects: Array<{ path: string; before: { tree: Array<{ rel: string }> } }>;
  move: { from: string };
}

describe('hostile undo records on the store', () => {
  /** A genuine record of `tool` made by a registry on `store`, as JSON to tamper with. */
  async function genuine(store: InMemoryStore, label: string, make: (r: ReturnType<typeof registry>) => Promise<void>) {
    await make(registry(store, [label]));
    const items = await store.search(undoNs(label));
    const newest = items.sort((x, y) => (x.value.time as number) - (y.value.time as number)).at(-1)!;
    return { key: newest.key, value: structuredClone<Record<string, unknown>>(newest.value) as unknown as Tamper };
  }

  it('a record naming a path outside the workspace restores nothing there, even when its content matches', async () => {
    const outside = await tempDir('toolbelt-undo-decoy-');
    try {
      const decoy = path.join(outside.dir, 'decoy.txt');
      await writeFile(decoy, 'two');
      const store = new InMemoryStore();
      const label = fresh('hostile');
      const file = `${fresh('h')}.txt`;
      const { key, value } = await genuine(store, label, async (r) => {
        await call(r, 'write', { filePath: file, content: 'one' }, 'T1');
        await call(r, 'write', { filePath: file, content: 'two' }, 'T2');
      });
      value.effects[0].path = decoy;
      await store.put(undoNs(label), key, value);
      const u = await call(registry(store, [label]), 'undo_turn', {}, 'T3');
      expect(u.ok).toBe(false);
      expect(u.output).toMatch(/^Path ".*decoy\.txt" is outside the workspace\. Allowed roots: /);
      expect(await readFile(decoy, 'utf8')).toBe('two');
    } finally {
      await outside.cleanup();
    }
  });

  it('a move record whose rename names other paths than its effects is refused as malformed; nothing moves', async () => {
    const outside = await tempDir('toolbelt-undo-decoy-');
    try {
      const store = new InMemoryStore();
      const label = fresh('hostile-move');
      const dir = fresh('mv');
      const { key, value } = await genuine(store, label, async (r) => {
        await call(r, 'write', { filePath: `${dir}/a.txt`, content: 'a' }, 'T1');
        await call(r, 'move', { from: `${dir}/a.txt`, to: `${dir}/b.txt` }, 'T2');
      });
      value.move.from = path.join(outside.dir, 'stolen.txt');
      await store.put(undoNs(label), key, value);
      const u = await call(registry(store, [label]), 'undo_file', { path: `${dir}/b.txt` });
      expect(u.output).toContain(`The undo record "${key}" in the state store`);
      expect(existsSync(path.join(outside.dir, 'stolen.txt'))).toBe(false);
      expect(await readFile(path.join(ws.dir, dir, 'b.txt'), 'utf8')).toBe('a');
    } finally {
      await outside.cleanup();
    }
  });

  it("a deleted directory's entry whose path climbs out of it is refused as malformed; nothing is written", async () => {
    const store = new InMemoryStore();
    const label = fresh('hostile-tree');
    const dir = fresh('tree');
    const { key, value } = await genuine(store, label, async (r) => {
      await call(r, 'write', { filePath: `${dir}/sub/f.txt`, content: 'f' }, 'T1');
      await call(r, 'delete', { path: `${dir}/sub`, recursive: true }, 'T2');
    });
    value.effects[0].before.tree[0].rel = '../escape.txt';
    await store.put(undoNs(label), key, value);
    const u = await call(registry(store, [label]), 'undo_file', { path: `${dir}/sub` });
    expect(u.output).toContain(`The undo record "${key}" in the state store`);
    expect(existsSync(path.join(ws.dir, dir, 'escape.txt'))).toBe(false);
    expect(existsSync(path.join(ws.dir, dir, 'sub'))).toBe(false);
  });
});

/** One `toolbelt` CLI process; resolves with its exit code and output. */
function toolbelt(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, TOOLBELT_STORE_URL: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('separate processes', () => {
  (PG_MISSING ? it.skip : it)(
    'a change made by one `toolbelt run` process is undone by another on the same PostgreSQL store',
    async () => {
      await ensureDist();
      const state = await tempDir('toolbelt-undo-cli-state-');
      try {
        const dir = fresh('cli');
        const base = ['--workspace', ws.dir, '--session', 's1', '--store', pg!.url, '--store-namespace', dir];
        const env = { TOOLBELT_STATE_DIR: state.dir };
        const file = `${dir}.txt`;
        await writeFile(path.join(ws.dir, file), 'before\n');
        expect((await toolbelt(['run', 'read', JSON.stringify({ filePath: file }), ...base], env)).code).toBe(0);
        const w = await toolbelt(
          ['run', 'write', JSON.stringify({ filePath: file, content: 'after\n' }), ...base],
          env,
        );
        expect(w.code).toBe(0);
        expect(await readFile(path.join(ws.dir, file), 'utf8')).toBe('after\n');
        // A third process: it has only the store to know what the second one changed.
        const u = await toolbelt(['run', 'undo_file', JSON.stringify({ path: file }), ...base], env);
        expect(u.out).toMatch(/Undid the write of .* \(call [^)]+\): restored .* \(7 bytes\)\./);
        expect(u.code).toBe(0);
        expect(await readFile(path.join(ws.dir, file), 'utf8')).toBe('before\n');
      } finally {
        await state.cleanup();
      }
    },
    180_000,
  );
});
