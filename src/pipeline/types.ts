/**
 * The pipeline's public vocabulary: the updates a call reports, the events a registry emits, statistics.
 * Must not hold behaviour: types only (the call is in call.ts).
 */
import type { Tool } from '../authoring/tool.js';
import type { McpConnectionState, McpServerStatus } from '../mcp/types.js';
import type { SandboxStatus } from '../sandbox/types.js';

/** One update about a call: progress while running, then exactly one final update. */
export interface ToolUpdate {
  status: 'running' | 'completed' | 'error';
  toolId: string;
  /** The call's id: the LangChain tool_call_id when an agent made the call. */
  callID: string;
  /** The result so far (partial while running). */
  result: Tool.Result;
  /** Milliseconds since the epoch. */
  timestamp: number;
  /** Final updates only. */
  success?: boolean;
  /** Final updates only, when the call failed: the message the model sees. */
  error?: string;
  /** Final updates only. */
  durationMs?: number;
}

/** A final update (`status` is `completed` or `error`). */
export type ToolFinalUpdate = ToolUpdate & { status: 'completed' | 'error'; success: boolean; durationMs: number };

/** Receives every update of a call. */
export type OnToolResult = (update: ToolUpdate) => void;

/** Events a registry emits; subscribe with `registry.subscribe`. */
export type ToolEvent =
  | { type: 'requested'; toolId: string; callID: string; args: unknown; timestamp: number }
  | { type: 'progress'; toolId: string; callID: string; update: ToolUpdate; timestamp: number }
  | { type: 'completed'; toolId: string; callID: string; update: ToolFinalUpdate; timestamp: number }
  | { type: 'failed'; toolId: string; callID: string; update: ToolFinalUpdate; timestamp: number }
  | { type: 'warning'; toolId: string; message: string; timestamp: number }
  | McpStatusEvent
  | McpToolsEvent
  | SandboxEvent
  | { type: 'pending'; toolId: string; callID: string; call: PendingCall; timestamp: number }
  | { type: 'resolved'; toolId: string; callID: string; call: PendingCall; update: ToolFinalUpdate; timestamp: number }
  | { type: 'expired'; toolId: string; callID: string; call: PendingCall; update: ToolFinalUpdate; timestamp: number };

/** What the registry found when it probed the OS sandbox (once per distinct status): on, or off and why. */
export interface SandboxEvent {
  type: 'sandbox';
  sandbox: SandboxStatus;
  timestamp: number;
}

/** An MCP server connection of the registry changed state: connected, disconnected, reconnecting, failed, closed ... */
export interface McpStatusEvent {
  type: 'mcp-status';
  server: string;
  state: McpConnectionState;
  status: McpServerStatus;
  timestamp: number;
}

/** An MCP server connection's tools changed: (re)connected, `tools/list_changed`, or closed. */
export interface McpToolsEvent {
  type: 'mcp-tools';
  server: string;
  added: string[];
  removed: string[];
  /** The connection's tool ids now. */
  tools: string[];
  timestamp: number;
}

/** A call whose tool returned `Tool.pending(...)`: its result arrives later through `registry.submitResult`. */
export interface PendingCall {
  /** The call's id (the LangChain tool_call_id when an agent made the call). */
  toolCallId: string;
  /** The tool's id. */
  tool: string;
  /** The arguments as parsed. */
  args: unknown;
  /** The session the call belongs to. */
  sessionID: string;
  /** `pending` until `submitResult` (`resolved`) or the deadline (`expired`). */
  status: 'pending' | 'resolved' | 'expired';
  /** What the tool told the model while it waits. */
  message: string;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Milliseconds since the epoch; past it the call resolves as an error. */
  expiresAt: number;
  /** Once settled: the late final update (completed with the submitted result, or an error). */
  update?: ToolFinalUpdate;
}

/** Statistics of one tool. */
export interface ToolStats {
  calls: number;
  failures: number;
  totalDurationMs: number;
  averageDurationMs: number;
  lastError?: string;
}

/** What the pipeline tells the registry about a call that will be resolved later. */
export interface PendRequest {
  toolId: string;
  callID: string;
  args: unknown;
  sessionID: string;
  options: Tool.PendingOptions;
  /** The call's context (a store namespace may depend on it). */
  ctx?: Partial<Tool.Context>;
}

/** What step 2 judges: the call as sent (approvals are bound to these arguments) and as parsed. */
export interface AuthorizeCall {
  toolId: string;
  callID: string;
  rawArgs: unknown;
  args: unknown;
  ctx?: Partial<Tool.Context>;
}

/** One call's request. */
export interface CallRequest {
  tool: Tool.Initialized;
  args: unknown;
  /** The caller's context; any field left out gets a default. */
  ctx?: Partial<Tool.Context>;
  callID?: string;
  /** Aborts the call (LangChain's `config.signal`, or the caller's). */
  signal?: AbortSignal;
  /** Per-call timeout override (ms), clamped to the tool's `timeout.maxMs`. */
  timeoutMs?: number;
  /** Receivers of every update, in order. */
  listeners?: OnToolResult[];
}
