/**
 * Exactly once with a PostgresStore the user made: two `PostgresStore.fromConnString(url)`
 * instances (two pools, as two processes have; no in-process lock shared between them) on one real
 * PostgreSQL server, given to two registries, racing: a pending call's result is accepted once, a
 * pending call is created once, todo merges all land, a todo list and a memory note are created
 * once (one "Created", the other an append or merge); and the claim follows the store's TTL. (As
 * two graphs' stores: store.test.ts, "graphs compiled with PostgresStores the user made".)
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { z } from 'zod';
import { PostgresStore } from '@langchain/langgraph-checkpoint-postgres/store';
import { Tool, createRegistry, registerBuiltinTools, type OpenedStore } from '../../src/index.js';
import { MEMORY_TOOLS } from '../../src/constants.js';
import { StoreScope } from '../../src/store/scope.js';
import {
  PG_MISSING,
  startStoreFixture,
  stopStoreFixture,
  type PgServer,
  type StoreFixture,
} from '../support/postgres-server.js';

if (PG_MISSING) console.warn(PG_MISSING);
const suite = PG_MISSING ? describe.skip : describe;

/** Rounds of each race: one round that happens to serialise must not hide a double acceptance. */
const ROUNDS = 12;

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
/** The user's own stores, made as LangGraph's docs show. */
let a: PostgresStore;
let b: PostgresStore;

beforeAll(async () => {
  ({ ws, pg, pgStore } = await startStoreFixture('toolbelt-user-pg-'));
  if (!pg) return;
  [a, b] = [PostgresStore.fromConnString(pg.url), PostgresStore.fromConnString(pg.url)];
  await a.setup();
  await b.setup();
}, 120_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await stopStoreFixture({ ws, pg, pgStore });
}, 60_000);

let n = 0;
const fresh = (tag: string) => `${tag}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

function registry(store: PostgresStore | undefined, namespace: string[]) {
  const r = createRegistry({ store, namespace, loopGuard: false });
  registerBuiltinTools(r, ['todowrite', 'todoread', ...MEMORY_TOOLS]);
  r.register(askTool);
  return r;
}
const initCtx = () => ({ workingDir: ws.dir, workspaceRoot: ws.dir });

suite('two PostgresStore instances the user made, racing', () => {
  it('a pending call: created once, its result accepted once, handed out once', async () => {
    const ns = [fresh('pending')];
    const [ra, rb] = [registry(a, ns), registry(b, ns)];
    for (let round = 0; round < ROUNDS; round++) {
      const id = `call_${round}`;
      const started = await Promise.all(
        [ra, rb].map((r) =>
          r.execute('ask_person', { question: 'Deploy?' }, { sessionID: 'chat' }, initCtx(), { callID: id }),
        ),
      );
      expect(started.filter((s) => s.success && s.result.metadata.pending === true)).toHaveLength(1);
      const submitted = await Promise.allSettled([ra.submitResult(id, 'A'), rb.submitResult(id, 'B')]);
      expect(submitted.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      const refused = submitted.find((s) => s.status === 'rejected') as PromiseRejectedResult;
      expect(String(refused.reason)).toMatch(/already completed/);
      const taken = await Promise.all([ra.takeSettled({ sessionID: 'chat' }), rb.takeSettled({ sessionID: 'chat' })]);
      expect(taken.flat().map((c) => c.toolCallId)).toEqual([id]);
    }
  }, 60_000);

  it('todo merges through both land, and a new list is created once (the other merges into it)', async () => {
    const ns = [fresh('todo')];
    const [ra, rb] = [registry(a, ns), registry(b, ns)];
    for (let round = 0; round < ROUNDS; round++) {
      const session = `new-${round}`;
      const results = await Promise.all(
        (
          [
            [ra, 'a'],
            [rb, 'b'],
          ] as const
        ).map(([r, id]) =>
          r.execute(
            'todowrite',
            { todos: [{ id, content: `from ${id}`, status: 'pending' }], merge: true },
            { sessionID: session },
            initCtx(),
          ),
        ),
      );
      expect(results.filter((x) => !x.success)).toEqual([]);
      const read = await ra.execute('todoread', {}, { sessionID: session }, initCtx());
      expect((read.result.metadata.todos as Array<{ id: string }>).map((t) => t.id).sort()).toEqual(['a', 'b']);
    }
  }, 60_000);

  it('a memory note appended to through both at once: one "Created", the other "Appended to", both entries kept', async () => {
    const ns = [fresh('memory')];
    const [ra, rb] = [registry(a, ns), registry(b, ns)];
    for (let round = 0; round < ROUNDS; round++) {
      const note = `log-${round}.md`;
      const results = await Promise.all(
        (
          [
            [ra, 'A'],
            [rb, 'B'],
          ] as const
        ).map(([r, tag]) =>
          r.execute('memory_append', { path: note, entry: `- ${tag}` }, { sessionID: 's' }, initCtx()),
        ),
      );
      const answers = results.map((x) => x.result.output.replace(/ \(.*$/, '')).sort();
      expect(answers).toEqual([`Appended to ${note}`, `Created ${note}`]);
      const read = await ra.execute('memory_read', { path: note }, { sessionID: 's' }, initCtx());
      expect(read.result.output.trim().split('\n').sort()).toEqual(['- A', '- B']);
    }
  }, 60_000);

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
