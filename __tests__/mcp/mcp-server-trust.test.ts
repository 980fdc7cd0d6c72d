// The MCP server as hosts must be able to trust it: HTTP security (Origin, Host, bearer token,
// loopback by default), stateless replicas, structured results, faithful re-serving, honest
// annotations, and no bare error codes.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ToolMessage } from '@langchain/core/messages';
import { Tool, createRegistry, registerBuiltinTools, type Registry } from '../../src/index.js';
import { createMcpServer, type McpServing } from '../../src/mcp/server.js';
import { serveMcp } from '../../src/mcp/index.js';
import { connectMcp, disconnectMcp } from '../../src/mcp/client.js';
import { ensureDist, CLI, ROOT } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, '..', 'fixtures', 'mcp-fixture-server.mjs');
const TOKEN = 'a-test-token-of-32-characters-xx';
type Content = Array<{ type: string; text?: string }>;

function echoRegistry(): Registry {
  const registry = createRegistry();
  registry.register(
    Tool.define('echo', {
      description: 'Echo text back',
      parameters: z.object({ text: z.string() }),
      async execute({ text }) {
        return { title: 'echoed', metadata: { length: text.length }, output: text };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  return registry;
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
});

/** POSTs an initialize request with `headers`; resolves to the status and body. */
async function post(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: INIT,
  });
  return { status: res.status, body: await res.text() };
}

async function inMemoryClient(registry: Registry, initCtx = {}): Promise<Client> {
  const [c, s] = InMemoryTransport.createLinkedPair();
  await createMcpServer(registry, { initCtx }).connect(s);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(c);
  return client;
}

describe('HTTP server security', () => {
  let serving: McpServing;
  let secured: McpServing;
  beforeAll(async () => {
    serving = await serveMcp(echoRegistry(), { transport: 'http', allowedOrigins: ['https://app.example.com'] });
    secured = await serveMcp(echoRegistry(), { transport: 'http', token: TOKEN });
  });
  afterAll(async () => {
    await serving.close();
    await secured.close();
  });

  it('refuses foreign Origins with 403, in every spelling; accepts its own, listed ones, and none', async () => {
    const port = serving.port!;
    for (const origin of [
      'https://evil.example',
      `http://127.0.0.1.evil.example:${port}`,
      `http://localhost:${port + 1}`,
      `https://127.0.0.1:${port}`,
      'null',
      'https://app.example.com.evil.example',
    ]) {
      const res = await post(serving.url!, { origin });
      expect({ origin, status: res.status }).toEqual({ origin, status: 403 });
      expect((JSON.parse(res.body) as { error: { message: string } }).error.message).toContain(
        `Origin ${JSON.stringify(origin)} is not allowed`,
      );
    }
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, 'https://app.example.com']) {
      expect({ origin, status: (await post(serving.url!, { origin })).status }).toEqual({ origin, status: 200 });
    }
    expect((await post(serving.url!, {})).status).toBe(200); // non-browser clients send no Origin
  });

  it('refuses a rebound Host on loopback with 403', async () => {
    const { default: http } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        serving.url!,
        {
          method: 'POST',
          headers: {
            host: `attacker.example:${serving.port}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end(INIT);
    });
    expect(status).toBe(403);
  });

  it('with a token: 401 without it or with a wrong one (and a WWW-Authenticate challenge), 200 with it', async () => {
    const none = await fetch(secured.url!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: INIT,
    });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="toolbelt-mcp"');
    expect(await none.text()).toContain('This server requires \\"Authorization: Bearer <token>\\"');
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN]) {
      expect({ authorization, status: (await post(secured.url!, { authorization })).status }).toEqual({
        authorization,
        status: 401,
      });
    }
    expect((await post(secured.url!, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    // A whole session through our own client, the token in the server config's headers.
    const registry = createRegistry();
    const conn = await connectMcp(registry, {
      servers: [{ name: 'sec', transport: 'http', url: secured.url!, headers: { authorization: 'Bearer ${T}' } }],
      variables: { T: TOKEN },
    });
    try {
      expect(conn.servers[0]).toMatchObject({ state: 'connected', tools: ['sec__echo'] });
      expect((await registry.execute('sec__echo', { text: 'authorised' })).result.output).toBe('authorised');
    } finally {
      await disconnectMcp(registry);
    }
  });

  it('binds 127.0.0.1 by default; a non-loopback host needs a token; a short token is refused', async () => {
    expect(serving.host).toBe('127.0.0.1');
    await expect(serveMcp(echoRegistry(), { transport: 'http', host: '0.0.0.0' })).rejects.toThrow(
      /binding to 0\.0\.0\.0 exposes every served tool to the network, so a token is required/,
    );
    await expect(serveMcp(echoRegistry(), { transport: 'http', token: 'short' })).rejects.toThrow(
      /"token" must be a string of at least 16 characters/,
    );
    const open = await serveMcp(echoRegistry(), { transport: 'http', host: '0.0.0.0', token: TOKEN });
    try {
      const url = `http://127.0.0.1:${open.port}/mcp`;
      expect((await post(url, {})).status).toBe(401);
      expect((await post(url, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    } finally {
      await open.close();
    }
  });
});

describe('`toolbelt mcp --http 0 --stateless`: two replicas behind one alternating client', () => {
  const children: ChildProcess[] = [];
  const urls: string[] = [];
  beforeAll(async () => {
    await ensureDist();
    for (let i = 0; i < 2; i++) {
      const child = spawn(
        process.execPath,
        [
          CLI,
          'mcp',
          '--http',
          '0',
          '--stateless',
          '--no-builtins',
          '--tools',
          path.join(here, '..', 'fixtures', 'cli-tools.mjs'),
        ],
        { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      children.push(child);
      urls.push(
        await new Promise<string>((resolve, reject) => {
          let err = '';
          child.stderr.setEncoding('utf8');
          child.stderr.on('data', (chunk: string) => {
            err += chunk;
            const m = /\(stateless\) at (http:\/\/\S+)/.exec(err);
            if (m) resolve(m[1]);
          });
          child.once('exit', (code) => reject(new Error(`toolbelt mcp exited ${code}: ${err}`)));
        }),
      );
    }
  }, 120_000);
  afterAll(() => {
    for (const c of children) c.kill();
  });

  /** A client whose every request goes to the next replica, as a round-robin load balancer would send it. */
  async function alternatingClient(): Promise<{ client: Client; hits: number[] }> {
    const hits = [0, 0];
    let next = 0;
    const fetchAlternating: typeof fetch = (_input, init) => {
      const i = next++ % 2;
      hits[i]++;
      return fetch(urls[i], init);
    };
    const client = new Client({ name: 'lb', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(urls[0]), { fetch: fetchAlternating }));
    return { client, hits };
  }

  it('every request may land on either replica: list and calls succeed on both', async () => {
    const { client, hits } = await alternatingClient();
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('fx_echo');
      for (let i = 0; i < 4; i++) {
        const res = await client.callTool({ name: 'fx_echo', arguments: { text: `call ${i}` } });
        expect(res.content).toEqual([{ type: 'text', text: `call ${i}` }]);
      }
      expect(hits[0]).toBeGreaterThanOrEqual(3);
      expect(hits[1]).toBeGreaterThanOrEqual(3);
    } finally {
      await client.close();
    }
  });

  it('no MCP session is kept, yet the calls have one stable session on every replica (_meta overrides it)', async () => {
    const { client, hits } = await alternatingClient();
    try {
      const texts: string[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await client.callTool({ name: 'fx_whoami', arguments: {} });
        texts.push((res.content as Content)[0].text!);
      }
      // Without a token every local process is one client: one session per namespace.
      expect(new Set(texts)).toEqual(new Set(['mcp-stateless']));
      expect(hits[0]).toBeGreaterThanOrEqual(2);
      expect(hits[1]).toBeGreaterThanOrEqual(2);
      const named = await client.callTool({
        name: 'fx_whoami',
        arguments: {},
        _meta: { 'agent-toolbelt/session': 'chat-1' },
      });
      expect((named.content as Content)[0].text).toBe('mcp-client-chat-1');
      const get = await fetch(urls[0], { headers: { accept: 'text/event-stream' } });
      expect(get.status).toBe(405);
    } finally {
      await client.close();
    }
  });
});

describe('structured results', () => {
  const registry = createRegistry();
  const outputSchema = z.object({ sum: z.number(), terms: z.array(z.number()) });
  registry.register(
    Tool.define('add', {
      description: 'Adds numbers',
      title: 'Adder',
      parameters: z.object({ terms: z.array(z.number()) }),
      outputSchema,
      async execute({ terms }) {
        const sum = terms.reduce((a, b) => a + b, 0);
        return { title: 'added', metadata: {}, output: String(sum), structuredContent: { sum, terms } };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  registry.register(
    Tool.define('liar', {
      description: 'Returns the wrong shape',
      parameters: z.object({ missing: z.boolean().optional() }),
      outputSchema,
      async execute({ missing }) {
        return {
          title: 'lied',
          metadata: {},
          output: 'x',
          ...(missing ? {} : { structuredContent: { sum: 'three', terms: [] } }),
        };
      },
    }),
    { permissions: { required: ['read'] } },
  );

  it('outputSchema is listed and structuredContent is served (the SDK client validates it)', async () => {
    const client = await inMemoryClient(registry);
    const { tools } = await client.listTools();
    const add = tools.find((t) => t.name === 'add')!;
    expect(add.title).toBe('Adder');
    expect(add.outputSchema).toMatchObject({
      type: 'object',
      properties: { sum: { type: 'number' }, terms: { type: 'array' } },
      required: ['sum', 'terms'],
    });
    const res = await client.callTool({ name: 'add', arguments: { terms: [1, 2] } });
    expect(res.structuredContent).toEqual({ sum: 3, terms: [1, 2] });
    expect(res.content).toEqual([{ type: 'text', text: '3' }]);
    await client.close();
  });

  it('a result that breaks its outputSchema, or has none, is an error naming the field', async () => {
    const client = await inMemoryClient(registry);
    await client.listTools();
    const wrong = await client.callTool({ name: 'liar', arguments: {} });
    expect(wrong.isError).toBe(true);
    expect((wrong.content as Content)[0].text).toMatch(
      /^Tool "liar" returned structuredContent that does not match its outputSchema \(at sum: .*number/,
    );
    const none = await client.callTool({ name: 'liar', arguments: { missing: true } });
    expect((none.content as Content)[0].text).toMatch(/declares an outputSchema but returned no structuredContent/);
    await client.close();
  });

  it('the LangChain adapter puts the structured value on the ToolMessage artifact; the content stays text', async () => {
    const [add] = await registry.tools({ ids: ['add'] });
    const msg = (await add.invoke({
      type: 'tool_call',
      id: 'call-1',
      name: 'add',
      args: { terms: [2, 3] },
    })) as ToolMessage;
    expect(msg.content).toBe('5');
    expect((msg.artifact as { structuredContent?: unknown }).structuredContent).toEqual({ sum: 5, terms: [2, 3] });
  });
});

describe('faithful re-serving of imported tools', () => {
  it('title, outputSchema, annotations and structuredContent survive import and re-serving', async () => {
    const middle = createRegistry();
    await connectMcp(middle, {
      servers: [{ name: 'up', transport: 'stdio', command: process.execPath, args: [FIXTURE] }],
    });
    try {
      const direct = new Client({ name: 'd', version: '1' });
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      await direct.connect(new StdioClientTransport({ command: process.execPath, args: [FIXTURE], stderr: 'ignore' }));
      const original = (await direct.listTools()).tools.find((t) => t.name === 'weather')!;
      await direct.close();

      const client = await inMemoryClient(middle);
      const served = (await client.listTools()).tools.find((t) => t.name === 'up__weather')!;
      expect(served.title).toBe(original.title);
      expect(served.outputSchema).toEqual(original.outputSchema);
      expect(served.annotations).toMatchObject(original.annotations!);
      expect(served.inputSchema).toEqual(original.inputSchema);
      const res = await client.callTool({ name: 'up__weather', arguments: { city: 'Oslo' } });
      expect(res.structuredContent).toEqual({ city: 'Oslo', celsius: 21 });
      expect(res.content).toEqual([{ type: 'text', text: 'Oslo: 21 C' }]);
      await client.close();
    } finally {
      await disconnectMcp(middle);
    }
  });
});

describe('built-in tools over MCP', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let client: Client;
  beforeAll(async () => {
    tmp = await tempDir('toolbelt-mcp-builtins-');
    client = await inMemoryClient(registerBuiltinTools(createRegistry()), { workspaceRoot: tmp.dir });
  });
  afterAll(async () => {
    await client.close();
    await tmp.cleanup();
  });

  it('annotations are honest: bash is open-world and destructive, todowrite is not read-only, searches are read-only', async () => {
    const { tools } = await client.listTools();
    const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    expect(hints.bash).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
    expect(hints.todowrite).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    for (const id of ['read', 'list', 'glob', 'grep', 'todoread'])
      expect({ id, readOnly: hints[id]?.readOnlyHint }).toEqual({ id, readOnly: true });
    for (const id of ['write', 'edit'])
      expect({ id, readOnly: hints[id]?.readOnlyHint }).toEqual({ id, readOnly: false });
  });

  it('task without a configured sub-agent model is not listed, and a call says what to configure', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).not.toContain('task');
    const res = await client.callTool({
      name: 'task',
      arguments: { description: 'x', prompt: 'y', subagent_type: 'general' },
    });
    expect(res.isError).toBe(true);
    const text = (res.content as Content)[0].text!;
    expect(text).toMatch(
      /^The task tool has no sub-agents to run \(LLM_ASSIST_REQUIRED\): none are configured\. .*initCtx\.subagents/,
    );
    expect(text).not.toMatch(/^[A-Z_]+$/);
  });
});
