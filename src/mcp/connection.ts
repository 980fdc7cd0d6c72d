/**
 * One MCP server's connection, owned by the registry its tools are registered in: `connect`,
 * `close`, `status`, `tools` and events. It keeps exactly one set of the server's tools
 * registered — across reconnects and `tools/list_changed` — under stable ids.
 * Must not choose transports (transport.ts) or map tools (import.ts).
 * Over 400 lines: connect, reconnect with backoff, tools/list_changed and close share one state
 * machine and are audited together.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Client as SdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '../authoring/tool.js';
import type { Registry, ToolSource } from '../registry/registry.js';
import { describeError } from './errors.js';
import { isInstance } from '../text/describe.js';
import {
  DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS,
  DEFAULT_MCP_TOOL_TIMEOUT_MS,
  importedTool,
  mcpToolId,
  oneLineSummary,
  permissionsFor,
  uniqueId,
  type CallToolResultLike,
} from './import.js';
import { syncToolSearch, type DeferredTool, type DeferringSource } from './deferred.js';
import { MCP_CONNECT_TIMEOUT_MS, openClient, type OpenedClient } from './transport.js';
import type {
  McpConnectionEvents,
  McpConnectionState,
  McpReconnectOptions,
  McpServerConfig,
  McpServerStatus,
  McpToolInfo,
} from './types.js';

/** How much of a stdio server's stderr (chars) is kept to explain why it failed or died. */
export const MCP_STDERR_TAIL_CHARS = 2_000;
/** How long (ms) a server that reported a transport error may take to answer a ping before it counts as dead. */
export const MCP_LIVENESS_PING_MS = 1_500;
/** How often (ms) a running call on an HTTP server pings it, so that a dead server fails the call within seconds. */
export const MCP_LIVENESS_INTERVAL_MS = 1_000;
/** Automatic reconnection defaults (when `reconnect: true`). */
export const MCP_RECONNECT_DEFAULTS: Required<McpReconnectOptions> = {
  maxAttempts: 5,
  initialDelayMs: 500,
  maxDelayMs: 30_000,
};

/** What a connection needs from `connectMcp`'s options. */
export interface ConnectionOptions {
  clientName?: string;
  onStderr?: (server: string, chunk: string) => void;
}

type Listener<K extends keyof McpConnectionEvents> = (event: McpConnectionEvents[K]) => void;

/** One MCP server's connection and the tools it keeps registered in its registry. */
export class McpServerConnection implements ToolSource, DeferringSource {
  readonly kind = 'mcp';
  readonly name: string;
  private state: McpConnectionState = 'connecting';
  private error?: string;
  private transportKind?: McpServerStatus['transport'];
  private opened?: OpenedClient;
  private stderrTail = '';
  /** The server's tool name -> its registry id; ids survive reconnects and list changes. */
  private readonly ids = new Map<string, string>();
  /** Registry id -> what the server listed, for summaries and re-serving. */
  private readonly infos = new Map<string, McpToolInfo>();
  private readonly listeners: { [K in keyof McpConnectionEvents]: Set<Listener<K>> } = {
    status: new Set(),
    tools: new Set(),
  };
  private reconnectTimer?: NodeJS.Timeout;
  private probing = false;

  constructor(
    readonly registry: Registry,
    readonly config: McpServerConfig,
    private readonly options: ConnectionOptions = {},
  ) {
    this.name = config.name;
    registry.adopt(this);
  }

  /** The connection's state, its tool ids, why it failed or died, and its transport. */
  get status(): McpServerStatus {
    return {
      name: this.name,
      state: this.state,
      tools: this.tools,
      ...(this.error !== undefined ? { error: this.error } : {}),
      ...(this.transportKind ? { transport: this.transportKind } : {}),
    };
  }

  /** The registry ids of the tools this connection registered. */
  get tools(): string[] {
    return [...this.ids.values()];
  }

  /** Whether the tools were imported deferred (`lazy: true`). */
  get lazy(): boolean {
    return this.config.lazy === true;
  }

  /** With `lazy: true`, its tools as `tool_search` lists them (else none). */
  deferredTools(): DeferredTool[] {
    if (!this.lazy) return [];
    return [...this.infos].map(([id, info]) => ({
      id,
      server: this.name,
      summary: oneLineSummary(info),
      description: info.description ?? info.title ?? info.annotations?.title ?? info.name,
    }));
  }

  /** What the server listed for one of this connection's tool ids. */
  toolInfo(id: string): McpToolInfo | undefined {
    return this.infos.get(id);
  }

