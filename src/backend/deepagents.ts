/**
 * `toDeepAgentsBackend`: our workspace as a backend `createDeepAgent({ backend })` accepts, so
 * deepagents' own tools (ls, read_file, write_file, edit_file, glob, grep, execute) work through our
 * sandbox, atomic writes, locks, caps and stale checks, and `execute` runs through our bash pipeline.
 * Must not import deepagents (the result only has to fit its protocol) nor re-implement the backend
 * (local.ts).
 */
import { Workspace, workspaceRootFor } from '../workspace/workspace.js';
import { createRegistry, type Registry } from '../registry/registry.js';
import { registerBuiltinTools } from '../tools/index.js';
import type { Tool } from '../authoring/tool.js';
import type { WorkspaceBackend } from './local.js';
import type { SandboxOptions } from '../sandbox/types.js';

/** What `toDeepAgentsBackend` builds the backend from. */
export interface DeepAgentsBackendOptions {
  /** The workspace root (`/` of the backend); default `AGENT_WORKSPACE_ROOT`, else the current directory. */
  workspaceRoot?: string;
  /** More roots the sandbox accepts (reached by their host paths from bash only). */
  additionalRoots?: string[];
  /**
   * The registry whose `bash` runs `execute`: its policy, timeouts, output caps and OS sandbox apply.
   * Default: a new registry with the built-in bash. Give `execute: false` for a backend that runs nothing.
   */
  registry?: Registry;
  /**
   * The OS sandbox `execute` runs in, for the registry made here (ignored with `registry`: give that
   * registry its own). `{ mode: 'required' }` refuses to run a command uncontained (docs/sandbox.md).
   */
  sandbox?: SandboxOptions;
  /** Offer `execute` (default true). Without it deepagents' agent gets no execute tool. */
  execute?: boolean;
  /** The session the backend's reads and writes count for in the stale-write checks (default `deepagents`). */
  sessionID?: string;
  /** The sandbox id deepagents shows (default `toolbelt-<random>`). */
  id?: string;
}

/**
 * Our workspace as a deepagents backend (`SandboxBackendProtocolV2`, or `BackendProtocolV2` with
 * `execute: false`). Resolves once the workspace root is checked (a missing root rejects).
 */
export async function toDeepAgentsBackend(options: DeepAgentsBackendOptions = {}): Promise<WorkspaceBackend> {
  const initCtx: Tool.InitContext = {};
  if (options.workspaceRoot !== undefined) initCtx.workspaceRoot = options.workspaceRoot;
  if (options.additionalRoots) initCtx.additionalRoots = [...options.additionalRoots];
  const workspace = await Workspace.create({
    root: workspaceRootFor(initCtx),
    additionalRoots: options.additionalRoots ?? [],
  });
  let registry: Registry | undefined;
  if (options.execute !== false) {
    registry =
      options.registry ??
      registerBuiltinTools(createRegistry(options.sandbox ? { sandbox: options.sandbox } : {}), ['bash']);
    if (!registry.has('bash'))
      throw new Error(
        'toDeepAgentsBackend: the registry given has no bash tool, so execute cannot run. Register it (registerBuiltinTools(registry, ["bash"])) or pass execute: false.',
      );
  }
  // The backend's module loads on first use: importing the package does not pay for it.
  const { WorkspaceBackend: Backend, newBackendId } = await import('./local.js');
  const backend = new Backend({
    workspace,
    registry,
    initCtx,
    sessionID: options.sessionID ?? 'deepagents',
    id: options.id ?? newBackendId(),
    ownsRegistry: registry !== undefined && options.registry === undefined,
  });
  if (!registry) {
    // No execute: deepagents then sees a plain BackendProtocolV2 (isSandboxBackend is false).
    Object.defineProperty(backend, 'execute', { value: undefined });
  }
  return backend;
}

export type { WorkspaceBackend };
