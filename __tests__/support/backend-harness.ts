/**
 * The backend test harness the conformance and undo suites share: our tools run through
 * `registry.execute` with a backend in the init context, or inside a real LangGraph graph (ToolNode,
 * a checkpointer) over deepagents' StateBackend, whose files live in the graph's state.
 * Holds no assertions.
 */
import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { Annotation, type BaseStore, MemorySaver, MessagesAnnotation, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { StateBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools, type RegistryOptions, type Tool } from '../../src/index.js';

export interface Outcome {
  ok: boolean;
  output: string;
}

/** Calls through `registry.execute` with `initCtx`; `turn` names the model turn (`ctx.messageID`). */
export function direct(name: string, initCtx: Tool.InitContext, options: RegistryOptions = {}) {
  const registry = registerBuiltinTools(createRegistry({ loopGuard: false, ...options }));
  return {
    name,
    registry,
    async call(tool: string, args: Record<string, unknown>, session = 's1', turn?: string): Promise<Outcome> {
      const u = await registry.execute(
        tool,
        args,
        { sessionID: session, ...(turn ? { messageID: turn } : {}) },
        initCtx,
      );
      return { ok: u.success, output: u.success ? u.result.output : (u.error ?? '') };
    },
    close: async () => undefined,
  };
}

/** Files in LangGraph state, as deepagents keeps them: path -> FileData, null deletes. */
function filesReducer(
  current: Record<string, unknown> | undefined,
  update: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const out = { ...(current ?? {}) };
  for (const [k, v] of Object.entries(update ?? {})) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

const GraphState = Annotation.Root({
  ...MessagesAnnotation.spec,
  files: Annotation<Record<string, unknown>>({ reducer: filesReducer, default: () => ({}) }),
});

/**
 * Our tools in a LangGraph graph (ToolNode) over StateBackend, checkpointed by `saver` on one thread.
 * `turn` runs several calls as one AIMessage (one model turn); `call` runs one. `store`: the graph's
 * own LangGraph store (the run's store the tools then use).
 */
export async function stateGraph(saver: MemorySaver, thread: string, options: RegistryOptions = {}, store?: BaseStore) {
  const registry = registerBuiltinTools(createRegistry({ loopGuard: false, ...options }));
  const sessions = new Map<string, Awaited<ReturnType<typeof registry.tools>>>();
  const backend = new StateBackend();
  const toolsFor = async (session: string) => {
    let tools = sessions.get(session);
    if (!tools)
      sessions.set(
        session,
        (tools = await registry.tools({ initCtx: { backend }, createContext: () => ({ sessionID: session }) })),
      );
    return tools;
  };
  let n = 0;
  const turn = async (calls: Array<[string, Record<string, unknown>]>, session = 's1'): Promise<Outcome[]> => {
    const tools = await toolsFor(session);
    const graph = new StateGraph(GraphState)
      .addNode('tools', new ToolNode(tools, { handleToolErrors: true }))
      .addEdge('__start__', 'tools')
      .compile({ checkpointer: saver, ...(store ? { store } : {}) });
    const ids = calls.map(() => `call-${thread}-${++n}-${Math.random().toString(36).slice(2)}`);
    const out = await graph.invoke(
      {
        messages: [
          new AIMessage({ content: '', tool_calls: calls.map(([name, args], i) => ({ id: ids[i], name, args })) }),
        ],
      },
      { configurable: { thread_id: thread } },
    );
    return ids.map((id, i) => {
      const msg = out.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === id) as
        ToolMessage | undefined;
      if (!msg) throw new Error(`no ToolMessage for ${calls[i][0]}`);
      return { ok: msg.status !== 'error', output: String(msg.content) };
    });
  };
  const call = async (tool: string, args: Record<string, unknown>, session = 's1'): Promise<Outcome> =>
    (await turn([[tool, args]], session))[0];
  return { call, turn, registry };
}
