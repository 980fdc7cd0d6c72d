/**
 * `openStore(url)`: a LangGraph PostgresStore opened from a `postgres://` URL for the tools (and the
 * CLI's `--store`), with bounded connect and query times, its tables made once per process (a
 * second process doing the same at once is retried), idle-connection errors kept from crashing
 * the process, and the atomic `claim` PostgresStore lacks (postgres-claim.ts: one conditional
 * statement on its own table, the same any PostgresStore handed to the tools gets).
 * Must not be imported by the root at load time: `@langchain/langgraph-checkpoint-postgres` and
 * `pg` load on first use.
 */
import { postgresClaim } from './postgres-claim.js';
import { guardEngineErrors } from './scope.js';
import type { StoreItem, StoreSearchOptions, ToolStore } from './types.js';
import { redactSecrets, redactUrl } from './url.js';
import { describeThrown } from '../text/describe.js';

/** How long opening a connection to the store may take before the operation fails (ms). */
export const STORE_CONNECT_TIMEOUT_MS = 5_000;
/** How long one store query may take before it fails (ms). */
export const STORE_QUERY_TIMEOUT_MS = 10_000;
/** Connections one process keeps open to the store. */
export const STORE_POOL_SIZE = 4;
/** Attempts at creating the store's tables when several processes start at once. */
const SETUP_ATTEMPTS = 5;

/** A store opened by `openStore`: the seam's interface, the LangGraph store behind it, and `close`. */
export interface OpenedStore extends ToolStore {
  /** The LangGraph `PostgresStore` (pass it to a graph's `compile({ store })` too). */
  readonly engine: unknown;
  /** The URL with its password replaced by `***`. */
  readonly label: string;
  claim(
    namespace: string[],
    key: string,
    field: string,
    expected: string | null,
    value: Record<string, unknown>,
  ): Promise<boolean>;
  /** Ends the store's connections. */
  close(): Promise<void>;
}

/** What this module uses of PostgresStore (structural: the package is an optional peer). */
interface PgStoreLike {
  get(namespace: string[], key: string): Promise<StoreItem | null>;
  put(namespace: string[], key: string, value: Record<string, unknown>): Promise<void>;
  delete(namespace: string[], key: string): Promise<void>;
  search(prefix: string[], options?: StoreSearchOptions): Promise<StoreItem[]>;
  setup(): Promise<void>;
  stop(): Promise<void>;
}
/**
 * Opens the store at `url` (`postgres://` or `postgresql://`) and makes its tables. Errors are
 * sentences that name the URL without its password.
 */
export async function openStore(url: string, options: { schema?: string } = {}): Promise<OpenedStore> {
  const label = storeLabel(url);
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    throw new Error(`The store URL ${label} is not a URL. Give one like postgres://user:password@host:5432/db.`);
  }
  if (scheme !== 'postgres:' && scheme !== 'postgresql:') {
    throw new Error(
      `The store URL ${label} uses ${scheme.slice(0, -1)}; only postgres:// (PostgreSQL) stores can be opened from a URL. ` +
        'Pass another LangGraph store in code with createRegistry({ store }).',
    );
  }
  let mod: { PostgresStore: new (config: Record<string, unknown>) => PgStoreLike };
  try {
    mod = (await import('@langchain/langgraph-checkpoint-postgres/store')) as unknown as typeof mod;
  } catch {
    throw new Error(
      'A postgres:// store needs the package @langchain/langgraph-checkpoint-postgres. Install it (npm install @langchain/langgraph-checkpoint-postgres) and try again.',
    );
  }
  const schema = options.schema ?? 'public';
  const engine = new mod.PostgresStore({
    connectionOptions: {
      connectionString: url,
      connectionTimeoutMillis: STORE_CONNECT_TIMEOUT_MS,
      query_timeout: STORE_QUERY_TIMEOUT_MS,
      max: STORE_POOL_SIZE,
    },
    schema,
    ensureTables: false,
  });
  // Idle-connection errors (a server restart) must not end the process: the same guard a
  // PostgresStore handed over as it is gets on its first call.
  guardEngineErrors(engine);
  await setupWithRetry(engine, url, label);
  const claim = postgresClaim(engine);
  const opened: OpenedStore = {
    engine,
    label,
    get: (ns, key) => engine.get(ns, key),
    put: (ns, key, value) => engine.put(ns, key, value),
    delete: (ns, key) => engine.delete(ns, key),
    search: (ns, opts) => engine.search(ns, opts),
    async claim(ns, key, field, expected, value) {
      if (!claim)
        throw new Error('this PostgresStore version keeps its connection pool private, so claims cannot be made');
      return claim(ns, key, field, expected, value);
    },
    close: () => engine.stop(),
  };
  return opened;
}

/** How a store URL is shown: its password replaced by `***`. */
export function storeLabel(url: string): string {
  return `store ${redactUrl(url)}`;
}

async function setupWithRetry(engine: PgStoreLike, url: string, label: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await engine.setup();
      return;
    } catch (err) {
      const message = describeThrown(err);
      // Two processes creating the tables at once: one loses on a unique index; the tables exist then.
      const racing = /duplicate key|already exists|unique constraint/i.test(message);
      if (!racing || attempt >= SETUP_ATTEMPTS) {
        await engine.stop().catch(() => undefined);
        throw new Error(
          `Cannot open the ${label}: ${redactSecrets(message, url)}. Check that the server is running and the URL is right.`,
          { cause: err },
        );
      }
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}
