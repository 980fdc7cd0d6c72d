/**
 * Importing MCP servers' tools into a registry: each server's tools become ordinary registry
 * entries (`server__tool`) whose calls go through the shared pipeline, so permissions, streaming,
 * timeouts, output caps and statistics apply to them exactly as to built-in tools.
 */
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Tool } from '../tool.js';
import { ALL_PERMISSIONS, type ToolPermission } from '../permissions.js';
import type { ToolRegistryImpl } from '../registry.js';

/** Default time limit (ms) of one imported tool call, unless the server config sets `timeoutMs`. */
export const DEFAULT_MCP_TOOL_TIMEOUT_MS = 60_000;
/** How long (ms) a server may take to start and answer `initialize` and `tools/list`. */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;
/** How much of a stdio server's stderr (chars) is kept to explain why it failed or died. */
export const MCP_STDERR_TAIL_CHARS = 2_000;
/** Separator between the server name and the tool name in an imported tool's id. */
export const MCP_NAME_SEPARATOR = '__';
/** The longest tool id providers accept (OpenAI's function-name rule). */
const MAX_ID_LENGTH = 64;
/** The SDK's own request timeout is effectively disabled: the pipeline's timeout aborts the call. */
const SDK_NO_TIMEOUT_MS = 2_147_483_647;

/** A tool as an MCP server lists it (the fields we use). */
export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: {
    title?: string;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
}

/**
 * Which permissions an imported tool requires: one list for every tool of the server, a map from
 * tool name (or `*` for the rest) to a list, or a function. Default: `readOnlyHint` -> `read`,
 * otherwise `execute`.
 */
export type McpPermissionsConfig =
  ToolPermission[] | Record<string, ToolPermission[]> | ((tool: McpToolInfo) => ToolPermission[]);

interface McpServerCommon {
  /** Prefix of the imported tool ids (`name__tool`) and of their descriptions (`[name]`). */
  name: string;
  /** `false` skips this server (default true). */
  enabled?: boolean;
  /** Import only these tool names (the server's names, before prefixing). */
  toolsAllowed?: string[];
  /** Never import these tool names. */
  toolsDenied?: string[];
  permissions?: McpPermissionsConfig;
  /** Time limit (ms) of one call (default 60,000). */
  timeoutMs?: number;
}

/** A server started as a child process, spoken to over its stdin/stdout. */
export interface McpStdioServerConfig extends McpServerCommon {
  transport: 'stdio';
  command: string;
  args?: string[];
  /** Added to a minimal inherited environment (PATH, HOME, ...), as the SDK does. */
  env?: Record<string, string>;
  cwd?: string;
}

/** A server reached over Streamable HTTP, falling back to SSE when that is all it speaks. */
export interface McpHttpServerConfig extends McpServerCommon {
  transport: 'http';
  url: string;
  headers?: Record<string, string>;
}

/** One MCP server to import tools from. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** Options of `connectMcp`. */
export interface ConnectMcpOptions {
  servers: McpServerConfig[];
  /** The name this client gives servers in `initialize` (default `agent-toolbelt`). */
  clientName?: string;
  /** Receives every chunk a stdio server writes to stderr (it is otherwise kept only as a tail for error messages). */
  onStderr?: (server: string, chunk: string) => void;
}

/** How one server's connection went. */
export interface McpServerStatus {
  name: string;
  /** `connected`; `failed` (never started); `closed` (died, or was disconnected); `disabled`. */
  state: 'connected' | 'failed' | 'closed' | 'disabled';
  /** The imported tool ids. */
  tools: string[];
  /** Why it failed or died. */
  error?: string;
  /** `streamable-http` or `sse` for HTTP servers, `stdio` otherwise. */
  transport?: 'stdio' | 'streamable-http' | 'sse';
}

/** The result of `connectMcp`: what connected, what did not, and how to close it all. */
export interface McpConnection {
  servers: McpServerStatus[];
  /** Every imported tool id. */
  tools: string[];
  /** Closes every connection of this call and unregisters its tools. */
  close(): Promise<void>;
}

