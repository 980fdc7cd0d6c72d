/**
 * One call's view of the store: which store (the run's LangGraph store, else the registry's), the
 * resolved namespace, and the record operations the tools share — reads that name a malformed
 * record's key, paged searches that keep only the exact namespace, an atomic claim (the engine's,
 * or any LangGraph PostgresStore's statement, else an in-process lock), versioned read-modify-writes built on it, and failures turned into one
 * sentence without secrets; and the guard that keeps a bare PostgresStore's pool errors from
 * ending the process.
 * Must not know any tool's record shape (each tool validates its own values).
 */
import { randomUUID } from 'node:crypto';
import { kindNamespace, resolveNamespace, STATE_KINDS, type StateKind } from './namespace.js';
import type { NamespaceContext, StoreBinding, StoreItem, ToolStore } from './types.js';
import { postgresClaim } from './postgres-claim.js';
import { redactSecrets } from './url.js';
import { describeThrown, isInstance } from '../text/describe.js';

/** Records read per page when a tool reads all records of one kind. */
export const STORE_PAGE_SIZE = 500;
/** Most records of one kind a tool reads in one call (memory notes, pending calls). */
export const MAX_STORE_SCAN_RECORDS = 20_000;

/** Reads and compare-and-set writes one `StoreScope.update` makes before it gives up (overtaken each time). */
export const STORE_UPDATE_ATTEMPTS = 10;
/** Most wait between two such attempts, times the attempt's number (ms; the wait is random below it). */
export const STORE_UPDATE_BACKOFF_MS = 5;
/** The field of a versioned record holding its revision (a random token, new on every write). */
export const REVISION_FIELD = 'rev';

/** This process's part of every revision it makes: random, so no two processes share one. */
const REVISION_PREFIX = randomUUID();
let revisionSeq = 0;

/** A fresh revision token for a versioned record: unique across processes and within this one (cheaper than a UUID per write). */
export function newRevision(): string {
  return `${REVISION_PREFIX}-${(++revisionSeq).toString(36)}`;
}

/** The key of `ctx.extra` the LangChain adapter puts the run's store (`config.store`) under. */
export const RUN_STORE_KEY = 'langgraphStore';
/** The key of `ctx.extra` the adapter puts the run's `config.configurable` under. */
export const RUN_CONFIGURABLE_KEY = 'langgraphConfigurable';

/** Thrown for a record whose value is not what this version writes; names the key. */
export class MalformedRecordError extends Error {
  override name = 'MalformedRecordError';
}

/** What scopes a call: its context as the pipeline gives it. */
export interface ScopeContext {
  sessionID?: string;
  agent?: string;
  extra?: Record<string, unknown>;
}

/** The store a call uses, under its namespace. */
export class StoreScope {
  constructor(
    readonly store: ToolStore,
    /** The encoded base namespace (`['toolbelt', ...labels]`). */
    readonly base: readonly string[],
    private readonly label = 'the state store',
  ) {}

  private readonly kinds = new Map<StateKind, string[]>();

  /** The namespace of one kind of state. */
  ns(kind: StateKind): string[] {
    let ns = this.kinds.get(kind);
    if (!ns) this.kinds.set(kind, (ns = kindNamespace(this.base, kind)));
    return ns;
  }

  /** The record `key` of `kind`, checked by `parse` (which returns undefined for a bad shape). */
  get<T>(
    kind: StateKind,
    key: string,
    parse: (value: Record<string, unknown>) => T | undefined,
  ): Promise<T | undefined> {
    // One promise step, no async wrapper: todoread's whole cost is about this call.
    let pending: Promise<StoreItem | null>;
    try {
      pending = this.store.get(this.ns(kind), key);
    } catch (err) {
      return Promise.reject(this.failure(`reading ${kind} record "${key}"`, err));
    }
    return pending.then(
      (item) => (item ? this.parsed(kind, item, parse) : undefined),
      (err: unknown) => {
        throw this.failure(`reading ${kind} record "${key}"`, err);
      },
    );
  }

