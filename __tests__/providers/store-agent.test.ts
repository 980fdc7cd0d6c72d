/**
 * The run's store: a `createAgent({ store })` loop, driven through real provider classes against the
 * loopback mocks of their APIs, whose tools keep todo lists and memory notes in that store by
 * themselves (the registry was given no store); another agent with the same store and namespace
 * reads them back; a malformed record reaches the model as a sentence naming its key.
 */
import { it, expect, afterEach } from '@jest/globals';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { InMemoryStore } from '@langchain/langgraph';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider, type ScriptStep } from './mock-server.js';
import { chatModel } from './clients.js';
import { tempDir } from '../support/helpers.js';

const mocks: MockProvider[] = [];
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
});

async function runAgent(
  api: 'openai-chat' | 'anthropic',
  store: InMemoryStore,
  script: ScriptStep[],
  sessionID: string,
  strict = false,
) {
  const mock = await startMockProvider(script);
  mocks.push(mock);
  const ws = await tempDir('toolbelt-store-agent-');
  try {
    // No store here: the tools take the graph's store from the run's config.
    const registry = createRegistry({ namespace: (ctx) => ['users', String(ctx.configurable?.user_id)] });
    registerBuiltinTools(registry, ['todowrite', 'todoread', 'memory_append', 'memory_read']);
    const tools = await registry.tools({
      initCtx: { workspaceRoot: ws.dir },
      createContext: () => ({ sessionID }),
      strict,
    });
    const agent = createAgent({ model: chatModel(api, mock.url, { strict }), tools, store });
    await agent.invoke({ messages: [new HumanMessage('go')] }, { configurable: { user_id: 'u-42' } });
    return mock;
  } finally {
    await ws.cleanup();
  }
}

it('openai-chat strict mode: a merge whose left-out fields come as null (as strict mode makes the model send them) lands', async () => {
  const store = new InMemoryStore();
  let seen: string[] = [];
  const mock = await runAgent(
    'openai-chat',
    store,
    [
      {
        calls: [
          {
            name: 'todowrite',
            args: { todos: [{ id: '1', content: 'Draft', status: 'in_progress', priority: null }], merge: null },
          },
        ],
      },
      {
        calls: [
          {
            name: 'todowrite',
            args: { todos: [{ id: '1', content: null, status: 'completed', priority: null }], merge: true },
          },
        ],
      },
      (req) => {
        seen = toolResults(req).map((r) => r.content);
        return { text: 'done' };
      },
    ],
    'chat-strict',
    true,
  );
  const sent = (
    mock.requests[0].body as { tools: Array<{ function: { name: string; strict?: boolean; parameters: unknown } }> }
  ).tools.find((t) => t.function.name === 'todowrite')?.function;
  expect(sent).toMatchObject({
    strict: true,
    parameters: { required: ['todos', 'merge'], properties: { merge: { type: ['boolean', 'null'] } } },
  });
  expect(seen.at(-1)!.split('\n')).toEqual([
    '0 open todos (0 in progress, 0 pending), 1 completed, 0 cancelled',
    '[x] Draft (id 1, medium)',
  ]);
});

for (const api of ['openai-chat', 'anthropic'] as const) {
  it(`${api}: tools keep state in createAgent's store and a second agent on that store reads it`, async () => {
    const store = new InMemoryStore();
    await runAgent(
      api,
      store,
      [
        {
          calls: [
            { name: 'todowrite', args: { todos: [{ id: '1', content: 'Write the report', status: 'in_progress' }] } },
            { name: 'memory_append', args: { path: 'prefs.md', entry: '- likes short answers' } },
          ],
        },
        { text: 'saved' },
      ],
      'chat-1',
    );
    const record = await store.get(['toolbelt', 'users', 'u-42', '~todo'], 'chat-1');
    expect(record?.value).toEqual({
      v: 1,
      todos: [{ id: '1', content: 'Write the report', status: 'in_progress', priority: 'medium' }],
      rev: expect.any(String),
    });
    let seen: string[] = [];
    await runAgent(
      api,
      store,
      [
        {
          calls: [
            { name: 'todoread', args: {} },
            { name: 'memory_read', args: { path: 'prefs.md' } },
          ],
        },
        (req) => {
          seen = toolResults(req).map((r) => r.content);
          return { text: 'done' };
        },
      ],
      'chat-1',
    );
    expect(seen[0]).toContain('[~] Write the report (id 1, medium, in progress)');
    expect(seen[1]).toBe('- likes short answers\n');
  });

  it(`${api}: todowrite with merge updates one item by id and appends another, the rest kept`, async () => {
    const store = new InMemoryStore();
    let seen: string[] = [];
    await runAgent(
      api,
      store,
      [
        {
          calls: [
            {
              name: 'todowrite',
              args: {
                todos: [
                  { id: '1', content: 'Draft', status: 'in_progress' },
                  { id: '2', content: 'Review', status: 'pending', priority: 'high' },
                ],
              },
            },
          ],
        },
        {
          calls: [
            {
              name: 'todowrite',
              args: {
                todos: [
                  { id: '1', status: 'completed' },
                  { id: '3', content: 'Ship', status: 'pending' },
                ],
                merge: true,
              },
            },
          ],
        },
        (req) => {
          seen = toolResults(req).map((r) => r.content);
          return { text: 'done' };
        },
      ],
      'chat-m',
    );
    expect(seen.at(-1)!.split('\n')).toEqual([
      '2 open todos (0 in progress, 2 pending), 1 completed, 0 cancelled',
      '[x] Draft (id 1, medium)',
      '[ ] Review (id 2, high)',
      '[ ] Ship (id 3, medium)',
    ]);
  });

  it(`${api}: a malformed record reaches the model as a sentence naming its key`, async () => {
    const store = new InMemoryStore();
    await store.put(['toolbelt', 'users', 'u-42', '~todo'], 'chat-9', { todos: 'edited by hand' });
    let seen: { content: string }[] = [];
    await runAgent(
      api,
      store,
      [
        { calls: [{ name: 'todoread', args: {} }] },
        (req) => {
          seen = toolResults(req);
          return { text: 'done' };
        },
      ],
      'chat-9',
    );
    expect(seen[0].content).toMatch(
      /The todo record "chat-9" in the state store .* is not in the shape this version writes/,
    );
  });
}
