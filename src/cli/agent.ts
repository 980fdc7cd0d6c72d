/**
 * `toolbelt agent "<task>"`: a LangChain createAgent loop with the registry's tools on one task, and
 * `task` with a general-purpose sub-agent on the same model and tools (unless --no-task).
 * Model loading, retries and error lines are chat-model.ts'; langchain is imported only here, lazily.
 * Must not set up the registry (command.ts) or format progress lines (progress.ts).
 */
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { progressLine } from './progress.js';
import { terminalApprover, useApprover } from './approver.js';
import {
  DEFAULT_MAX_RETRIES,
  MAX_RETRIES_LIMIT,
  ModelCallError,
  describeModelError,
  loadChatModel,
} from '../providers/chat-model.js';
import { MIN_DESCRIPTION_CHARS } from '../registry/description-fit.js';
import { registerBuiltinTools, useEdits } from '../tools/index.js';
import { parseEditsMode } from '../tools/patch/models.js';
import type { Tool } from '../authoring/tool.js';

/** The sub-agent `toolbelt agent` offers through `task`. */
export const GENERAL_PURPOSE_AGENT = 'general-purpose';

/**
 * Registers `task` with one sub-agent, `general-purpose`, on the same model with the same grant
 * (so the same tools, less task itself), and returns the init context that configures it; undefined
 * with --no-task, --no-builtins, a grant without execute, or a task a --tools module registered.
 */
function offerTask({ registry, initCtx, grant }: Setup, values: Values, model: unknown): Tool.InitContext | undefined {
  if (values['no-task'] || values['no-builtins'] || !grant.includes('execute') || registry.has('task'))
    return undefined;
  registerBuiltinTools(registry, ['task']);
  return {
    ...initCtx,
    subagents: {
      [GENERAL_PURPOSE_AGENT]: {
        model: model as object,
        permissions: grant,
        description:
          'A general-purpose agent with the same model and tools as you: give it a self-contained task (research, a multi-step change) and it returns its final answer.',
      },
    },
  };
}

async function agent(setup: Setup, values: Values, task: string): Promise<number> {
  const { registry, initCtx, grant } = setup;
  const spec = (values.model as string | undefined) ?? process.env.TOOLBELT_MODEL;
  if (!spec)
    throw new UsageError(
      'toolbelt agent needs a model: pass --model provider:model (e.g. openai:gpt-4o-mini) or set TOOLBELT_MODEL.',
    );
  const maxRetries = parseMaxRetries(values['max-retries']);
  const model = await loadChatModel(spec, { maxRetries });
  const maxDescriptionChars = parseMaxDescriptionChars(values['max-description-chars']);
  const withTask = offerTask(setup, values, model) ?? initCtx;
  // The skill tool is offered when skills are found (command.ts searches the standard places).
  const agentInit = values['no-skills'] ? { ...withTask, skills: false as const } : withTask;
  if (values.edits !== undefined && !values['no-builtins']) useEdits(registry, parseEdits(values.edits));
  const tools = await registry.tools({
    model: spec,
    enabledPermissions: grant,
    initCtx: agentInit,
    ...(maxDescriptionChars === undefined ? {} : { maxDescriptionChars }),
    onToolResult: (u) => {
      if (u.status === 'running') process.stderr.write(`${progressLine(u)}\n`);
      else process.stderr.write(`[${u.toolId}] ${u.success ? 'done' : `failed: ${u.error}`} (${u.durationMs} ms)\n`);
    },
  });
  const { createAgent } = await import('langchain');
  const { HumanMessage } = await import('@langchain/core/messages');
  const controller = new AbortController();
  // The policy's asks go to the human at the terminal, or --yes, or are refused with a sentence.
  useApprover(
    registry.policy,
    terminalApprover({ yes: values.yes === true, command: 'agent', signal: controller.signal }).onPermissionRequest,
  );
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

function parseMaxDescriptionChars(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value.trim()) || Number(value) < MIN_DESCRIPTION_CHARS)
    throw new UsageError(
      `--max-description-chars must be a whole number of at least ${MIN_DESCRIPTION_CHARS} (1024 for Azure OpenAI), got ${JSON.stringify(value)}.`,
    );
  return Number(value);
}

function parseEdits(value: unknown) {
  try {
    return parseEditsMode(value);
  } catch (err) {
    throw new UsageError(`--${(err as Error).message}`);
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
  options: {
    model: { type: 'string' },
    'max-retries': { type: 'string' },
    'max-description-chars': { type: 'string' },
    'no-task': { type: 'boolean' },
    'no-skills': { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
    edits: { type: 'string' },
  },
  positionals: [1, 1],
  usage:
    'toolbelt agent "<task>" --model provider:model [--max-retries N] [--max-description-chars N] [--no-task] [--no-skills] [--edits auto|patch|replace|both] [--yes] [--permissions LIST] [--workspace DIR]',
  run: (setup, values, positionals) => agent(setup, values, positionals[0]),
};
