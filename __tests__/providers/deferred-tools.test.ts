/**
 * Deferred built-in tools, through real provider classes against the loopback mocks: with every
 * built-in registered and `defer: 'auto'`, what OpenAI Chat is sent before any search fits
 * DEFER_AUTO_BUDGET_CHARS, and in the same run every tool becomes reachable through our
 * `tool_search` (lazyToolsMiddleware) or through the provider's own search (langchain's
 * providerToolSearchMiddleware, whose requests the Anthropic and OpenAI mocks accept only with the
 * search tool, the deferred flags and — for Anthropic — the beta header the real APIs require).
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createAgent, providerToolSearchMiddleware } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import {
  createRegistry,
  registerBuiltinTools,
  deferredTools,
  undeferTools,
  lazyToolsMiddleware,
  type Registry,
} from '../../src/index.js';
import { DEFER_AUTO_BUDGET_CHARS, TOOL_SEARCH_ID } from '../../src/constants.js';
import { BUILTIN_USAGE_ORDER } from '../../src/tools/index.js';
import { startMockProvider, toolResults, type MockProvider, type ScriptStep } from './mock-server.js';
import { chatModel } from './clients.js';
import { sentTools, serverTools, toolsText, type Api } from './subsets.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
const mocks: MockProvider[] = [];
beforeEach(async () => {
  ws = await tempDir('toolbelt-deferred-');
  await writeFile(path.join(ws.dir, 'notes.md'), '# notes\nremember the milk\n');
});
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
  await ws.cleanup();
});

async function mock(script: ScriptStep[]): Promise<MockProvider> {
  const m = await startMockProvider(script);
  mocks.push(m);
  return m;
}

const names = (tools: readonly { name: string }[]) => tools.map((t) => t.name);
const flagged = (tools: StructuredToolInterface[]) =>
  tools
    .filter((t) => (t as { extras?: { defer_loading?: boolean } }).extras?.defer_loading === true)
    .map((t) => t.name);

/** What one bare request of `api` carries for `tools` (no agent, no middleware). */
async function sentFor(api: Api, tools: StructuredToolInterface[]) {
  const m = await mock([{ text: 'ok' }]);
  await chatModel(api, m.url).bindTools!(tools).invoke([new HumanMessage('hi')]);
  return m.requests[0];
}

