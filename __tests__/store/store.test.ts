/**
 * The store seam on real engines: LangGraph's InMemoryStore and PostgresStore on a real PostgreSQL
 * server (started in a temp dir, stopped and removed after). Todo lists, memory notes and pending
 * calls shared by registries given the same store and namespace, never across namespaces (hostile
 * labels included); malformed records named by key; the store going down mid-call.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { z } from 'zod';
import { InMemoryStore, StateGraph, Annotation, START, END, type BaseStore } from '@langchain/langgraph';
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import {
  Tool,
  createRegistry,
  registerBuiltinTools,
  encodeLabel,
  decodeLabel,
  openStore,
  createPolicy,
  type ToolStore,
  type StoreNamespace,
  type OpenedStore,
} from '../../src/index.js';
import { MAX_NAMESPACE_LABELS, MAX_NAMESPACE_LABEL_CHARS, resolveNamespace } from '../../src/store/namespace.js';
import { StoreScope } from '../../src/store/scope.js';
import {
  MEMORY_TOOLS,
  MAX_MEMORY_NOTE_RECORDS,
  MAX_STORE_SCAN_RECORDS,
  STORE_PAGE_SIZE,
  STORE_UPDATE_ATTEMPTS,
} from '../../src/constants.js';
import http from 'node:http';
import { listenLoopback, closeServer } from '../support/helpers.js';
import {
  PG_MISSING,
  startStoreFixture,
  stopStoreFixture,
  type PgServer,
  type StoreFixture,
} from '../support/postgres-server.js';
import { ensureDist, ROOT } from '../support/dist.js';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

if (PG_MISSING) console.warn(PG_MISSING);

const askTool = Tool.define(
  { id: 'ask_person', permissions: { required: ['read'] } },
  {
    description: 'Ask a person; the answer comes later.',
    parameters: z.object({ question: z.string() }),
    async execute() {
      return Tool.pending({ message: 'Asked.', expiresInMs: 60_000 });
    },
  },
);

let ws: StoreFixture['ws'];
let pg: PgServer | undefined;
let pgStore: OpenedStore | undefined;

beforeAll(async () => ({ ws, pg, pgStore } = await startStoreFixture('toolbelt-store-')), 60_000);
afterAll(() => stopStoreFixture({ ws, pg, pgStore }), 60_000);

let n = 0;
/** A namespace label no other test uses (the Postgres database is shared by the suite). */
const fresh = (tag: string) => `${tag}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

function registry(store: ToolStore | undefined, namespace?: StoreNamespace) {
  const r = createRegistry({ store, namespace, loopGuard: false });
  registerBuiltinTools(r, ['todowrite', 'todoread', ...MEMORY_TOOLS]);
  r.register(askTool);
  return r;
}
const initCtx = () => ({ workingDir: ws.dir, workspaceRoot: ws.dir });
const call = (
  r: ReturnType<typeof registry>,
  id: string,
  args: unknown,
  sessionID = 's-1',
  extra?: Record<string, unknown>,
) => r.execute(id, args, { sessionID, extra }, initCtx());

const ENGINES: Array<[string, () => ToolStore]> = [
  ['InMemoryStore', () => new InMemoryStore()],
  ...(PG_MISSING ? [] : [['PostgresStore', () => pgStore!] as [string, () => ToolStore]]),
];

/** `store` with each answer delivered one turn of the event loop later (its claim kept, if any). */
function lagging(store: ToolStore): ToolStore {
  const later = <T>(p: Promise<T>) => p.then((v) => new Promise<T>((resolve) => setImmediate(() => resolve(v))));
  return {
    get: (ns, key) => later(store.get(ns, key)),
    put: (ns, key, value) => later(store.put(ns, key, value)),
    delete: (ns, key) => later(store.delete(ns, key)),
    search: (ns, opts) => later(store.search(ns, opts)),
    ...(store.claim ? { claim: (...a: Parameters<NonNullable<ToolStore['claim']>>) => later(store.claim!(...a)) } : {}),
  };
}

describe.each(ENGINES)('%s', (_name, engine) => {
  it('shares todo lists between registries given the same store and namespace, and only then', async () => {
    const store = engine();
    const ns = [fresh('team')];
    const a = registry(store, ns);
    const b = registry(store, ns);
    const other = registry(store, [fresh('other')]);
    const w = await call(a, 'todowrite', { todos: [{ id: '1', content: 'Ship it', status: 'in_progress' }] });
    expect(w.success).toBe(true);
    const readB = await call(b, 'todoread', {});
    expect(readB.result.output).toContain('[~] Ship it');
    expect((await call(other, 'todoread', {})).result.output).toBe('No todos. Use todowrite to plan multi-step work.');
    // Another session of the same namespace has its own list.
    expect((await call(b, 'todoread', {}, 's-2')).result.output).toMatch(/^No todos/);
  });

  it('keeps memory notes in the store, not in .agent-memory, readable by the other registry', async () => {
    const store = engine();
    const ns = [fresh('mem')];
    const a = registry(store, ns);
    const b = registry(store, ns);
    expect(
      (await call(a, 'memory_write', { path: 'people/alice.md', content: '> Summary: Alice\n\nLikes tea.\n' })).success,
    ).toBe(true);
    expect(
      (await call(b, 'memory_append', { path: 'people/alice.md', entry: '- prefers green tea' })).result.output,
    ).toMatch(/^Appended to people\/alice\.md/);
    await call(a, 'memory_patch', { path: 'people/alice.md', old_str: 'Likes tea.', new_str: 'Likes tea a lot.' });
    const read = await call(b, 'memory_read', { path: 'people/alice.md' });
    expect(read.result.output).toBe('> Summary: Alice\n\nLikes tea a lot.\n- prefers green tea\n');
    const list = await call(a, 'memory_list', {});
    expect(list.result.metadata.entries).toEqual([
      { path: 'people/alice.md', summary: 'Alice', size: Buffer.byteLength(read.result.output) },
    ]);
    expect((await call(a, 'memory_read', { path: '../escape.md' })).error).toMatch(/outside the memory directory/);
    await expect(stat(path.join(ws.dir, '.agent-memory'))).rejects.toThrow(/ENOENT/);
  });

  it("accepts a pending call's result once, through another registry, and hands it out once", async () => {
    const store = engine();
    const ns = [fresh('pending')];
    const a = registry(store, ns);
    const b = registry(store, ns);
    const started = await a.execute('ask_person', { question: 'Deploy?' }, { sessionID: 'chat' }, initCtx(), {
      callID: 'call_q1',
    });
    expect(started.result.metadata.pending).toBe(true);
    expect((await b.pending({ sessionID: 'chat' })).map((c) => [c.toolCallId, c.status])).toEqual([
      ['call_q1', 'pending'],
    ]);
    const done = await b.submitResult('call_q1', 'Yes, deploy.');
    expect(done.status).toBe('resolved');
    await expect(a.submitResult('call_q1', 'No.')).rejects.toThrow(/already completed/);
    const taken = await a.takeSettled({ sessionID: 'chat' });
    expect(taken.map((c) => c.update?.result.output)).toEqual(['Yes, deploy.']);
    expect(await b.takeSettled({ sessionID: 'chat' })).toEqual([]);
  });

  it('two registries starting a pending call with one call id at once: exactly one waits, the other is told', async () => {
    const store = engine();
    const ns = [fresh('pending-race')];
    const regs = Array.from({ length: 4 }, () => registry(store, ns));
    const started = await Promise.all(
      regs.map((r) =>
        r.execute('ask_person', { question: 'Deploy?' }, { sessionID: 'chat' }, initCtx(), { callID: 'call_same' }),
      ),
    );
    const waiting = started.filter((s) => s.success && s.result.metadata.pending === true);
    const told = started.filter((s) => !s.success || s.result.metadata.pending !== true);
    expect(waiting).toHaveLength(1);
    for (const t of told) expect(t.error ?? t.result.output).toMatch(/Call id "call_same" is already waiting/);
    expect((await regs[0].pending({ sessionID: 'chat' })).map((c) => c.toolCallId)).toEqual(['call_same']);
  });

  it('claim sets a record only while its field still holds the expected value, once among many at once', async () => {
    // On Postgres, also the bare PostgresStore (no claim of its own): the statement found for it on its pool.
    const stores = engine() === pgStore ? [engine(), pgStore.engine as ToolStore] : [engine()];
    for (const store of stores) await claimOnce(store);
  });

  async function claimOnce(store: ToolStore): Promise<void> {
    const scope = new StoreScope(store, ['toolbelt', fresh('claim')]);
    await scope.put('pending', 'c1', { v: 1, status: 'pending' });
    const won = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        scope.claim('pending', 'c1', 'status', 'pending', { v: 1, status: 'resolved', by: i }),
      ),
    );
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = won.indexOf(true);
    expect((await scope.get('pending', 'c1', (v) => v))?.by).toBe(winner);
    expect(await scope.claim('pending', 'c1', 'status', 'pending', { v: 1, status: 'resolved', by: 99 })).toBe(false);
    expect(await scope.claim('pending', 'missing', 'status', 'pending', { v: 1, status: 'resolved' })).toBe(false);
  }

  it('shares the GET response cache between registries on one store and namespace, and only then', async () => {
    let hits = 0;
    const server = http.createServer((_req, res) => {
      hits++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ hits }));
    });
    const base = await listenLoopback(server);
    try {
      const store = engine();
      const ns = [fresh('cache')];
      const make = (namespace: string[]) => {
        const r = createRegistry({ store, namespace });
        registerBuiltinTools(r, ['http_request']);
        return r;
      };
      const cacheCtx = { allowPrivateNetwork: true, httpCacheTtlSeconds: 3600 };
      const get = (r: ReturnType<typeof make>) =>
        r.execute('http_request', { method: 'GET', url: `${base}/n` }, { sessionID: 's' }, cacheCtx);
      const first = await get(make(ns));
      const second = await get(make(ns));
      expect(first.result.metadata.cached).toBe(false);
      expect(second.result.metadata).toMatchObject({ cached: true });
      expect(second.result.output).toContain('"hits": 1');
      expect((await get(make([fresh('elsewhere')]))).result.metadata.cached).toBe(false);
      expect(hits).toBe(2);
    } finally {
      await closeServer(server);
    }
  });

  it('an "always" approval given through one registry holds in the other on that store and namespace, only there', async () => {
    const store = engine();
    const ns = [fresh('approvals')];
    const asked: string[] = [];
    const make = (namespace: string[], reply: 'always' | 'reject', name: string) => {
      const policy = createPolicy(
        { default: 'allow', rules: [{ tool: 'ask_person', action: 'ask' }] },
        {
          onPermissionRequest: () => {
            asked.push(name);
            return reply;
          },
        },
      );
      const r = createRegistry({ store, namespace, policy, loopGuard: false });
      r.register(askTool);
      return r;
    };
    const ask = (r: ReturnType<typeof make>, id: string) =>
      r.execute('ask_person', { question: 'ok?' }, { sessionID: 'chat' }, initCtx(), { callID: id });
    const first = await ask(make(ns, 'always', 'A'), 'c-a');
    expect(first.error).toBeUndefined();
    // B's approver would reject: the approval A was given is in the store, so B never asks.
    expect((await ask(make(ns, 'reject', 'B'), 'c-b')).success).toBe(true);
    expect(asked).toEqual(['A']);
    // Another namespace has no such approval: its approver is asked, and rejects.
    const other = await ask(make([fresh('other')], 'reject', 'C'), 'c-c');
    expect(other.success).toBe(false);
    expect(asked).toEqual(['A', 'C']);
  });

  it('two submits at once: exactly one is accepted', async () => {
    const store = engine();
    const ns = [fresh('race')];
    const a = registry(store, ns);
    const b = registry(store, ns);
    await a.execute('ask_person', { question: 'x' }, { sessionID: 'chat' }, initCtx(), { callID: 'call_race' });
    const results = await Promise.allSettled([a.submitResult('call_race', 'A'), b.submitResult('call_race', 'B')]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(String(refused.reason)).toMatch(/already completed/);
  });

  it('per-user namespaces: hostile labels (separators, wildcards, prefixes) never reach another user', async () => {
    const store = engine();
    const tag = fresh('users');
    // Users whose ids would collide or glob if labels were used raw: LIKE wildcards, the engines'
    // separators, prefixes of each other, an encoded-looking id, the reserved root.
    const users = [
      'alice',
      'alice2',
      'al',
      '%',
      '_',
      '*',
      'a:b',
      'a.b',
      'a~2Eb',
      'alice/..',
      '\\',
      'langgraph',
      'ali%',
      ' ',
    ];
    const namespace: StoreNamespace = (ctx) => [tag, String(ctx.extra?.userId)];
    const r = registry(store, namespace);
    for (const u of users) {
      const todo = await call(
        r,
        'todowrite',
        { todos: [{ id: '1', content: `todo of [${u}]`, status: 'pending' }] },
        's',
        { userId: u },
      );
      expect(todo.success).toBe(true);
      expect(
        (await call(r, 'memory_write', { path: 'me.md', content: `note of ${u}\n` }, 's', { userId: u })).success,
      ).toBe(true);
    }
    for (const u of users) {
      expect((await call(r, 'todoread', {}, 's', { userId: u })).result.output).toContain(`[ ] todo of [${u}] (`);
      expect((await call(r, 'memory_read', { path: 'me.md' }, 's', { userId: u })).result.output).toBe(
        `note of ${u}\n`,
      );
      const list = await call(r, 'memory_list', {}, 's', { userId: u });
      expect(list.result.metadata.count).toBe(1);
    }
    // A user who has written nothing sees nothing, whatever their id looks like.
    for (const stranger of ['%%', 'alice%', '_lice', 'a']) {
      expect((await call(r, 'memory_list', {}, 's', { userId: stranger })).result.output).toMatch(
        /^No memory notes yet/,
      );
    }
  });

  it('concurrent merges into one todo list in one process all land, each a versioned write', async () => {
    // The engine as it is, and answering a turn of the event loop later (as any networked store
    // does), so the calls' reads and writes interleave.
    const store = lagging(engine());
    const base = [fresh('merge')];
    const r = registry(store, base);
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(r, 'todowrite', { todos: [{ id: `i${i}`, content: `item ${i}`, status: 'pending' }], merge: true }, 'm'),
      ),
    );
    expect(results.filter((x) => !x.success)).toEqual([]);
    const ids = ((await call(r, 'todoread', {}, 'm')).result.metadata.todos as Array<{ id: string }>).map((t) => t.id);
    expect(ids.sort()).toEqual(Array.from({ length: 40 }, (_, i) => `i${i}`).sort());
    // Every write leaves a new revision, replacing ones included.
    const ns = [...resolveNamespace(base, {}, []), '~todo'];
    const before = (await store.get(ns, 'm'))?.value.rev;
    await call(r, 'todowrite', { todos: [{ id: 'x', content: 'replace', status: 'pending' }] }, 'm');
    const after = (await store.get(ns, 'm'))?.value.rev;
    expect(typeof before).toBe('string');
    expect(typeof after).toBe('string');
    expect(after).not.toBe(before);
  });

  it('what todowrite returns is a copy: changing it does not change the stored list', async () => {
    const r = registry(engine(), [fresh('copies')]);
    for (const merge of [false, true]) {
      const res = await call(r, 'todowrite', { todos: [{ id: '1', content: 'keep me', status: 'pending' }], merge });
      (res.result.metadata.todos as Array<{ content: string }>)[0].content = 'changed by the caller';
      expect((await call(r, 'todoread', {})).result.output).toContain('[ ] keep me (');
    }
  });

  it('StoreScope.all keeps exactly its namespace: not alice2 for alice, not a deeper namespace', async () => {
    const store = engine();
    const tag = fresh('exact');
    const own = ['toolbelt', tag, 'alice'];
    await store.put([...own, '~todo'], 'mine', { v: 1 });
    await store.put([...own, '~todo', 'deeper'], 'below', { v: 1 });
    await store.put(['toolbelt', tag, 'alice2', '~todo'], 'other', { v: 1 });
    await store.put(['toolbelt', tag, 'alice', '~todo2'], 'sibling', { v: 1 });
    expect((await new StoreScope(store, own).all('todo')).map((i) => i.key)).toEqual(['mine']);
    // Labels holding LIKE wildcards and the escape character are encoded before any engine sees them.
    for (const label of ['%', '_', '\\', 'al_ce', 'ali%']) {
      const base = resolveNamespace([tag, label], {}, []);
      expect(base.slice(2).join('')).toMatch(/^[A-Za-z0-9~-]+$/);
      await new StoreScope(store, base).put('todo', 'k', { v: 1, label });
    }
    for (const label of ['%', '_', '\\', 'al_ce', 'ali%']) {
      const items = await new StoreScope(store, resolveNamespace([tag, label], {}, [])).all('todo');
      expect(items.map((i) => i.value.label)).toEqual([label]);
    }
  });

  it('a malformed record fails with its key named; other records keep working', async () => {
    const store = engine();
    const base = [fresh('bad')];
    const r = registry(store, base);
    await call(r, 'todowrite', { todos: [{ id: '1', content: 'fine', status: 'pending' }] }, 'good');
    await call(r, 'memory_write', { path: 'ok.md', content: 'fine\n' });
    const ns = resolveNamespace(base, {}, []);
    // An older shape, and a record edited by hand.
    await store.put([...ns, '~todo'], 'broken-session', { items: ['not', 'todos'] });
    await store.put([...ns, '~memory'], 'hand.md#1', { v: 1, note: 'hand.md', op: 'append', entry: 42 });
    const bad = await call(r, 'todoread', {}, 'broken-session');
    expect(bad.error).toMatch(/todo record "broken-session" .* not in the shape this version writes/);
    expect((await call(r, 'todoread', {}, 'good')).result.output).toContain('[ ] fine');
    expect((await call(r, 'memory_read', { path: 'hand.md' })).error).toMatch(/memory record "hand\.md#1"/);
    expect((await call(r, 'memory_read', { path: 'ok.md' })).result.output).toBe('fine\n');
    const list = await call(r, 'memory_list', {});
    expect(list.result.metadata.entries).toEqual([
      { path: 'hand.md', summary: expect.stringMatching(/^\(unreadable: .*"hand\.md#1"/), size: 0 },
      { path: 'ok.md', summary: '', size: 5 },
    ]);
  });
});

describe('graph runs on one InMemoryStore', () => {
  it('two runs at once merging into one list lose nothing (each run wraps the store anew)', async () => {
    const store = new InMemoryStore();
    expect(await mergeThroughGraphs([store, store], store)).toEqual(BOTH_RUNS);
  });
});

/** The ids two graph runs leave when each merges 15 items at once into one todo list. */
const BOTH_RUNS = ['a', 'b'].flatMap((t) => Array.from({ length: 15 }, (_, i) => `${t}${i}`)).sort();

/**
 * Two graph runs at once, compiled with `stores[0]` and `stores[1]` (the same store twice, or two),
 * each merging 15 items into session "g"'s todo list; the ids the list then holds, read through
 * `readWith`. Each run hands the tools LangGraph's AsyncBatchedStore around its store.
 */
async function mergeThroughGraphs(stores: [unknown, unknown], readWith: ToolStore): Promise<string[]> {
  const base = [fresh('graphs')];
  const tools = await registry(undefined, base).tools({
    initCtx: initCtx(),
    createContext: () => ({ sessionID: 'g' }),
  });
  const todowrite = tools.find((t) => t.name === 'todowrite')!;
  const State = Annotation.Root({ tag: Annotation<string> });
  const graph = (store: unknown) =>
    new StateGraph(State)
      .addNode('write', async (state, config) => {
        await Promise.all(
          Array.from({ length: 15 }, (_, i) =>
            todowrite.invoke(
              { todos: [{ id: `${state.tag}${i}`, content: `${state.tag} ${i}`, status: 'pending' }], merge: true },
              config,
            ),
          ),
        );
        return {};
      })
      .addEdge(START, 'write')
      .addEdge('write', END)
      .compile({ store: store as BaseStore });
  await Promise.all([graph(stores[0]).invoke({ tag: 'a' }), graph(stores[1]).invoke({ tag: 'b' })]);
  const read = await call(registry(readWith, base), 'todoread', {}, 'g');
  return (read.result.metadata.todos as Array<{ id: string }>).map((t) => t.id).sort();
}

describe('limits', () => {
  const noteRecord = (i: number) => ({ v: 1, note: 'big.md', op: 'append', entry: `- ${i}` });

  it(`a note keeps at most ${MAX_MEMORY_NOTE_RECORDS} change records; memory_write starts it afresh`, async () => {
    const store = new InMemoryStore();
    const r = registry(store, ['limits']);
    const ns = [...resolveNamespace(['limits'], {}, []), '~memory'];
    for (let i = 0; i < MAX_MEMORY_NOTE_RECORDS - 1; i++)
      await store.put(ns, `big.md#${String(i).padStart(5, '0')}`, noteRecord(i));
    // At the edge: the last record that fits lands, and every earlier one is read back (over several pages).
    expect((await call(r, 'memory_append', { path: 'big.md', entry: '- last' })).success).toBe(true);
    const read = await call(r, 'memory_read', { path: 'big.md' });
    let bytes = Buffer.byteLength('- last\n');
    for (let i = 0; i < MAX_MEMORY_NOTE_RECORDS - 1; i++) bytes += Buffer.byteLength(`- ${i}\n`);
    expect(read.result.metadata.size).toBe(bytes);
    expect(MAX_MEMORY_NOTE_RECORDS).toBeGreaterThan(STORE_PAGE_SIZE);
    // One past it: refused with the way out.
    const refused = await call(r, 'memory_append', { path: 'big.md', entry: '- one more' });
    expect(refused.error).toMatch(
      new RegExp(`big\\.md has ${MAX_MEMORY_NOTE_RECORDS} changes .* Rewrite it whole with memory_write`),
    );
    expect((await call(r, 'memory_write', { path: 'big.md', content: 'compact\n' })).success).toBe(true);
    expect((await call(r, 'memory_append', { path: 'big.md', entry: '- again' })).result.output).toMatch(
      /^Appended to big\.md/,
    );
    expect((await store.search(ns, { limit: 10 })).length).toBe(2);
  }, 60_000);

  it(`one call reads at most ${MAX_STORE_SCAN_RECORDS} records of a kind, and says so past it`, async () => {
    const store = new InMemoryStore();
    const r = registry(store, ['scan']);
    const ns = [...resolveNamespace(['scan'], {}, []), '~memory'];
    await Promise.all(
      Array.from({ length: MAX_STORE_SCAN_RECORDS }, (_, i) =>
        store.put(ns, `n${i}.md#0`, { v: 1, note: `n${i}.md`, op: 'write', content: '' }),
      ),
    );
    const listed = await call(r, 'memory_list', {});
    expect(listed.error).toBeUndefined();
    expect(listed.result.metadata.truncated).toBe(true);
    await store.put(ns, 'extra.md#0', { v: 1, note: 'extra.md', op: 'write', content: '' });
    expect((await call(r, 'memory_list', {})).error).toMatch(
      new RegExp(`holds more than ${MAX_STORE_SCAN_RECORDS} memory records .* Remove old records`),
    );
  }, 120_000);
});

