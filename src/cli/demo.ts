/**
 * `npm run demo`: a real `createAgent` loop with the built-in tools on a temporary workspace,
 * printing each tool call, its streamed progress and its result as they happen. Offline by default
 * (a scripted `fakeModel()`); with `TOOLBELT_MODEL=provider:model` (and the provider's key) in the
 * environment or in `.env`, the same task runs against that model.
 * Must not be imported by the package: it is a script (npm run demo), not API.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRegistry } from '../registry/registry.js';
import { registerBuiltinTools } from '../tools/index.js';
import type { ToolUpdate } from '../pipeline/types.js';
import { isEntryPoint } from './main-module.js';

/** The built-in tools the demo's task uses. */
export const DEMO_TOOLS = ['grep', 'read', 'edit'] as const;
/** Lines of each tool result the demo prints (the rest is summarised). */
const DEMO_PREVIEW_LINES = 8;

const TASK =
  'In this project the greeting says "Hello, world". Find where it is defined, read that file, ' +
  'change the greeting to "Hi, world" with the edit tool, then read the file again to check it, and say what you changed.';

const SYSTEM_PROMPT =
  'You are a careful coding agent working in a small project. Use the tools: search with grep, read a file before editing it, ' +
  'edit with exact strings from what you read. Paths are relative to the workspace root. Be brief.';

/** Options of `runDemo`. */
export interface DemoOptions {
  /** A LangChain chat model; default: the scripted offline model, or `TOOLBELT_MODEL` when set and `offline` is not. */
  model?: unknown;
  /** Ignore `TOOLBELT_MODEL` and use the scripted model. */
  offline?: boolean;
  /** Where lines are printed (default stdout). */
  print?: (line: string) => void;
  /** Keep the temporary workspace (its path is printed). */
  keep?: boolean;
}

/** What the demo did. */
export interface DemoResult {
  workspace: string;
  mode: 'offline' | 'model';
  toolCalls: string[];
  finalAnswer: string;
  updates: ToolUpdate[];
}

/** Runs the demo; throws with a clear message when a needed built-in is missing or the task was not done. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const registry = registerBuiltinTools(createRegistry());
  const missing = DEMO_TOOLS.filter((id) => !registry.has(id));
  if (missing.length) {
    throw new Error(
      `The demo needs the built-in tools ${DEMO_TOOLS.join(', ')}, but ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not registered ` +
        `(registerBuiltinTools() provided: ${registry.ids().join(', ') || 'none'}). Wire ${missing.join(', ')} into builtinTools in src/tools/index.ts.`,
    );
  }

  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), 'toolbelt-demo-')));
  try {
    await mkdir(path.join(workspace, 'src'));
    await writeFile(
      path.join(workspace, 'src', 'greet.ts'),
      "export const greeting = 'Hello, world';\n\nexport function greet(name: string): string {\n  return `${greeting}, ${name}!`;\n}\n",
    );
    await writeFile(
      path.join(workspace, 'src', 'main.ts'),
      "import { greet } from './greet.js';\n\nconsole.log(greet('demo'));\n",
    );
    await writeFile(path.join(workspace, 'README.md'), '# demo project\n\nPrints a greeting.\n');

    let mode: DemoResult['mode'] = 'offline';
    let model = options.model;
    const spec = process.env.TOOLBELT_MODEL;
    if (!model && !options.offline && spec) {
      const { loadChatModel } = await import('../providers/chat-model.js');
      model = await loadChatModel(spec);
      mode = 'model';
    }
    if (!model) model = await scriptedDemoModel();

    print(
      `agent-toolbelt demo (${mode === 'model' ? `model ${spec}` : 'offline, scripted fakeModel; set TOOLBELT_MODEL in .env to use a real model'})`,
    );
    print(`workspace: ${workspace}`);
    print(`task: ${TASK}`);
    print('');

    const updates: ToolUpdate[] = [];
    const tools = await registry.tools({
      ids: [...DEMO_TOOLS],
      initCtx: { workspaceRoot: workspace, workingDir: workspace },
      onToolResult: (u) => {
        updates.push(u);
        if (u.status === 'running') {
          print(
            `    ... ${u.toolId}: ${u.result.title || 'running'}${Object.keys(u.result.metadata).length ? ` ${brief(u.result.metadata)}` : ''}`,
          );
          return;
        }
        print(`    ${u.success ? 'ok' : 'FAILED'} ${u.toolId}: ${u.result.title} (${u.durationMs} ms)`);
        const text = u.success ? u.result.output : (u.error ?? u.result.output);
        const lines = text.split('\n');
        for (const line of lines.slice(0, DEMO_PREVIEW_LINES)) print(`      | ${line}`);
        if (lines.length > DEMO_PREVIEW_LINES) print(`      | ... (${lines.length - DEMO_PREVIEW_LINES} more lines)`);
      },
    });

    const { createAgent } = await import('langchain');
    const { HumanMessage, AIMessage } = await import('@langchain/core/messages');
    const agent = createAgent({ model: model as never, tools, systemPrompt: SYSTEM_PROMPT });
    const toolCalls: string[] = [];
    let finalAnswer = '';
    const stream = await agent.stream(
      { messages: [new HumanMessage(TASK)] },
      { streamMode: 'updates', recursionLimit: 40 },
    );
    for await (const chunk of stream) {
      for (const update of Object.values(chunk as Record<string, { messages?: unknown[] } | undefined>)) {
        for (const m of update?.messages ?? []) {
          if (!AIMessage.isInstance(m)) continue;
          for (const call of m.tool_calls ?? []) {
            toolCalls.push(call.name);
            print(`  -> model calls ${call.name} ${brief(call.args)}`);
          }
          if (!m.tool_calls?.length && m.text) {
            finalAnswer = m.text;
            print('');
            print(`model: ${m.text}`);
          }
        }
      }
    }

    const after = await readFile(path.join(workspace, 'src', 'greet.ts'), 'utf8');
    if (!after.includes("'Hi, world'")) {
      throw new Error(`The demo task was not done: src/greet.ts still reads ${JSON.stringify(after.split('\n')[0])}.`);
    }
    print('');
    print(
      `done: src/greet.ts now starts with ${JSON.stringify(after.split('\n')[0])}; ${toolCalls.length} tool calls.`,
    );
    if (options.keep) print(`(workspace kept at ${workspace})`);
    return { workspace, mode, toolCalls, finalAnswer, updates };
  } finally {
    // The edit of greet.ts started a TypeScript server (docs/lsp.md): it ends with the registry.
    await registry.dispose();
    if (!options.keep) await rm(workspace, { recursive: true, force: true });
  }
}

/** One turn of the offline model: tool calls (with their ids) or the final answer. */
export type DemoTurn =
  { calls: Array<{ name: string; args: Record<string, unknown>; id: string }> } | { text: string; calls?: undefined };

