import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { Tool, createRegistry, type ToolUpdate } from '../../src/index.js';
import { connectMcp, disconnectMcp } from '../../src/mcp/client.js';
import { mcpToolId, uniqueId, permissionsFor } from '../../src/mcp/import.js';
import type { McpServerConfig } from '../../src/mcp/types.js';
import { loadMcpConfig, parseMcpConfig } from '../../src/mcp/config.js';
import { serveMcp } from '../../src/mcp/index.js';
import { tempDir } from '../support/helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, '..', 'fixtures', 'mcp-fixture-server.mjs');

function fixture(name: string, extra: string[] = [], more: Partial<McpServerConfig> = {}): McpServerConfig {
  return { name, transport: 'stdio', command: process.execPath, args: [FIXTURE, ...extra], ...more } as McpServerConfig;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('connectMcp over stdio (a real child process)', () => {
  const registry = createRegistry();
  const pids: number[] = [];
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let marker: string;

  beforeAll(async () => {
    tmp = await tempDir('toolbelt-mcp-client-');
    marker = path.join(tmp.dir, 'cancelled.txt');
    const conn = await connectMcp(registry, {
      servers: [fixture('fx', ['--marker', marker], { timeoutMs: 20_000 })],
      onStderr: (_s, chunk) => {
        const m = /fixture (\d+) ready/.exec(chunk);
        if (m) pids.push(Number(m[1]));
      },
    });
    expect(conn.servers).toEqual([expect.objectContaining({ name: 'fx', state: 'connected', transport: 'stdio' })]);
  });

  afterAll(async () => {
    await disconnectMcp(registry);
    await tmp.cleanup();
  });

  it('registers each tool as server__tool with a [server] description, sanitised names and annotation-derived permissions', async () => {
    expect(registry.ids().sort()).toEqual(
      [
        'fx__add_tool',
        'fx__crash',
        'fx__dotted_name_tool',
        'fx__echo',
        'fx__env',
        'fx__fail',
        'fx__progress',
        'fx__remove_tool',
        'fx__rich',
        'fx__sleep',
        'fx__ticking',
        'fx__weather',
      ].sort(),
    );
    const echo = await registry.initialized('fx__echo');
    expect(echo.description).toBe('[fx] Echo text back');
    expect(registry.permissions('fx__echo')).toEqual({ required: ['read'], optional: [] });
    expect(registry.permissions('fx__sleep')).toEqual({ required: ['execute'], optional: [] });
    expect(registry.enabled(['read'])).toEqual(['fx__echo', 'fx__weather']); // both readOnlyHint
  });

  it('calls a tool through the pipeline and validates arguments against its JSON Schema', async () => {
    const ok = await registry.execute('fx__echo', { text: 'hi', times: 2 });
    expect(ok).toMatchObject({ success: true, result: { output: 'hi hi', metadata: { server: 'fx', tool: 'echo' } } });
    const bad = await registry.execute('fx__echo', { text: 'hi', times: 9 });
    expect(bad.success).toBe(false);
    expect(bad.error).toMatch(/Invalid arguments for tool "fx__echo"[\s\S]*- times:/);
    const sanitised = await registry.execute('fx__dotted_name_tool', {});
    expect(sanitised.result.output).toBe('dotted ok');
    expect(registry.stats('fx__echo')).toMatchObject({ calls: 2, failures: 1 });
  });

  it("shows LangChain the server's own JSON Schema", async () => {
    const [echo] = await registry.tools({ ids: ['fx__echo'] });
    const spec = convertToOpenAITool(echo) as {
      function: {
        name: string;
        parameters: { properties: Record<string, { description?: string; maximum?: number }>; required?: string[] };
      };
    };
    expect(spec.function.name).toBe('fx__echo');
    expect(spec.function.parameters.required).toEqual(['text']);
    expect(spec.function.parameters.properties.text.description).toBe('Text to echo');
    expect(spec.function.parameters.properties.times.maximum).toBe(3);
  });

  it('turns MCP progress notifications into ctx.metadata progress, in order, before the final update', async () => {
    const updates: ToolUpdate[] = [];
    const final = await registry.execute('fx__progress', { steps: 3 }, {}, undefined, {
      onToolResult: (u) => updates.push(u),
    });
    expect(final.result.output).toBe('did 3 steps');
    const steps = updates.filter((u) => u.status === 'running' && u.result.metadata.progress !== undefined);
    expect(steps.map((u) => [u.result.metadata.progress, u.result.metadata.total, u.result.title])).toEqual([
      [1, 3, 'step 1'],
      [2, 3, 'step 2'],
      [3, 3, 'step 3'],
    ]);
    expect(updates[updates.length - 1].status).toBe('completed');
  });

  it("isError becomes an error result with the server's text", async () => {
    const final = await registry.execute('fx__fail', {});
    expect(final).toMatchObject({ success: false, error: 'quota exceeded for project demo; wait a minute' });
  });

  it('images and resources become attachments; structured content is kept as structuredContent', async () => {
    const final = await registry.execute('fx__rich', {});
    expect(final.result.output).toBe('here you go');
    expect(final.result.attachments).toEqual([
      { type: 'image', mime: 'image/png', data: Buffer.from('PNGDATA').toString('base64') },
      { type: 'resource', mime: 'text/plain', uri: 'file:///notes.txt', text: 'a note' },
    ]);
    expect(final.result.structuredContent).toEqual({ answer: 42 });
  });

  it('aborting a call sends a cancellation the server sees', async () => {
    const controller = new AbortController();
    const running = registry.execute('fx__sleep', {}, {}, undefined, {
      signal: controller.signal,
      onToolResult: (u) => {
        if (u.status === 'running') controller.abort(); // the call has started on the server side
      },
    });
    const final = await running;
    expect(final.success).toBe(false);
    expect(final.error).toMatch(/aborted/);
    await until(() => existsSync(marker), 'the server to record the cancellation');
    expect(readFileSync(marker, 'utf8')).toBe('cancelled');
  });

  it('disconnectMcp closes the connection, unregisters the tools and leaves no child process', async () => {
    const other = createRegistry();
    const seen: number[] = [];
    await connectMcp(other, {
      servers: [fixture('a', ['--only-echo']), fixture('b', ['--only-echo'])],
      onStderr: (_s, chunk) => {
        const m = /fixture (\d+) ready/.exec(chunk);
        if (m) seen.push(Number(m[1]));
      },
    });
    await until(() => seen.length === 2, 'both servers to start');
    expect(seen.filter((pid) => !alive(pid))).toEqual([]);
    expect(other.ids()).toEqual(['a__echo', 'b__echo']);
    await disconnectMcp(other);
    expect(other.ids()).toEqual([]);
    await until(() => !seen.some(alive), 'the children to exit');
  });
});

describe('connectMcp failures', () => {
  it('a server that fails to start is reported; the others keep working', async () => {
    const registry = createRegistry();
    const conn = await connectMcp(registry, {
      servers: [fixture('broken', ['--exit-at-start']), fixture('good', ['--only-echo'])],
    });
    try {
      const broken = conn.servers.find((s) => s.name === 'broken')!;
      expect(broken.state).toBe('failed');
      expect(broken.tools).toEqual([]);
      expect(broken.error).toMatch(/refusing to start \(bad config\)/);
      expect(conn.tools).toEqual(['good__echo']);
      expect((await registry.execute('good__echo', { text: 'still here' })).result.output).toBe('still here');
    } finally {
      await disconnectMcp(registry);
    }
  });

  it('a server that crashes mid-call: that call and its other tools fail clearly, other servers keep working', async () => {
    const registry = createRegistry();
    await connectMcp(registry, { servers: [fixture('crashy'), fixture('steady', ['--only-echo'])] });
    try {
      const crashed = await registry.execute('crashy__crash', {});
      expect(crashed.success).toBe(false);
      expect(crashed.error).toMatch(/MCP server "crashy" stopped while its tool "crash" was running/);
      expect(crashed.error).toMatch(/segfault-ish failure/);
      const after = await registry.execute('crashy__echo', { text: 'x' });
      expect(after.success).toBe(false);
      expect(after.error).toMatch(/MCP server "crashy" is not running, so its tool "echo" cannot be called/);
      expect((await registry.execute('steady__echo', { text: 'fine' })).result.output).toBe('fine');
    } finally {
      await disconnectMcp(registry);
    }
  });

  it('the per-server timeoutMs stops a call that runs too long and cancels it on the server', async () => {
    const { dir, cleanup } = await tempDir('toolbelt-mcp-timeout-');
    const marker = path.join(dir, 'm.txt');
    const registry = createRegistry();
    await connectMcp(registry, { servers: [fixture('slow', ['--marker', marker], { timeoutMs: 300 })] });
    try {
      const final = await registry.execute('slow__sleep', {});
      expect(final.error).toMatch(/timed out after 300 ms/);
      await until(() => existsSync(marker), 'the cancellation to reach the server');
    } finally {
      await disconnectMcp(registry);
      await cleanup();
    }
  });

  it('a bad entry fails alone with an error naming the server and the field; the others still connect', async () => {
    const registry = createRegistry();
    const conn = await connectMcp(registry, {
      servers: [
        { name: 'nocmd', transport: 'stdio' } as never,
        { name: 'ftp', transport: 'ftp' } as never,
        { name: 'badurl', transport: 'http', url: 'nope' },
        fixture('d', ['--only-echo']),
        fixture('d'),
        fixture('p', [], { permissions: ['root' as never] }),
        fixture('unset', [], { env: { TOKEN: '${TOOLBELT_TEST_SURELY_UNSET}' } }),
        fixture('ok', ['--only-echo']),
      ],
      variables: {},
    });
    try {
      const errors = Object.fromEntries(conn.servers.map((s) => [s.name, s.error]));
      expect(conn.servers.map((s) => s.state)).toEqual([
        'failed',
        'failed',
        'failed',
        'connected',
        'failed',
        'failed',
        'failed',
        'connected',
      ]);
      expect(errors.nocmd).toBe(
        'MCP server "nocmd": "command" is missing: a stdio server needs the program to start (or give "url" for an HTTP server).',
      );
      expect(errors.ftp).toMatch(/^MCP server "ftp": "transport" must be "stdio", "http" or "sse"/);
      expect(errors.badurl).toBe('MCP server "badurl": "url" must be an absolute http(s) URL, got "nope".');
      expect(conn.servers[4].error).toBe('MCP server "d": "name" is used twice; give every server its own name.');
      expect(errors.p).toMatch(/^MCP server "p": "permissions" has the unknown permission "root"/);
      expect(errors.unset).toBe(
        'MCP server "unset": "env.TOKEN" uses ${TOOLBELT_TEST_SURELY_UNSET}, but the environment variable TOOLBELT_TEST_SURELY_UNSET is not set. Set it, or write ${TOOLBELT_TEST_SURELY_UNSET:-default}.',
      );
      expect(conn.tools).toEqual(['d__echo', 'ok__echo']);
      await expect(connectMcp(registry, { servers: 'nope' as never })).rejects.toThrow(
        /needs \{ servers: \[\.\.\.\] \}/,
      );
    } finally {
      await disconnectMcp(registry);
    }
  });
});

describe('allow/deny lists, permissions and enabled', () => {
  it('imports only allowed tools, never denied ones, with configured permissions; disabled servers are skipped', async () => {
    const registry = createRegistry();
    const conn = await connectMcp(registry, {
      servers: [
        fixture('allow', [], {
          toolsAllowed: ['echo', 'fail', 'rich'],
          toolsDenied: ['fail'],
          permissions: { rich: ['network'], '*': ['write'] },
        }),
        fixture('off', [], { enabled: false }),
      ],
    });
    try {
      expect(registry.ids()).toEqual(['allow__echo', 'allow__rich']);
      expect(registry.permissions('allow__echo')!.required).toEqual(['write']);
      expect(registry.permissions('allow__rich')!.required).toEqual(['network']);
      expect(conn.servers.find((s) => s.name === 'off')!.state).toBe('disabled');
    } finally {
      await conn.close();
    }
    expect(registry.ids()).toEqual([]);
  });

  it('permissionsFor: default from readOnlyHint, a list, a map with *, a function', () => {
    const ro = { name: 't', inputSchema: {}, annotations: { readOnlyHint: true } };
    const rw = { name: 't', inputSchema: {} };
    expect(permissionsFor(undefined, ro)).toEqual(['read']);
    expect(permissionsFor(undefined, rw)).toEqual(['execute']);
    expect(permissionsFor(['network'], rw)).toEqual(['network']);
    expect(permissionsFor({ x: ['write'] }, rw)).toEqual(['execute']);
    expect(permissionsFor({ t: ['write'] }, rw)).toEqual(['write']);
    expect(permissionsFor(() => ['read', 'network'], rw)).toEqual(['read', 'network']);
  });
});

describe('name sanitising and collisions', () => {
  it('replaces characters outside [a-zA-Z0-9_-] and cuts at 64 characters', () => {
    expect(mcpToolId('my server', 'read.file/v2')).toBe('my_server__read_file_v2');
    const at = mcpToolId('s', 'x'.repeat(61)); // 's__' + 61 = 64
    expect(at).toHaveLength(64);
    expect(at).toMatch(Tool.ID_PATTERN);
    const past = mcpToolId('s', 'x'.repeat(62)); // 65 -> cut to 64
    expect(past).toHaveLength(64);
    expect(past).toBe(at);
  });

  it('uniqueId appends _2, _3 ... within 64 characters', () => {
    expect(uniqueId('a', new Set())).toBe('a');
    expect(uniqueId('a', new Set(['a']))).toBe('a_2');
    expect(uniqueId('a', new Set(['a', 'a_2']))).toBe('a_3');
    const long = 'y'.repeat(64);
    const next = uniqueId(long, new Set([long]));
    expect(next).toHaveLength(64);
    expect(next.endsWith('_2')).toBe(true);
  });

  it('two servers whose names sanitise alike, and an existing tool, get distinct ids', async () => {
    const registry = createRegistry();
    registry.register(
      Tool.define('x_y__echo', {
        description: 'local',
        parameters: z.object({}),
        execute: async () => ({ title: '', metadata: {}, output: 'local' }),
      }),
      { permissions: { required: [] } },
    );
    await connectMcp(registry, { servers: [fixture('x.y', ['--only-echo']), fixture('x y', ['--only-echo'])] });
    try {
      expect(registry.ids()).toEqual(['x_y__echo', 'x_y__echo_2', 'x_y__echo_3']);
      expect((await registry.execute('x_y__echo', {})).result.output).toBe('local');
      expect((await registry.execute('x_y__echo_3', { text: 'third' })).result.output).toBe('third');
      expect((await registry.initialized('x_y__echo_3')).description).toBe('[x y] Echo text back');
    } finally {
      await disconnectMcp(registry);
    }
  });
});

describe('connectMcp over HTTP', () => {
  it('imports tools from a Streamable HTTP server on 127.0.0.1 (our own serveMcp)', async () => {
    const source = createRegistry();
    source.register(
      Tool.define('shout', {
        description: 'Upper-cases text',
        parameters: z.object({ text: z.string() }),
        async execute({ text }, ctx) {
          ctx.metadata({ title: 'shouting' });
          return { title: 'shouted', metadata: {}, output: text.toUpperCase() };
        },
      }),
      { permissions: { required: ['read'] } },
    );
    const serving = await serveMcp(source, { transport: 'http' });
    const registry = createRegistry();
    try {
      const conn = await connectMcp(registry, {
        servers: [{ name: 'remote', transport: 'http', url: serving.url!, headers: { 'x-test': '1' } }],
      });
      expect(conn.servers[0]).toMatchObject({ state: 'connected', transport: 'streamable-http' });
      expect(registry.ids()).toEqual(['remote__shout']);
      expect(registry.permissions('remote__shout')!.required).toEqual(['read']); // readOnlyHint from the source's permissions
      const updates: ToolUpdate[] = [];
      const final = await registry.execute('remote__shout', { text: 'hey' }, {}, undefined, {
        onToolResult: (u) => updates.push(u),
      });
      expect(final.result.output).toBe('HEY');
      expect(updates.map((u) => `${u.status}:${u.result.title}`)).toContain('running:shouting');
    } finally {
      await disconnectMcp(registry);
      await serving.close();
    }
  });

  it('falls back to SSE when the server only speaks the old HTTP+SSE transport', async () => {
    const sessions = new Map<string, SSEServerTransport>();
    const httpServer = http.createServer((req, res) => {
      const url = new URL(req.url!, 'http://x');
      if (req.method === 'GET' && url.pathname === '/sse') {
        const transport = new SSEServerTransport('/messages', res);
        sessions.set(transport.sessionId, transport);
        const mcp = new McpServer({ name: 'old', version: '1' });
        mcp.registerTool('ping', { description: 'pong', inputSchema: {} }, async () => ({
          content: [{ type: 'text', text: 'pong' }],
        }));
        void mcp.connect(transport);
        return;
      }
      if (req.method === 'POST' && url.pathname === '/messages') {
        const t = sessions.get(url.searchParams.get('sessionId')!);
        if (t) return void t.handlePostMessage(req, res);
      }
      res.writeHead(405).end();
    });
    await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
    const { port } = httpServer.address() as AddressInfo;
    const registry = createRegistry();
    try {
      const conn = await connectMcp(registry, {
        servers: [{ name: 'old', transport: 'http', url: `http://127.0.0.1:${port}/sse` }],
      });
      expect(conn.servers[0]).toMatchObject({ state: 'connected', transport: 'sse' });
      expect((await registry.execute('old__ping', {})).result.output).toBe('pong');
    } finally {
      await disconnectMcp(registry);
      httpServer.closeAllConnections();
      await new Promise((r) => httpServer.close(r));
    }
  });

  it("a redirect to another origin is not followed: the server's headers never reach the other host", async () => {
    const seen: Array<{ url: string; auth?: string; key?: string }> = [];
    const other = http.createServer((req, res) => {
      seen.push({
        url: req.url!,
        auth: req.headers.authorization,
        key: req.headers['x-api-key'] as string | undefined,
      });
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherPort = (other.address() as AddressInfo).port;
    const redirector = http.createServer((req, res) => {
      // 307 keeps method and body: a client following it would send the initialize POST, headers and all.
      res.writeHead(307, { location: `http://127.0.0.1:${otherPort}${req.url}` }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    const port = (redirector.address() as AddressInfo).port;
    const registry = createRegistry();
    try {
      const conn = await connectMcp(registry, {
        servers: [
          {
            name: 'moved',
            transport: 'http',
            url: `http://127.0.0.1:${port}/mcp`,
            headers: { authorization: 'Bearer s3cret-token-value', 'x-api-key': 'k-123' },
          },
        ],
      });
      expect(conn.servers[0].state).toBe('failed');
      expect(conn.servers[0].error).toContain(`127.0.0.1:${port}/mcp`);
      expect(seen).toEqual([]);
    } finally {
      await disconnectMcp(registry);
      await new Promise((r) => redirector.close(r));
      await new Promise((r) => other.close(r));
    }
  });

  it('an unreachable HTTP server is reported as failed over streamable-http (SSE is not tried on a network error)', async () => {
    const registry = createRegistry();
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise((r) => probe.close(r)); // now nothing listens there
    const conn = await connectMcp(registry, {
      servers: [{ name: 'gone', transport: 'http', url: `http://127.0.0.1:${port}/mcp` }],
    });
    expect(conn.servers[0]).toMatchObject({ state: 'failed', transport: 'streamable-http' });
    expect(conn.servers[0].error).toMatch(
      /^Streamable HTTP at http:\/\/127\.0\.0\.1:\d+\/mcp failed: could not reach the server \(ECONNREFUSED\); check that it is running/,
    );
  });
});

describe('MCP config files', () => {
  it('reads our "servers" list and the common "mcpServers" map', async () => {
    const { dir, cleanup } = await tempDir('toolbelt-mcp-config-');
    try {
      const ours = path.join(dir, 'ours.json');
      await writeFile(
        ours,
        JSON.stringify({
          servers: [
            { name: 'fx', transport: 'stdio', command: 'node', args: ['s.mjs'], cwd: 'sub', toolsDenied: ['crash'] },
          ],
        }),
      );
      expect(await loadMcpConfig(ours)).toEqual([
        {
          name: 'fx',
          transport: 'stdio',
          command: 'node',
          args: ['s.mjs'],
          cwd: path.join(dir, 'sub'),
          toolsDenied: ['crash'],
          workspaceFolder: dir,
        },
      ]);
      expect(
        parseMcpConfig({
          mcpServers: {
            files: { command: 'npx', args: ['-y', 'x'] },
            web: { url: 'http://127.0.0.1:1/mcp' },
            old: { type: 'sse', url: 'http://h/sse' },
          },
        }),
      ).toEqual([
        { name: 'files', transport: 'stdio', command: 'npx', args: ['-y', 'x'] },
        { name: 'web', transport: 'http', url: 'http://127.0.0.1:1/mcp' },
        { name: 'old', transport: 'sse', url: 'http://h/sse' },
      ]);
      const bad = path.join(dir, 'bad.json');
      await writeFile(bad, '{ nope');
      await expect(loadMcpConfig(bad)).rejects.toThrow(/is not valid JSON/);
      await expect(loadMcpConfig(path.join(dir, 'missing.json'))).rejects.toThrow(
        /Cannot read the MCP config file .*ENOENT/,
      );
      expect(() => parseMcpConfig({ tools: [] })).toThrow(/neither "servers" \(a list or a map\) nor "mcpServers"/);
    } finally {
      await cleanup();
    }
  });
});