  /** Subscribes to `status` or `tools` events; returns an unsubscribe function. */
  on<K extends keyof McpConnectionEvents>(type: K, listener: Listener<K>): () => void {
    const set = this.listeners[type] as Set<Listener<K>>;
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Marks the connection as never to be started (a disabled or invalid config entry). */
  markUnstarted(state: 'disabled' | 'failed', error?: string): void {
    this.error = error;
    this.setState(state);
  }

  /**
   * (Re)connects: starts the transport, lists the tools and registers them (replacing this
   * connection's previous set). Never rejects: a failure is in the returned status.
   */
  async connect(): Promise<McpServerStatus> {
    const listed = await this.open();
    if (listed) this.install(listed);
    return this.status;
  }

  /** Starts the transport and lists the tools without registering them (`connectMcp` registers in config order). */
  async open(): Promise<McpToolInfo[] | undefined> {
    clearTimeout(this.reconnectTimer);
    await this.dropClient();
    if (this.state !== 'reconnecting') this.setState('connecting');
    this.stderrTail = '';
    try {
      const opened = await openClient(this.config, {
        clientName: this.options.clientName ?? 'agent-toolbelt',
        onStderr: (chunk) => {
          this.stderrTail = (this.stderrTail + chunk).slice(-MCP_STDERR_TAIL_CHARS);
          this.options.onStderr?.(this.name, chunk);
        },
        onTrying: (kind) => (this.transportKind = kind),
        makeClient: (info) => this.makeClient(info),
      });
      this.opened = opened;
      const listed = await listAllTools(opened.client);
      opened.client.onclose = () => {
        if (this.opened === opened) this.lost(`the server's connection closed unexpectedly${this.stderrNote()}`);
      };
      opened.client.onerror = (err) => {
        if (this.opened === opened) void this.probe(err);
      };
      return listed;
    } catch (err) {
      this.error = `${describeError(err)}${this.stderrNote()}`;
      await this.dropClient();
      this.setState(this.ids.size ? 'disconnected' : 'failed');
      return undefined;
    }
  }

  /** Registers `listed` (allow/deny applied) as this connection's tools and marks it connected. */
  install(listed: McpToolInfo[]): void {
    this.error = undefined;
    this.sync(listed);
    this.setState('connected');
  }

  /** Closes the connection, unregisters its tools and ends a stdio server's process. */
  async close(): Promise<void> {
    clearTimeout(this.reconnectTimer);
    for (const id of this.ids.values()) this.registry.unregister(id);
    const removed = this.tools;
    this.ids.clear();
    this.infos.clear();
    if (removed.length) this.emit('tools', { server: this.name, added: [], removed, tools: [] });
    await this.dropClient();
    if (this.state !== 'failed' && this.state !== 'disabled') this.setState('closed');
    this.registry.release(this);
    if (this.lazy) syncToolSearch(this.registry);
  }

  /** Lists the server's tools again and updates the registry (what `tools/list_changed` triggers). */
  async refreshTools(): Promise<void> {
    const client = this.opened?.client;
    if (!client || this.state !== 'connected') return;
    try {
      this.sync(await listAllTools(client));
    } catch (err) {
      if (this.opened?.client === client) void this.probe(err);
    }
  }

  private makeClient(info: { name: string; version: string }): Client {
    const client = new SdkClient(info);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.refreshTools());
    return client;
  }

  private sync(listed: McpToolInfo[]): void {
    const { config, registry } = this;
    const allowed = config.toolsAllowed ? new Set(config.toolsAllowed) : undefined;
    const denied = new Set(config.toolsDenied ?? []);
    const wanted = listed.filter((t) => (!allowed || allowed.has(t.name)) && !denied.has(t.name));
    const wantedNames = new Set(wanted.map((t) => t.name));
    const removed: string[] = [];
    for (const [name, id] of this.ids) {
      if (wantedNames.has(name)) continue;
      registry.unregister(id);
      this.ids.delete(name);
      this.infos.delete(id);
      removed.push(id);
    }
    const own = new Set(this.ids.values());
    const taken = new Set(registry.ids().filter((id) => !own.has(id)));
    const added: string[] = [];
    for (const info of wanted) {
      let id = this.ids.get(info.name);
      if (!id) {
        id = uniqueId(mcpToolId(this.name, info.name), taken);
        this.ids.set(info.name, id);
        added.push(id);
      }
      taken.add(id);
      this.infos.set(id, info);
      registry.register(
        importedTool({
          server: this.name,
          id,
          info,
          maxTotalTimeoutMs: this.maxTotalTimeoutMs(),
          call: (name, args, ctx) => this.call(name, args, ctx),
        }),
        { permissions: { required: permissionsFor(config.permissions, info) }, replace: true },
      );
    }
    if (this.lazy) syncToolSearch(registry);
    if (added.length || removed.length) {
      this.emit('tools', { server: this.name, added, removed, tools: this.tools });
    }
  }

  private maxTotalTimeoutMs(): number {
    return this.config.maxTotalTimeoutMs ?? DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS;
  }