/**
 * The offline model's script: the tool calls a good model would make for the task, then an answer.
 * The provider conformance suite plays the same turns from mock APIs through the real classes.
 */
export const DEMO_SCRIPT: readonly DemoTurn[] = [
  { calls: [{ name: 'grep', args: { pattern: 'Hello, world', path: '.' }, id: 'call_grep' }] },
  { calls: [{ name: 'read', args: { filePath: 'src/greet.ts' }, id: 'call_read' }] },
  {
    calls: [
      {
        name: 'edit',
        args: { filePath: 'src/greet.ts', oldString: "'Hello, world'", newString: "'Hi, world'" },
        id: 'call_edit',
      },
    ],
  },
  { calls: [{ name: 'read', args: { filePath: 'src/greet.ts', limit: 1 }, id: 'call_check' }] },
  { text: 'Changed the greeting in src/greet.ts from "Hello, world" to "Hi, world" and checked the file.' },
];

/** The offline model: a `fakeModel()` playing DEMO_SCRIPT. */
export async function scriptedDemoModel() {
  const { fakeModel } = await import('@langchain/core/testing');
  const { AIMessage } = await import('@langchain/core/messages');
  let model = fakeModel();
  for (const turn of DEMO_SCRIPT) {
    model = turn.calls ? model.respondWithTools(turn.calls) : model.respond(new AIMessage(turn.text));
  }
  return model;
}

function brief(value: unknown, max = 160): string {
  let s: string;
  try {
    s = JSON.stringify(value);
  } catch {
    s = String(value);
  }
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

if (await isEntryPoint(import.meta.url)) {
  const argv = process.argv.slice(2);
  // Node >= 20.12 reads .env itself; an existing file is how the demo learns TOOLBELT_MODEL and the key.
  if (existsSync('.env') && typeof process.loadEnvFile === 'function') process.loadEnvFile('.env');
  runDemo({ offline: argv.includes('--offline'), keep: argv.includes('--keep') }).then(
    () => process.exit(0),
    (err: Error) => {
      process.stderr.write(`demo failed: ${err.message}\n`);
      process.exit(1);
    },
  );
}