class ServerLink {
  client?: Client;
  transport?: Transport;
  state: McpServerStatus['state'] = 'failed';
  error?: string;
  stderrTail = '';
  kind?: McpServerStatus['transport'];
  tools: string[] = [];
  closing = false;

  constructor(
    readonly config: McpServerConfig,
    readonly registry: ToolRegistryImpl,
  ) {}

  status(): McpServerStatus {
    return {
      name: this.config.name,
      state: this.state,
      tools: [...this.tools],
      error: this.error,
      transport: this.kind,
    };
  }

  /** Why a call cannot go to this server now. */
  unavailable(toolName: string): string {
    const why = this.error ?? 'it was disconnected';
    return (
      `MCP server "${this.config.name}" is not running, so its tool "${toolName}" cannot be called (${why}). ` +
      'Use another tool, or tell the user the server needs to be restarted.'
    );
  }

  appendStderr(chunk: string): void {
    this.stderrTail = (this.stderrTail + chunk).slice(-MCP_STDERR_TAIL_CHARS);
  }

  stderrNote(): string {
    const tail = this.stderrTail.trim();
    return tail ? `; its last stderr output: ${JSON.stringify(tail.slice(-500))}` : '';
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.state === 'connected') {
      this.state = 'closed';
      this.error = 'it was disconnected';
    }
    for (const id of this.tools) this.registry.unregister(id);
    const client = this.client;
    this.client = undefined;
    try {
      await client?.close();
    } catch {
      // already gone
    }
    try {
      await this.transport?.close();
    } catch {
      // already gone
    }
  }
}

const connections = new WeakMap<ToolRegistryImpl, ServerLink[]>();

/**
 * Connects to MCP servers and registers their tools in `registry`. Servers connect in parallel; one
 * that fails does not stop the others (its status says why). Throws only for invalid options.
 */
export async function connectMcp(registry: ToolRegistryImpl, options: ConnectMcpOptions): Promise<McpConnection> {
  const servers = validateServers(options?.servers);
  const live = connections.get(registry) ?? [];
  for (const s of servers) {
    if (live.some((l) => l.config.name === s.name && l.state === 'connected')) {
      throw new Error(
        `MCP server "${s.name}" is already connected to this registry. Call disconnectMcp() first, or give the server another name.`,
      );
    }
  }
  const links = servers.map((s) => new ServerLink(s, registry));
  await Promise.all(
    links.map(async (link) => {
      if (link.config.enabled === false) {
        link.state = 'disabled';
        return;
      }
      try {
        await open(link, options);
      } catch (err) {
        link.state = 'failed';
        link.error = `${describeError(err)}${link.stderrNote()}`;
        await link.close().catch(() => undefined);
        link.state = 'failed';
      }
    }),
  );
  // Register in config order so that ids (and collision suffixes) do not depend on start-up speed.
  for (const link of links) if (link.state === 'connected') registerTools(link, (link as LinkWithTools).listed);
  connections.set(registry, [...live.filter((l) => l.state === 'connected'), ...links]);
  return {
    servers: links.map((l) => l.status()),
    tools: links.flatMap((l) => l.tools),
    close: async () => {
      await Promise.all(links.map((l) => l.close()));
      const now = connections.get(registry) ?? [];
      connections.set(
        registry,
        now.filter((l) => !links.includes(l)),
      );
    },
  };
}

/** Closes every MCP connection of `registry` (or only the named servers) and unregisters their tools. */
export async function disconnectMcp(registry: ToolRegistryImpl, names?: string[]): Promise<void> {
  const links = connections.get(registry) ?? [];
  const closing = names ? links.filter((l) => names.includes(l.config.name)) : links;
  await Promise.all(closing.map((l) => l.close()));
  connections.set(
    registry,
    links.filter((l) => !closing.includes(l)),
  );
}

/** The current state of every server connected to `registry`. */
export function mcpStatus(registry: ToolRegistryImpl): McpServerStatus[] {
  return (connections.get(registry) ?? []).map((l) => l.status());
}

