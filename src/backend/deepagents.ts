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
  /** The workspace root; default `AGENT_WORKSPACE_ROOT`, else the current directory. */
  workspaceRoot?: string;
  /**
   * More roots the sandbox accepts: reached by their host paths from bash, and from the file
   * operations too with `virtualMode: false`.
   */
  additionalRoots?: string[];
  /**
   * deepagents' option of the same name. `true` (the default): `/` is the workspace root, so
   * `/src/a.ts` is `<root>/src/a.ts` and no host path reaches the model; `execute` sees the same file
   * as `src/a.ts` (its cwd is the root). `false`: an absolute path is the host's own (still confined to
   * the workspace roots), so a file written as `<root>/app.py` runs as `python <root>/app.py`. Either
   * way a relative path is relative to the root. (docs/backends.md, "Paths: virtualMode".)
   */
  virtualMode?: boolean;
  /** Files to create at the start (path -> text), as deepagents' sandboxes take `initialFiles`. */
  initialFiles?: Record<string, string>;
  /**
   * The registry whose policy judges every operation (each as the matching tool's call: ls as list,
   * read, write, edit, delete, grep, glob; uploads as write, downloads as read) and whose `bash` runs
   * `execute`: its timeouts, output caps and OS sandbox apply. Default: a new registry with the
   * built-in bash and no policy. Give `execute: false` for a backend that runs nothing.
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
  const execute = options.execute !== false;
  let registry = options.registry;
  if (execute) {
    registry ??= registerBuiltinTools(createRegistry(options.sandbox ? { sandbox: options.sandbox } : {}), ['bash']);
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
    execute,
    initCtx,
    sessionID: options.sessionID ?? 'deepagents',
    id: options.id ?? newBackendId(),
    virtualMode: options.virtualMode ?? true,
    ownsRegistry: registry !== undefined && options.registry === undefined,
  });
  if (!execute) {
    // No execute: deepagents then sees a plain BackendProtocolV2 (isSandboxBackend is false).
    Object.defineProperty(backend, 'execute', { value: undefined });
  }
  if (options.initialFiles) {
    try {
      await backend.seed(options.initialFiles);
    } catch (err) {
      await backend.close();
      throw err;
    }
  }
  return backend;
}

export type { WorkspaceBackend };
