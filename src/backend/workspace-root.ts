/**
 * How a tool tells that a backend is our own workspace on this host (toDeepAgentsBackend) and
 * where that workspace is, without importing the backend's module (which imports the built-in
 * list, which imports the tools: a circle). The backend sets the symbol; tools read it.
 * Must not import anything.
 */

/** The property our workspace backend keeps its root under (the directory `/` stands for). */
export const WORKSPACE_ROOT = Symbol.for('agent-toolbelt.workspace-root');

/** The host directory of `backend` when it is our workspace backend, else undefined. */
export function hostWorkspaceRoot(backend: unknown): string | undefined {
  if (backend === null || typeof backend !== 'object') return undefined;
  const root = (backend as { [WORKSPACE_ROOT]?: unknown })[WORKSPACE_ROOT];
  return typeof root === 'string' ? root : undefined;
}
