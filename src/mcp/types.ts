/**
 * The types of the MCP client: what a server config says, what a connection reports.
 * Must not hold runtime code: any module (the registry included) may name these without loading the SDK.
 */
import type { ToolPermission } from '../authoring/permissions.js';

/** A tool as an MCP server lists it (the fields we use and re-serve). */
export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
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

/** Automatic reconnection after a server dies: attempts wait `initialDelayMs`, doubling up to `maxDelayMs`. */
export interface McpReconnectOptions {
  /** Attempts before giving up (default 5). */
  maxAttempts?: number;
  /** Wait before the first attempt (ms, default 500). */
  initialDelayMs?: number;
  /** Longest wait between attempts (ms, default 30,000). */
  maxDelayMs?: number;
}

/** What every server config may say, whatever its transport. */
export interface McpServerCommon {
  /** Prefix of the imported tool ids (`name__tool`) and of their descriptions (`[name]`). */
  name: string;
  /** `false` skips this server (default true). */
  enabled?: boolean;
  /** `true` skips this server (the spelling Claude Desktop, Cursor and VS Code configs use). */
  disabled?: boolean;
  /** Import only these tool names (the server's names, before prefixing). */
  toolsAllowed?: string[];
  /** Never import these tool names. */
  toolsDenied?: string[];
  permissions?: McpPermissionsConfig;
  /** Time limit (ms) of one call without progress; each progress notification restarts it (default 60,000). */
  timeoutMs?: number;
  /** Time limit (ms) of one call however much progress it reports (default 600,000). */
  maxTotalTimeoutMs?: number;
  /**
   * Import the tools deferred: the model sees their names and one-line summaries through
   * `tool_search` until it looks one up (see `lazyToolsMiddleware` and `toolsForTurn`; default false).
   */
  lazy?: boolean;
  /** What `${workspaceFolder}` expands to in this entry (`loadMcpConfig` sets it; default: `connectMcp`'s). */
  workspaceFolder?: string;
  /** Reconnect automatically with backoff when the server dies (default off). `true` uses the defaults. */
  reconnect?: boolean | McpReconnectOptions;
}

/** A server started as a child process, spoken to over its stdin/stdout. */
export interface McpStdioServerConfig extends McpServerCommon {
  transport: 'stdio';
  command: string;
  args?: string[];
  /** Added on top of a minimal safe environment (PATH, HOME, USER, SHELL, TERM, LOGNAME). */
  env?: Record<string, string>;
  cwd?: string;
}

/**
 * A server reached over HTTP. `http`: Streamable HTTP, falling back to the legacy HTTP+SSE
 * transport when the server answers the POST with 400, 404 or 405. `sse`: legacy HTTP+SSE only.
 */
export interface McpHttpServerConfig extends McpServerCommon {
  transport: 'http' | 'sse';
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
  /** What `${workspaceFolder}` expands to in server configs (default: the current directory). */
  workspaceFolder?: string;
  /** Where `${VAR}` and `${env:VAR}` are looked up (default: `process.env`). */
  variables?: Record<string, string | undefined>;
}

/**
 * A server connection's state: `connecting`; `connected`; `disconnected` (it died; its tools stay
 * registered and fail at once naming the server); `reconnecting`; `failed` (never connected, or an
 * invalid config); `closed` (closed by us; its tools are unregistered); `disabled`.
 */
export type McpConnectionState =
  'connecting' | 'connected' | 'disconnected' | 'reconnecting' | 'failed' | 'closed' | 'disabled';

/** How one server's connection stands. */
export interface McpServerStatus {
  name: string;
  state: McpConnectionState;
  /** The imported tool ids. */
  tools: string[];
  /** Why it failed or died. */
  error?: string;
  /** The transport in use or last tried: `stdio`, `streamable-http` or `sse`. */
  transport?: 'stdio' | 'streamable-http' | 'sse';
}

/** What a connection tells its subscribers. */
export interface McpConnectionEvents {
  /** The state changed (connected, disconnected, reconnecting, closed ...). */
  status: McpServerStatus;
  /** The imported tools changed (a reconnect, or the server's `notifications/tools/list_changed`). */
  tools: { server: string; added: string[]; removed: string[]; tools: string[] };
}
