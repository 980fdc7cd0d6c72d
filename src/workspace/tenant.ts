/**
 * A tenant: the mutable state one registry owns (read tracker, saved outputs, todo lists, anything
 * a tool keeps between calls). Two registries are two tenants that cannot see each other's state.
 * The registry hands its tenant to the tools it initialises through their init context; a tool
 * initialised directly (no registry) uses the standalone tenant.
 * Must not implement the state it holds: tracking is read-tracker.ts', saved outputs output-store.ts'.
 */
import { randomUUID } from 'node:crypto';
import type { Tool } from '../authoring/tool.js';
import { ReadTracker } from './read-tracker.js';
import { SavedOutputs, sweepStaleOutputDirs } from './saved-outputs.js';
import type { StoreBinding } from '../store/types.js';

/** Options of a tenant. */
export interface TenantOptions {
  /** Save cut outputs exactly in this directory instead of a new private one. */
  outputDir?: string;
  /** Where state that outlives the process lives (todo lists, memory notes, pending calls), and under which namespace. */
  store?: StoreBinding;
}

/** The state of one registry. */
export class Tenant {
  /** A random id, also the default session id prefix of calls that name no session. */
  readonly id = randomUUID();
  /** Which files each session read (stale-write checks of write and edit). */
  readonly readTracker = new ReadTracker();
  /** Where full outputs of cut results are saved; only this tenant's tools may read them back. */
  readonly outputs: SavedOutputs;
  /** The registry's store and namespace, when it was given one (see src/store/). */
  readonly storeBinding?: StoreBinding;
  private readonly slots = new Map<symbol, unknown>();
  /**
   * Folders the file tools may read (never write) besides the workspace, for an init context: the
   * skills' folders outside it (set by src/skills/catalog.ts, which this module must not import).
   */
  readRoots?: (initCtx: Tool.InitContext) => Promise<string[]>;

  constructor(options: TenantOptions = {}) {
    this.outputs = new SavedOutputs(options.outputDir);
    if (options.store?.store || options.store?.namespace) this.storeBinding = { ...options.store };
  }

  /**
   * A registry's tenant: also starts, once per process, the sweep of private output directories
   * killed processes left (the standalone tenant, made at import, does not).
   */
  static forRegistry(options: TenantOptions = {}): Tenant {
    void sweepStaleOutputDirs();
    return new Tenant(options);
  }

  /** A tool's own piece of tenant state under `key`, made by `make` on first use. */
  slot<T>(key: symbol, make: () => T): T {
    if (!this.slots.has(key)) this.slots.set(key, make());
    return this.slots.get(key) as T;
  }
}

/** The tenant of tools initialised without a registry. */
export const standaloneTenant = new Tenant();

const TENANT = Symbol('agent-toolbelt.tenant');

/** The tenant an init context belongs to (the standalone one when no registry bound it). */
export function tenantOf(initCtx: Tool.InitContext | undefined): Tenant {
  const t = initCtx && (initCtx as unknown as Record<symbol, unknown>)[TENANT];
  return t instanceof Tenant ? t : standaloneTenant;
}

/** A copy of `initCtx` bound to `tenant` (what a registry passes to `Tool.Info.init`). */
export function bindTenant(initCtx: Tool.InitContext, tenant: Tenant): Tool.InitContext {
  return Object.assign({ ...initCtx }, { [TENANT]: tenant });
}
