/**
 * The MCP entry points as the package exports them: thin async wrappers that load the MCP SDK on
 * first use, so `import 'agent-toolbelt'` does not load it for hosts that never speak MCP.
 * Must not import the MCP SDK statically: hosts without MCP pay nothing for it.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Registry } from '../registry/registry.js';
import type { McpServerOptions, McpServing, ServeMcpOptions } from './server.js';
import type { McpConnection } from './client.js';
import type { McpServerConnection } from './connection.js';
import type { LoadMcpConfigOptions } from './config.js';
import type { ConnectMcpOptions, McpServerConfig, McpServerStatus } from './types.js';

export type { McpServerOptions, McpServing, ServeMcpOptions } from './server.js';
export type { McpConnection } from './client.js';
export type { McpServerConnection } from './connection.js';
export type { LoadMcpConfigOptions } from './config.js';
export type {
  ConnectMcpOptions,
  McpConnectionEvents,
  McpConnectionState,
  McpReconnectOptions,
  McpServerConfig,
  McpStdioServerConfig,
  McpHttpServerConfig,
  McpServerStatus,
  McpPermissionsConfig,
  McpToolInfo,
} from './types.js';

/** Serves `registry` over MCP (stdio, or Streamable HTTP on 127.0.0.1 by default). */
export async function serveMcp(registry: Registry, options: ServeMcpOptions): Promise<McpServing> {
  // Each transport's module loads on first use; server.ts and http-server.ts never import each other's entry.
  if (options.transport === 'stdio') return (await import('./server.js')).serveStdio(registry, options);
  if (options.transport === 'http') return (await import('./http-server.js')).serveHttp(registry, options);
  throw new Error(
    `serveMcp: "transport" must be "stdio" or "http", got ${JSON.stringify((options as { transport?: unknown })?.transport)}.`,
  );
}

/** A low-level MCP `Server` for `registry`, to connect to a transport of your own (one per connection). */
export async function createMcpServer(registry: Registry, options: McpServerOptions = {}): Promise<Server> {
  return (await import('./server.js')).createMcpServer(registry, options);
}

/** Imports MCP servers' tools into `registry`; the registry owns the connections. */
export async function connectMcp(registry: Registry, options: ConnectMcpOptions): Promise<McpConnection> {
  return (await import('./client.js')).connectMcp(registry, options);
}

/** Closes `registry`'s MCP connections (or only the named servers) and unregisters their tools. */
export async function disconnectMcp(registry: Registry, names?: string[]): Promise<void> {
  // A registry that never connected owns no MCP connection: no need to load the SDK.
  if (!registry.sources().some((s) => s.kind === 'mcp')) return;
  return (await import('./client.js')).disconnectMcp(registry, names);
}

/** The state of every MCP server connection `registry` owns. */
export async function mcpStatus(registry: Registry): Promise<McpServerStatus[]> {
  if (!registry.sources().some((s) => s.kind === 'mcp')) return [];
  return (await import('./client.js')).mcpStatus(registry);
}

/** The MCP server connections `registry` owns (each with `connect`, `close`, `status`, `tools`, `on`). */
export async function mcpConnections(registry: Registry): Promise<McpServerConnection[]> {
  if (!registry.sources().some((s) => s.kind === 'mcp')) return [];
  return (await import('./client.js')).mcpConnections(registry);
}

/** Reads an MCP config file: ours, Claude Desktop/Cursor's `mcpServers` map, or VS Code's `servers` map. */
export async function loadMcpConfig(file: string, options?: LoadMcpConfigOptions): Promise<McpServerConfig[]> {
  return (await import('./config.js')).loadMcpConfig(file, options);
}
