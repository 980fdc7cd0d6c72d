/**
 * MCP server configuration from a JSON file. Two shapes are accepted: ours
 * (`{ "servers": [{ "name", "transport", ... }] }`) and the `mcpServers` map that Claude Desktop,
 * Cursor and others use (`{ "mcpServers": { "<name>": { "command", "args", "env" } | { "url" } } }`).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { McpServerConfig } from './client.js';

/** Reads and validates an MCP config file; relative stdio `cwd`s resolve against the file's directory. */
export async function loadMcpConfig(file: string): Promise<McpServerConfig[]> {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = await readFile(abs, 'utf8');
  } catch (err) {
    throw new Error(
      `Cannot read the MCP config file ${abs} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}). Check the path.`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`The MCP config file ${abs} is not valid JSON: ${(err as Error).message}. Fix the file and retry.`);
  }
  return parseMcpConfig(json, path.dirname(abs), abs);
}

/** Validates an already-parsed config object (either shape) into server configs. */
export function parseMcpConfig(json: unknown, baseDir = process.cwd(), source = 'the MCP config'): McpServerConfig[] {
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw new Error(
      `${source} must be a JSON object with "servers" (a list) or "mcpServers" (a map of name -> server).`,
    );
  }
  const obj = json as { servers?: unknown; mcpServers?: unknown };
  let servers: Record<string, unknown>[];
  if (Array.isArray(obj.servers)) {
    servers = obj.servers as Record<string, unknown>[];
  } else if (obj.mcpServers && typeof obj.mcpServers === 'object') {
    servers = Object.entries(obj.mcpServers as Record<string, Record<string, unknown>>).map(([name, s]) => ({
      name,
      ...s,
    }));
  } else {
    throw new Error(
      `${source} has neither "servers" (a list) nor "mcpServers" (a map of name -> server). See docs/mcp.md for the format.`,
    );
  }
  return servers.map((s, i) => {
    if (!s || typeof s !== 'object') throw new Error(`${source}: server #${i + 1} must be an object.`);
    const transport = s.transport ?? (typeof s.url === 'string' ? 'http' : 'stdio');
    // `type` is how the mcpServers format spells the transport ("stdio", "http", "sse", "streamable-http").
    const type = typeof s.type === 'string' ? s.type : undefined;
    const resolved = type === 'http' || type === 'sse' || type === 'streamable-http' ? 'http' : transport;
    const out = { ...s, transport: resolved } as Record<string, unknown>;
    delete out.type;
    if (resolved === 'stdio' && typeof out.cwd === 'string') out.cwd = path.resolve(baseDir, out.cwd);
    return out as unknown as McpServerConfig;
  });
}
