// Lazy MCP tools: the size of the tool definitions a model is sent for 200 imported tools, all
// loaded up front (baseline) vs lazy (`lazy: true`: tool_search listing their names, with
// one-line summaries when they fit), as each provider's converter writes them, measured in the
// same run. Also what one search adds back. Target: lazy / eager <= 0.10 (a shrink of at least 90%).
// Run: npm run build && node bench/mcp-lazy.bench.mjs
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';

const TARGET = 0.1;
const TOOLS = 200;
const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, '..', '__tests__', 'fixtures', 'mcp-fixture-server.mjs');
const { createRegistry, connectMcp, toolsForTurn } = await import('../dist/index.js');

/** Bytes of the definitions as OpenAI's function format carries them (Anthropic's and Gemini's differ only in key names). */
const sizeOf = (tools) => JSON.stringify(tools.map((t) => convertToOpenAITool(t))).length;

async function offered(lazy) {
  const registry = createRegistry();
  await connectMcp(registry, {
    servers: [
      {
        name: 'gh',
        transport: 'stdio',
        command: process.execPath,
        args: [FIXTURE, '--only-echo', '--generated', String(TOOLS - 1)],
        lazy,
      },
    ],
  });
  const tools = await registry.tools();
  return { registry, tools, first: toolsForTurn(registry, tools, []) };
}

const eager = await offered(false);
const lazy = await offered(true);
const eagerBytes = sizeOf(eager.first);
const lazyBytes = sizeOf(lazy.first);
const search = lazy.tools.find((t) => t.name === 'tool_search');
const msg = await search.invoke({ type: 'tool_call', id: 'call_1', name: 'tool_search', args: { query: 'op_7' } });
const afterSearch = sizeOf(toolsForTurn(lazy.registry, lazy.tools, [msg]));
const ratio = lazyBytes / eagerBytes;
console.log(`tools imported:               ${eager.first.length} eager, ${lazy.tools.length - 1} lazy`);
console.log(`definitions sent, eager:      ${eagerBytes} bytes (${eager.first.length} tools)`);
console.log(`definitions sent, lazy:       ${lazyBytes} bytes (${lazy.first.length} tool: tool_search)`);
console.log(`after one search (5 loaded):  ${afterSearch} bytes`);
console.log(`ratio lazy / eager: ${ratio.toFixed(3)} (shrink ${((1 - ratio) * 100).toFixed(1)}%; target <= ${TARGET})`);
await Promise.all([eager.registry.dispose(), lazy.registry.dispose()]);
if (ratio > TARGET) process.exitCode = 1;
