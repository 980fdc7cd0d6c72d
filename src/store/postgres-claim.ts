/**
 * The atomic `claim` for any LangGraph `PostgresStore`, whoever made it (`openStore`, or the
 * user's own `PostgresStore.fromConnString(url)`): one conditional statement on the store's own
 * table, run on the store's own pool (`core.pool`, private in its types, checked at run time).
 * Must not import `pg` or the Postgres package (everything is structural), so the root may load it.
 */
import type { ToolStore } from './types.js';

type Claim = NonNullable<ToolStore['claim']>;

/** What this module uses of a pg Pool. */
interface PoolLike {
  query(text: string, params: unknown[]): Promise<{ rowCount: number | null }>;
}

/** What this module uses of PostgresStore's `core` (its DatabaseCore) and of the store itself. */
interface PostgresStoreLike {
  core: { pool: PoolLike; schema: string; calculateExpiresAt?: (ttl?: number) => Date | null };
  isSetup?: boolean;
  ensureTables?: boolean;
  setup?: () => Promise<void>;
}

/**
 * A PostgresStore's pool, reached the one way the library allows in practice (`core.pool`): the
 * one place the store seam reaches past the library's types, checked at run time, so a version
 * that hides it only loses the claim (and falls back to an in-process lock).
 */
function postgresPool(engine: unknown): PoolLike | undefined {
  const pool = (engine as { core?: { pool?: unknown } } | null)?.core?.pool as PoolLike | undefined;
  return pool && typeof pool.query === 'function' ? pool : undefined;
}

/**
 * The atomic claim of a LangGraph PostgresStore (`engine`), or undefined when `engine` is not one
 * (no `core.pool` with `query`, no `core.schema`). The statement is one round trip and one commit:
 * a conditional UPDATE of a live record, or, with `expected` null, an INSERT that a live record
 * under the key turns into a no-op (an expired one, which the store's reads no longer see, is
 * replaced). A record's expiry follows the store's own TTL settings, as its `put` sets it.
 */
export function postgresClaim(engine: unknown): Claim | undefined {
  const pool = postgresPool(engine);
  const store = engine as PostgresStoreLike;
  if (!pool || typeof store.core.schema !== 'string') return undefined;
  const table = `"${store.core.schema.replace(/"/g, '""')}".store`;
  const insert =
    `INSERT INTO ${table} AS s (namespace_path, key, value, expires_at) VALUES ($1, $2, $3::jsonb, $4) ` +
    'ON CONFLICT (namespace_path, key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at, ' +
    'created_at = CURRENT_TIMESTAMP, updated_at = CURRENT_TIMESTAMP ' +
    'WHERE s.expires_at IS NOT NULL AND s.expires_at <= CURRENT_TIMESTAMP';
  const update =
    `UPDATE ${table} SET value = $3::jsonb, expires_at = COALESCE($4, expires_at), updated_at = CURRENT_TIMESTAMP ` +
    'WHERE namespace_path = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > CURRENT_TIMESTAMP) ' +
    "AND COALESCE(value->>$5, '') = $6";
  return async (ns, key, field, expected, value) => {
    // A store made by the user creates its tables on first use (its own get/put do the same).
    if (store.isSetup === false && store.ensureTables !== false && typeof store.setup === 'function')
      await store.setup();
    const expiresAt = typeof store.core.calculateExpiresAt === 'function' ? store.core.calculateExpiresAt() : null;
    const path = ns.join(':');
    const res =
      expected === null
        ? await pool.query(insert, [path, key, JSON.stringify(value), expiresAt])
        : await pool.query(update, [path, key, JSON.stringify(value), expiresAt, field, expected]);
    return res.rowCount === 1;
  };
}
