/**
 * `toolbelt agent "<task>"`: a LangChain createAgent loop with the registry's tools on one task.
 * Model loading, retries and error lines are chat-model.ts'; langchain is imported only here, lazily.
 * Must not set up the registry (command.ts) or format progress lines (progress.ts).
 */
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { progressLine } from './progress.js';
import {
  DEFAULT_MAX_RETRIES,
  MAX_RETRIES_LIMIT,
  ModelCallError,
  describeModelError,
  loadChatModel,
} from '../chat-model.js';

async function agent({ registry, initCtx, grant }: Setup, values: Values, task: string): Promise<number> {
  const spec = (values.model as string | undefined) ?? process.env.TOOLBELT_MODEL;
  if (!spec)
    throw new UsageError(
      'toolbelt agent needs a model: pass --model provider:model (e.g. openai:gpt-4o-mini) or set TOOLBELT_MODEL.',
    );
  const maxRetries = parseMaxRetries(values['max-retries']);
  const model = await loadChatModel(spec, { maxRetries });
  const tools = await registry.tools({
    enabledPermissions: grant,
    initCtx,
    onToolResult: (u) => {
      if (u.status === 'running') process.stderr.write(`${progressLine(u)}\n`);
      else process.stderr.write(`[${u.toolId}] ${u.success ? 'done' : `failed: ${u.error}`} (${u.durationMs} ms)\n`);
    },
  });
  const { createAgent } = await import('langchain');
  const { HumanMessage } = await import('@langchain/core/messages');
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error('interrupted by the user'));
  process.once('SIGINT', onSignal);
  try {
    const created = createAgent({ model: model as never, tools });
    let result;
    try {
      result = await created.invoke({ messages: [new HumanMessage(task)] }, { signal: controller.signal });
    } catch (err) {
      if (controller.signal.aborted) throw err;
      // One line naming the host and what to check (main prints it without a stack, exit 1).
      throw new ModelCallError(describeModelError(err, spec, { maxRetries }));
    }
    const last = result.messages[result.messages.length - 1];
    const text = last?.text ?? '';
    process.stdout.write(`${text}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
  }
}

function parseMaxRetries(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_RETRIES;
  if (typeof value !== 'string' || !/^\d+$/.test(value.trim()) || Number(value) > MAX_RETRIES_LIMIT)
    throw new UsageError(
      `--max-retries must be a whole number from 0 to ${MAX_RETRIES_LIMIT}, got ${JSON.stringify(value)}.`,
    );
  return Number(value);
}

export const agentCommand: Command = {
  options: { model: { type: 'string' }, 'max-retries': { type: 'string' } },
  positionals: [1, 1],
  usage: 'toolbelt agent "<task>" --model provider:model [--max-retries N] [--permissions LIST] [--workspace DIR]',
  run: (setup, values, positionals) => agent(setup, values, positionals[0]),
};
