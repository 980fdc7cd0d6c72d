import { describe, it, expect } from '@jest/globals';
import { z } from 'zod';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { Tool, createRegistry, type ToolUpdate } from '../../src/index.js';

function makeRegistry() {
  const registry = createRegistry();
  registry.register(
    Tool.define('echo', {
      description: 'Echo text back',
      parameters: z.object({ text: z.string().describe('Text to echo') }),
      async execute(args, ctx) {
        ctx.metadata({ title: 'echoing', metadata: { step: 1 } });
        ctx.metadata({ metadata: { step: 2 } });
        return { title: 'echoed', metadata: { length: args.text.length }, output: args.text };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  registry.register(
    Tool.define('count', {
      description: 'Count to n',
      parameters: z.object({ n: z.number().int().max(10).describe('How far to count') }),
      async execute(args) {
        return { title: 'counted', metadata: {}, output: Array.from({ length: args.n }, (_, i) => i + 1).join(',') };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  return registry;
}

describe('createAgent loop driven by fakeModel', () => {
  it('runs a valid and an invalid call, reports both, streams progress, and the loop goes on', async () => {
    const registry = makeRegistry();
    const updates: ToolUpdate[] = [];
    const tools = await registry.tools({ enabledPermissions: ['read'], onToolResult: (u) => updates.push(u) });
    const model = fakeModel()
      .respondWithTools([
        { name: 'echo', args: { text: 'hello' }, id: 'call_echo' },
        { name: 'count', args: { n: 'many' }, id: 'call_bad' },
      ])
      .respond(new AIMessage('done'));
    const agent = createAgent({ model, tools });

    const custom: unknown[] = [];
    let finalMessages: unknown[] = [];
    for await (const [mode, chunk] of await agent.stream(
      { messages: [new HumanMessage('go')] },
      { streamMode: ['custom', 'values'] },
    )) {
      if (mode === 'custom') custom.push(chunk);
      if (mode === 'values') finalMessages = (chunk as { messages: unknown[] }).messages;
    }

    const toolMessages = finalMessages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    const echo = toolMessages.find((m) => m.tool_call_id === 'call_echo')!;
    const bad = toolMessages.find((m) => m.tool_call_id === 'call_bad')!;
    expect(echo.content).toBe('hello');
    expect(echo.status).toBe('success');
    expect(echo.artifact).toMatchObject({ title: 'echoed', metadata: { length: 5 }, output: 'hello' });
    expect(bad.status).toBe('error');
    expect(bad.text).toMatch(/Invalid arguments for tool "count"/);
    expect(bad.text).toMatch(/- n: .*expected number/i);
    expect(bad.text).toMatch(/Rewrite the input/);
    const last = finalMessages[finalMessages.length - 1] as AIMessage;
    expect(last.content).toBe('done');

    const echoUpdates = updates.filter((u) => u.callID === 'call_echo');
    expect(echoUpdates.map((u) => u.status)).toEqual(['running', 'running', 'completed']);
    expect(echoUpdates[0].result).toMatchObject({ title: 'echoing', metadata: { step: 1 } });
    expect(echoUpdates[1].result).toMatchObject({ title: 'echoing', metadata: { step: 2 } });
    expect(echoUpdates[2]).toMatchObject({ toolId: 'echo', success: true, result: { output: 'hello' } });
    expect(typeof echoUpdates[2].durationMs).toBe('number');
    const badUpdates = updates.filter((u) => u.callID === 'call_bad');
    expect(badUpdates).toHaveLength(1);
    expect(badUpdates[0]).toMatchObject({ status: 'error', success: false, toolId: 'count' });
    expect(badUpdates[0].error).toMatch(/Invalid arguments/);

    expect(custom).toEqual([
      expect.objectContaining({
        type: 'tool_progress',
        toolId: 'echo',
        callID: 'call_echo',
        title: 'echoing',
        metadata: { step: 1 },
      }),
      expect.objectContaining({ type: 'tool_progress', toolId: 'echo', callID: 'call_echo', metadata: { step: 2 } }),
    ]);
  });

  it('a tool that throws gives the model an error ToolMessage and the loop continues', async () => {
    const registry = createRegistry();
    registry.register(
      Tool.define('boom', {
        description: 'Always fails',
        parameters: z.object({}),
        async execute() {
          throw new Error('disk on fire: /tmp/x. Try another disk.');
        },
      }),
      { permissions: { required: [] } },
    );
    const tools = await registry.tools();
    const model = fakeModel()
      .respondWithTools([{ name: 'boom', args: {}, id: 'c1' }])
      .respond(new AIMessage('recovered'));
    const agent = createAgent({ model, tools });
    const out = await agent.invoke({ messages: [new HumanMessage('go')] });
    const tm = out.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(tm.status).toBe('error');
    expect(tm.content).toBe('disk on fire: /tmp/x. Try another disk.');
    expect(out.messages[out.messages.length - 1].content).toBe('recovered');
    expect(registry.stats('boom')).toMatchObject({ calls: 1, failures: 1 });
  });

  it('the model is shown the tool schema as JSON Schema', async () => {
    const registry = makeRegistry();
    const [count] = await registry.tools({ ids: ['count'] });
    const spec = convertToOpenAITool(count) as {
      function: {
        name: string;
        parameters: { properties: Record<string, { description?: string }>; required?: string[] };
      };
    };
    expect(spec.function.name).toBe('count');
    expect(spec.function.parameters.properties.n.description).toBe('How far to count');
    expect(spec.function.parameters.required).toEqual(['n']);
  });

  it('progress is dispatched as the tool_progress custom event for streamEvents v2', async () => {
    const registry = makeRegistry();
    const tools = await registry.tools({ ids: ['echo'] });
    const model = fakeModel()
      .respondWithTools([{ name: 'echo', args: { text: 'hi' }, id: 'ev1' }])
      .respond(new AIMessage('done'));
    const agent = createAgent({ model, tools });
    const custom: unknown[] = [];
    for await (const ev of agent.streamEvents({ messages: [new HumanMessage('go')] }, { version: 'v2' })) {
      if (ev.event === 'on_custom_event' && ev.name === 'tool_progress') custom.push(ev.data);
    }
    expect(custom).toEqual([
      expect.objectContaining({ toolId: 'echo', callID: 'ev1', title: 'echoing', metadata: { step: 1 } }),
      expect.objectContaining({ toolId: 'echo', callID: 'ev1', metadata: { step: 2 } }),
    ]);
  });
});
