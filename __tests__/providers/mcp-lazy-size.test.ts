/**
 * tool_search's description stays within TOOL_SEARCH_MAX_DESCRIPTION_CHARS however many tools are
 * deferred: every tool with its summary while that fits (at the edge exactly), then names only,
 * then as many names as fit and a count of the rest — which search still finds. Over real stdio
 * (the fixture server, its tools added at runtime to land on the edge), through the LangChain
 * adapter, and sent by every provider class to its mock API under toolbelt's schema rules.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HumanMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { createRegistry, connectMcp, deferredTools, type McpServerConfig, type Registry } from '../../src/index.js';
import { TOOL_SEARCH_ID, TOOL_SEARCH_MAX_DESCRIPTION_CHARS as MAX } from '../../src/constants.js';
import { startMockProvider } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { sentTools, toolbeltViolations } from './subsets.js';
import { callTool } from '../support/tool-call.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, '..', 'fixtures', 'mcp-fixture-server.mjs');
const MORE = /, and (\d+) more: search by keyword\.$/;

const registries: Registry[] = [];
afterAll(() => Promise.all(registries.map((r) => r.dispose())));

/** A registry with the fixture server `name` imported lazily, started with `args`. */
async function lazyRegistry(name: string, args: string[]): Promise<Registry> {
  const r = createRegistry();
  registries.push(r);
  const server: McpServerConfig = { name, transport: 'stdio', command: process.execPath, args: [FIXTURE, ...args] };
  await connectMcp(r, { servers: [{ ...server, lazy: true }] });
  return r;
}

const searchOf = (tools: StructuredToolInterface[]) => tools.find((t) => t.name === TOOL_SEARCH_ID)!;
/** tool_search's description in a fresh tool set of `r`. */
const described = async (r: Registry) => searchOf(await r.tools()).description;

/** Runs one of the fixture's list-changing tools and waits until the registry holds the new list. */
async function changeTools(r: Registry, tool: 'add_tool' | 'remove_tool', args: Record<string, string>) {
  const changed = new Promise<void>((resolve) => {
    const off = r.on('mcp-tools', () => {
      off();
      resolve();
    });
  });
  const res = await r.execute(`live__${tool}`, args);
  expect(res.success).toBe(true);
  await changed;
}

/** The ids a names-only listing names (the line after the heading, before any count of the rest). */
function listedNames(description: string): string[] {
  const line = description.split('\n').at(-1)!.replace(MORE, '');
  return line.split(', ');
}

/** Sends `tools` through each provider class to its mock: accepted, and within toolbelt's rules. */
async function expectProvidersAccept(tools: StructuredToolInterface[]): Promise<void> {
  for (const api of APIS) {
    const mock = await startMockProvider([{ text: 'ok' }]);
    try {
      await chatModel(api, mock.url).bindTools!(tools).invoke([new HumanMessage('hi')]);
      expect({ api, refused: mock.requests[0].refused }).toEqual({ api, refused: undefined });
      const sent = sentTools(api, mock.requests[0].body);
      expect(sent.map((t) => t.name)).toEqual(tools.map((t) => t.name));
      expect(sent.flatMap((t) => toolbeltViolations(t))).toEqual([]);
    } finally {
      await mock.close();
    }
  }
}

