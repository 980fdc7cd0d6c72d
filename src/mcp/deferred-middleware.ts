/**
 * `lazyToolsMiddleware(registry)`: lazy MCP tools for `createAgent`. Before each model call it
 * drops the deferred tools no `tool_search` result has loaded yet (see lazy.ts); it holds no
 * selection logic of its own. langchain is loaded on first call, so the package root stays light.
 */
import type { AgentMiddleware } from 'langchain';
import type { Registry } from '../registry/registry.js';
import { toolsForTurn } from './deferred.js';

/**
 * A `createAgent` middleware that offers the model only the tools it may see this turn: every
 * tool except deferred ones (lazy MCP tools, `deferTools`), which appear once `tool_search` has
 * found them in this run — then as ordinary tools, without the `defer_loading` flag that only the
 * provider's own search understands. Pass the agent all of `registry.tools()`, so that any found
 * tool can run. Use it or langchain's `providerToolSearchMiddleware`, not both.
 */
export async function lazyToolsMiddleware(registry: Registry): Promise<AgentMiddleware> {
  const { createMiddleware } = await import('langchain');
  return createMiddleware({
    name: 'LazyToolsMiddleware',
    wrapModelCall: (request, handler) =>
      handler({ ...request, tools: toolsForTurn(registry, request.tools, request.messages).map(bindable) }),
  });
}

/**
 * A found deferred tool as the model is offered it: its definition without `defer_loading` (a
 * binding spec, as providerToolSearchMiddleware makes; the agent still runs the tool itself).
 */
function bindable<T>(tool: T): T {
  const t = tool as { name?: string; description?: string; schema?: unknown; extras?: Record<string, unknown> } | null;
  if (t?.extras?.defer_loading !== true) return tool;
  const { defer_loading: _flag, ...extras } = t.extras;
  return { name: t.name, description: t.description, schema: t.schema, extras } as T;
}
