/**
 * Which MCP connection a running `tools/call` came in on, for code the call reaches through the
 * registry (an approver asking that client's user by elicitation, src/cli/approver.ts).
 * server.ts runs each call inside `withMcpCall`; `currentMcpCall` reads it back.
 * Must not send anything itself: it only carries the connection along the call's async path.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/** The connection and request a call came from. */
export interface McpCall {
  server: Server;
  /** The tools/call request: requests sent on its behalf are related to it (its HTTP stream). */
  requestId: RequestId;
  /** Aborted when the client cancels the call or goes away. */
  signal: AbortSignal;
}

const calls = new AsyncLocalStorage<McpCall>();

/** Runs `fn` (one tools/call's execution) with its connection known to `currentMcpCall`. */
export function withMcpCall<T>(call: McpCall, fn: () => Promise<T>): Promise<T> {
  return calls.run(call, fn);
}

/** The MCP call the current code runs for, if it runs for one. */
export function currentMcpCall(): McpCall | undefined {
  return calls.getStore();
}
