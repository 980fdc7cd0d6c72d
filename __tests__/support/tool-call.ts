/** Calls a LangChain tool the way an agent does (a ToolCall in, a ToolMessage out). */
import type { StructuredToolInterface } from '@langchain/core/tools';
import type { ToolMessage } from '@langchain/core/messages';
import type { Tool } from '../../src/authoring/tool.js';

let seq = 0;

/** The ToolMessage an agent gets for calling `name` with `args` among `tools`. */
export async function callTool(
  tools: StructuredToolInterface[],
  name: string,
  args: Record<string, unknown>,
  id = `call_${++seq}`,
): Promise<ToolMessage & { result: Tool.Result }> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`test setup: no tool ${name} among ${tools.map((t) => t.name).join(', ')}`);
  const msg = (await tool.invoke({ type: 'tool_call', id, name, args })) as ToolMessage;
  return Object.assign(msg, { result: msg.artifact as Tool.Result });
}