describe(`tool_search's description is at most TOOL_SEARCH_MAX_DESCRIPTION_CHARS (${MAX})`, () => {
  it('at the edge every tool keeps its summary; one character past it, names only, all of them', async () => {
    const r = await lazyRegistry('live', ['--generated', '50']);
    let text = await described(r);
    expect(text).toContain('- live__echo: Echo text back');
    expect(text.length).toBeLessThan(MAX - 130); // the fixture leaves room to walk up to the edge
    // Tools with long summaries until the listing is 73-130 characters short of the edge.
    for (let i = 0; MAX - text.length > 130; i++) {
      await changeTools(r, 'add_tool', {
        name: `pad_${i}`,
        description: 'p'.repeat(Math.min(100, MAX - text.length - 90)),
      });
      text = await described(r);
      expect(text).toContain(`- live__pad_${i}: ppp`);
    }
    // What one more tool costs besides its summary, then the summary that lands exactly on the edge.
    await changeTools(r, 'add_tool', { name: 'edge_a', description: 'e' });
    const line = (await described(r)).length - text.length - 1;
    await changeTools(r, 'remove_tool', { name: 'edge_a' });
    const fill = MAX - text.length - line;
    expect(fill).toBeGreaterThan(0);
    expect(fill).toBeLessThan(119); // one more character still fits a summary (they are cut at 120)

    await changeTools(r, 'add_tool', { name: 'edge_b', description: 'e'.repeat(fill) });
    const tools = await r.tools();
    const at = searchOf(tools).description;
    expect(at.length).toBe(MAX);
    for (const t of deferredTools(r)) expect(at).toContain(`\n- ${t.id}: ${t.summary}`);
    await expectProvidersAccept([searchOf(tools)]);

    await changeTools(r, 'remove_tool', { name: 'edge_b' });
    await changeTools(r, 'add_tool', { name: 'edge_c', description: 'e'.repeat(fill + 1) });
    const past = await described(r);
    expect(past.length).toBeLessThanOrEqual(MAX);
    expect(past).not.toContain('Echo text back');
    expect(past).toContain(`Not loaded yet (${deferredTools(r).length}), by name only`);
    expect(listedNames(past)).toEqual(deferredTools(r).map((t) => t.id));
  }, 120_000);

  it('names only: at the edge all of them; past it, as many as fit and a count of the rest, which search finds', async () => {
    const r = await lazyRegistry('live', ['--generated', '250']);
    let text = await described(r);
    expect(text).toContain('by name only');
    expect(text).not.toMatch(MORE);
    expect(text.length).toBeLessThan(MAX - 60);
    // Tools with long names until the listing is 30-60 characters short of the edge.
    for (let i = 0; MAX - text.length > 60; i++) {
      const length = Math.min(50, MAX - text.length - 38);
      await changeTools(r, 'add_tool', { name: `${'n'.repeat(length - String(i).length)}${i}` });
      text = await described(r);
    }
    await changeTools(r, 'add_tool', { name: 'x' });
    const separator = (await described(r)).length - text.length - 1; // ", live__"
    await changeTools(r, 'remove_tool', { name: 'x' });
    const fill = MAX - text.length - separator;

    await changeTools(r, 'add_tool', { name: 'y'.repeat(fill) });
    const tools = await r.tools();
    const at = searchOf(tools).description;
    expect(at.length).toBe(MAX);
    expect(at).not.toMatch(MORE);
    expect(listedNames(at)).toEqual(deferredTools(r).map((t) => t.id));
    await expectProvidersAccept([searchOf(tools)]);

    await changeTools(r, 'remove_tool', { name: 'y'.repeat(fill) });
    await changeTools(r, 'add_tool', { name: 'z'.repeat(fill + 1) });
    const past = searchOf(await r.tools());
    expect(past.description.length).toBeLessThanOrEqual(MAX);
    const rest = Number(MORE.exec(past.description)?.[1]);
    const all = deferredTools(r).map((t) => t.id);
    const listed = listedNames(past.description);
    expect(rest).toBeGreaterThan(0);
    expect(listed).toEqual(all.slice(0, all.length - rest));
    const unlisted = `live__${'z'.repeat(fill + 1)}`;
    expect(listed).not.toContain(unlisted);
    const msg = await callTool([past], TOOL_SEARCH_ID, { query: unlisted });
    expect((msg.result.metadata.found as string[])[0]).toBe(unlisted);
  }, 120_000);

  it('1,000 deferred tools: the names that fit and a count; every tool still found by name; providers accept it', async () => {
    const r = await lazyRegistry('gh', ['--only-echo', '--generated', '999']);
    const tools = await r.tools();
    const search = searchOf(tools);
    expect(search.description.length).toBeLessThanOrEqual(MAX);
    expect(search.description).toContain('Not loaded yet (1000), by name only');
    const rest = Number(MORE.exec(search.description)?.[1]);
    const listed = listedNames(search.description);
    expect(listed.length + rest).toBe(1000);
    expect(listed.slice(0, 3)).toEqual(['gh__echo', 'gh__op_0', 'gh__op_1']);
    // The last tool is not listed, and a search by its name or by its words loads it.
    expect(listed).not.toContain('gh__op_998');
    const byName = await callTool(tools, TOOL_SEARCH_ID, { query: 'gh__op_998' });
    expect((byName.result.metadata.found as string[])[0]).toBe('gh__op_998');
    const byWords = await callTool(tools, TOOL_SEARCH_ID, { query: 'operation 998' });
    expect((byWords.result.metadata.found as string[])[0]).toBe('gh__op_998');
    await expectProvidersAccept([search]);
  }, 120_000);
});
