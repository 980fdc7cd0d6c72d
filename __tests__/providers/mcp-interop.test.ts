/**
 * Third-party interop over real transports. Our server consumed by `@langchain/mcp-adapters`
 * (MultiServerMCPClient over stdio — the `toolbelt mcp` CLI — and Streamable HTTP), its tools
 * called through it; and the reference `@modelcontextprotocol/server-filesystem` imported by our
 * client over stdio, its tools called and its schemas accepted by every provider API's mock.
 * (server-everything's own test is mcp-schemas.test.ts.)
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createRequire } from 'node:module';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { HumanMessage, type ToolMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { Tool, createRegistry, connectMcp, type Registry } from '../../src/index.js';
import { serveMcp } from '../../src/mcp/index.js';
import { MCP_RESULT_META_CAPABILITY } from '../../src/constants.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ensureDist, CLI } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { startMockProvider } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { apiViolations, sentTools } from './subsets.js';
import { callTool } from '../support/tool-call.js';

const require = createRequire(import.meta.url);
const FILESYSTEM = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

const byName = (tools: StructuredToolInterface[], name: string) => {
  const t = tools.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${name} among ${tools.map((x) => x.name).join(', ')}`);
  return t;
};

/** The text a model reads from an adapter ToolMessage's content (a string, a block, or blocks). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  const blocks = Array.isArray(content) ? content : [content];
  return blocks.map((b) => ((b as { type?: string }).type === 'text' ? (b as { text: string }).text : '')).join('');
}

/** The ToolMessage an agent would get from an adapter tool. */
async function invoke(tool: StructuredToolInterface, args: Record<string, unknown>, id: string): Promise<ToolMessage> {
  return (await tool.invoke({ type: 'tool_call', id, name: tool.name, args })) as ToolMessage;
}

