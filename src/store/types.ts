/**
 * The store seam's interface: the part of LangGraph's `BaseStore` the tools use (get, put, delete,
 * search under namespaces), so any `BaseStore` (InMemoryStore, PostgresStore, RedisStore) fits as
 * it is; and the optional atomic step (`claim`) an engine may add for exactly-once hand-overs.
 * Must not import LangGraph or any engine (the types are structural) nor hold state.
 */

/** One record, as `BaseStore` returns it. */
export interface StoreItem {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  createdAt?: Date;
  updatedAt?: Date;
}

/** Options of `search`, as `BaseStore.search` takes them. */
export interface StoreSearchOptions {
  filter?: Record<string, unknown>;
  limit?: number;
  offset?: number;
}

/**
 * Where tool state lives: LangGraph's `BaseStore` fits this interface (pass an `InMemoryStore` or a
 * `PostgresStore`), and so does anything with the same four methods.
 */
export interface ToolStore {
  get(namespace: string[], key: string): Promise<StoreItem | null>;
  put(namespace: string[], key: string, value: Record<string, unknown>): Promise<void>;
  delete(namespace: string[], key: string): Promise<void>;
  search(namespacePrefix: string[], options?: StoreSearchOptions): Promise<StoreItem[]>;
  /**
   * Optional atomic step (a compare-and-set): sets `value` under `key` only when the record's
   * `field` equals `expected` now (a record without the field counts as `''`), or, with `expected`
   * null, only when no record is under `key` yet (it creates it); says whether it did. Engines
   * without it get an in-process lock instead (atomic within one process). `openStore()`'s Postgres
   * store has it.
   */
  claim?(
    namespace: string[],
    key: string,
    field: string,
    expected: string | null,
    value: Record<string, unknown>,
  ): Promise<boolean>;
}

/** What a namespace function is told about the call it scopes. */
export interface NamespaceContext {
  /** The call's session (absent for `submitResult` without one). */
  sessionID?: string;
  /** The agent's name, when the host gives one. */
  agent?: string;
  /** The host's extra values of the call (`createContext`'s `extra`). */
  extra?: Record<string, unknown>;
  /** LangGraph's `config.configurable` of the run, when the call came from a graph (e.g. `user_id`). */
  configurable?: Record<string, unknown>;
}

/**
 * The namespace tool state lives under: fixed labels, or a function of the call (per user, per
 * assistant), as deepagents' StoreBackend takes it. Labels are encoded, so any string is safe.
 */
export type StoreNamespace = readonly string[] | ((ctx: NamespaceContext) => readonly string[]);

/** A store and the namespace a registry was given (`createRegistry({ store, namespace })`). */
export interface StoreBinding {
  store?: ToolStore;
  namespace?: StoreNamespace;
  /** How the store is named in messages (a redacted URL); default "the state store". */
  label?: string;
}
