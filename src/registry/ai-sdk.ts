/**
 * The Vercel AI SDK (v7) adapter, entry `agent-toolbelt/ai-sdk`: a registry's tools as AI SDK
 * `tool()`s whose `execute` runs through the registry's pipeline (permissions, policy, argument
 * repair, timeouts, caps, statistics), whose progress arrives as preliminary results, and whose
 * `toModelOutput` sends the capped text and images; and the policy's allow / deny / ask as the
 * SDK's `toolApproval`.
 * Must not be imported by the root entry (it loads `ai`, an optional peer), nor run any step of a
 * call itself: every call is `registry.execute`.
 */
import { randomUUID } from 'node:crypto';
import { tool, jsonSchema, type ModelMessage, type Tool as AITool, type ToolApprovalStatus } from 'ai';
import type { Tool } from '../authoring/tool.js';
import type { Registry } from './registry.js';
import type { PermissionGrant } from '../authoring/permissions.js';
import type { ToolUpdate } from '../pipeline/types.js';
import { checkOptions } from '../schema/options.js';
import { aiSdkToolsOptionsSchema } from './options.js';

/** What an AI SDK tool made by `toAISDKTools` yields: progress (preliminary) results, then the final one. */
export interface AISDKToolOutput {
  /** `running` for preliminary results (each `ctx.metadata` update), then `completed` or `error`. */
  status: 'running' | 'completed' | 'error';
  title: string;
  metadata: Tool.Metadata;
  /** What the model reads: the capped output, or the error sentence. */
  output: string;
  /** Images and files the tool returned (final result only). */
  attachments?: Tool.Attachment[];
}

/** Options of `toAISDKTools`. */
export interface AISDKToolsOptions {
  /** Only these tool ids. */
  ids?: string[];
  /** Only tools whose required permissions are all granted; calls are refused outside the grant. */
  enabledPermissions?: PermissionGrant;
  initCtx?: Tool.InitContext;
  /** The session per-session state (read-before-write, todos, "always" approvals) is kept under; default: one per call of `toAISDKTools`. */
  sessionID?: string;
  /** The agent's name, as `ctx.agent`. */
  agent?: string;
  /** Per-call timeout override (ms). */
  timeoutMs?: number;
  /** Receives every progress and final update, as `registry.tools({ onToolResult })` does. */
  onToolResult?: (update: ToolUpdate) => void;
}

/** The AI SDK tool set `toAISDKTools` returns: one `tool()` per registry tool, keyed by id. */
export type AISDKToolSet = Record<string, AITool<unknown, AISDKToolOutput>>;

/**
 * The registry's tools as AI SDK v7 `tool()`s, for `generateText` / `streamText` / `ToolLoopAgent`;
 * tools that cannot run under `initCtx` are left out, as `registry.tools()` leaves them out.
 * Each `execute(input, { toolCallId, abortSignal })` is an async generator: every progress update is
 * yielded as a preliminary result and the final result comes last.
 */
export async function toAISDKTools(registry: Registry, options: AISDKToolsOptions = {}): Promise<AISDKToolSet> {
  checkOptions(aiSdkToolsOptionsSchema, options);
  const initCtx = options.initCtx ?? {};
  let ids = registry.ids();
  if (options.ids) {
    for (const id of options.ids) if (!registry.has(id)) throw new Error(registry.unknownToolMessage(id));
    const wanted = new Set(options.ids);
    ids = ids.filter((id) => wanted.has(id));
  }
  if (options.enabledPermissions) {
    const allowed = new Set(registry.enabled(options.enabledPermissions));
    ids = ids.filter((id) => allowed.has(id));
  }
  const chosen = new Set(ids);
  const toolSet: Tool.ToolSet = { has: (id) => chosen.has(id) && registry.has(id) };
  const sessionID = options.sessionID ?? `session-${randomUUID()}`;
  const out: AISDKToolSet = {};
  const initializedTools = await Promise.all(ids.map((id) => registry.initialized(id, initCtx, toolSet)));
  // A tool that cannot run under initCtx (registry.unavailable() says why) is not offered.
  for (let i = 0; i < ids.length; i++) if (initializedTools[i].unavailable) chosen.delete(ids[i]);
  for (const [i, id] of ids.entries()) {
    const initialized = initializedTools[i];
    if (initialized.unavailable) continue;
    out[id] = tool<unknown, AISDKToolOutput, Record<string, unknown>>({
      description: initialized.description,
      // Tools imported as JSON Schema (MCP) keep it; the others hand the SDK their zod schema.
      inputSchema: (initialized.jsonSchema
        ? jsonSchema(initialized.jsonSchema as Parameters<typeof jsonSchema>[0])
        : initialized.parameters) as never,
      execute: (input, { toolCallId, abortSignal, messages }) =>
        run(registry, id, input, {
          toolCallId,
          abortSignal,
          messages,
          initCtx,
          toolSet,
          sessionID,
          options,
        }),
      toModelOutput: ({ output }) => modelOutput(output),
    });
  }
  return out;
}