describe('@langchain/mcp-adapters consuming our server', () => {
  // Building dist can take minutes on a loaded machine: not part of any test's own time.
  beforeAll(() => ensureDist(), 300_000);

  it('over stdio (toolbelt mcp): lists the granted tools; write then read share the session', async () => {
    const ws = await tempDir('toolbelt-adapters-');
    const client = new MultiServerMCPClient({
      mcpServers: {
        toolbelt: {
          transport: 'stdio',
          command: process.execPath,
          args: [CLI, 'mcp', '--workspace', ws.dir, '--permissions', 'read,write'],
        },
      },
    });
    try {
      const tools = await client.getTools();
      const names = tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['read', 'write', 'edit', 'glob', 'grep', 'list']));
      expect(names).not.toContain('bash'); // needs execute, which was not granted
      const wrote = await invoke(byName(tools, 'write'), { filePath: 'notes.txt', content: 'alpha\nbeta\n' }, 'c1');
      expect(textOf(wrote.content)).toMatch(/notes\.txt/);
      expect(await readFile(path.join(ws.dir, 'notes.txt'), 'utf8')).toBe('alpha\nbeta\n');
      const read = await invoke(byName(tools, 'read'), { filePath: 'notes.txt' }, 'c2');
      expect(textOf(read.content)).toMatch(/^1: alpha\n2: beta\n/);
      expect(JSON.stringify(read.content)).not.toContain('totalLines'); // no metadata in what the model reads
      // read-before-edit state lives in the MCP session: the edit after this read is accepted.
      const edited = await invoke(
        byName(tools, 'edit'),
        { filePath: 'notes.txt', oldString: 'beta', newString: 'gamma' },
        'c3',
      );
      expect(edited.status).not.toBe('error');
      expect(await readFile(path.join(ws.dir, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n');
      // A failure reaches the adapter as our sentence, not a bare code.
      await expect(invoke(byName(tools, 'read'), { filePath: 'missing.txt' }, 'c4')).rejects.toThrow(/missing\.txt/);
    } finally {
      await client.close();
      await ws.cleanup();
    }
  }, 60_000);

  describe('over Streamable HTTP', () => {
    let registry: Registry;
    let serving: Awaited<ReturnType<typeof serveMcp>>;
    let client: MultiServerMCPClient;
    let tools: StructuredToolInterface[];

    beforeAll(async () => {
      registry = createRegistry();
      registry.register(
        Tool.define('forecast', {
          description: 'The forecast for a city',
          title: 'Forecast',
          parameters: z.object({ city: z.string() }),
          outputSchema: z.object({ city: z.string(), celsius: z.number() }),
          async execute({ city }) {
            if (city === 'Atlantis')
              throw new Error('No forecast for "Atlantis": it is not a known city. Ask for a real city.');
            return {
              title: `forecast for ${city}`,
              metadata: { source: 'fixture', cached: false },
              output: `${city}: 21 C`,
              structuredContent: { city, celsius: 21 },
            };
          },
        }),
        { permissions: { required: ['network'] } },
      );
      serving = await serveMcp(registry, { transport: 'http', port: 0 });
      client = new MultiServerMCPClient({ mcpServers: { web: { transport: 'http', url: serving.url! } } });
      tools = await client.getTools();
    });
    afterAll(async () => {
      await client?.close();
      await serving?.close();
    });

    it('the tool is called; text stays text, structuredContent rides on the artifact, metadata stays out', async () => {
      const msg = await invoke(byName(tools, 'forecast'), { city: 'Oslo' }, 'h1');
      // For a result with structuredContent (or _meta) the adapter hands the model the block as JSON:
      // our text and the structured value, and no metadata (that needs the result-meta capability).
      expect(JSON.parse(textOf(msg.content))).toEqual({
        type: 'text',
        text: 'Oslo: 21 C',
        structuredContent: { city: 'Oslo', celsius: 21 },
      });
      const artifacts = msg.artifact as { type: string; data: Record<string, unknown> }[];
      expect(artifacts).toEqual([{ type: 'mcp_structured_content', data: { city: 'Oslo', celsius: 21 } }]);
    });

    it(`a client declaring ${MCP_RESULT_META_CAPABILITY} gets the title and metadata in _meta`, async () => {
      const sdk = new Client(
        { name: 'meta-wanting', version: '1' },
        { capabilities: { experimental: { [MCP_RESULT_META_CAPABILITY]: {} } } },
      );
      await sdk.connect(new StreamableHTTPClientTransport(new URL(serving.url!)));
      try {
        const res = await sdk.callTool({ name: 'forecast', arguments: { city: 'Oslo' } });
        expect(res._meta).toEqual({ title: 'forecast for Oslo', metadata: { source: 'fixture', cached: false } });
        expect(res.content).toEqual([{ type: 'text', text: 'Oslo: 21 C' }]);
      } finally {
        await sdk.close();
      }
    });

    it("a failing call comes back as the tool's own sentence", async () => {
      await expect(invoke(byName(tools, 'forecast'), { city: 'Atlantis' }, 'h2')).rejects.toThrow(
        'No forecast for "Atlantis": it is not a known city. Ask for a real city.',
      );
    });
  });
});

describe('@modelcontextprotocol/server-filesystem imported by our client', () => {
  let registry: Registry;
  let ws: { dir: string; cleanup: () => Promise<void> };
  let tools: StructuredToolInterface[];

  beforeAll(async () => {
    ws = await tempDir('toolbelt-fs-ref-');
    await writeFile(path.join(ws.dir, 'hello.txt'), 'hello from disk\n');
    registry = createRegistry();
    const conn = await connectMcp(registry, {
      servers: [{ name: 'fs', transport: 'stdio', command: process.execPath, args: [FILESYSTEM, ws.dir] }],
    });
    expect(conn.servers[0]).toMatchObject({ state: 'connected', transport: 'stdio' });
    tools = await registry.tools();
  }, 60_000);
  afterAll(async () => {
    await registry?.dispose();
    await ws?.cleanup();
  });

  it('its tools are imported with read-only ones needing only read', () => {
    expect(registry.ids()).toEqual(
      expect.arrayContaining(['fs__read_text_file', 'fs__write_file', 'fs__list_directory', 'fs__edit_file']),
    );
    expect(registry.permissions('fs__read_text_file')!.required).toEqual(['read']);
    expect(registry.permissions('fs__write_file')!.required).toEqual(['execute']);
  });

  it('its tools are called through the LangChain adapter: read, write, list; outside the root is refused', async () => {
    const read = await callTool(tools, 'fs__read_text_file', { path: path.join(ws.dir, 'hello.txt') });
    expect(read.content).toBe('hello from disk\n');
    const wrote = await callTool(tools, 'fs__write_file', { path: path.join(ws.dir, 'new.txt'), content: 'x' });
    expect(wrote.status).toBe('success');
    expect(await readFile(path.join(ws.dir, 'new.txt'), 'utf8')).toBe('x');
    const listed = await callTool(tools, 'fs__list_directory', { path: ws.dir });
    expect(listed.content).toContain('[FILE] hello.txt');
    expect(listed.content).toContain('[FILE] new.txt');
    const outside = await callTool(tools, 'fs__read_text_file', { path: '/etc/hostname' });
    expect(outside.status).toBe('error');
    expect(outside.content).toMatch(/outside allowed directories|Access denied/i);
  });

  for (const api of APIS) {
    it(`${api}: every one of its tools is accepted`, async () => {
      const mock = await startMockProvider([{ text: 'ok' }]);
      try {
        await chatModel(api, mock.url).bindTools!(tools).invoke([new HumanMessage('hi')]);
        const req = mock.requests[0];
        expect(req.refused).toBeUndefined();
        const sent = sentTools(api, req.body);
        expect(sent.map((t) => t.name)).toEqual(registry.ids());
        expect(sent.flatMap((t) => apiViolations(api, t))).toEqual([]);
      } finally {
        await mock.close();
      }
    });
  }
});
