/**
 * The LangChain adapter: an initialised tool becomes a DynamicStructuredTool whose calls go through
 * the shared pipeline. Invoked with a ToolCall it returns a ToolMessage (content = output, artifact =
 * the structured result, status `error` on failure); progress goes to `onToolResult`, to
 * `config.writer` (LangGraph's `streamMode: 'custom'`), to LangChain core's tool events
 * (`handleToolEvent`: LangGraph's `streamMode: 'tools'`) and to callback handlers (`streamEvents`).
 * Must not validate, time out or cap: those are the pipeline's; this file only adapts LangChain's calling convention.
 */
import {
  DynamicStructuredTool,
  type StructuredToolCallInput,
  type ToolReturnType,
  type ToolRunnableConfig,
} from '@langchain/core/tools';
import { ToolMessage } from '@langchain/core/messages/tool';
import { CallbackManager, type CallbackManagerForToolRun } from '@langchain/core/callbacks/manager';
import type { Tool } from '../authoring/tool.js';
import { providerJsonSchema } from '../schema/index.js';
import type { JsonSchema } from '../schema/portable.js';
import { runCall, type CallEnvironment } from '../pipeline/call.js';
import type { OnToolResult, ToolFinalUpdate, ToolUpdate } from '../pipeline/types.js';
import { resultText } from '../pipeline/result-text.js';
import { RUN_CONFIGURABLE_KEY, RUN_STORE_KEY } from '../store/scope.js';
import { fitDescription } from './description-fit.js';

/**
 * `@langchain/core/runnables` (the barrel ensureConfig and mergeConfigs live in), loaded by the first
 * call: importing the package does not load LangChain's runnable classes that `@langchain/core/tools`
 * leaves out.
 */
let runnables: typeof import('@langchain/core/runnables') | undefined;
/** The chunk written to LangGraph's custom stream (and dispatched as the `tool_progress` custom event) for each progress report. */
export interface ToolProgressChunk {
  type: 'tool_progress';
  toolId: string;
  callID: string;
  title: string;
  metadata: Tool.Metadata;
  timestamp: number;
}

/** The name of the custom callback event carrying progress (`streamEvents` v2 shows it as `on_custom_event`). */
export const PROGRESS_EVENT = 'tool_progress';

/** What the adapter needs from its registry. */
export interface AdapterOptions {
  host: CallEnvironment;
  createContext: (toolId: string, callID: string) => Partial<Omit<Tool.Context, 'metadata' | 'callID'>>;
  onToolResult?: OnToolResult;
  timeoutMs?: number;
  signal?: AbortSignal;
  extra?: Record<string, unknown>;
  /** Send the OpenAI strict-mode form of the schema (optional fields required-nullable, no extra keys). */
  strict?: boolean;
  /** A deferred tool: carries `extras: { defer_loading: true }` (offered through a tool search until found). */
  deferLoading?: boolean;
  /** Fit the description under this many characters (src/registry/description-fit.ts). */
  maxDescriptionChars?: number;
  /** What rides on `ToolMessage.artifact` (`ToolsOptions.artifact`): default `'result'`, the whole result. */
  artifact?: ArtifactMode;
}

/**
 * What a ToolMessage carries as its `artifact`. `'result'`: the whole `Tool.Result` (title, metadata,
 * output, attachments, structuredContent). `'minimal'`: only a result the text does not carry —
 * attachments, structuredContent, or `tool_search`'s `found` (deferral reads it back from the
 * conversation) — so a checkpointed history holds what deepagents' own tools leave there and no more.
 */
export type ArtifactMode = 'result' | 'minimal';

/** The artifact of `result` under `mode`: undefined when `'minimal'` and the text says it all. */
function artifactOf(result: Tool.Result, mode: ArtifactMode | undefined): Tool.Result | undefined {
  if (mode !== 'minimal') return result;
  if (result.attachments?.length || result.structuredContent !== undefined) return result;
  // tool_search's marker (src/mcp/lazy.ts ToolSearchMetadata): foundIn reads `found` from the messages.
  return result.metadata.toolSearch === true ? result : undefined;
}

