/**
 * Skills served over MCP, checked with the MCP SDK's own client: each skill is a prompt
 * (`prompts/list` names it with its description, `prompts/get` returns its body, folder and files),
 * over an in-memory transport and over serveMcp's Streamable HTTP; the `skill` tool is listed like
 * any other; without skills configured the server offers no prompts.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createMcpServer, createRegistry, registerBuiltinTools, serveMcp } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';
import { makeSkill } from '../skills/make-skill.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let registry: ReturnType<typeof createRegistry>;
let folder: string;

beforeAll(async () => {
  ws = await tempDir('toolbelt-mcp-skills-');
  folder = await makeSkill(
    path.join(ws.dir, '.agents/skills'),
    'deploy-check',
    'Checks a deploy before it ships.',
    'Run scripts/check.sh and report.',
    {
      'scripts/check.sh': 'echo ok\n',
    },
  );
  registry = registerBuiltinTools(createRegistry({ skills: { defaults: true, home: ws.dir } }));
});
afterAll(async () => {
  await registry.dispose();
  await ws.cleanup();
});

async function connected(reg = registry): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await (await createMcpServer(reg, { initCtx: { workspaceRoot: ws.dir } })).connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  return client;
}

describe('skills as MCP prompts', () => {
  it('lists each skill as a prompt and returns its body on prompts/get', async () => {
    const client = await connected();
    expect(client.getServerCapabilities()?.prompts).toBeDefined();
    const { prompts } = await client.listPrompts();
    expect(prompts).toEqual([{ name: 'deploy-check', description: 'Checks a deploy before it ships.' }]);
    const got = await client.getPrompt({ name: 'deploy-check' });
    expect(got.description).toBe('Checks a deploy before it ships.');
    expect(got.messages).toHaveLength(1);
    const text = (got.messages[0].content as { text: string }).text;
    expect(text).toContain(
      `<skill name="deploy-check" folder="${folder}">\nRun scripts/check.sh and report.\n</skill>`,
    );
    expect(text).toContain(path.join(folder, 'scripts/check.sh'));
    await expect(client.getPrompt({ name: 'nope' })).rejects.toThrow('No skill is named "nope". Skills: deploy-check.');
    // The skill tool is served like any other.
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('skill');
    const called = await client.callTool({ name: 'skill', arguments: { name: 'deploy-check' } });
    expect((called.content as Array<{ text: string }>)[0].text).toContain('Run scripts/check.sh and report.');
    await client.close();
  });

  it('serves the same prompts through serveMcp over HTTP', async () => {
    const serving = await serveMcp(registry, { transport: 'http', port: 0, initCtx: { workspaceRoot: ws.dir } });
    try {
      const client = new Client({ name: 'test', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(serving.url!)));
      expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['deploy-check']);
      const got = await client.getPrompt({ name: 'deploy-check' });
      expect((got.messages[0].content as { text: string }).text).toContain('Run scripts/check.sh and report.');
      await client.close();
    } finally {
      await serving.close();
    }
  });

  it('offers no prompts when no skills are configured', async () => {
    const plain = registerBuiltinTools(createRegistry());
    const client = await connected(plain);
    expect(client.getServerCapabilities()?.prompts).toBeUndefined();
    await client.close();
    await plain.dispose();
  });
});
