/**
 * Lazy MCP tools: a `lazy: true` server's 200 tools reach the model as names in `tool_search`'s
 * description (summaries too when they fit: mcp-lazy-size.test.ts); a search loads the best
 * matches, which the model can then call in the same run. Over real stdio (the fixture server), through the LangChain adapter, and in a
 * `createAgent` loop with `lazyToolsMiddleware` against every provider class's mock API.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import {
  Tool,
  createRegistry,
  connectMcp,
  disconnectMcp,
  lazyToolsMiddleware,
  toolsForTurn,
  deferredTools,
  type Registry,
} from '../../src/index.js';
import {
  TOOL_SEARCH_ID,
  TOOL_SEARCH_DEFAULT_RESULTS,
  TOOL_SEARCH_MAX_RESULTS,
  TOOL_SEARCH_MAX_DESCRIPTION_CHARS,
} from '../../src/constants.js';
import { startMockProvider, toolResults, type RecordedRequest } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { sentTools } from './subsets.js';
import { callTool } from '../support/tool-call.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, '..', 'fixtures', 'mcp-fixture-server.mjs');
const GENERATED = 200;

let registry: Registry;
let tools: StructuredToolInterface[];

beforeAll(async () => {
  registry = createRegistry();
  await connectMcp(registry, {
    servers: [
      { name: 'eager', transport: 'stdio', command: process.execPath, args: [FIXTURE, '--only-echo'] },
      {
        name: 'gh',
        transport: 'stdio',
        command: process.execPath,
        args: [FIXTURE, '--only-echo', '--generated', String(GENERATED)],
        lazy: true,
      },
    ],
  });
  tools = await registry.tools();
}, 60_000);
afterAll(() => disconnectMcp(registry));

const names = (list: readonly { name: string }[]) => list.map((t) => t.name);

describe('tool_search through the LangChain adapter', () => {
  it('is registered beside the deferred tools and lists each by name (their summaries would not fit)', () => {
    expect(deferredTools(registry)).toHaveLength(GENERATED + 1); // gh's echo is deferred too
    const search = tools.find((t) => t.name === TOOL_SEARCH_ID)!;
    expect(search.description.length).toBeLessThanOrEqual(TOOL_SEARCH_MAX_DESCRIPTION_CHARS);
    expect(search.description).toContain(`Not loaded yet (${GENERATED + 1}), by name only`);
    expect(search.description).toContain(', gh__op_7, ');
    expect(search.description).toMatch(/, gh__op_199$/);
    expect(search.description).not.toContain('Operation 7'); // what each does waits for a search
    // Before any search, a model is offered the eager tools and tool_search only.
    expect(names(toolsForTurn(registry, tools, []))).toEqual(['eager__echo', TOOL_SEARCH_ID]);
  });

  it('loads the best matches (an exact name first) and toolsForTurn binds exactly those', async () => {
    const msg = await callTool(tools, TOOL_SEARCH_ID, { query: 'op_7' });
    expect(msg.status).toBe('success');
    const found = msg.result.metadata.found as string[];
    expect(found).toHaveLength(TOOL_SEARCH_DEFAULT_RESULTS);
    expect(found[0]).toBe('gh__op_7');
    expect(found.filter((id) => !id.includes('7'))).toEqual([]);
    expect(msg.content).toMatch(/^Loaded 5 of 201 deferred tools for "op_7"\. They are callable now/);
    expect(msg.content).toContain("- gh__op_7: Operation 7 on a project's issues. Finds, filters");
    expect(names(toolsForTurn(registry, tools, [msg]))).toEqual(
      ['eager__echo', ...found, TOOL_SEARCH_ID].sort(byOrder),
    );
  });

  it(`limit: ${TOOL_SEARCH_MAX_RESULTS} loads that many; ${TOOL_SEARCH_MAX_RESULTS + 1} is refused with the bound`, async () => {
    const at = await callTool(tools, TOOL_SEARCH_ID, { query: 'issues', limit: TOOL_SEARCH_MAX_RESULTS });
    expect(at.result.metadata.found).toHaveLength(TOOL_SEARCH_MAX_RESULTS);
    const past = await callTool(tools, TOOL_SEARCH_ID, { query: 'issues', limit: TOOL_SEARCH_MAX_RESULTS + 1 });
    expect(past.status).toBe('error');
    expect(past.content).toMatch(/limit/);
    expect(past.content).toContain(String(TOOL_SEARCH_MAX_RESULTS));
  });

  it('a search that matches nothing says how to search again and loads nothing', async () => {
    const msg = await callTool(tools, TOOL_SEARCH_ID, { query: 'kubernetes' });
    expect(msg.content).toBe(
      `No tool available under this grant matches "kubernetes" (${GENERATED + 1} can be loaded). Search again with one distinctive word, or with a tool name from this tool's description; a tool the granted permissions or the policy exclude cannot be loaded.`,
    );
    expect(names(toolsForTurn(registry, tools, [msg]))).toEqual(['eager__echo', TOOL_SEARCH_ID]);
  });
});

/** Registry order, so the expected list reads like registry.ids(). */
function byOrder(a: string, b: string): number {
  const ids = registry.ids();
  return ids.indexOf(a) - ids.indexOf(b);
}

