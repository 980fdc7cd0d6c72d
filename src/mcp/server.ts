/**
 * Serving a registry as an MCP server: the tools a permission grant allows are listed with their
 * JSON Schemas and permission-derived annotations, and every call goes through `registry.execute`
 * (the shared pipeline). One MCP connection is one agent session: its calls share `ctx.sessionID`,
 * so read-then-edit works across calls.
 * Must not own transports or process lifetime: serve.ts and http-server.ts do.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Readable, Writable } from 'node:stream';
import type { Tool } from '../authoring/tool.js';
import {
  ALL_PERMISSIONS,
  isAllowed,
  toGrantSet,
  type PermissionGrant,
  type ToolPermissions,
} from '../authoring/permissions.js';
import type { Registry } from '../registry/registry.js';
import { resultText } from '../pipeline/result-text.js';
import { skillCatalogOf } from '../skills/catalog.js';
import { getSkillPrompt, listSkillPrompts } from '../skills/prompts.js';

/** The host the HTTP transport binds to unless told otherwise: loopback only. */
export const DEFAULT_MCP_HOST = '127.0.0.1';
/** The path the Streamable HTTP endpoint answers on. */
export const MCP_HTTP_PATH = '/mcp';
/**
 * The experimental client capability that asks for each result's title and metadata in `_meta`.
 * Off for other clients: `@langchain/mcp-adapters` turns any result with `_meta` into a JSON string
 * of the whole block, so a model would read escaped text and metadata instead of the output.
 */
export const MCP_RESULT_META_CAPABILITY = 'agent-toolbelt/result-meta';

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
  /**
   * This connection is one request of a stateless HTTP server: no later request can reach what a
   * call leaves running, so a call that would start a background job is refused.
   */
  stateless?: boolean;
  /**
   * Keeps the sessions clients name in `_meta` apart per credential: a named session is then
   * `mcp-client-<sessionScope>-<name>`, so no client names its way into another credential's
   * sessions (serveMcp over HTTP with a token gives one derived from the token).
   */
  sessionScope?: string;
}

/** Arguments that start a job outliving the call (bash's `background`); refused on a stateless server. */
const BACKGROUND_ARGUMENTS = ['background', 'run_in_background'] as const;