/** The description and schema a provider is sent. */
function definitionFor(tool: Tool.Initialized, options: AdapterOptions): { description: string; schema: JsonSchema } {
  // Providers see the portable JSON Schema (src/schema/); validation itself happens in the
  // pipeline, against the zod schema, so that bad input becomes an actionable ToolMessage.
  const schema = providerJsonSchema(tool, { strict: options.strict });
  if (options.maxDescriptionChars === undefined) return { description: tool.description, schema };
  const fitted = fitDescription(tool.id, tool.description, schema, options.maxDescriptionChars);
  return { description: fitted.description, schema: fitted.schema };
}

type ToolCallLike = { type: 'tool_call'; id?: string; name: string; args: unknown };

function isToolCall(x: unknown): x is ToolCallLike {
  return !!x && typeof x === 'object' && (x as { type?: unknown }).type === 'tool_call';
}

/** What the adapter's `func` returns: the model's text and the structured result (the artifact). */
type ContentAndArtifact = [string, Tool.Result];

/**
 * A DynamicStructuredTool that runs a toolbelt tool through the shared pipeline.
 *
 * `invoke` (the Runnable method LangGraph's ToolNode and `createAgent` call) is overridden, not the
 * deprecated `call`: the base `call` validates against the JSON Schema before anything runs and
 * throws `ToolInputParsingException`, where the pipeline first repairs weak models' arguments and
 * turns what is still invalid into a ToolMessage the model can act on. The deprecated `call` keeps
 * the base behaviour (strict validation, then `func`).
 */
export class ToolbeltTool extends DynamicStructuredTool<JsonSchema, unknown, unknown, ContentAndArtifact> {
  /** The structured result rides on `ToolMessage.artifact`. */
  override responseFormat = 'content_and_artifact' as const;
  /** `onToolResult`, when given; computed once, not per call. */
  private readonly baseListeners: OnToolResult[];

  constructor(
    /** The initialised tool this wraps. */
    readonly tool: Tool.Initialized,
    private readonly options: AdapterOptions,
  ) {
    super({
      name: tool.id,
      ...definitionFor(tool, options),
      func: async (input, runManager, config) => {
        const final = await this.run(input, { signal: config?.signal, runManager });
        return [resultText(final), final.result];
      },
    });
    this.baseListeners = options.onToolResult ? [options.onToolResult] : [];
    if (options.deferLoading) this.extras = { ...this.extras, defer_loading: true };
  }

  /**
   * Runs one call. With a ToolCall (or `config.toolCall`) the answer is a ToolMessage (status
   * `error` on failure, never a throw); with plain arguments it is the text the model would read.
   */
  override async invoke<
    TInput extends StructuredToolCallInput<JsonSchema, unknown>,
    TConfig extends ToolRunnableConfig | undefined,
  >(input: TInput, config?: TConfig): Promise<ToolReturnType<TInput, TConfig, ContentAndArtifact>> {
    const { ensureConfig, mergeConfigs } = runnables ?? (runnables = await import('@langchain/core/runnables'));
    const merged = ensureConfig(mergeConfigs(this.defaultConfig, config)) as ToolRunnableConfig & {
      writer?: (chunk: unknown) => void;
      state?: unknown;
      store?: unknown;
    };
    const toolCall = isToolCall(input) ? input : (merged.toolCall as ToolCallLike | undefined);
    const args = isToolCall(input) ? input.args : input;
    const toolCallId = toolCall?.id;
    const callbackManager = CallbackManager.configure(
      merged.callbacks,
      this.callbacks,
      merged.tags,
      this.tags,
      merged.metadata,
      this.metadata,
      { verbose: this.verbose },
    );
    const runManager = await callbackManager?.handleToolStart(
      this.toJSON(),
      args && typeof args === 'object' && !Array.isArray(args)
        ? (args as Record<string, unknown>)
        : JSON.stringify(args ?? null),
      merged.runId,
      undefined,
      undefined,
      undefined,
      merged.runName ?? this.name,
      toolCallId,
    );
    const final = await this.run(args, {
      callID: toolCallId,
      turn: turnOf(merged.state, toolCallId),
      signal: merged.signal,
      writer: merged.writer,
      runManager,
      // LangGraph hands a graph's store (compile({ store }), createAgent({ store })) to its tools here.
      runStore: merged.store,
      configurable: merged.configurable,
    });
    const content = resultText(final);
    const artifact = artifactOf(final.result, this.options.artifact);
    const output = toolCallId
      ? new ToolMessage({
          content,
          // No `artifact` key at all when there is none: a checkpointer would store `undefined` as a record.
          ...(artifact ? { artifact } : {}),
          tool_call_id: toolCallId,
          name: this.name,
          status: final.success ? 'success' : 'error',
        })
      : content;
    if (final.success) await runManager?.handleToolEnd(output);
    else await runManager?.handleToolError(new Error(final.error));
    // The conditional return type follows the input's shape, which TypeScript cannot narrow here.
    return output as ToolReturnType<TInput, TConfig, ContentAndArtifact>;
  }

