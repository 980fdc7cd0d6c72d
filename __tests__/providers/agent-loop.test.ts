/**
 * Provider conformance: a `createAgent` loop with every built-in, driven through each real provider
 * class (non-streamed and streamed) against the loopback mock of its API. One scripted conversation
 * per case covers: grep -> read -> edit -> answer on a real temp workspace; an invalid call coming
 * back as an error tool result with its call id while the loop goes on; parallel calls keeping ids
 * and order; `streamMode: 'custom'` progress carrying the provider's call id; and `task` running a
 * sub-agent on a different provider than its parent.
 */
import { it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools, type ToolProgressChunk } from '../../src/index.js';
import { startMockProvider, toolResults, userPrompt, type MockProvider, type RecordedRequest } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { sentTools, type Api } from './subsets.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
const mocks: MockProvider[] = [];

beforeEach(async () => {
  ws = await tempDir('toolbelt-providers-');
  await mkdir(path.join(ws.dir, 'src'));
  await writeFile(path.join(ws.dir, 'src', 'greet.ts'), 'export const greeting = "Hello, world";\n');
  await writeFile(path.join(ws.dir, 'README.md'), '# demo\n');
});
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
  await ws.cleanup();
});

/** Call ids in each API's own style, so the test can tell the provider's id from any other. */
function ids(api: Api, tag: string): string {
  if (api === 'anthropic') return `toolu_${tag}`;
  if (api === 'gemini') return `gem_${tag}`;
  return `call_${tag}`;
}

/** The sub-agent's provider: always a different API from the parent's. */
const subagentApi = (api: Api): Api => APIS[(APIS.indexOf(api) + 2) % APIS.length];

async function mock(script: Parameters<typeof startMockProvider>[0]): Promise<MockProvider> {
  const m = await startMockProvider(script);
  mocks.push(m);
  return m;
}

