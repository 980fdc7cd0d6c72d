/**
 * `openStore(url)` for the root entry: loads src/store/postgres.ts (and through it the Postgres
 * engine) on first call, so importing the package loads neither.
 * Must not open anything itself.
 */
import type { OpenedStore } from './postgres.js';

export type { OpenedStore };

/** Opens the store at a `postgres://` URL (LangGraph's PostgresStore) and makes its tables; see docs/state.md. */
export async function openStore(url: string, options: { schema?: string } = {}): Promise<OpenedStore> {
  const { openStore: open } = await import('./postgres.js');
  return open(url, options);
}