type LinkWithTools = ServerLink & { listed: McpToolInfo[] };

async function open(link: ServerLink, options: ConnectMcpOptions): Promise<void> {
  const { config } = link;
  const clientInfo = { name: options.clientName ?? 'agent-toolbelt', version: '0.1.0' };
  const connectOpts = { timeout: MCP_CONNECT_TIMEOUT_MS };
  if (config.transport === 'stdio') {
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: config.cwd,
      stderr: 'pipe',
    });
    const stderr = transport.stderr as Readable | null;
    stderr?.setEncoding('utf8');
    stderr?.on('data', (chunk: string) => {
      link.appendStderr(chunk);
      options.onStderr?.(config.name, chunk);
    });
    link.transport = transport;
    link.kind = 'stdio';
    link.client = new Client(clientInfo);
    await link.client.connect(transport, connectOpts);
  } else {
    const url = new URL(config.url);
    const requestInit = config.headers ? { headers: config.headers } : undefined;
    try {
      const transport = new StreamableHTTPClientTransport(url, { requestInit });
      link.transport = transport;
      link.kind = 'streamable-http';
      link.client = new Client(clientInfo);
      await link.client.connect(transport, connectOpts);
    } catch (streamableError) {
      // Older servers speak only the HTTP+SSE transport: their POST to the URL fails with 4xx.
      await link.client?.close().catch(() => undefined);
      const transport = new SSEClientTransport(url, {
        requestInit,
        eventSourceInit: config.headers ? { fetch: withHeaders(config.headers) } : undefined,
      });
      link.transport = transport;
      link.kind = 'sse';
      link.client = new Client(clientInfo);
      try {
        await link.client.connect(transport, connectOpts);
      } catch (sseError) {
        throw new Error(
          `neither Streamable HTTP (${describeError(streamableError)}) nor SSE (${describeError(sseError)}) worked at ${config.url}`,
        );
      }
    }
  }
  orderProgressBeforeResponses(link.transport);
  const client = link.client;
  const listed: McpToolInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined, connectOpts);
    listed.push(...(page.tools as McpToolInfo[]));
    cursor = page.nextCursor;
  } while (cursor);
  (link as LinkWithTools).listed = listed;
  link.state = 'connected';
  client.onclose = () => {
    if (link.closing || link.state !== 'connected') return;
    link.state = 'closed';
    link.error = `the server's connection closed unexpectedly${link.stderrNote()}`;
  };
}

/**
 * Works around an SDK v1 race (modelcontextprotocol/typescript-sdk#2580): notifications are
 * dispatched a microtask late but responses at once, so progress that arrives in the same chunk as
 * the response is dropped as "unknown token". Delaying responses by two microtasks restores the
 * order in which the server sent them. Call after `client.connect(transport)`.
 */
export function orderProgressBeforeResponses(transport: Transport): void {
  const deliver = transport.onmessage;
  if (!deliver) return;
  transport.onmessage = (message, extra) => {
    const m = message as { id?: unknown; method?: unknown };
    if (m.id !== undefined && m.method === undefined)
      queueMicrotask(() => queueMicrotask(() => deliver(message, extra)));
    else deliver(message, extra);
  };
}

function withHeaders(headers: Record<string, string>): typeof fetch {
  return (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } });
}

function registerTools(link: ServerLink, listed: McpToolInfo[]): void {
  const { config, registry } = link;
  const allowed = config.toolsAllowed ? new Set(config.toolsAllowed) : undefined;
  const denied = new Set(config.toolsDenied ?? []);
  const taken = new Set(registry.ids());
  for (const info of listed) {
    if (allowed && !allowed.has(info.name)) continue;
    if (denied.has(info.name)) continue;
    const id = uniqueId(mcpToolId(config.name, info.name), taken);
    taken.add(id);
    registry.register(importedTool(link, id, info), {
      permissions: { required: permissionsFor(config.permissions, info) },
    });
    link.tools.push(id);
  }
}