describe("defer: 'auto' with every built-in", () => {
  it('OpenAI Chat is sent at most DEFER_AUTO_BUDGET_CHARS of definitions before a search, and every tool is reachable through tool_search in the same run', async () => {
    const registry = registerBuiltinTools(createRegistry(), { defer: 'auto' });
    const all = registerBuiltinTools(createRegistry());
    const tools = await registry.tools({ initCtx: { workingDir: ws.dir } });
    const deferred = flagged(tools);
    expect(deferred.length).toBeGreaterThan(0);
    expect(new Set(deferred)).toEqual(new Set(deferredTools(registry).map((t) => t.id)));
    // The most used built-ins stay loaded: what stays is the head of the usage order (how many fit
    // depends on the descriptions' templated paths, such as this run's temp dir), at least read, edit, bash.
    const loaded = names(tools).filter((n) => n !== TOOL_SEARCH_ID && !deferred.includes(n));
    expect(loaded).toEqual(BUILTIN_USAGE_ORDER.slice(0, loaded.length));
    expect(loaded.length).toBeGreaterThanOrEqual(3);

    // Without deferral the same tools are far over the budget.
    const full = await sentFor('openai-chat', await all.tools({ initCtx: { workingDir: ws.dir } }));
    expect(toolsText('openai-chat', full.body).length).toBeGreaterThan(2 * DEFER_AUTO_BUDGET_CHARS);

    const parent = await mock([
      // One search per deferred tool, all in one turn.
      { calls: deferred.map((id, i) => ({ name: TOOL_SEARCH_ID, args: { query: id, limit: 1 }, id: `call_s${i}` })) },
      { calls: [{ name: 'read', args: { filePath: 'notes.md' }, id: 'call_read' }] },
      (req) => ({ text: `Read: ${toolResults(req)[0].content.includes('remember the milk')}` }),
    ]);
    const agent = createAgent({
      model: chatModel('openai-chat', parent.url),
      tools,
      middleware: [await lazyToolsMiddleware(registry)],
    });
    const state = await agent.invoke({ messages: [new HumanMessage('use everything')] });
    expect(parent.requests.map((r) => r.refused)).toEqual([undefined, undefined, undefined]);
    const [first, second] = parent.requests;
    const firstText = toolsText('openai-chat', first.body);
    expect(firstText.length).toBeLessThanOrEqual(DEFER_AUTO_BUDGET_CHARS);
    const firstNames = names(sentTools('openai-chat', first.body));
    expect(firstNames).toContain(TOOL_SEARCH_ID);
    for (const id of deferred) expect(firstNames).not.toContain(id);
    // tool_search's description lists every deferred tool by name.
    const search = sentTools('openai-chat', first.body).find((t) => t.name === TOOL_SEARCH_ID)!;
    for (const id of deferred) expect(search.description).toContain(id);
    // After the searches, every registered tool is offered, without the provider's defer flag (but
    // not one that cannot run here: task without sub-agents).
    const unavailable = (await registry.unavailable({ workingDir: ws.dir })).map((u) => u.id);
    // skill: no Agent Skills in this workspace.
    expect(unavailable).toEqual(['task', 'skill']);
    expect(new Set(names(sentTools('openai-chat', second.body)))).toEqual(
      new Set(registry.ids().filter((id) => !unavailable.includes(id))),
    );
    expect(second.body.tools as unknown[]).not.toContainEqual(expect.objectContaining({ defer_loading: true }));
    expect((state.messages.at(-1) as { text: string }).text).toBe('Read: true');
  });

  it(`the budget's edge: definitions that fit exactly defer nothing; one character less defers the least used`, async () => {
    const measure = registerBuiltinTools(createRegistry(), ['read', 'grep', 'glob', 'list']);
    const texts = await Promise.all(
      (await measure.tools()).map(async (t) => {
        const init = await measure.initialized(t.name);
        return JSON.stringify({
          type: 'function',
          function: { name: t.name, description: init.description, parameters: t.schema },
        }).length;
      }),
    );
    const total = texts.reduce((a, b) => a + b, 0);
    const at = registerBuiltinTools(createRegistry(), {
      only: ['read', 'grep', 'glob', 'list'],
      defer: 'auto',
      deferBudgetChars: total,
    });
    expect(flagged(await at.tools())).toEqual([]);
    expect(at.has(TOOL_SEARCH_ID)).toBe(false);

    const past = registerBuiltinTools(createRegistry(), {
      only: ['read', 'grep', 'glob', 'list'],
      defer: 'auto',
      deferBudgetChars: total - 1,
    });
    // Least used first: no calls yet, so the last in order (list) goes first.
    const tools = await past.tools();
    expect(flagged(tools)[0]).toBe('list');
    expect(past.has(TOOL_SEARCH_ID)).toBe(true);

    // Calls change the plan: a used tool is kept, a less used one deferred instead.
    await past.execute('list', { path: ws.dir });
    expect(flagged(await past.tools())).not.toContain('list');
  });
});

