/**
 * Stateless MCP replicas with stock clients: two `serveMcp({ stateless: true })` replicas, each
 * with its own pool on one real PostgreSQL server and one namespace, reached by the MCP SDK's plain
 * `Client` (no `_meta`): a todo list written through one replica is read through the same one and
 * through the other; a client with another token never sees it; `_meta["agent-toolbelt/session"]`
 * still names a session (within its token); and no record is left under a session no later call
 * could name.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createRegistry, registerBuiltinTools, openStore, type OpenedStore } from '../../src/index.js';
import { serveMcp } from '../../src/mcp/index.js';
import { MCP_SESSION_META_KEY } from '../../src/constants.js';
import type { McpServing } from '../../src/mcp/server.js';
import {
  PG_MISSING,
  startStoreFixture,
  stopStoreFixture,
  type PgServer,
  type StoreFixture,
} from '../support/postgres-server.js';

if (PG_MISSING) console.warn(PG_MISSING);
const suite = PG_MISSING ? describe.skip : describe;

const TOKEN_A = 'token-a-0123456789abcdef';
const TOKEN_B = 'token-b-0123456789abcdef';
const NAMESPACE = ['replicas'];

let ws: StoreFixture['ws'];
let pg: PgServer | undefined;
/** The fixture's store: one more pool on the server, to look at the records as they are. */
let pgStore: OpenedStore | undefined;
const stores: OpenedStore[] = [];
const servings: McpServing[] = [];
const clients: Client[] = [];

beforeAll(async () => ({ ws, pg, pgStore } = await startStoreFixture('toolbelt-mcp-stateless-')), 120_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const s of servings) await s.close();
  for (const s of stores) await s.close();
  await stopStoreFixture({ ws, pg, pgStore });
}, 60_000);

/** One replica: its own registry and its own pool on the shared server, stateless. */
async function replica(token?: string): Promise<string> {
  const store = await openStore(pg!.url);
  stores.push(store);
  // The loop guard would rightly stop the third identical todoread in a row of one session.
  const registry = registerBuiltinTools(createRegistry({ store, namespace: NAMESPACE, loopGuard: false }), [
    'todowrite',
    'todoread',
  ]);
  const serving = await serveMcp(registry, {
    transport: 'http',
    port: 0,
    stateless: true,
    ...(token ? { token } : {}),
    initCtx: { workspaceRoot: ws.dir },
  });
  servings.push(serving);
  return serving.url!;
}

/** The MCP SDK's plain client: no session `_meta`, only the bearer token when given. */
async function stockClient(url: string, token?: string): Promise<Client> {
  const c = new Client({ name: 'stock', version: '1.0.0' });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : undefined,
    }),
  );
  clients.push(c);
  return c;
}

async function text(c: Client, name: string, args: Record<string, unknown>, session?: string): Promise<string> {
  const res = await c.callTool({
    name,
    arguments: args,
    ...(session ? { _meta: { [MCP_SESSION_META_KEY]: session } } : {}),
  });
  const out = (res.content as Array<{ text?: string }>).map((p) => p.text ?? '').join('');
  expect(res.isError ? `error: ${out}` : out).toBe(out);
  return out;
}

const todo = (content: string) => ({ todos: [{ id: '1', content, status: 'in_progress' }] });

/** Every todo record of the replicas' namespace, as the store keeps them. */
async function todoRecords(): Promise<string[]> {
  const items = await pgStore!.search(['toolbelt', ...NAMESPACE, '~todo'], { limit: 100 });
  return items.map((i) => i.key).sort();
}

suite('stateless replicas on one PostgreSQL, stock MCP clients', () => {
  it('a stock client reads back its todos on the same replica and on the other; other tokens see none', async () => {
    const [a1, a2] = [await replica(TOKEN_A), await replica(TOKEN_A)];
    const onA1 = await stockClient(a1, TOKEN_A);
    expect(await text(onA1, 'todowrite', todo('Ship it'))).toContain('[~] Ship it');
    expect(await text(onA1, 'todoread', {})).toContain('[~] Ship it');
    // Another replica, another connection of a stock client with the same token: the same list.
    const onA2 = await stockClient(a2, TOKEN_A);
    expect(await text(onA2, 'todoread', {})).toContain('[~] Ship it');

    // A replica served with another token, on the same store and namespace, never shows it.
    const b = await replica(TOKEN_B);
    const onB = await stockClient(b, TOKEN_B);
    expect(await text(onB, 'todoread', {})).not.toContain('Ship it');
    expect(await text(onB, 'todowrite', todo('B only'))).toContain('[~] B only');
    expect(await text(onA2, 'todoread', {})).toContain('[~] Ship it');

    // _meta stays the override: a named session is its own list, within the token.
    expect(await text(onA1, 'todowrite', todo('Named'), 'chat-9')).toContain('[~] Named');
    expect(await text(onA2, 'todoread', {}, 'chat-9')).toContain('[~] Named');
    expect(await text(onA2, 'todoread', {})).toContain('[~] Ship it');
    expect(await text(onB, 'todoread', {}, 'chat-9')).not.toContain('Named');

    // Every record is one a later call names again: one per token, one per named session.
    const keys = await todoRecords();
    expect(keys).toHaveLength(3);
    for (const key of keys) expect(key).not.toContain(TOKEN_A.slice(8));
  }, 60_000);

  it('without a token (loopback), stock clients of every replica share one session per namespace', async () => {
    const before = await todoRecords();
    const [l1, l2] = [await replica(), await replica()];
    const c1 = await stockClient(l1);
    expect(await text(c1, 'todowrite', todo('Local'))).toContain('[~] Local');
    expect(await text(await stockClient(l2), 'todoread', {})).toContain('[~] Local');
    expect((await todoRecords()).length).toBe(before.length + 1);
  }, 60_000);
});