  private async call(name: string, args: Record<string, unknown>, ctx: Tool.Context): Promise<CallToolResultLike> {
    const opened = this.opened;
    if (!opened || this.state !== 'connected') throw new Error(this.unavailable(name));
    const timeout = this.config.timeoutMs ?? DEFAULT_MCP_TOOL_TIMEOUT_MS;
    // An HTTP server that dies mid-call may end the response stream without an error the SDK
    // reports, leaving the call to its timeout: ping it while the call runs instead.
    const heartbeat =
      opened.kind === 'stdio' ? undefined : setInterval(() => void this.probe(), MCP_LIVENESS_INTERVAL_MS);
    try {
      return await opened.client.callTool({ name, arguments: args }, undefined, {
        signal: ctx.abort,
        timeout,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: this.maxTotalTimeoutMs(),
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
      if (isInstance(err, McpError) && err.code === (ErrorCode.RequestTimeout as number)) {
        const total = /maximum total timeout/i.test(err.message);
        throw new Error(
          total
            ? `MCP tool "${name}" on server "${this.name}" timed out after ${this.maxTotalTimeoutMs()} ms in total (maxTotalTimeoutMs). The server cancelled it; ask for less work per call.`
            : `MCP tool "${name}" on server "${this.name}" timed out after ${timeout} ms without progress (timeoutMs). The server cancelled it; try again with less work, or raise the server's timeoutMs.`,
          { cause: err },
        );
      }
      if (this.opened === opened && this.state === 'connected') await this.probe(err);
      if (this.state !== 'connected') {
        throw new Error(
          `MCP server "${this.name}" stopped while its tool "${name}" was running (${this.error ?? describeError(err)}). ` +
            'The call did not finish; use another tool, or tell the user the server needs to be restarted.',
          { cause: err },
        );
      }
      throw new Error(`MCP tool "${name}" on server "${this.name}" failed: ${describeError(err)}`, { cause: err });
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * After a transport error (or on a running HTTP call's heartbeat): a server that does not
   * answer a ping soon is dead, and its pending calls fail now.
   */
  private async probe(cause?: unknown): Promise<void> {
    const opened = this.opened;
    if (!opened || this.state !== 'connected' || this.probing) return;
    this.probing = true;
    try {
      await opened.client.ping({ timeout: MCP_LIVENESS_PING_MS });
    } catch (err) {
      if (this.opened === opened) {
        const after = cause === undefined ? '' : `${describeError(cause)}; `;
        this.lost(`the server stopped answering (${after}ping: ${describeError(err)})`);
      }
    } finally {
      this.probing = false;
    }
  }

  /** The server died: its tools stay registered and fail at once naming it; pending calls are rejected. */
  private lost(reason: string): void {
    if (this.state !== 'connected') return;
    this.error = reason;
    this.setState('disconnected');
    void this.dropClient();
    this.scheduleReconnect(1);
  }

  private scheduleReconnect(attempt: number): void {
    const policy = reconnectPolicy(this.config.reconnect);
    if (!policy) return;
    if (attempt > policy.maxAttempts) {
      this.error = `${this.error ?? 'it died'}; gave up reconnecting after ${policy.maxAttempts} attempts`;
      this.setState('disconnected');
      return;
    }
    this.setState('reconnecting');
    const delay = Math.min(policy.initialDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
    this.reconnectTimer = setTimeout(() => {
      void this.connect().then((s) => {
        if (s.state !== 'connected' && this.state !== 'closed') this.scheduleReconnect(attempt + 1);
      });
    }, delay);
    this.reconnectTimer.unref();
  }

  private unavailable(toolName: string): string {
    const why = this.error ?? 'it was disconnected';
    const state = this.state === 'reconnecting' ? 'reconnecting' : 'not running';
    return (
      `MCP server "${this.name}" is ${state}, so its tool "${toolName}" cannot be called (${why}). ` +
      'Use another tool, or tell the user the server needs to be restarted.'
    );
  }

  private stderrNote(): string {
    const tail = this.stderrTail.trim();
    return tail ? `; its last stderr output: ${JSON.stringify(tail.slice(-500))}` : '';
  }

  private async dropClient(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    await opened.client.close().catch(() => undefined);
    await opened.transport.close().catch(() => undefined);
  }

  private setState(state: McpConnectionState): void {
    const changed = state !== this.state;
    this.state = state;
    if (changed) this.emit('status', this.status);
  }

  private emit<K extends keyof McpConnectionEvents>(type: K, event: McpConnectionEvents[K]): void {
    // The registry's subscribers hear every connection's changes without subscribing to each one.
    const timestamp = Date.now();
    if (type === 'status') {
      const status = event as McpServerStatus;
      this.registry.emitSourceEvent({ type: 'mcp-status', server: this.name, state: status.state, status, timestamp });
    } else {
      this.registry.emitSourceEvent({ type: 'mcp-tools', ...(event as McpConnectionEvents['tools']), timestamp });
    }
    for (const l of this.listeners[type] as Set<Listener<K>>) {
      try {
        l(event);
      } catch {
        // A broken subscriber must not break the connection.
      }
    }
  }
}

function reconnectPolicy(option: McpServerConfig['reconnect']): Required<McpReconnectOptions> | undefined {
  if (!option) return undefined;
  return { ...MCP_RECONNECT_DEFAULTS, ...(option === true ? {} : option) };
}

async function listAllTools(client: Client): Promise<McpToolInfo[]> {
  const listed: McpToolInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: MCP_CONNECT_TIMEOUT_MS });
    listed.push(...(page.tools as McpToolInfo[]));
    cursor = page.nextCursor;
  } while (cursor);
  return listed;
}