/** Options of `serveMcp`. */
export interface ServeMcpOptions extends Omit<McpServerOptions, 'sessionID' | 'sessionScope'> {
  transport: 'stdio' | 'http';
  /** HTTP port; 0 (default) picks a free one. */
  port?: number;
  /** HTTP host (default 127.0.0.1). Any other than a loopback address requires `token`. */
  host?: string;
  /**
   * HTTP: the bearer token every request must carry (`Authorization: Bearer <token>`; 401
   * without). Required when `host` is not a loopback address.
   */
  token?: string;
  /**
   * HTTP: browser origins allowed besides the server's own loopback origins. A request with any
   * other `Origin` header gets 403 (requests without one, from non-browser clients, pass).
   */
  allowedOrigins?: string[];
  /**
   * HTTP: no MCP sessions (the SDK's stateless Streamable HTTP mode): every request is served on
   * its own, so replicas can sit behind any load balancer. A call that names no session in `_meta`
   * gets one stable session per bearer token (derived from it, never the token itself), or one per
   * namespace on a server without a token, so a stock client's todo lists and pending calls follow
   * it across calls and replicas sharing a store.
   */
  stateless?: boolean;
  /**
   * HTTP (stateful): how long (ms) a session with no request in flight must have been quiet before
   * it may be closed to make room for a new session (default `MCP_HTTP_SESSION_IDLE_MS`, 10 min).
   * Active sessions are never closed for that: a new session is refused instead.
   */
  sessionIdleMs?: number;
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

/**
 * The `_meta` key a client may name its session with on `tools/call`: the calls naming one session
 * share its state (todo lists, pending calls) across connections, requests and replicas sharing a
 * store; without it, a call uses its connection's session (a stateless server's: one per token).
 */
export const MCP_SESSION_META_KEY = 'agent-toolbelt/session';
const CLIENT_SESSION = /^[A-Za-z0-9._:@-]{1,128}$/;

function clientSession(meta: Record<string, unknown> | undefined, scope: string | undefined): string | undefined {
  const named = meta?.[MCP_SESSION_META_KEY];
  if (typeof named !== 'string' || !CLIENT_SESSION.test(named)) return undefined;
  return scope ? `mcp-client-${scope}-${named}` : `mcp-client-${named}`;
}

/** A low-level MCP `Server` serving `registry`; connect it to any transport (stdio, HTTP, in-memory). */
export function createMcpServer(registry: Registry, options: McpServerOptions = {}): Server {
  const grant = toGrantSet(options.permissions ?? ALL_PERMISSIONS);
  const initCtx = options.initCtx ?? {};
  const sessionID = options.sessionID ?? `mcp-${randomUUID()}`;
  const only = options.ids ? new Set(options.ids) : undefined;
  const served = () => registry.enabled(grant).filter((id) => !only || only.has(id));
  // What tool_search (served from a registry with lazy imports) may list: this server's tools only.
  const toolSet = registry.toolSet({ ids: options.ids, enabledPermissions: grant });
  const server = new Server(
    { name: options.name ?? 'agent-toolbelt', version: options.version ?? '0.1.0' },
    { capabilities: { tools: {} } },
  );
  serveSkills(server, registry, initCtx, grant);

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const listed = await Promise.all(
      served().map(async (id) => {
        const tool = await registry.initialized(id, initCtx, toolSet);
        // A tool that cannot run under this init context (task without sub-agents) is not offered.
        if (tool.unavailable) return undefined;
        const annotations = annotationsFor(registry.permissions(id) ?? { required: [] }, tool.annotations);
        const outputSchema = outputSchemaOf(tool);
        return {
          name: id,
          ...(tool.title !== undefined ? { title: tool.title } : {}),
          description: tool.description,
          inputSchema: inputSchemaOf(tool),
          ...(outputSchema ? { outputSchema } : {}),
          annotations,
        };
      }),
    );
    return { tools: listed.filter((t) => t !== undefined) };
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
    const tool = await registry.initialized(name, initCtx, toolSet).catch(() => undefined);
    if (tool?.unavailable) return errorResult(tool.unavailable);
    if (options.stateless && tool) {
      const args = request.params.arguments ?? {};
      const starts = BACKGROUND_ARGUMENTS.find((a) => args[a] === true);
      const declared = starts && (inputSchemaOf(tool).properties as Record<string, unknown> | undefined);
      if (starts && declared && starts in declared) {
        return errorResult(
          `${name} was not run: ${starts}: true starts a job that outlives this call, and this MCP server is stateless ` +
            '(every request is served on its own, by whichever replica answers), so no later call could read its output or stop it. ' +
            `Run it without ${starts} (it then runs until it ends or times out), or use a stateful server (toolbelt mcp without --stateless).`,
        );
      }
    }
    const progressToken = extra._meta?.progressToken;
    let progress = 0;
    const final = await registry.execute(
      name,
      request.params.arguments ?? {},
      {
        sessionID: clientSession(request.params._meta, options.sessionScope) ?? sessionID,
        messageID: String(extra.requestId),
        agent: 'mcp',
      },
      initCtx,
      {
        enabledPermissions: grant,
        toolSet,
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
    if (!final.success) return errorResult(resultText(final));
    const { title, metadata, attachments, structuredContent } = final.result;
    const content: CallToolResult['content'] = [{ type: 'text', text: final.result.output }];
    if (attachments?.length) content.push(...attachments.map(toContent));
    const structured = tool ? checkStructured(tool, structuredContent) : { value: structuredContent };
    if ('error' in structured) return errorResult(structured.error);
    // The title and metadata ride along only for clients that ask for them; models see only `content`.
    const wantsMeta = server.getClientCapabilities()?.experimental?.[MCP_RESULT_META_CAPABILITY] !== undefined;
    const hasMeta = Object.keys(metadata).length > 0;
    return {
      content,
      ...(structured.value !== undefined ? { structuredContent: jsonSafe(structured.value) } : {}),
      ...(wantsMeta ? { _meta: hasMeta ? { title, metadata: jsonSafe(metadata) } : { title } } : {}),
    };
  });
  return server;
}

/**
 * Each skill as an MCP prompt (docs/skills.md), when the registry or `initCtx` configures skills and
 * the grant allows reading: `prompts/list` and `prompts/get`.
 */
function serveSkills(server: Server, registry: Registry, initCtx: Tool.InitContext, grant: ReadonlySet<string>): void {
  const catalog = skillCatalogOf(registry.tenant);
  if (!catalog.settings(initCtx) || !grant.has('read')) return;
  server.registerCapabilities({ prompts: {} });
  server.setRequestHandler(ListPromptsRequestSchema, () => listSkillPrompts(catalog, initCtx));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    try {
      return await getSkillPrompt(catalog, initCtx, request.params.name);
    } catch (err) {
      throw new McpError(ErrorCode.InvalidParams, (err as Error).message);
    }
  });
}

