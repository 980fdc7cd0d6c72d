// The client as hosts rely on it over time: servers that die and come back, tool lists that
// change, HTTP servers that die mid-call, long calls kept alive by progress, and config files.
import { describe, it, expect, beforeAll } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRegistry, type ToolUpdate } from '../../src/index.js';
import { connectMcp, disconnectMcp, mcpStatus } from '../../src/mcp/client.js';
import { loadMcpConfig } from '../../src/mcp/config.js';
import type { McpServerConnection } from '../../src/mcp/connection.js';
import type { McpConnectionEvents, McpServerConfig } from '../../src/mcp/types.js';
import { ensureDist, CLI, ROOT } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, '..', 'fixtures', 'mcp-fixture-server.mjs');

function fixture(name: string, extra: string[] = [], more: Partial<McpServerConfig> = {}): McpServerConfig {
  return { name, transport: 'stdio', command: process.execPath, args: [FIXTURE, ...extra], ...more } as McpServerConfig;
}

/** Resolves with the first event of `type` that `match` accepts. */
function next<K extends keyof McpConnectionEvents>(
  conn: McpServerConnection,
  type: K,
  match: (e: McpConnectionEvents[K]) => boolean,
): Promise<McpConnectionEvents[K]> {
  return new Promise((resolve) => {
    const off = conn.on(type, (e) => {
      if (match(e)) {
        off();
        resolve(e);
      }
    });
  });
}