describe('createAgent with lazyToolsMiddleware', () => {
  for (const api of APIS) {
    it(`${api}: search, then call the found tool in the same run`, async () => {
      const seen: RecordedRequest[] = [];
      const mock = await startMockProvider([
        (req) => {
          seen.push(req);
          return { calls: [{ name: TOOL_SEARCH_ID, args: { query: 'op_7' }, id: 'call_search' }] };
        },
        (req) => {
          seen.push(req);
          return {
            calls: [{ name: 'gh__op_7', args: { owner: 'acme', repo: 'web', state: 'open' }, id: 'call_op' }],
          };
        },
        (req) => ({ text: `Result: ${toolResults(req).at(-1)!.content}` }),
      ]);
      try {
        const agent = createAgent({
          model: chatModel(api, mock.url),
          tools,
          middleware: [await lazyToolsMiddleware(registry)],
        });
        const out = await agent.invoke({ messages: [new HumanMessage('list open issues of acme/web')] });
        expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined, undefined]);
        const first = sentTools(api, seen[0].body);
        expect(names(first)).toEqual(['eager__echo', TOOL_SEARCH_ID]);
        const second = sentTools(api, seen[1].body);
        expect(names(second)).toContain('gh__op_7');
        expect(names(second)).not.toContain('gh__op_8');
        expect(second).toHaveLength(2 + TOOL_SEARCH_DEFAULT_RESULTS);
        const op7 = second.find((t) => t.name === 'gh__op_7')!;
        expect(Object.keys((op7.parameters as { properties: object }).properties)).toEqual(
          expect.arrayContaining(['owner', 'repo', 'state', 'labels']),
        );
        expect((out.messages.at(-1) as unknown as { text: string }).text).toBe(
          'Result: op_7 {"owner":"acme","repo":"web","state":"open"}',
        );
      } finally {
        await mock.close();
      }
    });
  }
});

describe('what the model is sent', () => {
  for (const api of APIS) {
    it(`${api}: before a search, the tool definitions are under 10% of all ${GENERATED} tools' definitions`, async () => {
      const sizes: number[] = [];
      // Every tool in full (as definitions without the provider's defer flag), then what is offered before a search.
      const everything = tools.map((t) => ({ name: t.name, description: t.description, schema: t.schema }));
      for (const offered of [everything, toolsForTurn(registry, tools, [])]) {
        const mock = await startMockProvider([{ text: 'ok' }]);
        try {
          await chatModel(api, mock.url).bindTools!(offered).invoke([new HumanMessage('hi')]);
          expect(mock.requests[0].refused).toBeUndefined();
          sizes.push(JSON.stringify(sentTools(api, mock.requests[0].body)).length);
        } finally {
          await mock.close();
        }
      }
      expect(sizes[1] / sizes[0]).toBeLessThan(0.1);
    });
  }
});

describe('the connection owns tool_search', () => {
  it("tools/list_changed reaches tool_search's listing and its searches", async () => {
    const r = createRegistry();
    const conn = await connectMcp(r, {
      servers: [{ name: 'live', transport: 'stdio', command: process.execPath, args: [FIXTURE], lazy: true }],
    });
    try {
      const search = async () => (await r.tools()).find((t) => t.name === TOOL_SEARCH_ID)!;
      expect((await search()).description).not.toContain('live__fresh');
      const added = new Promise((resolve) => r.on('mcp-tools', resolve));
      await r.execute('live__add_tool', { name: 'fresh' });
      await added;
      expect((await search()).description).toContain('- live__fresh: Added at runtime: fresh');
      const msg = await callTool([await search()], TOOL_SEARCH_ID, { query: 'fresh' });
      expect(msg.result.metadata.found).toEqual(['live__fresh']);
    } finally {
      await conn.close();
    }
  });

  it('closing the last lazy server removes tool_search; a user tool of that name is never replaced', async () => {
    const r = createRegistry();
    const conn = await connectMcp(r, {
      servers: [
        { name: 'few', transport: 'stdio', command: process.execPath, args: [FIXTURE, '--only-echo'], lazy: true },
      ],
    });
    expect(r.ids()).toEqual(['few__echo', TOOL_SEARCH_ID]);
    await conn.close();
    expect(r.ids()).toEqual([]);

    const mine = Tool.define('tool_search', {
      description: 'My own search',
      parameters: z.object({}),
      async execute() {
        return { title: '', metadata: {}, output: 'mine' };
      },
    });
    r.register(mine, { permissions: { required: [] } });
    const again = await connectMcp(r, {
      servers: [
        { name: 'few', transport: 'stdio', command: process.execPath, args: [FIXTURE, '--only-echo'], lazy: true },
      ],
    });
    expect(r.get(TOOL_SEARCH_ID)!.info).toBe(mine);
    await again.close();
    expect(r.ids()).toEqual([TOOL_SEARCH_ID]);
    expect(r.get(TOOL_SEARCH_ID)!.info).toBe(mine);
  });
});