  private run(
    input: unknown,
    via: {
      callID?: string;
      turn?: string;
      signal?: AbortSignal;
      writer?: (chunk: unknown) => void;
      runManager?: CallbackManagerForToolRun;
      runStore?: unknown;
      configurable?: Record<string, unknown>;
    },
  ): Promise<ToolFinalUpdate> {
    const { options, tool } = this;
    const callID = via.callID ?? `call-${Math.random().toString(36).slice(2)}`;
    const { writer, runManager } = via;
    let listeners = this.baseListeners;
    if (writer || runManager) {
      listeners = [
        ...listeners,
        (update: ToolUpdate) => {
          if (update.status !== 'running') return;
          const chunk: ToolProgressChunk = {
            type: 'tool_progress',
            toolId: update.toolId,
            callID: update.callID,
            title: update.result.title,
            metadata: update.result.metadata,
            timestamp: update.timestamp,
          };
          if (writer) writer(chunk);
          if (runManager) {
            // LangChain core's native tool event (what a tool whose call yields reports): LangGraph's
            // `streamMode: 'tools'` streams it as `on_tool_event` with the tool call id.
            void runManager.handleToolEvent(chunk).catch(() => undefined);
            void runManager.handleCustomEvent(PROGRESS_EVENT, chunk).catch(() => undefined);
          }
        },
      ];
    }
    let base = options.createContext(tool.id, callID);
    if (via.turn !== undefined && base.messageID === undefined) base = { ...base, messageID: via.turn };
    const signal = combineSignals(via.signal, options.signal);
    let ctx = base.extra || !options.extra ? base : { ...base, extra: options.extra };
    if (via.runStore) {
      ctx = {
        ...ctx,
        extra: { ...ctx.extra, [RUN_STORE_KEY]: via.runStore, [RUN_CONFIGURABLE_KEY]: via.configurable },
      };
    }
    return runCall(options.host, {
      tool,
      args: input,
      ctx,
      callID,
      signal,
      timeoutMs: options.timeoutMs,
      listeners,
    });
  }
}

/**
 * The model turn a tool call belongs to, as `ctx.messageID`: the id of the AIMessage that holds the
 * call, found in the agent state LangChain's ToolNode hands its tools (`config.state`); an AIMessage
 * without an id is named by its first tool call's id. Undefined outside an agent loop.
 */
function turnOf(state: unknown, toolCallId: string | undefined): string | undefined {
  if (!toolCallId || !state || typeof state !== 'object') return undefined;
  const messages: unknown = Array.isArray(state) ? state : (state as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { id?: unknown; tool_calls?: Array<{ id?: unknown }> } | null;
    const calls = m?.tool_calls;
    if (!Array.isArray(calls) || !calls.some((c) => c?.id === toolCallId)) continue;
    return typeof m!.id === 'string' && m!.id ? m!.id : `turn-of-${String(calls[0]?.id)}`;
  }
  return undefined;
}

function combineSignals(a?: AbortSignal, b?: AbortSignal): AbortSignal | undefined {
  if (!a) return b;
  if (!b) return a;
  return AbortSignal.any([a, b]);
}

/** Wraps an initialised tool as a LangChain tool that runs through the registry's pipeline. */
export function toLangChainTool(tool: Tool.Initialized, options: AdapterOptions): ToolbeltTool {
  return new ToolbeltTool(tool, options);
}