  /** Checks one record read by `all` or `get`. */
  parsed<T>(kind: StateKind, item: StoreItem, parse: (value: Record<string, unknown>) => T | undefined): T {
    const value = item.value && typeof item.value === 'object' ? parse(item.value) : undefined;
    if (value === undefined) {
      throw new MalformedRecordError(
        `The ${kind} record "${item.key}" in ${this.label} (namespace ${item.namespace.join('/')}) is not in the shape this version writes ` +
          '(written by an older version, or edited by hand). Fix or delete that record; other records are unaffected.',
      );
    }
    return value;
  }

  /** Writes the record `key` of `kind` (one put: it lands whole or not at all). */
  put(kind: StateKind, key: string, value: Record<string, unknown>): Promise<void> {
    // One promise step, no async wrapper (as in `get`): todowrite's whole cost is about this call.
    let pending: Promise<void>;
    try {
      assertKey(key);
      pending = this.store.put(this.ns(kind), key, value);
    } catch (err) {
      return Promise.reject(this.failure(`saving ${kind} record "${key}"`, err));
    }
    return pending.then(undefined, (err: unknown) => {
      throw this.failure(`saving ${kind} record "${key}"`, err);
    });
  }

  /** Deletes the record `key` of `kind`. */
  delete(kind: StateKind, key: string): Promise<void> {
    return this.run(`deleting ${kind} record "${key}"`, () => this.store.delete(this.ns(kind), key));
  }

  /**
   * Every record of `kind` (optionally matching `filter`), oldest first (by the store's creation
   * time, then key). Only records in exactly this namespace are kept, whatever the engine's
   * prefix search matched.
   */
  async all(kind: StateKind, filter?: Record<string, unknown>): Promise<StoreItem[]> {
    const ns = this.ns(kind);
    const seen = new Map<string, StoreItem>();
    for (let offset = 0; ; offset += STORE_PAGE_SIZE) {
      const page = await this.run(`listing ${kind} records`, () =>
        this.store.search(ns, { filter, limit: STORE_PAGE_SIZE, offset }),
      );
      for (const item of page) if (sameNamespace(item.namespace, ns)) seen.set(item.key, item);
      if (page.length < STORE_PAGE_SIZE) break;
      if (offset + STORE_PAGE_SIZE >= MAX_STORE_SCAN_RECORDS) {
        const beyond = await this.run(`listing ${kind} records`, () =>
          this.store.search(ns, { filter, limit: 1, offset: offset + STORE_PAGE_SIZE }),
        );
        if (!beyond.length) break;
        throw new Error(
          `${capitalise(this.label)} holds more than ${MAX_STORE_SCAN_RECORDS} ${kind} records in namespace ${ns.join('/')}, more than one call reads. ` +
            'Remove old records (or rewrite notes whole with memory_write) and try again.',
        );
      }
    }
    return [...seen.values()].sort(byCreation);
  }

  /**
   * Sets `value` under `key` only if the record's `field` is `expected` now (a missing field counts
   * as `''`), or with `expected` null only if there is no record yet; true when this call did.
   * Atomic across processes when the engine has `claim` or is a LangGraph PostgresStore (made by
   * anyone, or wrapped by a graph run); otherwise within this process.
   */
  async claim(
    kind: StateKind,
    key: string,
    field: string,
    expected: string | null,
    value: Record<string, unknown>,
  ): Promise<boolean> {
    assertKey(key);
    const ns = this.ns(kind);
    const store = this.store;
    const atomic = claimOf(store);
    if (atomic) return this.run(`updating ${kind} record "${key}"`, () => atomic(ns, key, field, expected, value));
    return withLocalLock(store, `claim\n${ns.join('/')}\n${key}`, async () => {
      const item = await this.run(`reading ${kind} record "${key}"`, () => store.get(ns, key));
      if (expected === null ? item : !item || (item.value?.[field] ?? '') !== expected) return false;
      await this.run(`updating ${kind} record "${key}"`, () => store.put(ns, key, value));
      return true;
    });
  }