/** One call: the pipeline's updates become yields, the final update the last one. */
async function* run(
  registry: Registry,
  id: string,
  input: unknown,
  call: {
    toolCallId: string;
    abortSignal?: AbortSignal;
    messages: ModelMessage[];
    initCtx: Tool.InitContext;
    toolSet: Tool.ToolSet;
    sessionID: string;
    options: AISDKToolsOptions;
  },
): AsyncGenerator<AISDKToolOutput, void, undefined> {
  const { toolCallId, options } = call;
  // The SDK executes a call the policy asks about only once its user approved it (toolApproval):
  // that approval, found in the conversation, becomes a one-call grant bound to these arguments.
  if (registry.policy && approvedInConversation(call.messages, toolCallId)) {
    registry.policy.grantCall(toolCallId, id, input);
  }
  const queue: AISDKToolOutput[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const final = registry
    .execute(
      id,
      input,
      { sessionID: call.sessionID, messageID: toolCallId, ...(options.agent ? { agent: options.agent } : {}) },
      call.initCtx,
      {
        callID: toolCallId,
        signal: call.abortSignal,
        timeoutMs: options.timeoutMs,
        enabledPermissions: options.enabledPermissions,
        toolSet: call.toolSet,
        onToolResult: (update) => {
          options.onToolResult?.(update);
          if (update.status !== 'running') return;
          queue.push({
            status: 'running',
            title: update.result.title,
            metadata: update.result.metadata,
            output: update.result.output,
          });
          wake?.();
        },
      },
    )
    .finally(() => {
      done = true;
      wake?.();
    });
  for (;;) {
    while (queue.length) yield queue.shift()!;
    if (done) break;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
  }
  const update = await final;
  yield {
    status: update.success ? 'completed' : 'error',
    title: update.result.title,
    metadata: update.result.metadata,
    output: update.result.output || update.error || (update.success ? '' : `Tool "${id}" failed.`),
    ...(update.result.attachments?.length ? { attachments: update.result.attachments } : {}),
  };
}

/** Whether the conversation holds an approved `tool-approval-response` for this tool call. */
function approvedInConversation(messages: ModelMessage[] | undefined, toolCallId: string): boolean {
  if (!Array.isArray(messages)) return false;
  const approvalIds = new Set<string>();
  for (const m of messages) {
    if (m.role !== 'assistant' || typeof m.content === 'string') continue;
    for (const part of m.content)
      if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId) approvalIds.add(part.approvalId);
  }
  if (!approvalIds.size) return false;
  return messages.some(
    (m) =>
      m.role === 'tool' &&
      m.content.some((p) => p.type === 'tool-approval-response' && approvalIds.has(p.approvalId) && p.approved),
  );
}

type ModelOutput = ReturnType<NonNullable<AITool<unknown, AISDKToolOutput>['toModelOutput']>>;

/** The capped text, and the images/files a result carries, as the SDK's tool-result output. */
function modelOutput(output: AISDKToolOutput): ModelOutput {
  if (output.status === 'error') return { type: 'error-text', value: output.output };
  const files = (output.attachments ?? []).filter((a) => a.data !== undefined);
  if (!files.length) return { type: 'text', value: output.output };
  return {
    type: 'content',
    value: [
      { type: 'text', text: output.output },
      ...files.map((a) => ({
        type: 'file' as const,
        mediaType: a.mime,
        data: { type: 'data' as const, data: a.data! },
        ...(a.filename ? { filename: a.filename } : {}),
      })),
    ],
  };
}

/** Options of `toAISDKToolApproval`. */
export interface AISDKToolApprovalOptions {
  /** The init context the tools were made with (where the policy resolves paths). */
  initCtx?: Tool.InitContext;
}

/**
 * The registry's policy as the SDK's `toolApproval` (for `generateText` / `streamText`): `allow` runs
 * the call, `deny` refuses it with the rule's reason (the model sees it as a denied execution), and
 * `ask` asks the SDK's user (a `tool-approval-request`); an approved call then runs once, bound to its
 * arguments. Without a policy every call is not-applicable (the pipeline still applies permissions).
 */
export function toAISDKToolApproval(
  registry: Registry,
  options: AISDKToolApprovalOptions = {},
): (call: { toolCall: { toolName: string; input: unknown } }) => Promise<ToolApprovalStatus> {
  return async ({ toolCall }) => {
    const policy = registry.policy;
    if (!policy) return 'not-applicable';
    const decision = await policy.decide(
      toolCall.toolName,
      toolCall.input,
      registry.policyEnvironment(options.initCtx),
    );
    if (decision.action === 'allow') return 'not-applicable';
    if (decision.action === 'deny') return { type: 'denied', reason: decision.reason };
    return { type: 'user-approval', reason: decision.reason };
  };
}