describe('a broken engine', () => {
  class ThrowingStore extends InMemoryStore {
    override batch(): never {
      throw new Error('disk full');
    }
  }
  class HangingStore extends InMemoryStore {
    override batch<T>(): Promise<T> {
      return new Promise<T>(() => undefined);
    }
  }

  it('a store that throws fails the call with one sentence naming what it was doing', async () => {
    const r = registry(new ThrowingStore(), ['t']);
    const res = await call(r, 'todowrite', { todos: [{ id: '1', content: 'x', status: 'pending' }] });
    expect(res.error).toBe(
      'The state store failed while saving todo record "s-1" (disk full), so the call did not complete. Try again once the store is reachable.',
    );
    expect((await call(r, 'memory_read', { path: 'a.md' })).error).toMatch(
      /failed while listing memory records \(disk full\)/,
    );
  });

  it('a store that hangs fails the call at its timeout, and the agent loop goes on', async () => {
    const r = registry(new HangingStore(), ['h']);
    const res = await r.execute('todoread', {}, { sessionID: 's' }, initCtx(), { timeoutMs: 200 });
    expect(res.success).toBe(false);
    expect(res.error).toMatch(/timed out after 200 ms/);
  });
});

describe('namespaces', () => {
  it('encodes labels injectively into characters no engine gives a meaning to', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        const ea = encodeLabel(a);
        expect(ea).toMatch(/^[A-Za-z0-9~-]*$/);
        expect(decodeLabel(ea)).toBe(a);
        if (a !== b) expect(encodeLabel(b)).not.toBe(ea);
      }),
    );
  });

  it('refuses empty, non-string and too many or too long labels with a sentence', () => {
    expect(() => resolveNamespace(['a', ''], {}, [])).toThrow(/Label 2 of the store namespace is ""/);
    expect(() => resolveNamespace(() => ['u', undefined as unknown as string], {}, [])).toThrow(/Label 2 .* undefined/);
    expect(() => resolveNamespace([], {}, [])).toThrow(/non-empty array/);
    const max = Array.from({ length: MAX_NAMESPACE_LABELS }, (_, i) => `l${i}`);
    expect(resolveNamespace(max, {}, [])).toHaveLength(MAX_NAMESPACE_LABELS + 1);
    expect(() => resolveNamespace([...max, 'x'], {}, [])).toThrow(/more than the 8 allowed/);
    expect(resolveNamespace(['x'.repeat(MAX_NAMESPACE_LABEL_CHARS)], {}, [])[1]).toHaveLength(
      MAX_NAMESPACE_LABEL_CHARS,
    );
    expect(() => resolveNamespace(['x'.repeat(MAX_NAMESPACE_LABEL_CHARS + 1)], {}, [])).toThrow(
      /more than the 256 allowed/,
    );
  });

  it('a namespace function that fails fails the call, not the agent loop', async () => {
    const r = registry(new InMemoryStore(), () => {
      throw new Error('no user id in the request');
    });
    const res = await call(r, 'todoread', {});
    expect(res.success).toBe(false);
    expect(res.error).toMatch(/The store namespace function threw: no user id in the request/);
  });

  it('without a namespace each registry is its own', async () => {
    const store = new InMemoryStore();
    const a = registry(store);
    const b = registry(store);
    await call(a, 'todowrite', { todos: [{ id: '1', content: 'mine', status: 'pending' }] });
    expect((await call(b, 'todoread', {})).result.output).toMatch(/^No todos/);
    expect((await call(a, 'todoread', {})).result.output).toContain('mine');
  });
});

