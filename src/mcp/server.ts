/**
 * Serving a registry as an MCP server: the tools a permission grant allows are listed with their
 * JSON Schemas and permission-derived annotations, and every call goes through `registry.execute`
 * (the shared pipeline). One MCP connection is one agent session: its calls share `ctx.sessionID`,
 * so read-then-edit works across calls.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Readable, Writable } from 'node:stream';
import type { Tool } from '../tool.js';
import { ALL_PERMISSIONS, isAllowed, toGrantSet, type PermissionGrant, type ToolPermissions } from '../permissions.js';
import type { ToolRegistryImpl } from '../registry.js';

/** The host the HTTP transport binds to unless told otherwise: loopback only. */
export const DEFAULT_MCP_HOST = '127.0.0.1';
/** The path the Streamable HTTP endpoint answers on. */
export const MCP_HTTP_PATH = '/mcp';
/** Open HTTP sessions one server keeps at most; the oldest is closed beyond this. */
export const MAX_MCP_HTTP_SESSIONS = 100;

/** Options of `createMcpServer` (one connection). */
export interface McpServerOptions {
  /** Which permissions the served tools may use (default: all). Tools needing more are not listed and refused. */
  permissions?: PermissionGrant;
  /** Only these tool ids (intersected with `permissions`). */
  ids?: string[];
  /** Passed to every tool's init (workspace root etc.). */
  initCtx?: Tool.InitContext;
  /** The server name reported in `initialize` (default `agent-toolbelt`). */
  name?: string;
  version?: string;
  /** The session all calls of this connection share (default: a fresh id per connection). */
  sessionID?: string;
  /** Per-call timeout override (ms) applied to every call. */
  timeoutMs?: number;
}

/** Options of `serveMcp`. */
export interface ServeMcpOptions extends Omit<McpServerOptions, 'sessionID'> {
  transport: 'stdio' | 'http';
  /** HTTP port; 0 (default) picks a free one. */
  port?: number;
  /** HTTP host (default 127.0.0.1). Binding elsewhere exposes the tools to the network: add authentication in front. */
  host?: string;
  /** stdio streams (default process.stdin / process.stdout). */
  stdin?: Readable;
  stdout?: Writable;
}

/** A running MCP server. */
export interface McpServing {
  transport: 'stdio' | 'http';
  /** HTTP only: the endpoint URL, e.g. `http://127.0.0.1:41234/mcp`. */
  url?: string;
  host?: string;
  port?: number;
  /** Resolves when the server stops (stdio: the client closed stdin or `close()` was called). */
  closed: Promise<void>;
  /** Stops serving: closes every session and, for HTTP, the listening socket. */
  close(): Promise<void>;
}

/** MCP tool annotations derived from permissions (a tool's own `annotations` win). */
export function annotationsFor(
  permissions: ToolPermissions,
  own?: Tool.Definition['annotations'],
): NonNullable<Tool.Definition['annotations']> {
  const all = new Set([...permissions.required, ...(permissions.optional ?? [])]);
  const mutates = all.has('write') || all.has('execute');
  const derived = {
    readOnlyHint: !mutates,
    destructiveHint: mutates,
    openWorldHint: all.has('network'),
  };
  return { ...derived, ...own };
}

/** A low-level MCP `Server` serving `registry`; connect it to any transport (stdio, HTTP, in-memory). */
export function createMcpServer(registry: ToolRegistryImpl, options: McpServerOptions = {}): Server {
  const grant = toGrantSet(options.permissions ?? ALL_PERMISSIONS);
  const initCtx = options.initCtx ?? {};
  const sessionID = options.sessionID ?? `mcp-${randomUUID()}`;
  const only = options.ids ? new Set(options.ids) : undefined;
  const served = () => registry.enabled(grant).filter((id) => !only || only.has(id));
  const server = new Server(
    { name: options.name ?? 'agent-toolbelt', version: options.version ?? '0.1.0' },
    { capabilities: { tools: {} } },
  );

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = await Promise.all(
      served().map(async (id) => {
        const tool = await registry.initialized(id, initCtx);
        const annotations = annotationsFor(registry.permissions(id) ?? { required: [] }, tool.annotations);
        return { name: id, description: tool.description, inputSchema: inputSchemaOf(tool), annotations };
      }),
    );
    return { tools };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    const entry = registry.get(name);
    if (!entry || !isAllowed(entry.permissions, grant) || (only && !only.has(name))) {
      const known = served();
      const why = registry.has(name) ? `needs permissions this server was not granted` : 'does not exist';
      return errorResult(
        `Tool "${name}" ${why}. Known tools: ${known.join(', ') || '(none)'}. Call one of those instead.`,
      );
    }
    const progressToken = extra._meta?.progressToken;
    let progress = 0;
    const final = await registry.execute(
      name,
      request.params.arguments ?? {},
      { sessionID, messageID: String(extra.requestId), agent: 'mcp' },
      initCtx,
      {
        enabledPermissions: grant,
        signal: extra.signal,
        timeoutMs: options.timeoutMs,
        onToolResult:
          progressToken === undefined
            ? undefined
            : (u) => {
                if (u.status !== 'running' || extra.signal.aborted) return;
                progress++;
                const m = u.result.metadata;
                const total = typeof m.total === 'number' ? m.total : undefined;
                const own = typeof m.progress === 'number' && m.progress >= progress ? m.progress : undefined;
                if (own !== undefined) progress = own;
                void extra
                  .sendNotification({
                    method: 'notifications/progress',
                    params: {
                      progressToken,
                      progress,
                      ...(total !== undefined ? { total } : {}),
                      message: u.result.title || name,
                    },
                  })
                  .catch(() => undefined);
              },
      },
    );
    if (!final.success) return errorResult(final.error ?? final.result.output);
    const { title, metadata, attachments } = final.result;
    const content: CallToolResult['content'] = [{ type: 'text', text: final.result.output }];
    if (attachments?.length) content.push(...attachments.map(toContent));
    // The title and metadata ride along for clients that show them; models see only `content`.
    const hasMeta = Object.keys(metadata).length > 0;
    return { content, _meta: hasMeta ? { title, metadata: jsonSafe(metadata) } : { title } };
  });
  return server;
}

