/**
 * The MCP entry points as the package exports them: thin async wrappers that load the MCP SDK on
 * first use, so `import 'agent-toolbelt'` does not load it for hosts that never speak MCP.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ToolRegistryImpl } from '../registry.js';
import type { McpServerOptions, McpServing, ServeMcpOptions } from './server.js';
import type { ConnectMcpOptions, McpConnection, McpServerConfig, McpServerStatus } from './client.js';

export type { McpServerOptions, McpServing, ServeMcpOptions } from './server.js';
export type {
  ConnectMcpOptions,
  McpConnection,
  McpServerConfig,
  McpStdioServerConfig,
  McpHttpServerConfig,
  McpServerStatus,
  McpPermissionsConfig,
  McpToolInfo,
} from './client.js';

/** Serves `registry` over MCP (stdio, or Streamable HTTP on 127.0.0.1 by default). */
export async function serveMcp(registry: ToolRegistryImpl, options: ServeMcpOptions): Promise<McpServing> {
  return (await import('./server.js')).serveMcp(registry, options);
}

/** A low-level MCP `Server` for `registry`, to connect to a transport of your own (one per connection). */
export async function createMcpServer(registry: ToolRegistryImpl, options: McpServerOptions = {}): Promise<Server> {
  return (await import('./server.js')).createMcpServer(registry, options);
}

/** Imports MCP servers' tools into `registry` (same as `registry.connectMcp(options)`). */
export async function connectMcp(registry: ToolRegistryImpl, options: ConnectMcpOptions): Promise<McpConnection> {
  return (await import('./client.js')).connectMcp(registry, options);
}

/** The state of every MCP server connected to `registry`. */
export async function mcpStatus(registry: ToolRegistryImpl): Promise<McpServerStatus[]> {
  return (await import('./client.js')).mcpStatus(registry);
}

/** Reads an MCP config file (`{ "servers": [...] }` or `{ "mcpServers": { ... } }`). */
export async function loadMcpConfig(file: string): Promise<McpServerConfig[]> {
  return (await import('./config.js')).loadMcpConfig(file);
}
