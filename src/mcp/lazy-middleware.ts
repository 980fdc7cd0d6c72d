/**
 * `lazyToolsMiddleware(registry)`: lazy MCP tools for `createAgent`. Before each model call it
 * drops the deferred tools no `tool_search` result has loaded yet (see lazy.ts); it holds no
 * selection logic of its own. langchain is loaded on first call, so the package root stays light.
 */
import type { AgentMiddleware } from 'langchain';
import type { ToolRegistryImpl } from '../registry.js';
import { toolsForTurn } from './lazy.js';

/**
 * A `createAgent` middleware that offers the model only the tools it may see this turn: every
 * tool except deferred (`lazy: true`) MCP tools, which appear once `tool_search` has found them
 * in this run. Pass the agent all of `registry.tools()`, so that any found tool can run.
 */
export async function lazyToolsMiddleware(registry: ToolRegistryImpl): Promise<AgentMiddleware> {
  const { createMiddleware } = await import('langchain');
  return createMiddleware({
    name: 'LazyToolsMiddleware',
    wrapModelCall: (request, handler) =>
      handler({ ...request, tools: toolsForTurn(registry, request.tools, request.messages) }),
  });
}
