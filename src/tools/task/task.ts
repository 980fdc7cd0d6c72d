/**
 * task: runs a named sub-agent (a real `createAgent` loop) on a prompt with a reduced toolset and
 * returns its final text. Sub-agents are configured in `initCtx.subagents`.
 * Must not register tools: it asks the parent's registry for the sub-agent's set.
 */
import { z } from 'zod';
import { HumanMessage, AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import type { Registry } from '../../registry/registry.js';
import type { ToolPermission } from '../../authoring/permissions.js';

declare module '../../authoring/tool.js' {
  namespace Tool {
    /** A chat model, or a function that makes one; typed loosely so any LangChain model fits. */
    export type ModelLike = object;

    /** A named sub-agent the `task` tool may run. */
    export interface SubagentConfig {
      /** A LangChain chat model instance, or a (possibly async) factory returning one. */
      model: ModelLike | (() => ModelLike | Promise<ModelLike>);
      /** Which permissions the sub-agent's tools may use; `task` itself is excluded unless listed in `tools`. */
      permissions: ToolPermission[];
      /** Optional explicit tool ids (intersected with what the permissions allow). */
      tools?: string[];
      /** The sub-agent's system prompt. */
      systemPrompt?: string;
      /** A short line shown to the parent model in the task tool's description. */
      description?: string;
    }

    interface InitContext {
      /** Named sub-agents for the `task` tool. */
      subagents?: Record<string, SubagentConfig>;
    }
  }
}

/** The `metadata.error` code when no sub-agents are configured: the host must handle the request. */
export const LLM_ASSIST_REQUIRED = 'LLM_ASSIST_REQUIRED';
/**
 * The one sentence for a task call without sub-agents, whoever asks (a model through LangChain, an
 * MCP client, the CLI): it carries the code, so the pipeline adds nothing to it.
 */
const NO_SUBAGENTS =
  `The task tool has no sub-agents to run (${LLM_ASSIST_REQUIRED}): none are configured. Do the task yourself ` +
  'with the other tools, or configure sub-agents in initCtx.subagents (a name -> { model, permissions } map, see ' +
  'docs/tools/task.md).';
/** Model turns (graph steps) a sub-agent may take before it is stopped. */
export const SUBAGENT_RECURSION_LIMIT = 50;
/** Characters of a sub-agent's final text returned to the parent. */
export const MAX_TASK_OUTPUT_CHARS = 30_000;

const parameters = z.object({
  description: z.string().min(1).describe('A short (3-5 word) description of the task, shown as its title.'),
  prompt: z
    .string()
    .min(1)
    .describe('The full task for the sub-agent: everything it needs to know, and what to report back.'),
  subagent_type: z.string().min(1).describe('Which configured sub-agent runs the task.'),
});

export const TaskTool = Tool.define<typeof parameters>(
  {
    id: 'task',
    permissions: { required: ['execute'] },
    descriptionPath: descriptionBeside(import.meta.url, 'task'),
    danger: 'dangerous',
  },
  (initCtx) => {
    const subagents = initCtx.subagents ?? {};
    const names = Object.keys(subagents);
    const listing = names.length
      ? names
          .map(
            (n) =>
              `- ${n}: ${subagents[n].description ?? `tools allowed by ${subagents[n].permissions.join(', ') || 'no'} permissions`}`,
          )
          .join('\n')
      : '(no sub-agents are configured)';
    return {
      description: `Run a sub-agent on a task and return its final answer. Available sub-agents:\n${listing}`,
      descriptionVariables: { subagents: listing },
      ...(names.length
        ? {}
        : {
            unavailable: NO_SUBAGENTS,
          }),
      parameters,
      // The sub-agent's own tool calls need the registry's slots; a waiting task must not hold one.
      concurrency: 'exempt',
      // A sub-agent runs as long as it needs; its own tool calls have their own limits.
      timeout: { managed: true },
      async execute(args, ctx) {
        if (!names.length) {
          return {
            title: args.description,
            metadata: { error: LLM_ASSIST_REQUIRED, subagent: args.subagent_type },
            output: NO_SUBAGENTS,
          };
        }
        const config = subagents[args.subagent_type];
        if (!config) {
          throw new Error(
            `Unknown subagent_type "${args.subagent_type}". Configured sub-agents: ${names.join(', ')}. Use one of those.`,
          );
        }
        const registry = ctx.extra?.registry as Registry | undefined;
        if (!registry)
          throw new Error(
            "The task tool must be run through a tool registry (it builds the sub-agent from the registry's tools).",
          );
        const parentInit = (ctx.extra?.initCtx as Tool.InitContext | undefined) ?? initCtx;

        const allowed = new Set(registry.enabled(config.permissions));
        const wanted = config.tools
          ? config.tools.filter((id) => allowed.has(id))
          : [...allowed].filter((id) => id !== 'task');
        const sessionID = `${ctx.sessionID}/task-${ctx.callID ?? Date.now()}`;
        let toolCalls = 0;
        const tools = await registry.tools({
          ids: wanted,
          initCtx: parentInit,
          signal: ctx.abort,
          createContext: () => ({ sessionID, agent: args.subagent_type, messageID: ctx.messageID }),
          onToolResult: (u) => {
            if (u.status !== 'running') toolCalls++;
            ctx.metadata({
              title: `${args.description}: ${u.toolId}${u.status === 'running' ? (u.result.title ? ` (${u.result.title})` : '') : u.success ? ' done' : ' failed'}`,
              metadata: { subagent: args.subagent_type, toolId: u.toolId, toolStatus: u.status, toolCalls },
            });
          },
        });
        const model = (
          typeof config.model === 'function' ? await (config.model as () => unknown)() : config.model
        ) as BaseChatModel;
        const { createAgent } = await import('langchain');
        const agent = createAgent({
          model,
          tools,
          ...(config.systemPrompt ? { systemPrompt: config.systemPrompt } : {}),
        });
        ctx.metadata({
          title: `${args.description}: started`,
          metadata: { subagent: args.subagent_type, toolCalls: 0, tools: wanted },
        });
        let state: { messages: BaseMessage[] };
        try {
          // An OpenTelemetry `invoke_agent` span (when something records spans) holds the sub-agent's calls.
          state = (await registry.telemetry.agentSpan(
            args.subagent_type,
            { 'gen_ai.conversation.id': sessionID, 'gen_ai.agent.description': args.description },
            () =>
              agent.invoke(
                { messages: [new HumanMessage(args.prompt)] },
                { signal: ctx.abort, recursionLimit: SUBAGENT_RECURSION_LIMIT },
              ),
          )) as { messages: BaseMessage[] };
        } catch (err) {
          if (ctx.abort.aborted)
            throw new Error(
              `Sub-agent "${args.subagent_type}" was stopped: ${(ctx.abort.reason as Error)?.message ?? 'aborted'}.`,
              { cause: err },
            );
          const message = (err as Error).message;
          if (/recursion limit/i.test(message)) {
            throw new Error(
              `Sub-agent "${args.subagent_type}" did not finish within ${SUBAGENT_RECURSION_LIMIT} steps. Split the task into smaller ones.`,
              { cause: err },
            );
          }
          throw new Error(`Sub-agent "${args.subagent_type}" failed: ${message}`, { cause: err });
        }
        const final = [...state.messages].reverse().find((m) => AIMessage.isInstance(m));
        let text = final ? final.text : '';
        if (!text.trim()) text = '(the sub-agent finished without a final answer)';
        const truncated = text.length > MAX_TASK_OUTPUT_CHARS;
        if (truncated)
          text = `${text.slice(0, MAX_TASK_OUTPUT_CHARS)}\n\n... (sub-agent answer truncated at ${MAX_TASK_OUTPUT_CHARS} characters)`;
        return {
          title: args.description,
          metadata: { subagent: args.subagent_type, toolCalls, sessionID, truncated },
          output: text,
        };
      },
    };
  },
);
