/**
 * A skill used by a model, through createAgent with the real provider classes against the loopback
 * mock of each API: the model sees the skill listed in the `skill` tool's description, loads it,
 * reads the reference file its instructions point to, and runs its script through bash, by the
 * paths the skill tool gave.
 */
import { it, expect, beforeEach, afterEach } from '@jest/globals';
import path from 'node:path';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { sentTools } from './subsets.js';
import { tempDir } from '../support/helpers.js';
import { makeSkill } from '../skills/make-skill.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let registry: ReturnType<typeof createRegistry>;
const mocks: MockProvider[] = [];

beforeEach(async () => {
  ws = await tempDir('toolbelt-skills-agent-');
  registry = registerBuiltinTools(createRegistry({ loopGuard: false, skills: { defaults: true, home: ws.dir } }));
});
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
  await registry.dispose();
  await ws.cleanup();
});

for (const api of APIS) {
  it(`${api}: the model loads a skill, reads its reference file and runs its script through bash`, async () => {
    const folder = await makeSkill(
      path.join(ws.dir, '.agents/skills'),
      'changelog',
      'Writes a changelog entry. Use when the user asks for release notes or a changelog.',
      'First read references/FORMAT.md. Then run scripts/version.sh and put its output in the heading.',
      { 'references/FORMAT.md': 'Headings are "## <version>".\n', 'scripts/version.sh': 'echo "v$((1 + 1)).0.0"\n' },
    );
    const id = (tag: string) =>
      api === 'anthropic' ? `toolu_${tag}` : api === 'gemini' ? `gem_${tag}` : `call_${tag}`;
    const mock = await startMockProvider([
      { calls: [{ id: id('load'), name: 'skill', args: { name: 'changelog' } }] },
      { calls: [{ id: id('read'), name: 'read', args: { filePath: path.join(folder, 'references/FORMAT.md') } }] },
      {
        calls: [
          {
            id: id('run'),
            name: 'bash',
            args: { command: `sh ${path.join(folder, 'scripts/version.sh')}`, description: 'version' },
          },
        ],
      },
      { text: '## v2.0.0' },
    ]);
    mocks.push(mock);
    const tools = await registry.tools({ initCtx: { workspaceRoot: ws.dir } });
    const agent = createAgent({ model: chatModel(api, mock.url), tools });
    const out = await agent.invoke({ messages: [new HumanMessage('Write the changelog entry.')] });
    expect(mock.requests.filter((r) => r.refused)).toEqual([]);
    const skillTool = sentTools(api, mock.requests[0].body).find((t) => t.name === 'skill');
    expect(skillTool?.description).toContain(
      '- changelog: Writes a changelog entry. Use when the user asks for release notes or a changelog.',
    );
    const [loaded] = toolResults(mock.requests[1]);
    expect(loaded.content).toContain('First read references/FORMAT.md. Then run scripts/version.sh');
    expect(loaded.content).toContain(path.join(folder, 'references/FORMAT.md'));
    expect(toolResults(mock.requests[2])[0].content).toContain('Headings are "## <version>".');
    expect(toolResults(mock.requests[3])[0].content).toContain('v2.0.0');
    expect(out.messages.at(-1)?.text).toBe('## v2.0.0');
  });
}