/** Serves `registry` over stdio (serveMcp in ./index.ts picks the transport). */
export async function serveStdio(registry: Registry, options: ServeMcpOptions): Promise<McpServing> {
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

/** The input JSON Schema clients see: an imported tool's own, as it was listed, or its zod schema's. */
function inputSchemaOf(tool: Tool.Initialized): { type: 'object'; [k: string]: unknown } {
  return asObjectSchema(tool.jsonSchema ?? fromZod(tool.parameters, 'input') ?? { type: 'object' });
}

/** The output JSON Schema clients see: an imported tool's own, as it was listed, or its zod `outputSchema`'s. */
function outputSchemaOf(tool: Tool.Initialized): { type: 'object'; [k: string]: unknown } | undefined {
  const schema =
    tool.outputJsonSchema ?? (tool.outputSchema && (fromZod(tool.outputSchema, 'output') ?? { type: 'object' }));
  return schema && asObjectSchema(schema);
}

/** A zod schema as JSON Schema without the `$schema` key zod adds; undefined when it cannot be converted. */
function fromZod(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> | undefined {
  try {
    const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
      string,
      unknown
    >;
    void _drop;
    return rest;
  } catch {
    return undefined;
  }
}

function asObjectSchema(schema: Record<string, unknown>): { type: 'object'; [k: string]: unknown } {
  return { ...schema, type: 'object' };
}

/**
 * A tool with an output schema must return matching `structuredContent` (clients validate it
 * against the listed schema); a zod `outputSchema` is checked here so the error names the field.
 */
function checkStructured(
  tool: Tool.Initialized,
  value: Record<string, unknown> | undefined,
): { value: Record<string, unknown> | undefined } | { error: string } {
  if (!tool.outputSchema && !tool.outputJsonSchema) return { value };
  if (value === undefined) {
    return {
      error: `Tool "${tool.id}" declares an outputSchema but returned no structuredContent. This is a bug in the tool: return { structuredContent } with its result.`,
    };
  }
  if (!tool.outputSchema) return { value };
  const parsed = tool.outputSchema.safeParse(value);
  if (parsed.success) return { value: parsed.data as Record<string, unknown> };
  const issue = parsed.error.issues[0];
  return {
    error: `Tool "${tool.id}" returned structuredContent that does not match its outputSchema (at ${issue.path.join('.') || '(root)'}: ${issue.message}). This is a bug in the tool.`,
  };
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
    return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as Record<
      string,
      unknown
    >;
  } catch {
    return {};
  }
}
