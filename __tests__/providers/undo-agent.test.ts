/**
 * Undo as a model sees it, through real provider classes against the loopback mocks of their APIs:
 * a `createAgent({ store })` loop whose files live on a deepagents StoreBackend changes files; a
 * second agent (a new registry: another process) on the same run store, namespace and backend
 * undoes one change and is refused, in the local sentence, for a file changed since.
 */
import { it, expect, afterEach } from '@jest/globals';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { InMemoryStore } from '@langchain/langgraph';
import { StoreBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider, type ScriptStep } from './mock-server.js';
import { chatModel } from './clients.js';

const mocks: MockProvider[] = [];
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
});

async function runAgent(
  api: 'openai-chat' | 'anthropic',
  store: InMemoryStore,
  backend: StoreBackend,
  script: ScriptStep[],
) {
  const mock = await startMockProvider(script);
  mocks.push(mock);
  // No store given to the registry: the tools save undo records in the run's store.
  const registry = createRegistry({ namespace: ['team'] });
  registerBuiltinTools(registry, ['write', 'edit', 'read', 'undo_file', 'undo_turn']);
  const tools = await registry.tools({ initCtx: { backend }, createContext: () => ({ sessionID: 'chat-1' }) });
  const agent = createAgent({ model: chatModel(api, mock.url), tools, store });
  await agent.invoke({ messages: [new HumanMessage('go')] });
}

for (const api of ['openai-chat', 'anthropic'] as const) {
  it(`${api}: a second agent on the same store and backend undoes an edit, and is refused for a file changed since`, async () => {
    const store = new InMemoryStore();
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['files'] });
    await runAgent(api, store, backend, [
      {
        calls: [
          { name: 'write', args: { filePath: 'notes.md', content: 'draft' } },
          { name: 'write', args: { filePath: 'other.md', content: 'x' } },
        ],
      },
      { calls: [{ name: 'edit', args: { filePath: 'notes.md', oldString: 'draft', newString: 'final' } }] },
      { text: 'edited' },
    ]);
    expect(await store.search(['toolbelt', 'team', '~undo'])).toHaveLength(3);
    // Someone else changes other.md since.
    await backend.edit('/other.md', 'x', 'y');
    let seen: string[] = [];
    await runAgent(api, store, backend, [
      {
        calls: [
          { name: 'undo_file', args: { path: 'notes.md' } },
          { name: 'undo_file', args: { path: 'other.md' } },
        ],
      },
      (req) => {
        seen = toolResults(req).map((r) => r.content);
        return { text: 'done' };
      },
    ]);
    expect(seen[0]).toMatch(/^Undid the edit of notes\.md \(call [^)]+\): restored notes\.md \(5 bytes\)\.$/);
    expect(seen[1]).toMatch(
      /other\.md changed since the write of other\.md \(call [^)]+\): it now holds 1 bytes, not what that change left\. Nothing was undone; read the file and make the change you want with edit or write instead\./,
    );
    expect((await backend.readRaw('/notes.md')).data?.content).toBe('draft');
    expect((await backend.readRaw('/other.md')).data?.content).toBe('y');
  });
}
