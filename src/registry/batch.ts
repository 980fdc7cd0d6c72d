/**
 * `executeBatch`: several calls at once, in an order that is safe without being serial. Read-only
 * calls run in parallel; writes to different paths run in parallel and writes to the same path in
 * the order given; bash, task and other tools that execute programs (or writes whose path cannot be
 * told) run one at a time. One failure does not cancel the others; results come back in the order
 * the calls were given.
 * Must not run a call's steps or import registry.ts: each call goes through the registry's own execute().
 */
import path from 'node:path';
import type { Tool } from '../authoring/tool.js';
import type { ToolFinalUpdate } from '../pipeline/types.js';
import type { ToolPermissions } from '../authoring/permissions.js';
import { workspaceRootFor } from '../workspace/workspace.js';

/** One call of a batch. */
export interface BatchCall {
  id: string;
  args: unknown;
  ctx?: Partial<Tool.Context>;
  callID?: string;
}

/**
 * What a batch needs of a registry. Structural, so this module does not import registry.ts (which
 * imports it for `registry.executeBatch`): `O` is the registry's execute options.
 */
export interface BatchRegistry<O extends { callID?: string }> {
  permissions(id: string): ToolPermissions | undefined;
  execute(
    id: string,
    args: unknown,
    ctx: Partial<Tool.Context>,
    initCtx: Tool.InitContext | undefined,
    options: O,
  ): Promise<ToolFinalUpdate>;
}

/** How a call is scheduled: alongside anything, in its path's queue, or in the one-at-a-time queue. */
export type BatchLane = { kind: 'parallel' } | { kind: 'path'; key: string } | { kind: 'exclusive' };

const PATH_KEYS = ['filePath', 'path', 'file'];

/** The lane of one call, from the tool's permissions and its path argument. */
function laneOf(
  registry: Pick<BatchRegistry<{ callID?: string }>, 'permissions'>,
  call: BatchCall,
  initCtx: Tool.InitContext = {},
): BatchLane {
  const required = registry.permissions(call.id)?.required ?? [];
  if (required.includes('execute')) return { kind: 'exclusive' };
  if (!required.some((p) => p === 'write' || p === 'memory')) return { kind: 'parallel' };
  const args = call.args && typeof call.args === 'object' ? (call.args as Record<string, unknown>) : {};
  const key = PATH_KEYS.find((k) => typeof args[k] === 'string');
  if (!key) return { kind: 'exclusive' };
  return { kind: 'path', key: path.resolve(workspaceRootFor(initCtx), args[key] as string) };
}

/** Runs `calls` as the module comment says; resolves to their final updates, in order. */
export function executeBatch<O extends { callID?: string }>(
  registry: BatchRegistry<O>,
  calls: readonly BatchCall[],
  initCtx?: Tool.InitContext,
  options: Omit<O, 'callID'> = {} as Omit<O, 'callID'>,
): Promise<ToolFinalUpdate[]> {
  const tails = new Map<string, Promise<unknown>>();
  const EXCLUSIVE = '\0exclusive';
  return Promise.all(
    calls.map((call) => {
      const run = () =>
        registry.execute(call.id, call.args, call.ctx ?? {}, initCtx, { ...options, callID: call.callID } as O);
      const lane = laneOf(registry, call, initCtx);
      if (lane.kind === 'parallel') return run();
      const key = lane.kind === 'exclusive' ? EXCLUSIVE : lane.key;
      // execute never rejects, so a failed call still releases its queue.
      const started = (tails.get(key) ?? Promise.resolve()).then(run);
      tails.set(key, started);
      return started;
    }),
  );
}
