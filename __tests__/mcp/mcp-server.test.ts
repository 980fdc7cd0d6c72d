import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Tool, createRegistry, type Registry } from '../../src/index.js';
import { createMcpServer, annotationsFor, type McpServing } from '../../src/mcp/server.js';
import { serveMcp } from '../../src/mcp/index.js';
import { orderProgressBeforeResponses } from '../../src/mcp/transport.js';
import { ensureDist, CLI, ROOT } from '../support/dist.js';

type Content = Array<{ type: string; text?: string; data?: string; mimeType?: string }>;

/** A registry with tools that exercise every path; `waits` resolves when a waiting call sees its abort. */
function makeRegistry() {
  const registry = createRegistry();
  const aborted: string[] = [];
  registry.register(
    Tool.define('echo', {
      description: 'Echo text back',
      parameters: z.object({ text: z.string().describe('Text to echo') }),
      async execute({ text }) {
        return { title: 'echoed', metadata: { length: text.length }, output: text };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  registry.register(
    Tool.define('steps', {
      description: 'Reports progress',
      parameters: z.object({ n: z.number().int().max(5) }),
      async execute({ n }, ctx) {
        for (let i = 1; i <= n; i++) ctx.metadata({ title: `step ${i}` });
        return { title: 'done', metadata: {}, output: `did ${n}` };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  registry.register(
    Tool.define('wait', {
      description: 'Waits until aborted',
      parameters: z.object({}),
      async execute(_a, ctx) {
        ctx.metadata({ title: 'waiting' });
        await new Promise((r) => ctx.abort.addEventListener('abort', r, { once: true }));
        aborted.push(ctx.sessionID);
        throw new Error('stopped');
      },
    }),
    { permissions: { required: ['execute'] } },
  );
  registry.register(
    Tool.define('boom', {
      description: 'Fails',
      parameters: z.object({}),
      async execute() {
        throw new Error('The widget is broken. Fix it, then retry.');
      },
    }),
    { permissions: { required: ['read'] } },
  );
  registry.register(
    Tool.define('whoami', {
      description: 'Session id',
      parameters: z.object({}),
      async execute(_a, ctx) {
        return { title: 'me', metadata: {}, output: ctx.sessionID };
      },
    }),
    { permissions: { required: [] } },
  );
  registry.register(
    Tool.define('picture', {
      description: 'An image and a text resource',
      parameters: z.object({}),
      async execute() {
        return {
          title: 'pic',
          metadata: {},
          output: 'see attachments',
          attachments: [
            { type: 'image', mime: 'image/png', data: 'UE5H' },
            { type: 'resource', mime: 'text/plain', text: 'note', uri: 'file:///n.txt' },
          ],
        };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  registry.register(
    Tool.define('write_it', {
      description: 'Writes',
      parameters: z.object({}),
      async execute() {
        return { title: '', metadata: {}, output: 'written' };
      },
    }),
    { permissions: { required: ['write'], optional: ['network'] } },
  );
  return { registry, aborted };
}

async function inMemoryClient(
  registry: Registry,
  options: Parameters<typeof createMcpServer>[1] = {},
): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(registry, options).connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  orderProgressBeforeResponses(clientSide);
  return client;
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** The same round trips, whatever the transport. */
function roundTrips(name: string, connect: () => Promise<{ client: Client; aborted: () => string[] }>) {
  describe(`round trips over ${name}`, () => {
    let client: Client;
    let aborted: () => string[];
    beforeAll(async () => {
      ({ client, aborted } = await connect());
    }, 60_000);
    afterAll(async () => {
      await client.close();
    });

    it('lists tools with JSON Schemas and permission-derived annotations', async () => {
      const { tools } = await client.listTools();
      const echo = tools.find((t) => t.name === 'echo')!;
      expect(echo.description).toBe('Echo text back');
      expect(echo.inputSchema).toMatchObject({
        type: 'object',
        properties: { text: { type: 'string', description: 'Text to echo' } },
        required: ['text'],
      });
      expect(echo.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
      const writer = tools.find((t) => t.name === 'write_it')!;
      expect(writer.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
    });

    it('calls a tool; bad arguments and thrown errors come back as isError results', async () => {
      const ok = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      expect(ok.isError).toBeFalsy();
      expect(ok.content).toEqual([{ type: 'text', text: 'hi' }]);
      const bad = await client.callTool({ name: 'steps', arguments: { n: 6 } });
      expect(bad.isError).toBe(true);
      expect((bad.content as Content)[0].text).toMatch(/Invalid arguments for tool "steps":\n- n:/);
      const boom = await client.callTool({ name: 'boom', arguments: {} });
      expect(boom).toMatchObject({
        isError: true,
        content: [{ type: 'text', text: 'The widget is broken. Fix it, then retry.' }],
      });
      const unknown = await client.callTool({ name: 'nope', arguments: {} });
      expect(unknown.isError).toBe(true);
      expect((unknown.content as Content)[0].text).toMatch(/Tool "nope" does not exist\. Known tools: echo, /);
    });

    it('sends ctx.metadata progress as MCP progress notifications when the client asks for them', async () => {
      const seen: Array<{ progress: number; message?: string }> = [];
      const res = await client.callTool({ name: 'steps', arguments: { n: 3 } }, undefined, {
        onprogress: (p) => seen.push(p),
      });
      expect((res.content as Content)[0].text).toBe('did 3');
      expect(seen).toEqual([
        { progress: 1, message: 'step 1' },
        { progress: 2, message: 'step 2' },
        { progress: 3, message: 'step 3' },
      ]);
    });

    it('client cancellation aborts the running call', async () => {
      const controller = new AbortController();
      const before = aborted().length;
      const call = client.callTool({ name: 'wait', arguments: {} }, undefined, {
        signal: controller.signal,
        onprogress: () => controller.abort(), // the tool is running on the server now
      });
      await expect(call).rejects.toThrow(/abort/i);
      await until(() => aborted().length > before, 'the tool to see the abort');
    });

    it('all calls over one connection share one session', async () => {
      const a = await client.callTool({ name: 'whoami', arguments: {} });
      const b = await client.callTool({ name: 'whoami', arguments: {} });
      expect((a.content as Content)[0].text).toMatch(/^mcp-/);
      expect((a.content as Content)[0].text).toBe((b.content as Content)[0].text);
    });

    it('attachments become image and resource content', async () => {
      const res = await client.callTool({ name: 'picture', arguments: {} });
      expect(res.content).toEqual([
        { type: 'text', text: 'see attachments' },
        { type: 'image', data: 'UE5H', mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///n.txt', mimeType: 'text/plain', text: 'note' } },
      ]);
    });
  });
}

roundTrips('InMemoryTransport', async () => {
  const { registry, aborted } = makeRegistry();
  return { client: await inMemoryClient(registry), aborted: () => aborted };
});

let httpServing: McpServing | undefined;
roundTrips('Streamable HTTP on 127.0.0.1', async () => {
  const { registry, aborted } = makeRegistry();
  httpServing = await serveMcp(registry, { transport: 'http' });
  const client = new Client({ name: 'test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(httpServing.url!));
  await client.connect(transport);
  orderProgressBeforeResponses(transport);
  return { client, aborted: () => aborted };
});

// Our own server started as a real child process: `toolbelt mcp` over stdio. The abort is observed
// through the tool's own marker file, since the registry lives in the child.
describe('round trips over stdio with `toolbelt mcp` as a child process', () => {
  let client: Client;
  const TOOLS = path.join(ROOT, '__tests__', 'fixtures', 'cli-tools.mjs');
  beforeAll(async () => {
    await ensureDist();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--no-builtins', '--tools', TOOLS, '--permissions', 'read,execute'],
      stderr: 'pipe',
      cwd: ROOT,
      // The SDK passes only HOME, PATH, USER and the like: the child's temp files go in this suite's dir.
      env: { ...getDefaultEnvironment(), TMPDIR: tmpdir() },
    });
    client = new Client({ name: 'test', version: '1' });
    await client.connect(transport);
    orderProgressBeforeResponses(transport);
  }, 120_000);
  afterAll(async () => {
    await client.close();
  });

  it('lists only what --permissions allows, calls, streams progress, shares one session, reports errors', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['fx_echo', 'fx_steps', 'fx_wait', 'fx_whoami']));
    expect(names).not.toContain('fx_change'); // needs write
    const echo = await client.callTool({ name: 'fx_echo', arguments: { text: 'over stdio' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'over stdio' }]);
    const seen: string[] = [];
    await client.callTool({ name: 'fx_steps', arguments: { n: 2 } }, undefined, {
      onprogress: (p) => seen.push(p.message ?? ''),
    });
    expect(seen).toEqual(['step 1/2', 'step 2/2']);
    const s1 = await client.callTool({ name: 'fx_whoami', arguments: {} });
    const s2 = await client.callTool({ name: 'fx_whoami', arguments: {} });
    expect((s1.content as Content)[0].text).toBe((s2.content as Content)[0].text);
    const refused = await client.callTool({ name: 'fx_change', arguments: { filePath: 'x' } });
    expect(refused.isError).toBe(true);
    expect((refused.content as Content)[0].text).toMatch(/needs permissions this server was not granted/);
    const failed = await client.callTool({ name: 'fx_fail', arguments: {} });
    expect(failed).toMatchObject({
      isError: true,
      content: [{ text: 'The widget at /ws/w.txt is broken. Fix the widget, then retry.' }],
    });
  });

  it('client cancellation reaches the tool in the child process', async () => {
    const { mkdtemp, readFile, rm } = await import('node:fs/promises');
    const os = await import('node:os');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'toolbelt-mcp-stdio-'));
    const marker = path.join(dir, 'm.txt');
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: 'fx_wait', arguments: { marker } }, undefined, {
        signal: controller.signal,
        onprogress: () => controller.abort(),
      });
      await expect(call).rejects.toThrow(/abort/i);
      let text = '';
      await until(() => {
        void readFile(marker, 'utf8').then(
          (t) => (text = t),
          () => undefined,
        );
        return text === 'aborted';
      }, 'the child to record the abort');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('serveMcp specifics', () => {
  afterAll(async () => {
    await httpServing?.close();
  });

  it('a permission grant hides and refuses tools that need more', async () => {
    const { registry } = makeRegistry();
    const client = await inMemoryClient(registry, { permissions: ['read'] });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['boom', 'echo', 'picture', 'steps', 'whoami']);
    const refused = await client.callTool({ name: 'write_it', arguments: {} });
    expect(refused.isError).toBe(true);
    expect((refused.content as Content)[0].text).toMatch(
      /Tool "write_it" needs permissions this server was not granted/,
    );
    await client.close();
  });

  it('separate connections are separate sessions', async () => {
    const { registry } = makeRegistry();
    const a = await inMemoryClient(registry);
    const b = await inMemoryClient(registry);
    const sa = ((await a.callTool({ name: 'whoami', arguments: {} })).content as Content)[0].text;
    const sb = ((await b.callTool({ name: 'whoami', arguments: {} })).content as Content)[0].text;
    expect(sa).not.toBe(sb);
    await a.close();
    await b.close();
  });

  it('HTTP binds 127.0.0.1 by default and rejects foreign Host headers (DNS rebinding)', async () => {
    expect(httpServing!.host).toBe('127.0.0.1');
    expect(httpServing!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          httpServing!.url!,
          {
            method: 'POST',
            headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
          }),
        );
      });
    expect(await status('evil.example:80')).toBe(403);
    expect(await status(`127.0.0.1:${httpServing!.port}`)).toBe(200);
  });

  it('HTTP: an unknown session id gets 404; other paths get 404', async () => {
    const res = await fetch(httpServing!.url!, {
      method: 'POST',
      headers: { 'mcp-session-id': 'nope', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(404);
    expect(await res.text()).toMatch(/Unknown or expired MCP session/);
    const other = await fetch(httpServing!.url!.replace('/mcp', '/other'));
    expect(other.status).toBe(404);
  });

  it('annotationsFor: read-only, write, execute and network', () => {
    expect(annotationsFor({ required: ['read'] })).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      openWorldHint: false,
    });
    expect(annotationsFor({ required: ['read', 'network'] })).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      openWorldHint: true,
    });
    expect(annotationsFor({ required: ['write'] })).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(annotationsFor({ required: ['execute'] })).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(annotationsFor({ required: ['write'] }, { destructiveHint: false, title: 'Safe' })).toMatchObject({
      destructiveHint: false,
      title: 'Safe',
    });
  });

  it('rejects a bad transport or port', async () => {
    const { registry } = makeRegistry();
    await expect(serveMcp(registry, { transport: 'ws' as never })).rejects.toThrow(
      /"transport" must be "stdio" or "http"/,
    );
    await expect(serveMcp(registry, { transport: 'http', port: 70000 })).rejects.toThrow(
      /"port" must be an integer 0-65535/,
    );
  });
});
