/**
 * What a model sees over a backend, through each real provider class against the loopback mock of
 * its API: over a backend without execute, the tool list the model receives has no bash, bash_output
 * or bash_kill (registry.tools() leaves out what cannot run there) and has undo (it can); over deepagents'
 * LocalShellBackend, a model starts a background job, reads that it is running, and stops it.
 */
import { it, expect, beforeEach, afterEach } from '@jest/globals';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { InMemoryStore } from '@langchain/langgraph';
import { LocalShellBackend, StoreBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider, type RecordedRequest } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { sentTools, type Api } from './subsets.js';
import { tempDir } from '../support/helpers.js';

let root: { dir: string; cleanup: () => Promise<void> };
let tmp: { dir: string; cleanup: () => Promise<void> };
const mocks: MockProvider[] = [];
let registry: ReturnType<typeof createRegistry>;

beforeEach(async () => {
  root = await tempDir('toolbelt-backend-tools-');
  tmp = await tempDir('toolbelt-backend-tools-tmp-');
  registry = registerBuiltinTools(createRegistry({ loopGuard: false }));
});
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
  await registry.dispose();
  await root.cleanup();
  await tmp.cleanup();
});

function callId(api: Api, tag: string): string {
  if (api === 'anthropic') return `toolu_${tag}`;
  if (api === 'gemini') return `gem_${tag}`;
  return `call_${tag}`;
}

/** The text of the one tool result request `n` carried (Gemini's results carry no call id). */
function resultIn(requests: RecordedRequest[], n: number): string {
  const results = toolResults(requests[n]);
  expect(results).toHaveLength(1);
  return results[0].content;
}

for (const api of APIS) {
  it(`${api}: over a backend without execute the model is not offered bash or its job tools, and is offered undo`, async () => {
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['files'] });
    const initCtx = { backend };
    const mock = await startMockProvider([{ text: 'ok' }]);
    mocks.push(mock);
    const tools = await registry.tools({ initCtx });
    const agent = createAgent({ model: chatModel(api, mock.url), tools });
    await agent.invoke({ messages: [new HumanMessage('hello')] });
    expect(mock.requests.filter((r) => r.refused)).toEqual([]);
    const sent = sentTools(api, mock.requests[0].body).map((t) => t.name);
    const unavailable = (await registry.unavailable(initCtx)).map((u) => u.id);
    expect(unavailable).toEqual(expect.arrayContaining(['bash', 'bash_output', 'bash_kill']));
    // StoreBackend has readRaw, write and delete: undo works there (backend-undo.test.ts).
    expect(unavailable).not.toContain('undo_file');
    expect(unavailable).not.toContain('undo_turn');
    for (const id of unavailable) expect(sent).not.toContain(id);
    expect(sent).toEqual(registry.ids().filter((id) => !unavailable.includes(id)));
    expect(sent).toEqual(expect.arrayContaining(['read', 'write', 'edit', 'grep', 'undo_file', 'undo_turn']));
  });

  it(`${api}: over LocalShellBackend the model starts a background job, reads it running, and stops it`, async () => {
    const backend = await LocalShellBackend.create({ rootDir: root.dir, virtualMode: true, env: { TMPDIR: tmp.dir } });
    const id = (tag: string) => callId(api, tag);
    const jobOf = (req: RecordedRequest) => /background job (job-[0-9a-f]{8})/.exec(toolResults(req)[0].content)![1];
    const mock = await startMockProvider([
      {
        calls: [
          {
            id: id('start'),
            name: 'bash',
            args: { command: 'echo up; sleep 60', description: 'wait', background: true },
          },
        ],
      },
      (req) => ({ calls: [{ id: id('read'), name: 'bash_output', args: { id: jobOf(req) } }] }),
      (req) => ({
        calls: [
          {
            id: id('kill'),
            name: 'bash_kill',
            args: { id: /\[job (job-[0-9a-f]{8}):/.exec(toolResults(req)[0].content)![1] },
          },
        ],
      }),
      { text: 'Stopped.' },
    ]);
    mocks.push(mock);
    const tools = await registry.tools({ initCtx: { backend } });
    const agent = createAgent({ model: chatModel(api, mock.url), tools });
    const out = await agent.invoke({ messages: [new HumanMessage('start and stop a job')] });
    expect(out.messages.at(-1)?.text).toBe('Stopped.');
    const sent = sentTools(api, mock.requests[0].body).map((t) => t.name);
    expect(sent).toEqual(expect.arrayContaining(['bash', 'bash_output', 'bash_kill']));
    expect(mock.requests.filter((r) => r.refused)).toEqual([]);
    expect(resultIn(mock.requests, 1)).toMatch(
      /^Started background job job-[0-9a-f]{8} on the backend LocalShellBackend \(local-[0-9a-f]+\) in \.: echo up; sleep 60\nIts output and exit code arrive when it ends/,
    );
    expect(resultIn(mock.requests, 2)).toMatch(
      /^\[job job-[0-9a-f]{8}: running on the backend LocalShellBackend \(local-[0-9a-f]+\) for \d+\.\d s; its output arrives when it ends \(the backend's execute answers once\)\]\n\(no new output\)\n\[Still running: call bash_output again later, or bash_kill to stop it\.\]$/,
    );
    expect(resultIn(mock.requests, 3)).toMatch(
      /^\[job job-[0-9a-f]{8}: stopped after \d+\.\d s on the backend LocalShellBackend \(local-[0-9a-f]+\) \(exit code 143\)\]\nup\n\nExit code: 143$/,
    );
  });
}
