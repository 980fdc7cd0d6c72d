/**
 * apply_patch as an OpenAI model sees it: the real ChatOpenAI class (Chat Completions and Responses)
 * against the loopback mock, in a createAgent loop. `edits: 'auto'` offers apply_patch and not
 * edit/write to a GPT-5 model and the reverse to gpt-4o-mini; a multi-file patch lands; a failing
 * patch changes nothing and its sentence (file, hunk, nearest lines) reaches the model.
 */
import { describe, it, expect, afterEach, beforeEach } from '@jest/globals';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider, type ScriptStep } from './mock-server.js';
import { chatModel } from './clients.js';
import { tempDir } from '../support/helpers.js';

const mocks: MockProvider[] = [];
let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('patch-agent-'));
  await fs.writeFile(path.join(dir, 'app.py'), 'def greet():\n    print("Hi")\n');
  await fs.writeFile(path.join(dir, 'util.py'), 'X = 1\n');
});
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
  await cleanup();
});

const MULTI = [
  '*** Begin Patch',
  '*** Update File: app.py',
  '@@ def greet():',
  '-    print("Hi")',
  '+    print("Hello, world!")',
  '*** Update File: util.py',
  '*** Move to: lib/util.py',
  '@@',
  '-X = 1',
  '+X = 2',
  '*** Add File: README.md',
  '+# Greeter',
  '*** End Patch',
].join('\n');

async function run(api: 'openai-chat' | 'openai-responses', model: string, script: ScriptStep[]) {
  const mock = await startMockProvider(script);
  mocks.push(mock);
  const registry = registerBuiltinTools(createRegistry(), { edits: 'auto' });
  const tools = await registry.tools({ initCtx: { workspaceRoot: dir }, model });
  const agent = createAgent({ model: chatModel(api, mock.url), tools });
  await agent.invoke({ messages: [new HumanMessage('greet the world')] });
  return { mock, names: tools.map((t) => t.name) };
}

describe.each(['openai-chat', 'openai-responses'] as const)('%s', (api) => {
  it('a GPT-5 model gets apply_patch (not edit or write) and its multi-file patch lands', async () => {
    let seen: string[] = [];
    const { names } = await run(api, 'openai:gpt-5', [
      {
        calls: [
          { name: 'read', args: { filePath: 'app.py' } },
          { name: 'read', args: { filePath: 'util.py' } },
        ],
      },
      { calls: [{ name: 'apply_patch', args: { input: MULTI } }] },
      (req) => {
        seen = toolResults(req).map((r) => r.content);
        return { text: 'done' };
      },
    ]);
    expect(names).toContain('apply_patch');
    expect(names).not.toContain('edit');
    expect(names).not.toContain('write');
    expect(seen.at(-1)).toBe(
      'Applied the patch to 3 files (+3 -2 lines):\nM app.py (+1 -1)\nR util.py -> lib/util.py (+1 -1)\nA README.md (+1 -0)',
    );
    expect(await fs.readFile(path.join(dir, 'app.py'), 'utf8')).toBe('def greet():\n    print("Hello, world!")\n');
    expect(await fs.readFile(path.join(dir, 'lib/util.py'), 'utf8')).toBe('X = 2\n');
  });

  it('a failing patch changes nothing and the model reads which hunk failed and the nearest lines', async () => {
    let seen: string[] = [];
    const failing = MULTI.replace('-    print("Hi")', '-    print("Howdy")');
    await run(api, 'gpt-5-codex', [
      {
        calls: [
          { name: 'read', args: { filePath: 'app.py' } },
          { name: 'read', args: { filePath: 'util.py' } },
        ],
      },
      { calls: [{ name: 'apply_patch', args: { input: failing } }] },
      (req) => {
        seen = toolResults(req).map((r) => r.content);
        return { text: 'I will re-read the file' };
      },
    ]);
    expect(seen.at(-1)).toContain('The patch was not applied, so nothing was changed:');
    expect(seen.at(-1)).toContain('app.py, hunk 1 (patch line 3: "@@ def greet():", "-    print(\\"Howdy\\")")');
    expect(seen.at(-1)).toContain('The nearest line is 2:\n2:     print("Hi")');
    expect(await fs.readFile(path.join(dir, 'app.py'), 'utf8')).toBe('def greet():\n    print("Hi")\n');
    expect(await fs.readdir(dir)).toEqual(['app.py', 'util.py']);
  });

  it('gpt-4o-mini gets edit and write, not apply_patch', async () => {
    const { names } = await run(api, 'gpt-4o-mini', [{ text: 'nothing to do' }]);
    expect(names).toEqual(expect.arrayContaining(['edit', 'write']));
    expect(names).not.toContain('apply_patch');
  });
});
