/**
 * MCP HTTP sessions under pressure, over the real Streamable HTTP transport (the SDK's client and
 * server transports on loopback): sessions are bounded per client (remote address) and in all,
 * idle sessions make room first, and an active session is never closed to let a newcomer in (the
 * newcomer is refused with 429 or 503 and a sentence). Clients on other addresses connect from
 * 127.0.0.x source addresses. And a stateless server refuses to start background jobs no later
 * request could reach.
 */
import { describe, it, expect, afterEach } from '@jest/globals';
import http from 'node:http';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Tool, createRegistry, registerBuiltinTools, type Registry } from '../../src/index.js';
import { serveMcp } from '../../src/mcp/index.js';
import type { McpServing } from '../../src/mcp/server.js';
import {
  MAX_MCP_HTTP_SESSIONS,
  MAX_MCP_HTTP_SESSIONS_PER_CLIENT,
  MCP_HTTP_SESSION_IDLE_MS,
} from '../../src/mcp/http-server.js';
import { tempDir } from '../support/helpers.js';

type Content = Array<{ type: string; text?: string }>;

function makeRegistry(): Registry {
  return createRegistry().register(
    Tool.define('whoami', {
      description: 'Session id',
      parameters: z.object({}),
      async execute(_a, ctx) {
        return { title: 'me', metadata: {}, output: ctx.sessionID };
      },
    }),
    { permissions: { required: [] } },
  );
}

/** fetch over node:http from a chosen loopback source address (each address is another client). */
function fetchFrom(localAddress: string): FetchLike {
  return (url, init) =>
    new Promise<Response>((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: init?.method ?? 'GET',
          headers: Object.fromEntries(new Headers(init?.headers).entries()),
          localAddress,
          signal: init?.signal ?? undefined,
        },
        (res) => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) for (const one of [v ?? []].flat()) headers.append(k, one);
          const empty = res.statusCode === 204 || res.statusCode === 304;
          if (empty) res.resume();
          resolve(
            new Response(empty ? null : (Readable.toWeb(res) as ReadableStream), { status: res.statusCode, headers }),
          );
        },
      );
      req.on('error', reject);
      req.end(typeof init?.body === 'string' ? init.body : undefined);
    });
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

let serving: McpServing | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  await serving?.close();
  serving = undefined;
});

/** An SDK client connected from `from` (default: 127.0.0.1 through the global fetch). */
async function connect(from?: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(serving!.url!), from ? { fetch: fetchFrom(from) } : {});
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function whoami(client: Client): Promise<string> {
  const res = await client.callTool({ name: 'whoami', arguments: {} });
  expect(res.isError ? (res.content as Content)[0].text : 'ok').toBe('ok');
  return (res.content as Content)[0].text!;
}

/** Opens a session with one raw initialize POST and nothing else (it is idle once answered); its id. */
async function rawSession(): Promise<{ status: number; id: string | null; text: string }> {
  const res = await fetch(serving!.url!, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: INITIALIZE,
  });
  return { status: res.status, id: res.headers.get('mcp-session-id'), text: await res.text() };
}

async function rawList(id: string): Promise<number> {
  const res = await fetch(serving!.url!, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': id,
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  });
  await res.text();
  return res.status;
}

