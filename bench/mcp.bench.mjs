// MCP round trips per second over stdio for a no-op tool: our server (serveMcp over a registry, the
// full pipeline on every call) vs a bare SDK McpServer with the same tool, measured in the same run.
// Target: ratio = ours / bare >= 0.8.
// Run: npm run build && node bench/mcp.bench.mjs   (this file also serves: --serve ours|bare)
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const TARGET = 0.8;
const WARMUP = 2000;
const CALLS = 1000;
const ROUNDS = 10;

const serve = process.argv.indexOf('--serve');
if (serve !== -1) {
  const kind = process.argv[serve + 1];
  if (kind === 'bare') {
    const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
    const server = new McpServer({ name: 'bare', version: '1' });
    server.registerTool(
      'noop',
      { description: 'Does nothing', inputSchema: { x: z.number().optional() } },
      async () => ({ content: [{ type: 'text', text: 'ok' }] }),
    );
    await server.connect(new StdioServerTransport());
  } else {
    const { Tool, createRegistry, serveMcp } = await import('../dist/index.js');
    const registry = createRegistry();
    registry.register(
      Tool.define('noop', {
        description: 'Does nothing',
        parameters: z.object({ x: z.number().optional() }),
        async execute() {
          return { title: 'noop', metadata: {}, output: 'ok' };
        },
      }),
      { permissions: { required: ['read'] } },
    );
    await serveMcp(registry, { transport: 'stdio' });
  }
} else {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const self = fileURLToPath(import.meta.url);

  async function connect(kind) {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [self, '--serve', kind] }));
    return client;
  }

  async function measure(client, n) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const r = await client.callTool({ name: 'noop', arguments: { x: i } });
      if (r.isError || r.content[0].text !== 'ok') throw new Error(`unexpected result ${JSON.stringify(r)}`);
    }
    return n / (Number(process.hrtime.bigint() - start) / 1e9);
  }

  const clients = { ours: await connect('ours'), bare: await connect('bare') };
  for (const c of Object.values(clients)) await measure(c, WARMUP);
  const rounds = { ours: [], bare: [] };
  // Interleave short rounds so that machine noise (a shared box) hits both sides alike; compare medians.
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of round % 2 ? ['bare', 'ours'] : ['ours', 'bare'])
      rounds[kind].push(await measure(clients[kind], CALLS));
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const best = { ours: median(rounds.ours), bare: median(rounds.bare) };
  for (const kind of ['ours', 'bare'])
    console.log(`${kind.padEnd(4)} rounds: ${rounds[kind].map((x) => x.toFixed(0)).join(' ')} calls/s`);
  for (const c of Object.values(clients)) await c.close();
  const ratio = best.ours / best.bare;
  console.log(
    `median: ours (serveMcp + pipeline) ${best.ours.toFixed(0)} calls/s; bare SDK McpServer ${best.bare.toFixed(0)} calls/s`,
  );
  console.log(
    `ratio = ours / baseline = ${ratio.toFixed(2)} (target >= ${TARGET}) ${ratio >= TARGET ? 'PASS' : 'MISS'}`,
  );
}