(PG_MISSING ? describe.skip : describe)('todo merges on PostgresStore', () => {
  /** The Postgres store, with another writer changing the todo record right after each of our first `times` reads. */
  function overtaken(times: number): ToolStore {
    const inner = pgStore!;
    let left = times;
    return {
      get: async (ns, key) => {
        const item = await inner.get(ns, key);
        if (item && left > 0 && ns.at(-1) === '~todo') {
          left--;
          await inner.put(ns, key, { ...item.value, rev: `another-writer-${left}` });
        }
        return item;
      },
      put: (ns, key, value) => inner.put(ns, key, value),
      delete: (ns, key) => inner.delete(ns, key),
      search: (ns, opts) => inner.search(ns, opts),
      claim: (...a) => inner.claim(...a),
    };
  }

  it(`a merge overtaken ${STORE_UPDATE_ATTEMPTS - 1} times lands; overtaken ${STORE_UPDATE_ATTEMPTS} times it is refused with a sentence and writes nothing`, async () => {
    for (const [times, lands] of [
      [STORE_UPDATE_ATTEMPTS - 1, true],
      [STORE_UPDATE_ATTEMPTS, false],
    ] as const) {
      const r = registry(overtaken(times), [fresh('overtaken')]);
      expect((await call(r, 'todowrite', { todos: [{ id: '1', content: 'first', status: 'pending' }] })).success).toBe(
        true,
      );
      const merged = await call(r, 'todowrite', {
        todos: [{ id: '2', content: 'second', status: 'pending' }],
        merge: true,
      });
      const ids = ((await call(r, 'todoread', {})).result.metadata.todos as Array<{ id: string }>).map((t) => t.id);
      if (lands) {
        expect(merged.success).toBe(true);
        expect(ids).toEqual(['1', '2']);
      } else {
        expect(merged.error).toBe(
          `The todo list of session "s-1" was changed by another writer during each of ${STORE_UPDATE_ATTEMPTS} attempts to merge into it, so nothing was written. Read it with todoread and send the change again.`,
        );
        expect(ids).toEqual(['1']);
      }
    }
  }, 30_000);

  /** Two stores on the server, each with its own pool (as two processes have), and how to close them. */
  type TwoStores = () => Promise<{ stores: [unknown, unknown]; close: () => Promise<unknown> }>;
  it.each<[string, TwoStores]>([
    [
      "openStore's engines",
      async () => {
        const [x, y] = [await openStore(pg!.url), await openStore(pg!.url)];
        return { stores: [x.engine, y.engine], close: () => Promise.all([x.close(), y.close()]) };
      },
    ],
    [
      'PostgresStores the user made (PostgresStore.fromConnString)',
      async () => {
        const [x, y] = [PostgresStore.fromConnString(pg!.url), PostgresStore.fromConnString(pg!.url)];
        await x.setup();
        await y.setup();
        return { stores: [x, y], close: () => Promise.all([x.stop(), y.stop()]) };
      },
    ],
  ])(
    'graphs compiled with %s (two pools, as two processes) merge into one list atomically',
    async (_how, open) => {
      // A graph run hands tools LangGraph's AsyncBatchedStore around the store, which has no claim
      // of its own: the statement on the wrapped PostgresStore's own pool must still be the one used.
      const { stores, close } = await open();
      try {
        expect(await mergeThroughGraphs(stores, pgStore!)).toEqual(BOTH_RUNS);
      } finally {
        await close();
      }
    },
    60_000,
  );

  it('two creators of one list at once: one creates it, the other merges into it', async () => {
    // A second connection pool, as another process has: no in-process lock is shared between the two.
    const other = await openStore(pg!.url);
    const base = [fresh('create')];
    const [a, b] = [registry(pgStore, base), registry(other, base)];
    for (let round = 0; round < 10; round++) {
      const session = `new-${round}`;
      const results = await Promise.all([
        call(a, 'todowrite', { todos: [{ id: 'a', content: 'from a', status: 'pending' }], merge: true }, session),
        call(b, 'todowrite', { todos: [{ id: 'b', content: 'from b', status: 'pending' }], merge: true }, session),
      ]);
      expect(results.filter((x) => !x.success)).toEqual([]);
      const todos = (await call(a, 'todoread', {}, session)).result.metadata.todos as Array<{ id: string }>;
      expect(todos.map((t) => t.id).sort()).toEqual(['a', 'b']);
    }
    await other.close();
  }, 30_000);
});

