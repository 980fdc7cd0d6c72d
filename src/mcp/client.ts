/**
 * Importing MCP servers' tools into a registry: one `McpServerConnection` per server, owned by the
 * registry. Each server's tools become ordinary registry entries (`server__tool`) whose calls go
 * through the shared pipeline, so permissions, streaming, output caps and statistics apply to
 * them exactly as to built-in tools.
 * Must not speak the protocol itself: connection.ts and transport.ts do; this file plans and registers.
 */
import type { Registry } from '../registry/registry.js';
import { resolveServerConfig } from './config.js';
import { McpServerConnection } from './connection.js';
import type { ConnectMcpOptions, McpServerConfig, McpServerStatus } from './types.js';
import { describeThrown } from '../text/describe.js';

/** The result of `connectMcp`: each server's connection and status, and how to close them all. */
export interface McpConnection {
  /** Each server's status when `connectMcp` resolved, in config order. */
  servers: McpServerStatus[];
  /** Every imported tool id. */
  tools: string[];
  /** The live connections (their `status`, `tools` and events change as servers die and come back). */
  connections: McpServerConnection[];
  /** Closes every connection of this call and unregisters its tools. */
  close(): Promise<void>;
}

/**
 * Connects to MCP servers and registers their tools in `registry`. Servers connect in parallel;
 * one that fails — to start, or because its config entry is invalid — does not stop the others
 * (its status says why). Throws only when `servers` is not a list or a name is already connected.
 */
export async function connectMcp(registry: Registry, options: ConnectMcpOptions): Promise<McpConnection> {
  if (!Array.isArray(options?.servers))
    throw new Error('connectMcp needs { servers: [...] }: a list of { name, transport: "stdio" | "http", ... }.');
  const live = mcpConnections(registry);
  const ctx = {
    workspaceFolder: options.workspaceFolder ?? process.cwd(),
    variables: options.variables ?? process.env,
  };
  const names = new Set<string>();
  const planned = options.servers.map((raw, i) => {
    const name = (raw as { name?: unknown })?.name;
    let config: McpServerConfig | undefined;
    let error: string | undefined;
    for (const old of live.filter((c) => c.name === name)) {
      if (!INACTIVE.has(old.status.state)) {
        throw new Error(
          `MCP server "${String(name)}" is already connected to this registry (${old.status.state}). Call disconnectMcp(registry, ["${String(name)}"]) first, or give the server another name.`,
        );
      }
      registry.release(old); // a failed or disabled entry is replaced by the new one
    }
    if (typeof name === 'string' && names.has(name)) {
      error = `MCP server "${name}": "name" is used twice; give every server its own name.`;
    } else if (isDisabled(raw)) {
      config = raw;
    } else {
      try {
        config = resolveServerConfig(raw, i, ctx);
      } catch (err) {
        error = describeThrown(err);
      }
    }
    if (typeof name === 'string') names.add(name);
    const placeholder = {
      name: typeof name === 'string' && name ? name : `#${i + 1}`,
      transport: 'stdio',
      command: '',
    };
    const connection = new McpServerConnection(registry, config ?? (placeholder as McpServerConfig), options);
    if (error !== undefined) connection.markUnstarted('failed', error);
    else if (isDisabled(raw)) connection.markUnstarted('disabled');
    return { connection, start: error === undefined && !isDisabled(raw) };
  });
  const listed = await Promise.all(planned.map((p) => (p.start ? p.connection.open() : Promise.resolve(undefined))));
  // Register in config order so that ids (and collision suffixes) do not depend on start-up speed.
  planned.forEach((p, i) => {
    const tools = listed[i];
    if (tools) p.connection.install(tools);
  });
  const connections = planned.map((p) => p.connection);
  return {
    servers: connections.map((c) => c.status),
    tools: connections.flatMap((c) => c.tools),
    connections,
    close: async () => {
      await Promise.all(connections.map((c) => c.close()));
    },
  };
}

/** Closes every MCP connection of `registry` (or only the named servers) and unregisters their tools. */
export async function disconnectMcp(registry: Registry, names?: string[]): Promise<void> {
  const closing = mcpConnections(registry).filter((c) => !names || names.includes(c.name));
  await Promise.all(closing.map((c) => c.close()));
}

/** The current state of every server connection `registry` owns. */
export function mcpStatus(registry: Registry): McpServerStatus[] {
  return mcpConnections(registry).map((c) => c.status);
}

/** The MCP server connections `registry` owns. */
export function mcpConnections(registry: Registry): McpServerConnection[] {
  return registry.sources().filter((s): s is McpServerConnection => s instanceof McpServerConnection);
}

/** States in which a connection holds no tools, so a new connection may take its name. */
const INACTIVE = new Set<McpServerStatus['state']>(['failed', 'disabled', 'closed']);

function isDisabled(raw: unknown): raw is McpServerConfig {
  const r = raw as { enabled?: unknown; disabled?: unknown } | null;
  return !!r && typeof r === 'object' && (r.enabled === false || r.disabled === true);
}