describe('a server that dies and comes back', () => {
  it('its tools fail at once naming the server; connect() leaves exactly one working set, same ids, no _2', async () => {
    const registry = createRegistry();
    const { connections } = await connectMcp(registry, { servers: [fixture('fx', [], { timeoutMs: 20_000 })] });
    const conn = connections[0];
    const before = registry.ids();
    try {
      const died = next(conn, 'status', (s) => s.state === 'disconnected');
      const crashed = await registry.execute('fx__crash', {});
      expect(crashed.error).toMatch(/^MCP server "fx" stopped while its tool "crash" was running/);
      await died;
      expect(mcpStatus(registry)[0]).toMatchObject({ name: 'fx', state: 'disconnected' });
      expect(registry.ids()).toEqual(before); // still there, so a call names the server instead of "unknown tool"
      const dead = await registry.execute('fx__echo', { text: 'x' });
      expect(dead.error).toMatch(/^MCP server "fx" is not running, so its tool "echo" cannot be called \(/);

      const status = await conn.connect();
      expect(status.state).toBe('connected');
      expect(registry.ids()).toEqual(before);
      expect(registry.ids().filter((id) => /_\d+$/.test(id))).toEqual([]);
      expect((await registry.execute('fx__echo', { text: 'back' })).result.output).toBe('back');
    } finally {
      await disconnectMcp(registry);
    }
    expect(registry.ids()).toEqual([]);
  });

  it('with reconnect on, it comes back by itself (status events: disconnected -> reconnecting -> connected)', async () => {
    const registry = createRegistry();
    const { connections } = await connectMcp(registry, {
      servers: [fixture('auto', [], { reconnect: { initialDelayMs: 20, maxAttempts: 3 } })],
    });
    const conn = connections[0];
    const states: string[] = [];
    conn.on('status', (s) => states.push(s.state));
    const before = registry.ids();
    try {
      const back = next(conn, 'status', (s) => s.state === 'connected');
      await registry.execute('auto__crash', {});
      await back;
      expect(states).toEqual(['disconnected', 'reconnecting', 'connected']);
      expect(registry.ids()).toEqual(before);
      expect((await registry.execute('auto__echo', { text: 'again' })).result.output).toBe('again');
    } finally {
      await disconnectMcp(registry);
    }
  });

  it('without reconnect (the default) it stays disconnected', async () => {
    const registry = createRegistry();
    const { connections } = await connectMcp(registry, { servers: [fixture('manual')] });
    try {
      const died = next(connections[0], 'status', (s) => s.state === 'disconnected');
      await registry.execute('manual__crash', {});
      await died;
      // A later ping-free look: nothing was scheduled, the state is still the same.
      await new Promise((r) => setImmediate(r));
      expect(connections[0].status.state).toBe('disconnected');
    } finally {
      await disconnectMcp(registry);
    }
  });
});

describe('notifications/tools/list_changed', () => {
  it('added tools appear, removed ones disappear, and subscribers hear of it', async () => {
    const registry = createRegistry();
    const { connections } = await connectMcp(registry, { servers: [fixture('live')] });
    const conn = connections[0];
    try {
      const added = next(conn, 'tools', (e) => e.added.length > 0);
      await registry.execute('live__add_tool', { name: 'fresh' });
      expect(await added).toMatchObject({ server: 'live', added: ['live__fresh'], removed: [] });
      expect((await registry.execute('live__fresh', {})).result.output).toBe('fresh ran');

      const removed = next(conn, 'tools', (e) => e.removed.length > 0);
      await registry.execute('live__remove_tool', { name: 'fresh' });
      expect(await removed).toMatchObject({ added: [], removed: ['live__fresh'] });
      expect(registry.has('live__fresh')).toBe(false);
      expect(conn.tools).not.toContain('live__fresh');
    } finally {
      await disconnectMcp(registry);
    }
  });
});

describe("the registry's own subscribers", () => {
  it('hear every connection: connected, tools changed, disconnected, reconnecting, closed', async () => {
    const registry = createRegistry();
    const heard: string[] = [];
    registry.subscribe((e) => {
      if (e.type === 'mcp-status') heard.push(`${e.server}:${e.state}`);
      if (e.type === 'mcp-tools') heard.push(`${e.server}:tools +${e.added.length} -${e.removed.length}`);
    });
    const back = new Promise<void>((resolve) => {
      let died = false;
      registry.on('mcp-status', (e) => {
        if (e.state === 'disconnected') died = true;
        if (died && e.state === 'connected') resolve();
      });
    });
    const { connections } = await connectMcp(registry, {
      servers: [
        fixture('ev', ['--only-echo']),
        fixture('bus', [], { reconnect: { initialDelayMs: 20, maxAttempts: 3 } }),
      ],
    });
    try {
      expect(heard).toEqual(expect.arrayContaining(['ev:connected', 'bus:connected', 'ev:tools +1 -0']));
      heard.length = 0;
      const added = new Promise((resolve) => registry.on('mcp-tools', resolve));
      await registry.execute('bus__add_tool', { name: 'extra' });
      expect(await added).toMatchObject({ type: 'mcp-tools', server: 'bus', added: ['bus__extra'], removed: [] });
      await registry.execute('bus__crash', {});
      await back;
      expect(heard).toEqual([
        'bus:tools +1 -0',
        'bus:disconnected',
        'bus:reconnecting',
        // The server came back without the runtime-added tool: exactly that one is removed.
        'bus:tools +0 -1',
        'bus:connected',
      ]);
      heard.length = 0;
      await connections[0].close();
      expect(heard).toEqual(['ev:tools +0 -1', 'ev:closed']);
    } finally {
      await disconnectMcp(registry);
    }
  });
});

describe('an HTTP server that dies mid-call', () => {
  beforeAll(() => ensureDist(), 180_000);

  it('fails the running call as stopped (not after its 60 s timeout) and leaves "connected"', async () => {
    const child: ChildProcess = spawn(
      process.execPath,
      [CLI, 'mcp', '--http', '0', '--no-builtins', '--tools', path.join(here, '..', 'fixtures', 'cli-tools.mjs')],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const url = await new Promise<string>((resolve, reject) => {
      let err = '';
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (c: string) => {
        err += c;
        const m = / at (http:\/\/\S+)/.exec(err);
        if (m) resolve(m[1]);
      });
      child.once('exit', (code) => reject(new Error(`toolbelt mcp exited ${code}: ${err}`)));
    });
    const registry = createRegistry();
    const { connections } = await connectMcp(registry, {
      servers: [{ name: 'web', transport: 'http', url, timeoutMs: 60_000 }],
    });
    try {
      expect(connections[0].status).toMatchObject({ state: 'connected', transport: 'streamable-http' });
      const { dir, cleanup } = await tempDir('toolbelt-mcp-http-death-');
      try {
        const call = registry.execute('web__fx_wait', { marker: path.join(dir, 'm') }, {}, undefined, {
          onToolResult: (u) => {
            if (u.status === 'running') child.kill('SIGKILL');
          },
        });
        const final = await call;
        expect(final.error).toMatch(/^MCP server "web" stopped while its tool "fx_wait" was running/);
        expect(connections[0].status.state).not.toBe('connected');
      } finally {
        await cleanup();
      }
    } finally {
      child.kill('SIGKILL');
      await disconnectMcp(registry);
    }
  }, 60_000);
});

describe('long calls', () => {
  it('progress restarts the timeout (resetTimeoutOnProgress) and reaches onToolResult as progress of the calling tool', async () => {
    const registry = createRegistry();
    await connectMcp(registry, { servers: [fixture('slow', [], { timeoutMs: 2_000 })] });
    try {
      const updates: ToolUpdate[] = [];
      // 6 ticks 500 ms apart: at least 3 s in all (the server's timers), half again the 2 s limit, and
      // 1.5 s of margin between ticks for a loaded machine to deliver each one.
      const final = await registry.execute('slow__ticking', { ticks: 6, tickMs: 500 }, {}, undefined, {
        onToolResult: (u) => updates.push(u),
      });
      expect(final.error).toBeUndefined();
      expect(final.result.output).toBe('ticked 6');
      const running = updates.filter((u) => u.status === 'running');
      expect(running.map((u) => ({ title: u.result.title, toolId: u.toolId, callID: u.callID }))).toEqual(
        Array.from({ length: 6 }, (_, i) => ({
          title: `tick ${i + 1}`,
          toolId: 'slow__ticking',
          callID: final.callID,
        })),
      );
    } finally {
      await disconnectMcp(registry);
    }
  });

  it('maxTotalTimeoutMs stops a call however much progress it reports', async () => {
    const registry = createRegistry();
    await connectMcp(registry, { servers: [fixture('capped', [], { timeoutMs: 5_000, maxTotalTimeoutMs: 300 })] });
    try {
      const final = await registry.execute('capped__ticking', { ticks: 50, tickMs: 50 });
      expect(final.error).toMatch(
        /MCP tool "ticking" on server "capped" timed out after 300 ms in total \(maxTotalTimeoutMs\)/,
      );
    } finally {
      await disconnectMcp(registry);
    }
  });
});

describe('config files people already have', () => {
  it('Claude Desktop / Cursor mcpServers and VS Code servers maps: disabled skipped, ${...} expanded, env on a minimal base', async () => {
    const { dir, cleanup } = await tempDir('toolbelt-mcp-configs-');
    const project = path.join(dir, 'project');
    await mkdir(path.join(project, '.vscode'), { recursive: true });
    const vscode = path.join(project, '.vscode', 'mcp.json');
    await writeFile(
      vscode,
      JSON.stringify({
        inputs: [],
        servers: {
          code: {
            type: 'stdio',
            command: '${env:TOOLBELT_TEST_NODE}',
            args: ['${env:TOOLBELT_TEST_FIXTURE}'],
            cwd: '${workspaceFolder}',
            env: { ENTRY_VALUE: 'from-${TOOLBELT_TEST_WORD}', WS: '${workspaceFolder}' },
          },
          off: { type: 'stdio', command: 'node', disabled: true },
          bad: { type: 'http', url: 'ftp://${TOOLBELT_TEST_WORD}' },
        },
      }),
    );
    const claude = path.join(dir, 'claude_desktop_config.json');
    await writeFile(
      claude,
      JSON.stringify({
        mcpServers: {
          desk: { command: process.execPath, args: [FIXTURE, '--only-echo'] },
          gone: { command: 'nope', disabled: true },
        },
      }),
    );
    const registry = createRegistry();
    const variables = {
      TOOLBELT_TEST_NODE: process.execPath,
      TOOLBELT_TEST_WORD: 'blue',
      TOOLBELT_TEST_FIXTURE: FIXTURE,
    };
    try {
      const servers = await loadMcpConfig(vscode);
      expect(servers.map((s) => [s.name, s.transport])).toEqual([
        ['code', 'stdio'],
        ['off', 'stdio'],
        ['bad', 'http'],
      ]);
      const process_env_secret = 'TOOLBELT_TEST_HOST_SECRET';
      process.env[process_env_secret] = 'must-not-leak';
      const conn = await connectMcp(registry, { servers, variables });
      delete process.env[process_env_secret];
      expect(conn.servers[0].error).toBeUndefined();
      expect(conn.servers.map((s) => [s.name, s.state])).toEqual([
        ['code', 'connected'],
        ['off', 'disabled'],
        ['bad', 'failed'],
      ]);
      expect(conn.servers[2].error).toBe('MCP server "bad": "url" must be an absolute http(s) URL, got "ftp://blue".');
      const env = JSON.parse((await registry.execute('code__env', {})).result.output) as Record<string, string>;
      expect(env.ENTRY_VALUE).toBe('from-blue');
      expect(env.WS).toBe(project); // ${workspaceFolder}: the folder above .vscode/
      expect(env.PATH).toBeTruthy();
      expect(env[process_env_secret]).toBeUndefined();

      const desk = await connectMcp(registry, { servers: await loadMcpConfig(claude) });
      expect(desk.servers.map((s) => [s.name, s.state])).toEqual([
        ['desk', 'connected'],
        ['gone', 'disabled'],
      ]);
      expect(registry.has('desk__echo')).toBe(true);
    } finally {
      await disconnectMcp(registry);
      await cleanup();
    }
  });
});