(PG_MISSING ? describe.skip : describe)('two PostgresStore instances the user made, racing', () => {
  // Made as LangGraph's docs show: two pools, as two processes have, so no in-process lock is shared.
  let a: PostgresStore;
  let b: PostgresStore;
  beforeAll(async () => {
    [a, b] = [PostgresStore.fromConnString(pg!.url), PostgresStore.fromConnString(pg!.url)];
    await a.setup();
    await b.setup();
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });
  /** Rounds of each race: one round that happens to serialise must not hide a double acceptance. */
  const ROUNDS = 12;
  /** Runs `fn` through both registries at once (tagged A and B). */
  const both = <T>(ns: string[], fn: (r: ReturnType<typeof registry>, tag: 'A' | 'B') => Promise<T>) =>
    Promise.all([fn(registry(a, ns), 'A'), fn(registry(b, ns), 'B')]);

  it('a pending call: created once, its result accepted once, handed out once', async () => {
    const ns = [fresh('pending')];
    for (let round = 0; round < ROUNDS; round++) {
      const id = `call_${round}`;
      const started = await both(ns, (r) =>
        r.execute('ask_person', { question: 'Deploy?' }, { sessionID: 'chat' }, initCtx(), { callID: id }),
      );
      expect(started.filter((s) => s.success && s.result.metadata.pending === true)).toHaveLength(1);
      const submitted = await both(ns, (r, tag) => r.submitResult(id, tag).then(() => 'accepted', String));
      expect(submitted.filter((s) => s === 'accepted')).toHaveLength(1);
      expect(submitted.filter((s) => /already completed/.test(s))).toHaveLength(1);
      const taken = await both(ns, (r) => r.takeSettled({ sessionID: 'chat' }));
      expect(taken.flat().map((c) => c.toolCallId)).toEqual([id]);
    }
  }, 60_000);

  it('todo merges through both land, and a new list is created once (the other merges into it)', async () => {
    const ns = [fresh('todo')];
    for (let round = 0; round < ROUNDS; round++) {
      const session = `new-${round}`;
      const results = await both(ns, (r, id) =>
        call(r, 'todowrite', { todos: [{ id, content: `from ${id}`, status: 'pending' }], merge: true }, session),
      );
      expect(results.filter((x) => !x.success)).toEqual([]);
      const read = await call(registry(a, ns), 'todoread', {}, session);
      expect((read.result.metadata.todos as Array<{ id: string }>).map((t) => t.id).sort()).toEqual(['A', 'B']);
    }
  }, 60_000);

  it('a memory note appended to through both at once: one "Created", the other "Appended to", both entries kept', async () => {
    const ns = [fresh('memory')];
    for (let round = 0; round < ROUNDS; round++) {
      const note = `log-${round}.md`;
      const results = await both(ns, (r, tag) => call(r, 'memory_append', { path: note, entry: `- ${tag}` }));
      const answers = results.map((x) => x.result.output.replace(/ \(.*$/, '')).sort();
      expect(answers).toEqual([`Appended to ${note}`, `Created ${note}`]);
      const read = await call(registry(a, ns), 'memory_read', { path: note });
      expect(read.result.output.trim().split('\n').sort()).toEqual(['- A', '- B']);
    }
  }, 60_000);

  it('a store the user never set up makes its tables before the first claim, as its own get and put do', async () => {
    const unset = PostgresStore.fromConnString(pg!.url, { schema: `unset_${fresh('s').replace(/-/g, '_')}` });
    try {
      const scope = new StoreScope(unset, ['toolbelt', 'unset']);
      expect(await scope.claim('pending', 'c1', 'status', null, { v: 1, status: 'pending' })).toBe(true);
      expect(await scope.get('pending', 'c1', (v) => v)).toEqual({ v: 1, status: 'pending' });
    } finally {
      await unset.stop();
    }
  });

  it("claims follow the store's TTL: an expired record counts as absent, a claimed one gets the store's expiry", async () => {
    const ns = ['toolbelt', fresh('ttl'), '~pending'];
    const scope = new StoreScope(a, ns.slice(0, -1));
    // An expired record (the store's own put with a TTL already past): its reads no longer see it.
    await a.put(ns, 'old', { v: 1, status: 'pending' }, undefined, { ttl: -1 });
    expect(await a.get(ns, 'old')).toBeNull();
    expect(await scope.claim('pending', 'old', 'status', 'pending', { v: 1, status: 'resolved' })).toBe(false);
    expect(await scope.claim('pending', 'old', 'status', null, { v: 1, status: 'new' })).toBe(true);
    expect((await a.get(ns, 'old'))?.value).toEqual({ v: 1, status: 'new' });
    // A store whose every record expires at once (a default TTL in the past): a claimed record too.
    const expiring = PostgresStore.fromConnString(pg!.url, { ttl: { defaultTtl: -1 } });
    try {
      await expiring.setup();
      const claimed = new StoreScope(expiring, ns.slice(0, -1));
      expect(await claimed.claim('pending', 'ttl', 'status', null, { v: 1, status: 'pending' })).toBe(true);
      expect(await expiring.get(ns, 'ttl')).toBeNull();
    } finally {
      await expiring.stop();
    }
  }, 30_000);
});

(PG_MISSING ? describe.skip : describe)('PostgresStore going down', () => {
  it('fails the call with one sentence without the password, writes nothing half, and works again after', async () => {
    const r = registry(pgStore, [fresh('down')]);
    r.setDefaultTimeout(20_000);
    await call(r, 'memory_write', { path: 'log.md', content: 'first\n' });
    await pg!.pause();
    try {
      const res = await call(r, 'memory_append', { path: 'log.md', entry: 'second' });
      expect(res.success).toBe(false);
      expect(res.error).toMatch(
        /^The state store failed while listing memory records \(.+\), so the call did not complete\. Try again once the store is reachable\.$/,
      );
      expect(res.error).not.toContain(pg!.password);
      const todo = await call(r, 'todowrite', { todos: [{ id: '1', content: 'x', status: 'pending' }] });
      expect(todo.error).toMatch(/failed while saving todo record "s-1"/);
    } finally {
      await pg!.start();
    }
    expect((await call(r, 'memory_read', { path: 'log.md' })).result.output).toBe('first\n');
    expect((await call(r, 'todoread', {})).result.output).toMatch(/^No todos/);
    expect((await call(r, 'memory_append', { path: 'log.md', entry: 'second' })).success).toBe(true);
  }, 60_000);

  it('stopped in the middle of concurrent appends: each append lands whole or fails with the sentence', async () => {
    const r = registry(pgStore, [fresh('mid')]);
    r.setDefaultTimeout(20_000);
    const calls = Array.from({ length: 30 }, (_, i) =>
      call(r, 'memory_append', { path: 'mid.md', entry: `- line ${i}` }),
    );
    const paused = pg!.pause();
    const results = await Promise.all(calls);
    await paused;
    await pg!.start();
    const failed = results.filter((x) => !x.success);
    for (const f of failed)
      expect(f.error).toMatch(
        /^The state store failed while .*, so the call did not complete\. Try again once the store is reachable\.$/,
      );
    const read = await call(r, 'memory_read', { path: 'mid.md' });
    const lines = read.success ? read.result.output.trim().split('\n') : [];
    // Every line there is one whole append that reported success; no append that failed is there.
    const landed = results.flatMap((x, i) => (x.success ? [`- line ${i}`] : []));
    expect([...lines].sort()).toEqual([...landed].sort());
  }, 60_000);

  it.each([
    ['given to createRegistry', 'registry'],
    ["as a graph run's store (LangGraph's AsyncBatchedStore around it)", 'run'],
  ])(
    "a bare LangGraph PostgresStore %s: the server's restart does not end the process",
    async (_how, mode) => {
      await ensureDist();
      const child = spawn(
        process.execPath,
        [path.join(ROOT, '__tests__', 'fixtures', 'bare-pgstore.mjs'), pg!.url, mode],
        {
          cwd: ws.dir,
          env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      try {
        expect(JSON.parse((await lines.next()).value as string)).toEqual({ ready: true });
        // A fast shutdown ends the child's idle connection: its pool reports the error as an event.
        await pg!.pause();
        await new Promise((r) => setTimeout(r, 200));
        await pg!.start();
        child.stdin.write('read\n');
        const read = JSON.parse((await lines.next()).value as string);
        expect(read).toEqual({ success: true, output: expect.stringContaining('[ ] survive a restart') });
        child.stdin.end();
        expect(await exited).toBe(0);
        expect(stderr).toBe('');
      } finally {
        child.kill('SIGKILL');
      }
    },
    60_000,
  );

  it('openStore names the URL without its password when the server is unreachable', async () => {
    const url = pg!.url.replace(`:${pg!.port}/`, ':1/');
    const err = (await openStore(url).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(
      /^Cannot open the store postgres:\/\/toolbelt:\*\*\*@127\.0\.0\.1:1\/postgres: .*Check that the server is running/,
    );
    expect(err.message).not.toContain(pg!.password);
  }, 30_000);
});
