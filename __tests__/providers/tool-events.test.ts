/**
 * Native tool events: every `ctx.metadata` update of a toolbelt tool reaches LangChain core's
 * `handleToolEvent`, so LangGraph's `streamMode: 'tools'` streams one `on_tool_event` per update under
 * the provider's tool call id, between `on_tool_start` and `on_tool_end`; the custom stream and
 * `onToolResult` see the same updates. Driven by `createAgent` with real provider classes against the
 * loopback mocks.
 */
import { it, expect, afterEach } from '@jest/globals';
import { z } from 'zod';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { Tool, createRegistry, type ToolProgressChunk, type ToolUpdate } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider } from './mock-server.js';
import { chatModel } from './clients.js';
import type { Api } from './subsets.js';

const mocks: MockProvider[] = [];
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
});

const steps = Tool.define('steps', {
  description: 'Counts to n, reporting each step.',
  parameters: z.object({ n: z.number().int().describe('How far to count') }),
  async execute(args, ctx) {
    for (let i = 1; i <= args.n; i++) ctx.metadata({ title: `step ${i}`, metadata: { step: i } });
    return { title: 'counted', metadata: { n: args.n }, output: `counted to ${args.n}` };
  },
});

interface ToolsChunk {
  event: string;
  toolCallId?: string;
  name: string;
  data?: unknown;
}

for (const api of ['openai-chat', 'anthropic'] as Api[]) {
  it(`${api}: each progress update is an on_tool_event with the provider's call id, and custom + onToolResult still see it`, async () => {
    const callId = api === 'anthropic' ? 'toolu_count3' : 'call_count3';
    const mock = await startMockProvider([
      { calls: [{ name: 'steps', args: { n: 3 }, id: callId }] },
      (req) => ({ text: `Done: ${toolResults(req)[0].content}` }),
    ]);
    mocks.push(mock);
    const registry = createRegistry();
    registry.register(steps, { permissions: { required: [] } });
    const updates: ToolUpdate[] = [];
    const tools = await registry.tools({ onToolResult: (u) => updates.push(u) });
    const agent = createAgent({ model: chatModel(api, mock.url), tools });

    const toolEvents: ToolsChunk[] = [];
    const custom: ToolProgressChunk[] = [];
    let messages: Array<{ text: string }> = [];
    for await (const [mode, chunk] of await agent.stream(
      { messages: [new HumanMessage('count to 3')] },
      { streamMode: ['tools', 'custom', 'values'] },
    )) {
      if (mode === 'tools') toolEvents.push(chunk);
      else if (mode === 'custom') custom.push(chunk as ToolProgressChunk);
      else messages = (chunk as { messages: Array<{ text: string }> }).messages;
    }

    expect(toolEvents.map((e) => [e.event, e.toolCallId, e.name])).toEqual([
      ['on_tool_start', callId, 'steps'],
      ['on_tool_event', callId, 'steps'],
      ['on_tool_event', callId, 'steps'],
      ['on_tool_event', callId, 'steps'],
      ['on_tool_end', callId, 'steps'],
    ]);
    const data = toolEvents.filter((e) => e.event === 'on_tool_event').map((e) => e.data as ToolProgressChunk);
    expect(data.map((d) => [d.type, d.toolId, d.callID, d.title, d.metadata])).toEqual([
      ['tool_progress', 'steps', callId, 'step 1', { step: 1 }],
      ['tool_progress', 'steps', callId, 'step 2', { step: 2 }],
      ['tool_progress', 'steps', callId, 'step 3', { step: 3 }],
    ]);
    // The custom stream carries the same chunks, and onToolResult every update plus the final one.
    expect(custom).toEqual(data);
    expect(updates.map((u) => [u.status, u.callID, u.result.title])).toEqual([
      ['running', callId, 'step 1'],
      ['running', callId, 'step 2'],
      ['running', callId, 'step 3'],
      ['completed', callId, 'counted'],
    ]);
    expect(messages.at(-1)!.text).toBe('Done: counted to 3');
  });
}