for (const api of APIS) {
  for (const streaming of [false, true]) {
    const mode = streaming ? 'streamed' : 'non-streamed';
    it(`${api} ${mode}: grep -> read -> edit -> answer with parallel and invalid calls, progress ids and a task on ${subagentApi(api)}`, async () => {
      const sub = subagentApi(api);
      const seen: Record<string, RecordedRequest> = {};
      const subMock = await mock([
        (req) => {
          seen.subFirst = req;
          return { calls: [{ name: 'read', args: { filePath: 'README.md' }, id: ids(sub, 'sub_read') }] };
        },
        (req) => {
          seen.subSecond = req;
          const first = /^1: (.*)$/m.exec(toolResults(req)[0].content);
          return { text: `The README says: ${first?.[1] ?? '(nothing)'}` };
        },
      ]);
      const parent = await mock([
        // 1. three calls at once: a grep, an invalid read (no filePath) and a list
        {
          calls: [
            { name: 'grep', args: { pattern: 'Hello, world' }, id: ids(api, 'grep') },
            { name: 'read', args: { offset: 'first' }, id: ids(api, 'bad') },
            { name: 'list', args: {}, id: ids(api, 'list') },
          ],
        },
        (req) => {
          seen.afterParallel = req;
          return { calls: [{ name: 'read', args: { filePath: 'src/greet.ts' }, id: ids(api, 'read') }] };
        },
        (req) => {
          seen.afterRead = req;
          return {
            calls: [
              {
                name: 'edit',
                args: { filePath: 'src/greet.ts', oldString: 'Hello, world', newString: 'Hi, world' },
                id: ids(api, 'edit'),
              },
            ],
          };
        },
        {
          calls: [
            {
              name: 'task',
              args: {
                description: 'Summarise README',
                prompt: 'Read README.md and say what it is.',
                subagent_type: 'reader',
              },
              id: ids(api, 'task'),
            },
          ],
        },
        (req) => {
          seen.afterTask = req;
          return { text: 'Changed the greeting to "Hi, world" in src/greet.ts.' };
        },
      ]);

      const registry = registerBuiltinTools(createRegistry());
      const tools = await registry.tools({
        initCtx: {
          workingDir: ws.dir,
          subagents: { reader: { model: chatModel(sub, subMock.url), permissions: ['read'] } },
        },
      });
      const agent = createAgent({ model: chatModel(api, parent.url), tools });
      const custom: ToolProgressChunk[] = [];
      let messages: unknown[] = [];
      let tokenChunks = 0;
      // Streamed: LangGraph's 'messages' mode makes each class stream its response (the API's SSE
      // format) token by token, as an app showing the answer live does.
      for await (const [kind, chunk] of await agent.stream(
        { messages: [new HumanMessage('Change the greeting to "Hi, world".')] },
        { streamMode: streaming ? ['custom', 'values', 'messages'] : ['custom', 'values'] },
      )) {
        if (kind === 'custom') custom.push(chunk as ToolProgressChunk);
        else if (kind === 'messages') tokenChunks++;
        else messages = (chunk as { messages: unknown[] }).messages;
      }
      if (streaming) expect(tokenChunks).toBeGreaterThan(5);

      // Every request was accepted by the mock (a refusal would have failed the run), in the mode asked.
      expect(parent.requests.map((r) => [r.api, r.stream, r.refused])).toEqual(
        Array.from({ length: 5 }, () => [api, streaming, undefined]),
      );
      expect(parent.remaining()).toBe(0);
      // Every registered tool but skill (offered only when Agent Skills exist; none in this workspace).
      expect(sentTools(api, parent.requests[0].body).map((t) => t.name)).toEqual(
        registry.ids().filter((id) => id !== 'skill'),
      );

      // Parallel calls: the results come back in the order asked, each with its call id
      // (Gemini carries no ids back: its function responses are matched by name and order).
      const parallel = toolResults(seen.afterParallel);
      if (api === 'gemini') expect(parallel.map((r) => r.name)).toEqual(['grep', 'read', 'list']);
      else expect(parallel.map((r) => r.callId)).toEqual([ids(api, 'grep'), ids(api, 'bad'), ids(api, 'list')]);
      expect(parallel[0].content).toMatch(/src\/greet\.ts/);
      // The invalid call is an error result the model can act on, and the loop went on.
      expect(parallel[1].content).toMatch(/Invalid arguments for tool "read":\n- filePath: .*\n- offset: /);
      // Gemini marks it as an error; @langchain/anthropic 1.5 sends no is_error flag, only the text.
      if (api === 'gemini') expect(parallel[1].isError).toBe(true);
      expect(parallel[2].content).toMatch(/greet\.ts/);

      expect(toolResults(seen.afterRead)[0].content).toMatch(/1: export const greeting = "Hello, world";/);
      expect(await readFile(path.join(ws.dir, 'src', 'greet.ts'), 'utf8')).toBe(
        'export const greeting = "Hi, world";\n',
      );

      // The task ran on the other provider with the parent's prompt, and its answer came back.
      expect(subMock.requests.map((r) => [r.api, r.refused])).toEqual([
        [sub, undefined],
        [sub, undefined],
      ]);
      expect(userPrompt(seen.subFirst)).toMatch(/Read README\.md and say what it is\./);
      expect(sentTools(sub, seen.subFirst.body).map((t) => t.name)).not.toContain('task');
      expect(toolResults(seen.afterTask)[0].content).toMatch(/The README says: # demo/);

      // Progress streamed under the provider's own call id.
      const grepProgress = custom.filter((c) => c.toolId === 'grep');
      expect(grepProgress.length).toBeGreaterThan(0);
      expect(new Set(grepProgress.map((c) => c.callID))).toEqual(new Set([ids(api, 'grep')]));
      expect(custom.filter((c) => c.toolId === 'task').map((c) => c.callID)).toContain(ids(api, 'task'));

      // Responses and streamed Anthropic answers are content blocks: `.text` joins them.
      const last = messages.at(-1) as { text: string };
      expect(last.text).toContain('Changed the greeting to "Hi, world"');
      // The edit of greet.ts started a TypeScript server (docs/lsp.md): stopped with the registry.
      await registry.dispose();
    });
  }
}

it('gemini: without fixGeminiParallelToolResults, parallel results are refused as the real API refuses them', async () => {
  const parent = await mock([
    {
      calls: [
        { name: 'list', args: {}, id: 'gem_a' },
        { name: 'list', args: { path: 'src' }, id: 'gem_b' },
      ],
    },
    { text: 'never reached' },
  ]);
  const registry = registerBuiltinTools(createRegistry(), ['list']);
  const tools = await registry.tools({ initCtx: { workingDir: ws.dir } });
  const agent = createAgent({ model: chatModel('gemini', parent.url, { unfixed: true }), tools });
  await expect(agent.invoke({ messages: [new HumanMessage('list twice')] })).rejects.toThrow(
    /number of function response parts is equal to the number of function call parts/,
  );
  // What the class sent: one content per result, which Gemini refuses.
  const contents = parent.requests[1].body.contents as Array<{ parts: unknown[] }>;
  expect(contents.slice(-2).map((c) => c.parts.length)).toEqual([1, 1]);
});