  /**
   * A versioned read-modify-write of the record `key`: reads it (checked by `parse`), asks `next`
   * for the new value, and writes that with a fresh `REVISION_FIELD` only if the record's revision
   * is still the one read (a compare-and-set through `claim`; a first record is created only if
   * none appeared meanwhile). Overtaken by another writer, it reads again, at most
   * `STORE_UPDATE_ATTEMPTS` times in all, and then gives up: returns undefined, having written
   * nothing. Calls in this process on one record queue (so they do not overtake each other);
   * other processes are what the compare-and-set guards against.
   */
  update<T, R extends Record<string, unknown>>(
    kind: StateKind,
    key: string,
    parse: (value: Record<string, unknown>) => T | undefined,
    next: (current: T | undefined) => R,
  ): Promise<R | undefined> {
    assertKey(key);
    return withLocalLock(this.store, `update\n${this.ns(kind).join('/')}\n${key}`, async () => {
      for (let attempt = 1; attempt <= STORE_UPDATE_ATTEMPTS; attempt++) {
        const item = await this.run(`reading ${kind} record "${key}"`, () => this.store.get(this.ns(kind), key));
        const current = item ? this.parsed(kind, item, parse) : undefined;
        const seen = item ? item.value[REVISION_FIELD] : null;
        const value = { ...next(current), [REVISION_FIELD]: newRevision() };
        if (await this.claim(kind, key, REVISION_FIELD, typeof seen === 'string' ? seen : item ? '' : null, value))
          return value;
        // Overtaken: wait a little (random, growing), so two processes do not meet again at once.
        if (attempt < STORE_UPDATE_ATTEMPTS)
          await new Promise((r) => setTimeout(r, Math.random() * STORE_UPDATE_BACKOFF_MS * attempt));
      }
      return undefined;
    });
  }

  /** Runs one store operation; a failure becomes one sentence (no password, no stack). */
  private async run<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw this.failure(what, err);
    }
  }

  private failure(what: string, err: unknown): Error {
    if (isInstance(err, MalformedRecordError)) return err;
    const reason = redactSecrets(describeThrown(err)).replace(/\s+/g, ' ').trim();
    return new Error(
      `${capitalise(this.label)} failed while ${what} (${reason || 'no reason given'}), so the call did not complete. ` +
        'Try again once the store is reachable.',
      { cause: err },
    );
  }
}

/**
 * What a scope needs of its owner: its id and store binding. Structural, so store/ does not import
 * the workspace's Tenant (which imports store/ types): the two folders stay one-way.
 */
export interface ScopeOwner {
  readonly id: string;
  readonly storeBinding?: StoreBinding;
}

/** The scope of a call: the run's store (LangGraph), else the registry's; undefined when neither (in-process state). */
export function storeScope(tenant: ScopeOwner, ctx: ScopeContext | undefined): StoreScope | undefined {
  const binding = tenant.storeBinding;
  const runStore = ctx?.extra?.[RUN_STORE_KEY];
  const store = isToolStore(runStore) ? runStore : binding?.store;
  if (!store) return undefined;
  // A fixed namespace resolves the same way for every call: one scope per tenant and store.
  const fixed = typeof binding?.namespace !== 'function';
  let cached = fixed ? fixedScopes.get(tenant) : undefined;
  const hit = cached?.get(store);
  if (hit) return hit;
  guardEngineErrors(store);
  const configurable = ctx?.extra?.[RUN_CONFIGURABLE_KEY];
  const nsCtx: NamespaceContext = {
    sessionID: ctx?.sessionID,
    agent: ctx?.agent,
    extra: ctx?.extra,
    configurable:
      configurable && typeof configurable === 'object' ? (configurable as Record<string, unknown>) : undefined,
  };
  const base = resolveNamespace(binding?.namespace, nsCtx, ['registry', tenant.id]);
  const scope = new StoreScope(store, base, store === binding?.store ? binding.label : undefined);
  if (fixed) {
    if (!cached) fixedScopes.set(tenant, (cached = new WeakMap()));
    cached.set(store, scope);
  }
  return scope;
}

const fixedScopes = new WeakMap<ScopeOwner, WeakMap<ToolStore, StoreScope>>();