describe('MCP HTTP sessions are bounded per client and never evict an active one', () => {
  it(`one client: ${MAX_MCP_HTTP_SESSIONS_PER_CLIENT} sessions open, the next is refused with 429 and none is closed; another address still gets one`, async () => {
    serving = await serveMcp(makeRegistry(), { transport: 'http', port: 0 });
    const mine: Client[] = [];
    for (let i = 0; i < MAX_MCP_HTTP_SESSIONS_PER_CLIENT; i++) mine.push(await connect());
    const first = await whoami(mine[0]);
    const extra = await rawSession();
    expect(extra.status).toBe(429);
    expect(extra.text).toContain(
      `Client 127.0.0.1 already holds ${MAX_MCP_HTTP_SESSIONS_PER_CLIENT} MCP sessions (MAX_MCP_HTTP_SESSIONS_PER_CLIENT), all active, so no new one is opened. Close a session you no longer use`,
    );
    await expect(connect()).rejects.toThrow(/429|already holds/);
    // Every session is still there, the first one too.
    const ids = await Promise.all(mine.map(whoami));
    expect(ids[0]).toBe(first);
    expect(new Set(ids).size).toBe(MAX_MCP_HTTP_SESSIONS_PER_CLIENT);
    // Another client is not held back by this one's bound.
    const other = await connect('127.0.0.2');
    expect(await whoami(other)).toMatch(/^mcp-http-/);
  }, 120_000);

  it(`all clients: ${MAX_MCP_HTTP_SESSIONS} sessions open, the next is refused with 503 and every earlier one still answers`, async () => {
    serving = await serveMcp(makeRegistry(), { transport: 'http', port: 0 });
    const all: Client[] = [];
    for (let i = 0; i < MAX_MCP_HTTP_SESSIONS; i++) {
      const address = `127.0.0.${10 + Math.floor(i / MAX_MCP_HTTP_SESSIONS_PER_CLIENT)}`;
      all.push(await connect(address));
    }
    const refused = fetchFrom('127.0.0.99')(serving.url!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: INITIALIZE,
    });
    const res = await refused;
    expect(res.status).toBe(503);
    expect(await res.text()).toContain(
      `This server already holds ${MAX_MCP_HTTP_SESSIONS} MCP sessions (MAX_MCP_HTTP_SESSIONS), all active, and closes none of them to make room. Retry when a session has been idle for ${MCP_HTTP_SESSION_IDLE_MS / 1000} s or closed.`,
    );
    expect(res.headers.get('retry-after')).toBe(String(MCP_HTTP_SESSION_IDLE_MS / 1000));
    const ids = await Promise.all(all.map(whoami));
    expect(new Set(ids).size).toBe(MAX_MCP_HTTP_SESSIONS);
    // One ended by its client (DELETE) makes room again.
    await (all[0].transport as StreamableHTTPClientTransport).terminateSession();
    expect(await whoami(await connect('127.0.0.99'))).toMatch(/^mcp-http-/);
  }, 180_000);

  it('idle sessions make room first (least recently used), active ones stay: 150 new sessions do not evict the first client', async () => {
    // sessionIdleMs 0: a session is idle as soon as it has no request open. The SDK client holds
    // its GET stream open, so it is active; the raw sessions are idle once answered.
    serving = await serveMcp(makeRegistry(), { transport: 'http', port: 0, sessionIdleMs: 0 });
    const victim = await connect();
    const before = await whoami(victim);
    const flood: string[] = [];
    for (let i = 0; i < 150; i++) {
      const s = await rawSession();
      expect([i, s.status]).toEqual([i, 200]);
      flood.push(s.id!);
    }
    expect(await whoami(victim)).toBe(before);
    // The client's bound held: the earliest idle sessions were closed to make room, the latest live.
    const kept = MAX_MCP_HTTP_SESSIONS_PER_CLIENT - 1;
    expect(await rawList(flood[0])).toBe(404);
    expect(await rawList(flood[flood.length - kept - 1])).toBe(404);
    expect(await rawList(flood[flood.length - kept])).toBe(200);
    expect(await rawList(flood[flood.length - 1])).toBe(200);
  }, 120_000);

  it('rejects a bad sessionIdleMs', async () => {
    await expect(serveMcp(makeRegistry(), { transport: 'http', port: 0, sessionIdleMs: -1 })).rejects.toThrow(
      'serveMcp: "sessionIdleMs" must be a number of milliseconds >= 0, got -1.',
    );
  });
});

describe('a stateless server refuses background jobs (no later request could reach them)', () => {
  it('bash with background: true is refused with a sentence; a foreground command runs', async () => {
    const { dir, cleanup } = await tempDir('mcp-stateless-');
    const registry = registerBuiltinTools(createRegistry());
    try {
      serving = await serveMcp(registry, {
        transport: 'http',
        port: 0,
        stateless: true,
        initCtx: { workspaceRoot: dir },
      });
      const client = await connect();
      const bg = await client.callTool({
        name: 'bash',
        arguments: { command: 'echo started > started.txt; sleep 30', description: 'a job', background: true },
      });
      expect(bg.isError).toBe(true);
      expect((bg.content as Content)[0].text).toBe(
        'bash was not run: background: true starts a job that outlives this call, and this MCP server is stateless ' +
          '(every request is served on its own, by whichever replica answers), so no later call could read its output or stop it. ' +
          'Run it without background (it then runs until it ends or times out), or use a stateful server (toolbelt mcp without --stateless).',
      );
      const fg = await client.callTool({
        name: 'bash',
        arguments: { command: 'echo foreground; ls', description: 'list', background: false },
      });
      expect(fg.isError).toBeFalsy();
      expect((fg.content as Content)[0].text).toBe('foreground\n');
    } finally {
      await registry.dispose();
      await cleanup();
    }
  }, 60_000);
});
