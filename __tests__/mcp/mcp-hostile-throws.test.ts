/**
 * An MCP server's transport that fails with a value String() cannot show (an object without a
 * prototype, a throwing toString, a symbol, a proxy whose traps throw): the real Streamable HTTP
 * transport is given a fetch that rejects with it (as a fetch from another realm may). Connecting
 * and calling an imported tool answer with a sentence naming the server, and nothing escapes as an
 * unhandled rejection (issue 31 item 7).
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import { z } from 'zod';
import { Tool, createRegistry } from '../../src/index.js';
import { connectMcp, disconnectMcp } from '../../src/mcp/client.js';
import { serveMcp } from '../../src/mcp/index.js';
import { HOSTILE_VALUES, letRejectionsSurface } from '../support/hostile-values.js';

const realFetch = globalThis.fetch;
let serving: Awaited<ReturnType<typeof serveMcp>>;

beforeAll(async () => {
  const source = createRegistry();
  source.register(
    Tool.define('shout', {
      description: 'Upper-cases text',
      parameters: z.object({ text: z.string() }),
      execute: async ({ text }) => ({ title: 'shouted', metadata: {}, output: text.toUpperCase() }),
    }),
    { permissions: { required: ['read'] } },
  );
  serving = await serveMcp(source, { transport: 'http' });
});
afterEach(() => {
  globalThis.fetch = realFetch;
});
afterAll(async () => {
  await serving.close();
});

const SHOWN = /an object without a text form|the symbol hostile/;

describe.each(HOSTILE_VALUES)('a transport that fails with %s', (_what, make) => {
  it('connecting marks the server failed with a sentence', async () => {
    globalThis.fetch = () => Promise.reject(make());
    const registry = createRegistry();
    try {
      const conn = await connectMcp(registry, { servers: [{ name: 'remote', transport: 'http', url: serving.url! }] });
      expect(conn.servers[0].state).toBe('failed');
      expect(conn.servers[0].error).toMatch(SHOWN);
      expect(conn.servers[0].error).not.toMatch(/TypeError|Cannot convert|undefined/);
    } finally {
      globalThis.fetch = realFetch;
      await disconnectMcp(registry);
    }
    await letRejectionsSurface();
  });

  it('a tool call through the imported tool answers a sentence naming the server', async () => {
    const registry = createRegistry();
    try {
      const conn = await connectMcp(registry, { servers: [{ name: 'remote', transport: 'http', url: serving.url! }] });
      expect(conn.servers[0].state).toBe('connected');
      globalThis.fetch = () => Promise.reject(make());
      const res = await registry.execute('remote__shout', { text: 'hey' }, { sessionID: 's' });
      expect(res.success).toBe(false);
      expect(res.result.output).toMatch(/MCP (tool "shout" on server "remote" failed|server "remote" stopped)/);
      expect(res.result.output).toMatch(SHOWN);
      expect(res.result.output).not.toMatch(/TypeError|Cannot convert|undefined/);
    } finally {
      globalThis.fetch = realFetch;
      await disconnectMcp(registry);
    }
    await letRejectionsSurface();
  });
});