const guarded = new WeakSet<object>();
const ignore = () => undefined;
type Emitter = { on(event: string, listener: (arg: unknown) => void): unknown };

/**
 * Keeps a LangGraph `PostgresStore` handed to us as it is (not from `openStore`, which does this
 * itself) from ending the process when PostgreSQL restarts: its pool (`core.pool`, a pg Pool)
 * reports a connection the server dropped while idle as an 'error' event, and a connection
 * dropped while checked out reports one on itself; with no listener either ends the process.
 * Listens to both, once per store (and the store a LangGraph AsyncBatchedStore wraps); the next
 * query reconnects or fails with its own sentence. Anything else (no `core.pool` with `on`) is
 * left alone.
 */
export function guardEngineErrors(store: object): void {
  if (guarded.has(store)) return;
  guarded.add(store);
  // A graph run hands tools LangGraph's AsyncBatchedStore, which wraps the graph's store as `store`.
  const inner = (store as { store?: unknown }).store;
  if (inner && typeof inner === 'object') guardEngineErrors(inner);
  const pool = (store as { core?: { pool?: unknown } }).core?.pool as Emitter | undefined;
  if (!pool || typeof pool.on !== 'function') return;
  pool.on('error', ignore);
  pool.on('connect', (client) => {
    if (client && typeof (client as Emitter).on === 'function') (client as Emitter).on('error', ignore);
  });
}

/** Whether `value` has the four methods of the store interface. */
export function isToolStore(value: unknown): value is ToolStore {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return ['get', 'put', 'delete', 'search'].every((m) => typeof v[m] === 'function');
}

function sameNamespace(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((l, i) => l === b[i]);
}

function byCreation(a: StoreItem, b: StoreItem): number {
  const ta = a.createdAt ? new Date(a.createdAt).getTime() : 0;
  const tb = b.createdAt ? new Date(b.createdAt).getTime() : 0;
  return ta - tb || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

function assertKey(key: string): void {
  if (key.includes('\0')) {
    throw new Error(
      `The record key ${JSON.stringify(key)} contains a NUL character, which stores cannot keep. Use another id.`,
    );
  }
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

type Claim = NonNullable<ToolStore['claim']>;
/** Each engine's atomic claim, found once (undefined: the engine has none, so the in-process lock). */
const engineClaims = new WeakMap<object, Claim | undefined>();

/** The store LangGraph's AsyncBatchedStore (a graph run's store) wraps, else the store itself. */
function unwrapped(store: object): object {
  const wrapped = store as { lg_name?: unknown; store?: unknown };
  return wrapped.lg_name === 'AsyncBatchedStore' && wrapped.store && typeof wrapped.store === 'object'
    ? wrapped.store
    : store;
}

/**
 * The store's own atomic claim; else, for a LangGraph PostgresStore (whoever made it, and the one a
 * graph run wraps in its AsyncBatchedStore), the conditional statement on its own table and pool.
 */
function claimOf(store: ToolStore): Claim | undefined {
  if (typeof store.claim === 'function') return store.claim.bind(store);
  const engine = unwrapped(store);
  if (engineClaims.has(engine)) return engineClaims.get(engine);
  const claim = postgresClaim(engine);
  engineClaims.set(engine, claim);
  return claim;
}

const locks = new WeakMap<object, Map<string, Promise<unknown>>>();

/**
 * Runs `fn` after every earlier `fn` of the same store and key in this process. A graph run's
 * store is LangGraph's AsyncBatchedStore, a new one per run around the graph's store: the lock is
 * the wrapped store's, so two runs at once on one store queue too.
 */
async function withLocalLock<T>(store: object, key: string, fn: () => Promise<T>): Promise<T> {
  const owner = unwrapped(store);
  let map = locks.get(owner);
  if (!map) locks.set(owner, (map = new Map<string, Promise<unknown>>()));
  const before = map.get(key) ?? Promise.resolve();
  const run = before.then(fn, fn);
  const tail = run.catch(() => undefined);
  map.set(key, tail);
  void tail.then(() => {
    if (map.get(key) === tail) map.delete(key);
  });
  return run;
}

export { STATE_KINDS };
