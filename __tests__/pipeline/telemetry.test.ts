/**
 * OpenTelemetry spans of tool calls, recorded by the real SDK (`@opentelemetry/sdk-trace-base`'s
 * BasicTracerProvider and InMemorySpanExporter, with the official AsyncLocalStorage context
 * manager): `execute_tool {name}` spans with the GenAI attributes under the caller's active span,
 * progress as span events, `error.type` on failures, content only when opted in, `task` as an
 * `invoke_agent` span holding its sub-agent's calls (through createAgent with real provider classes
 * against the loopback mocks); and, in child processes, a package whose `@opentelemetry/api` cannot
 * be resolved runs its calls untraced.
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach } from '@jest/globals';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { context, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { Tool, createRegistry, registerBuiltinTools } from '../../src/index.js';
import { Telemetry, errorType, MAX_SPAN_CONTENT_CHARS } from '../../src/pipeline/telemetry.js';
import { startMockProvider, type MockProvider } from '../providers/mock-server.js';
import { chatModel } from '../providers/clients.js';
import { tempDir } from '../support/helpers.js';
import { ROOT, ensureDist } from '../support/dist.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

let ws: { dir: string; cleanup: () => Promise<void> };
const mocks: MockProvider[] = [];
beforeEach(async () => {
  exporter.reset();
  ws = await tempDir('toolbelt-otel-');
});
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
  await ws.cleanup();
});

const steps = Tool.define('steps', {
  description: 'Counts to n, reporting each step.',
  parameters: z.object({ n: z.number().int().describe('How far to count') }),
  async execute(args, ctx) {
    for (let i = 1; i <= args.n; i++) ctx.metadata({ title: `step ${i}`, metadata: { step: i } });
    return { title: 'counted', metadata: {}, output: `counted to ${args.n}` };
  },
});
const boom = Tool.define('boom', {
  description: 'Always fails.',
  parameters: z.object({}),
  execute: async () => {
    throw new Error('the disk caught fire');
  },
});
const slow = Tool.define('slow', {
  description: 'Waits until stopped.',
  parameters: z.object({}),
  execute: (_args, ctx) =>
    new Promise<Tool.Result>((_resolve, reject) => ctx.abort.addEventListener('abort', () => reject(new Error('x')))),
});

const echo = Tool.define('echo', {
  description: 'Echoes text.',
  parameters: z.object({ text: z.string() }),
  execute: async (args) => ({ title: 'echo', metadata: {}, output: args.text }),
});

function registryWith(options: Parameters<typeof createRegistry>[0] = {}) {
  const registry = createRegistry(options);
  for (const info of [steps, boom, slow, echo]) registry.register(info, { permissions: { required: [] } });
  return registry;
}

const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('execute_tool spans', () => {
  it("a call is an INTERNAL span with the GenAI attributes, a child of the caller's active span, progress as events", async () => {
    const registry = registryWith();
    const tracer = trace.getTracer('test');
    const callerId = await tracer.startActiveSpan('caller', async (caller) => {
      const final = await registry.execute('steps', { n: 2 }, {}, undefined, { callID: 'call_1' });
      expect(final.success).toBe(true);
      caller.end();
      return caller.spanContext().spanId;
    });
    const [span] = named('execute_tool steps');
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(span.instrumentationScope.name).toBe('agent-toolbelt');
    expect(parentOf(span)).toBe(callerId);
    expect(span.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'steps',
      'gen_ai.tool.call.id': 'call_1',
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.description': 'Counts to n, reporting each step.',
    });
    expect(span.events.map((e) => [e.name, e.attributes?.['agent_toolbelt.progress.title']])).toEqual([
      ['gen_ai.tool.progress', 'step 1'],
      ['gen_ai.tool.progress', 'step 2'],
    ]);
    expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it('failures carry error.type and an error status: a throw, invalid arguments, a timeout, a policy refusal', async () => {
    const registry = registryWith();
    await registry.execute('boom', {});
    await registry.execute('steps', { n: 'many' });
    await registry.execute('slow', {}, {}, undefined, { timeoutMs: 20 });
    const byTool = (id: string) => named(`execute_tool ${id}`);
    expect(byTool('boom')[0].attributes['error.type']).toBe('tool_error');
    expect(byTool('boom')[0].status).toEqual({
      code: SpanStatusCode.ERROR,
      message:
        'The tool call failed (tool_error); its message is recorded only with telemetry: { captureContent: true }.',
    });
    expect(byTool('steps')[0].attributes['error.type']).toBe('invalid_arguments');
    expect(byTool('slow')[0].attributes['error.type']).toBe('timeout');
    expect(errorType('The bash call was not run: command rm is denied by rule #1.')).toBe('refused');
    expect(errorType('Tool "x" was aborted before it finished.')).toBe('aborted');
    // Arguments and results are not recorded unless asked for.
    expect(byTool('boom')[0].attributes['gen_ai.tool.call.arguments']).toBeUndefined();
    expect(byTool('boom')[0].attributes['gen_ai.tool.call.result']).toBeUndefined();
  });

  it('captureContent records the arguments and the result (clipped); enabled: false records nothing', async () => {
    await registryWith({ telemetry: { captureContent: true } }).execute('steps', { n: 1 });
    const [span] = named('execute_tool steps');
    expect(span.attributes['gen_ai.tool.call.arguments']).toBe('{"n":1}');
    expect(span.attributes['gen_ai.tool.call.result']).toBe('counted to 1');
    expect(span.events[0].attributes?.['agent_toolbelt.progress.metadata']).toBe('{"step":1}');
    // MAX_SPAN_CONTENT_CHARS: a result of exactly that length is kept whole, one more is clipped.
    const content = registryWith({ telemetry: { captureContent: true } });
    await content.execute('echo', { text: 'a'.repeat(MAX_SPAN_CONTENT_CHARS) });
    await content.execute('echo', { text: 'b'.repeat(MAX_SPAN_CONTENT_CHARS + 1) });
    const results = named('execute_tool echo').map((s) => s.attributes['gen_ai.tool.call.result'] as string);
    expect(results[0]).toBe('a'.repeat(MAX_SPAN_CONTENT_CHARS));
    expect(results[1]).toBe(`${'b'.repeat(MAX_SPAN_CONTENT_CHARS)}...`);
    exporter.reset();
    await registryWith({ telemetry: { enabled: false } }).execute('steps', { n: 1 });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("no content in a failed span unless captured: edit's closest candidate (a secret's line) stays out of the status", async () => {
    await writeFile(
      path.join(ws.dir, 'config.ini'),
      '[db]\nconnect = https://admin:pw-leak@db.test/ db_password = hunter2-secret\n',
    );
    const spanText = (s: ReadableSpan) =>
      JSON.stringify({ attributes: s.attributes, status: s.status, events: s.events.map((e) => e.attributes) });
    for (const captureContent of [false, true]) {
      exporter.reset();
      const registry = registerBuiltinTools(createRegistry({ telemetry: { captureContent } }), ['read', 'edit']);
      const initCtx = { workspaceRoot: ws.dir };
      await registry.execute('read', { filePath: 'config.ini' }, { sessionID: 's' }, initCtx);
      const final = await registry.execute(
        'edit',
        {
          filePath: 'config.ini',
          oldString: 'db_password = hunter3-secret\nurl = https://admin:pw-leak@db.test',
          newString: 'x',
        },
        { sessionID: 's' },
        initCtx,
      );
      expect(final.success).toBe(false);
      // The model's sentence quotes the file (that is its job).
      expect(final.error).toContain('hunter2-secret');
      const [span] = named('execute_tool edit');
      expect(span.attributes['error.type']).toBe('tool_error');
      if (!captureContent) {
        expect(spanText(span)).not.toContain('hunter2');
        expect(spanText(span)).not.toContain('pw-leak');
        expect(span.status.message).toMatch(/^The tool call failed \(tool_error\)/);
      } else {
        // Captured: the message, with URL credentials masked.
        expect(span.status.message).toContain('hunter2-secret');
        expect(spanText(span)).not.toContain('pw-leak');
      }
    }
  });

  it('without a registered provider no span is started (the API hands out non-recording spans)', async () => {
    const tool = await registryWith().initialized('steps');
    expect(await new Telemetry().start(tool, 'c', {})).toBeDefined();
    trace.disable();
    try {
      expect(await new Telemetry().start(tool, 'c', {})).toBeUndefined();
    } finally {
      trace.setGlobalTracerProvider(provider);
    }
  });
});

it('createAgent + task: the agent’s calls nest under the caller, task is an invoke_agent span holding the sub-agent’s calls', async () => {
  await writeFile(path.join(ws.dir, 'README.md'), '# demo\n');
  const sub = await startMockProvider([
    { calls: [{ name: 'read', args: { filePath: 'README.md' }, id: 'toolu_sub_read' }] },
    { text: 'It is a demo.' },
  ]);
  const parent = await startMockProvider([
    {
      calls: [
        {
          name: 'task',
          args: { description: 'Summarise README', prompt: 'Read README.md.', subagent_type: 'reader' },
          id: 'call_task',
        },
      ],
    },
    { text: 'Done.' },
  ]);
  mocks.push(sub, parent);
  const registry = registerBuiltinTools(createRegistry(), ['read', 'task']);
  const tools = await registry.tools({
    initCtx: {
      workingDir: ws.dir,
      subagents: { reader: { model: chatModel('anthropic', sub.url), permissions: ['read'] } },
    },
  });
  const agent = createAgent({ model: chatModel('openai-chat', parent.url), tools });
  const rootId = await trace.getTracer('app').startActiveSpan('app', async (root) => {
    await agent.invoke({ messages: [new HumanMessage('summarise')] });
    root.end();
    return root.spanContext().spanId;
  });
  const [task] = named('execute_tool task');
  const [invoke] = named('invoke_agent reader');
  const [read] = named('execute_tool read');
  expect(task.attributes['gen_ai.tool.call.id']).toBe('call_task');
  expect(parentOf(task)).toBe(rootId);
  expect(parentOf(invoke)).toBe(task.spanContext().spanId);
  expect(invoke.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'reader' });
  expect(read.attributes['gen_ai.tool.call.id']).toBe('toolu_sub_read');
  expect(parentOf(read)).toBe(invoke.spanContext().spanId);
  // The sub-agent's progress shows on the task span as events.
  expect(task.events.length).toBeGreaterThan(0);
});

describe('without @opentelemetry/api', () => {
  beforeAll(() => ensureDist(), 180_000);

  it('a process that cannot resolve @opentelemetry/api runs calls untraced, with the same results', async () => {
    const hooks = path.join(ROOT, '__tests__', 'fixtures', 'no-otel.mjs');
    const script = `
      const { createRegistry, registerBuiltinTools } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'index.js'))});
      let blocked = false;
      try { await import('@opentelemetry/api'); } catch (e) { blocked = e.code === 'ERR_MODULE_NOT_FOUND'; }
      const registry = registerBuiltinTools(createRegistry(), ['list']);
      const a = await registry.execute('list', { path: ${JSON.stringify(ROOT)} });
      const b = await registry.execute('list', { path: ${JSON.stringify(path.join(ROOT, 'src'))} });
      console.log(JSON.stringify({ blocked, ok: a.success && b.success, sawSrc: a.result.output.includes('src/') }));`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', hooks, '--input-type=module', '-e', script],
      { cwd: ROOT },
    );
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({ blocked: true, ok: true, sawSrc: true });
  }, 60_000);
});