describe('deferred by id', () => {
  it('carries extras.defer_loading to LangChain; undeferTools takes it back and tool_search leaves', async () => {
    const registry = registerBuiltinTools(createRegistry(), {
      only: ['read', 'glob', 'webfetch'],
      defer: ['webfetch'],
    });
    expect(registry.has(TOOL_SEARCH_ID)).toBe(true);
    expect(flagged(await registry.tools())).toEqual(['webfetch']);
    expect(() => registerBuiltinTools(registry, { only: ['read'], defer: ['nope'] })).toThrow(/Unknown tool "nope"/);
    undeferTools(registry);
    expect(flagged(await registry.tools())).toEqual([]);
    expect(registry.has(TOOL_SEARCH_ID)).toBe(false);
  });

  it('tool_search keeps to its grant: deferred built-ins outside it are neither listed nor found', async () => {
    const registry = registerBuiltinTools(createRegistry(), {
      only: ['read', 'glob', 'bash', 'webfetch'],
      defer: ['glob', 'bash', 'webfetch'],
    });
    const tools = await registry.tools({ enabledPermissions: ['read'], initCtx: { workingDir: ws.dir } });
    const search = tools.find((t) => t.name === TOOL_SEARCH_ID)!;
    expect(search.description).toContain('glob');
    expect(search.description).not.toMatch(/bash|webfetch/);
    for (const query of ['bash', 'webfetch', 'run a shell command']) {
      const msg = (await search.invoke({
        type: 'tool_call',
        id: `c_${query}`,
        name: TOOL_SEARCH_ID,
        args: { query },
      })) as {
        content: string;
        artifact: { metadata: { found: string[] } };
      };
      expect(msg.artifact.metadata.found).not.toContain('bash');
      expect(msg.artifact.metadata.found).not.toContain('webfetch');
    }
    const found = (await search.invoke({
      type: 'tool_call',
      id: 'c_glob',
      name: TOOL_SEARCH_ID,
      args: { query: 'glob' },
    })) as {
      artifact: { metadata: { found: string[] } };
    };
    expect(found.artifact.metadata.found).toEqual(['glob']);
  });

  it('the mocks refuse deferred tools as the real APIs do: without a search tool, and on Chat Completions', async () => {
    const registry = registerBuiltinTools(createRegistry(), {
      only: ['read', 'glob', 'webfetch'],
      defer: ['webfetch'],
    });
    const tools = await registry.tools();
    const refusals: Record<string, string | undefined> = {};
    for (const api of ['openai-chat', 'openai-responses', 'anthropic'] as Api[]) {
      const m = await mock([{ text: 'ok' }]);
      await expect(chatModel(api, m.url).bindTools!(tools).invoke([new HumanMessage('hi')])).rejects.toThrow();
      refusals[api] = m.requests[0].refused;
    }
    expect(refusals['openai-chat']).toMatch(/Unrecognized request argument supplied: tools\[\d+\]\.defer_loading/);
    expect(refusals['openai-responses']).toMatch(/webfetch.*requires the tool_search tool/);
    expect(refusals.anthropic).toMatch(/webfetch.*no tool search tool/);
  });
});

/** registry: built-ins with webfetch, websearch-free and time deferred; the provider's search finds them. */
async function providerRun(api: 'anthropic' | 'openai-responses', registry: Registry) {
  const id = api === 'anthropic' ? 'toolu_glob' : 'call_glob';
  const parent = await mock([
    { calls: [{ name: 'glob', args: { pattern: '*.md' }, id }] },
    (req) => ({ text: `Found: ${toolResults(req)[0].content.trim()}` }),
  ]);
  const tools = await registry.tools({
    ids: registry.ids().filter((t) => t !== TOOL_SEARCH_ID),
    initCtx: { workingDir: ws.dir },
  });
  // ChatOpenAI moves to the Responses API by itself once a built-in tool (tool_search) is bound.
  const model = chatModel(api === 'anthropic' ? 'anthropic' : 'openai-chat', parent.url);
  const agent = createAgent({ model, tools, middleware: [providerToolSearchMiddleware()] });
  const state = await agent.invoke({ messages: [new HumanMessage('find the markdown files')] });
  return { parent, state, tools };
}

describe("the provider's own search (providerToolSearchMiddleware)", () => {
  for (const api of ['anthropic', 'openai-responses'] as const) {
    it(`${api}: the mock receives the provider's search tool and defer_loading on exactly the deferred tools, and a deferred tool runs`, async () => {
      const registry = registerBuiltinTools(createRegistry(), { defer: 'auto' });
      const { parent, state, tools } = await providerRun(api, registry);
      const deferred = flagged(tools);
      expect(deferred).toContain('glob');
      expect(parent.requests.map((r) => [r.api, r.refused])).toEqual([
        [api, undefined],
        [api, undefined],
      ]);
      const body = parent.requests[0].body;
      expect(serverTools(api, body)).toEqual([
        api === 'anthropic'
          ? { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' }
          : { type: 'tool_search' },
      ]);
      if (api === 'anthropic')
        expect(parent.requests[0].headers['anthropic-beta']).toContain('advanced-tool-use-2025-11-20');
      const sent = sentTools(api, body);
      expect(
        sent
          .filter((t) => t.deferred)
          .map((t) => t.name)
          .sort(),
      ).toEqual([...deferred].sort());
      expect(sent.length).toBe(tools.length);
      // The deferred glob ran through the pipeline; its result went back and the run finished.
      expect((state.messages.at(-1) as { text: string }).text).toBe('Found: notes.md');
    });
  }
});