/** Serves `registry` over stdio or Streamable HTTP (127.0.0.1 by default). */
export async function serveMcp(registry: ToolRegistryImpl, options: ServeMcpOptions): Promise<McpServing> {
  if (options.transport === 'stdio') return serveStdio(registry, options);
  if (options.transport === 'http') return serveHttp(registry, options);
  throw new Error(
    `serveMcp: "transport" must be "stdio" or "http", got ${JSON.stringify((options as { transport?: unknown })?.transport)}.`,
  );
}

async function serveStdio(registry: ToolRegistryImpl, options: ServeMcpOptions): Promise<McpServing> {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const server = createMcpServer(registry, options);
  const transport = new StdioServerTransport(stdin, stdout);
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  server.onclose = () => resolveClosed();
  await server.connect(transport);
  // The SDK's stdio transport does not notice the client going away: stdin ending is that signal.
  const onEnd = () => void server.close().catch(() => resolveClosed());
  stdin.once('end', onEnd);
  stdin.once('close', onEnd);
  return {
    transport: 'stdio',
    closed,
    async close() {
      stdin.off('end', onEnd);
      stdin.off('close', onEnd);
      await server.close().catch(() => undefined);
      resolveClosed();
    },
  };
}

async function serveHttp(registry: ToolRegistryImpl, options: ServeMcpOptions): Promise<McpServing> {
  const host = options.host ?? DEFAULT_MCP_HOST;
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`serveMcp: "port" must be an integer 0-65535 (0 picks a free one), got ${port}.`);
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  let allowedHosts: string[] | undefined;

  const httpServer = http.createServer((req, res) => {
    void handle(req, res).catch((err) => {
      if (!res.headersSent) jsonError(res, 500, `Internal error: ${(err as Error).message}`);
      else res.end();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== MCP_HTTP_PATH) return jsonError(res, 404, `Not found: the MCP endpoint is ${MCP_HTTP_PATH}.`);
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
    if (sessionId) {
      const s = sessions.get(sessionId);
      if (!s)
        return jsonError(
          res,
          404,
          `Unknown or expired MCP session ${JSON.stringify(sessionId)}. Initialize a new session.`,
        );
      return s.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return jsonError(res, 400, 'No mcp-session-id header: start with an initialize POST.');
    // A new session: its transport and server live until the client deletes it or we close.
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: !!allowedHosts,
      allowedHosts,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server });
        while (sessions.size > MAX_MCP_HTTP_SESSIONS) {
          const [oldest, s] = sessions.entries().next().value as [
            string,
            { transport: StreamableHTTPServerTransport; server: Server },
          ];
          sessions.delete(oldest);
          void s.server.close().catch(() => undefined);
        }
      },
    });
    const server = createMcpServer(registry, { ...options, sessionID: `mcp-http-${randomUUID()}` });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res);
    if (!transport.sessionId) await server.close().catch(() => undefined); // it was not an initialize request
  }

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const addr = httpServer.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  // On loopback, refuse other Host headers: a web page cannot reach us through DNS rebinding.
  if (isLoopback(addr.address)) {
    allowedHosts = [`127.0.0.1:${addr.port}`, `localhost:${addr.port}`, `[::1]:${addr.port}`];
  }
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  return {
    transport: 'http',
    url: `http://${shownHost}:${addr.port}${MCP_HTTP_PATH}`,
    host: addr.address,
    port: addr.port,
    closed,
    async close() {
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.all(all.map((s) => s.server.close().catch(() => undefined)));
      await new Promise<void>((r) => {
        httpServer.close(() => r());
        httpServer.closeAllConnections();
      });
      resolveClosed();
    },
  };
}

function isLoopback(address: string): boolean {
  return address === '127.0.0.1' || address === '::1' || address.startsWith('127.') || address === '::ffff:127.0.0.1';
}

function jsonError(res: http.ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/** The JSON Schema clients see: the tool's own (imported tools) or its zod schema's, as an object schema. */
function inputSchemaOf(tool: Tool.Initialized): { type: 'object'; [k: string]: unknown } {
  let schema: Record<string, unknown>;
  if (tool.jsonSchema) schema = tool.jsonSchema;
  else {
    try {
      schema = z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    } catch {
      schema = { type: 'object' };
    }
  }
  const { $schema: _drop, ...rest } = schema;
  void _drop;
  return { ...rest, type: 'object' };
}

function errorResult(text: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}

function toContent(a: Tool.Attachment): CallToolResult['content'][number] {
  if (a.type === 'image' && a.data) return { type: 'image', data: a.data, mimeType: a.mime };
  const uri = a.uri ?? `attachment:///${encodeURIComponent(a.filename ?? 'attachment')}`;
  if (a.text !== undefined) return { type: 'resource', resource: { uri, mimeType: a.mime, text: a.text } };
  if (a.data !== undefined) return { type: 'resource', resource: { uri, mimeType: a.mime, blob: a.data } };
  return { type: 'resource_link', uri, name: a.filename ?? uri, mimeType: a.mime };
}

function jsonSafe(value: unknown): Record<string, unknown> {
  try {
    return JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))) as Record<
      string,
      unknown
    >;
  } catch {
    return {};
  }
}
