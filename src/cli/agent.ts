/**
 * `toolbelt agent "<task>"`: a LangChain createAgent loop with the registry's tools on one task.
 * Model loading is chat-model.ts' (loaded on first use); langchain is imported only here, lazily.
 */
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { progressLine } from './progress.js';

async function agent({ registry, initCtx, grant }: Setup, values: Values, task: string): Promise<number> {
  const { loadChatModel } = await import('../chat-model.js');
  const spec = (values.model as string | undefined) ?? process.env.TOOLBELT_MODEL;
  if (!spec)
    throw new UsageError(
      'toolbelt agent needs a model: pass --model provider:model (e.g. openai:gpt-4o-mini) or set TOOLBELT_MODEL.',
    );
  const model = await loadChatModel(spec);
  const tools = await registry.tools({
    enabledPermissions: grant,
    initCtx,
    onToolResult: (u) => {
      if (u.status === 'running') process.stderr.write(`${progressLine(u)}\n`);
      else process.stderr.write(`[${u.toolId}] ${u.success ? 'done' : `failed: ${u.error}`} (${u.durationMs} ms)\n`);
    },
  });
  const { createAgent } = await import('langchain');
  const { HumanMessage, AIMessage } = await import('@langchain/core/messages');
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error('interrupted by the user'));
  process.once('SIGINT', onSignal);
  try {
    const created = createAgent({ model: model as never, tools });
    const result = await created.invoke({ messages: [new HumanMessage(task)] }, { signal: controller.signal });
    const last = result.messages[result.messages.length - 1];
    const text = AIMessage.isInstance(last) ? last.text : String(last?.content ?? '');
    process.stdout.write(`${text}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
  }
}

export const agentCommand: Command = {
  options: { model: { type: 'string' } },
  positionals: [1, 1],
  usage: 'toolbelt agent "<task>" --model provider:model',
  run: (setup, values, positionals) => agent(setup, values, positionals[0]),
};