/** `server__tool`, with every character outside `[a-zA-Z0-9_-]` replaced by `_` and cut to 64 characters. */
export function mcpToolId(server: string, tool: string): string {
  const raw = `${server}${MCP_NAME_SEPARATOR}${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_');
  return (raw || 'mcp_tool').slice(0, MAX_ID_LENGTH);
}

/** `id`, or `id_2`, `id_3`, ... (kept within 64 characters) when `id` is taken. */
export function uniqueId(id: string, taken: ReadonlySet<string>): string {
  if (!taken.has(id)) return id;
  for (let n = 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = id.slice(0, MAX_ID_LENGTH - suffix.length) + suffix;
    if (!taken.has(candidate)) return candidate;
  }
}

/** The permissions an imported tool requires under `config`. */
export function permissionsFor(config: McpPermissionsConfig | undefined, tool: McpToolInfo): ToolPermission[] {
  let perms: ToolPermission[] | undefined;
  if (typeof config === 'function') perms = config(tool);
  else if (Array.isArray(config)) perms = config;
  else if (config) perms = config[tool.name] ?? config['*'];
  return perms ? [...perms] : tool.annotations?.readOnlyHint ? ['read'] : ['execute'];
}

function importedTool(link: ServerLink, id: string, info: McpToolInfo): Tool.Info {
  const { config } = link;
  const inputSchema =
    info.inputSchema && typeof info.inputSchema === 'object' ? info.inputSchema : { type: 'object', properties: {} };
  const parameters = schemaFrom(inputSchema);
  const description = `[${config.name}] ${info.description ?? info.title ?? info.annotations?.title ?? info.name}`;
  return Tool.define(id, {
    description,
    parameters,
    jsonSchema: inputSchema,
    annotations: info.annotations,
    timeout: { defaultMs: config.timeoutMs ?? DEFAULT_MCP_TOOL_TIMEOUT_MS },
    async execute(args, ctx) {
      const client = link.client;
      if (!client || link.state !== 'connected') throw new Error(link.unavailable(info.name));
      let result;
      try {
        result = await client.callTool({ name: info.name, arguments: args as Record<string, unknown> }, undefined, {
          signal: ctx.abort,
          timeout: SDK_NO_TIMEOUT_MS,
          onprogress: (p) => {
            ctx.metadata({
              ...(p.message ? { title: p.message } : {}),
              metadata: {
                progress: p.progress,
                ...(p.total !== undefined ? { total: p.total } : {}),
                ...(p.message ? { message: p.message } : {}),
              },
            });
          },
        });
      } catch (err) {
        if (ctx.abort.aborted) throw err;
        if (link.state !== 'connected') {
          throw new Error(
            `MCP server "${config.name}" stopped while its tool "${info.name}" was running (${link.error ?? describeError(err)}). ` +
              'The call did not finish; use another tool, or tell the user the server needs to be restarted.',
          );
        }
        throw new Error(`MCP tool "${info.name}" on server "${config.name}" failed: ${describeError(err)}`);
      }
      return toResult(config.name, info.name, result as CallToolResultLike);
    },
  });
}

/** A JSON Schema as zod for validation; a permissive object when the conversion fails. */
function schemaFrom(inputSchema: Record<string, unknown>): z.ZodType {
  try {
    return z.fromJSONSchema(inputSchema as never) as z.ZodType;
  } catch {
    return z.record(z.string(), z.unknown());
  }
}

interface ContentLike {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri: string; mimeType?: string; text?: string; blob?: string };
}

interface CallToolResultLike {
  content?: ContentLike[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  toolResult?: unknown;
}

/** Maps an MCP `tools/call` result to a `Tool.Result`: text -> output, the rest -> attachments. */
export function toResult(server: string, tool: string, result: CallToolResultLike): Tool.Result {
  const texts: string[] = [];
  const attachments: Tool.Attachment[] = [];
  const content = Array.isArray(result.content) ? result.content : [];
  for (const item of content) {
    switch (item.type) {
      case 'text':
        texts.push(item.text ?? '');
        break;
      case 'image':
        attachments.push({ type: 'image', mime: item.mimeType ?? 'application/octet-stream', data: item.data });
        break;
      case 'audio':
        attachments.push({ type: 'file', mime: item.mimeType ?? 'application/octet-stream', data: item.data });
        break;
      case 'resource': {
        const r = item.resource;
        if (!r) break;
        attachments.push({
          type: 'resource',
          mime: r.mimeType ?? (r.text !== undefined ? 'text/plain' : 'application/octet-stream'),
          uri: r.uri,
          ...(r.text !== undefined ? { text: r.text } : {}),
          ...(r.blob !== undefined ? { data: r.blob } : {}),
        });
        break;
      }
      case 'resource_link':
        attachments.push({
          type: 'resource',
          mime: item.mimeType ?? 'application/octet-stream',
          uri: item.uri,
          filename: item.name,
        });
        texts.push(`[resource: ${item.uri}]`);
        break;
      default:
        break;
    }
  }
  if (result.toolResult !== undefined && content.length === 0) texts.push(stringify(result.toolResult));
  let output = texts.join('\n');
  if (!output && result.structuredContent) output = stringify(result.structuredContent);
  const metadata: Tool.Metadata = { server, tool };
  if (result.structuredContent) metadata.structuredContent = result.structuredContent;
  if (result.isError) {
    metadata.error = output || `MCP tool "${tool}" on server "${server}" reported an error without a message.`;
  }
  const out: Tool.Result = { title: `${server}: ${tool}`, metadata, output };
  if (attachments.length) out.attachments = attachments;
  return out;
}

function stringify(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

function describeError(err: unknown): string {
  if (err instanceof Error) return err.message.replace(/^MCP error -?\d+: /, '');
  return String(err);
}

function validateServers(servers: unknown): McpServerConfig[] {
  if (!Array.isArray(servers))
    throw new Error('connectMcp needs { servers: [...] }: a list of { name, transport: "stdio" | "http", ... }.');
  const names = new Set<string>();
  return servers.map((s, i) => {
    const where = `servers[${i}]`;
    if (!s || typeof s !== 'object')
      throw new Error(`${where} must be an object like { name, transport: "stdio", command }.`);
    const c = s as McpServerConfig;
    if (typeof c.name !== 'string' || !c.name)
      throw new Error(`${where}.name must be a non-empty string (it prefixes the tool ids).`);
    if (names.has(c.name)) throw new Error(`${where}.name "${c.name}" is used twice; give every server its own name.`);
    names.add(c.name);
    if (c.transport === 'stdio') {
      if (typeof c.command !== 'string' || !c.command)
        throw new Error(`${where} ("${c.name}"): a stdio server needs "command" (the program to start).`);
    } else if (c.transport === 'http') {
      try {
        new URL(c.url);
      } catch {
        throw new Error(
          `${where} ("${c.name}"): "url" must be an absolute http(s) URL, got ${JSON.stringify((c as McpHttpServerConfig).url)}.`,
        );
      }
    } else {
      throw new Error(
        `${where} ("${(c as McpServerCommon).name}"): "transport" must be "stdio" or "http", got ${JSON.stringify((c as { transport?: unknown }).transport)}.`,
      );
    }
    if (c.timeoutMs !== undefined && !(Number.isFinite(c.timeoutMs) && c.timeoutMs > 0)) {
      throw new Error(
        `${where} ("${c.name}"): "timeoutMs" must be a positive number of milliseconds, got ${c.timeoutMs}.`,
      );
    }
    const perms = c.permissions;
    const lists =
      typeof perms === 'function' || perms === undefined ? [] : Array.isArray(perms) ? [perms] : Object.values(perms);
    for (const list of lists) {
      for (const p of list) {
        if (!ALL_PERMISSIONS.includes(p))
          throw new Error(
            `${where} ("${c.name}"): unknown permission ${JSON.stringify(p)}; use ${ALL_PERMISSIONS.join(', ')}.`,
          );
      }
    }
    return c;
  });
}
