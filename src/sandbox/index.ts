/**
 * The sandbox seam, as tools and the registry reach it: the runtime a registry owns (kept in its
 * tenant), found from an init context or a call's context.
 * Must not contain processes itself: runtime.ts does; this file only finds the right runtime.
 */
import type { Tool } from '../authoring/tool.js';
import { standaloneTenant, tenantOf, type Tenant } from '../workspace/tenant.js';
import { SandboxRuntime } from './runtime.js';
import type { SandboxOptions, SandboxStatus } from './types.js';

export { SandboxRuntime, type ContainedCommand } from './runtime.js';
export type { SandboxMode, SandboxOptions, SandboxStatus } from './types.js';

const SLOT = Symbol('agent-toolbelt.sandbox');

/** Gives `tenant` its sandbox runtime (what a registry does when it is created). */
export function installSandbox(
  tenant: Tenant,
  options: SandboxOptions | undefined,
  onStatus?: (status: SandboxStatus) => void,
): SandboxRuntime {
  return tenant.slot(SLOT, () => new SandboxRuntime(options, onStatus));
}

/** The sandbox runtime of the registry an init context belongs to (standalone tools: one of their own). */
export function sandboxRuntimeOf(initCtx: Tool.InitContext | undefined): SandboxRuntime {
  return tenantOf(initCtx).slot(SLOT, () => new SandboxRuntime());
}

/** The runtime and options for a call, from its context (`ctx.extra.registry` and `ctx.extra.initCtx`). */
export function sandboxForCall(ctx: Tool.Context): { runtime: SandboxRuntime; options: SandboxOptions } {
  const registry = ctx.extra?.registry as { tenant?: unknown } | undefined;
  const initCtx = ctx.extra?.initCtx as Tool.InitContext | undefined;
  const tenant = registry?.tenant;
  const runtime = (
    tenant && typeof (tenant as Tenant).slot === 'function' ? (tenant as Tenant) : standaloneTenant
  ).slot(SLOT, () => new SandboxRuntime());
  return { runtime, options: runtime.optionsFor(initCtx) };
}
