/**
 * Deferred tools: a `lazy: true` MCP server's tools, and built-in or user tools deferred with
 * `deferTools` (`registerBuiltinTools(registry, { defer })`, by id or 'auto' under a size budget),
 * are registered in full, but a model is offered only their names (and one-line summaries when they
 * fit TOOL_SEARCH_MAX_DESCRIPTION_CHARS) — in the description of `tool_search` — until a search
 * finds them; `toolsForTurn` then binds the found ones for the rest of the run. Handed to LangChain
 * they carry `extras.defer_loading`, so langchain's `providerToolSearchMiddleware` can defer them to
 * the provider's own search instead. tool_search lists and finds only the deferred tools of its own
 * tool set (its grant) that the policy does not deny.
 * Holds the search tool, the deferral of registered tools and the per-turn selection; no MCP SDK and
 * no langchain (lazy-middleware.ts loads that).
 * Over 400 lines: the search tool, what it may find and what a turn binds are one decision (a tool
 * found must be the tool bound); apart, the grant and policy checks would be made in two places.
 */
import { z } from 'zod';
import { Tool } from '../authoring/tool.js';
import type { Registry, ToolSource } from '../registry/registry.js';
import { providerJsonSchema } from '../schema/index.js';
import { MCP_NAME_SEPARATOR } from './import.js';

/** The id of the search tool a registry gets while it holds deferred tools. */
export const TOOL_SEARCH_ID = 'tool_search';
/** How many tools one `tool_search` call loads unless it asks for another `limit`. */
export const TOOL_SEARCH_DEFAULT_RESULTS = 5;
/** The most tools one `tool_search` call may load. */
export const TOOL_SEARCH_MAX_RESULTS = 20;
/**
 * The longest `tool_search` description: past it the listing gives names only, then as many names
 * as fit and a count of the rest. Equal to the longest description toolbelt sends any provider.
 */
export const TOOL_SEARCH_MAX_DESCRIPTION_CHARS = 4096;

/**
 * The size 'auto' deferral keeps the tool definitions under (characters of the OpenAI Chat
 * definitions: name, description, parameters), counting `tool_search`'s own definition.
 */
export const DEFER_AUTO_BUDGET_CHARS = 12_000;

/** Marks the registry entry as ours, so that a user's own `tool_search` is never replaced or removed. */
const OURS = Symbol.for('agent-toolbelt.tool_search');

/** A deferred tool as `tool_search` lists and searches it. */
export interface DeferredTool {
  /** The registry id (what the model calls). */
  id: string;
  server: string;
  /** The first line of its description (at most 120 characters). */
  summary: string;
  /** Its whole description. */
  description: string;
}

/** A tool source holding deferred tools (an MCP connection with `lazy: true`). */
export interface DeferringSource extends ToolSource {
  deferredTools(): DeferredTool[];
}

/** What `tool_search` reports in `metadata` (and so on the ToolMessage's artifact). */
export interface ToolSearchMetadata extends Tool.Metadata {
  toolSearch: true;
  query: string;
  /** The ids this call loaded. */
  found: string[];
  /** How many tools are deferred in all. */
  deferred: number;
}

/**
 * Every deferred tool of `registry`, in the order its sources registered them. A deferred built-in
 * or user tool's summary and description are known once a tool set has initialised it (empty before).
 */
export function deferredTools(registry: Registry): DeferredTool[] {
  return registry
    .sources()
    .flatMap((s) => (isDeferring(s) ? s.deferredTools() : []))
    .filter((t) => registry.has(t.id));
}

/** The deferred tools as a tool set initialised under `initCtx` describes them. */
async function catalogOf(registry: Registry, initCtx: Tool.InitContext): Promise<DeferredTool[]> {
  const out: DeferredTool[] = [];
  for (const s of registry.sources()) {
    if (s instanceof RegistryDeferral) out.push(...(await s.describe(initCtx)));
    else if (isDeferring(s)) out.push(...s.deferredTools().filter((t) => registry.has(t.id)));
  }
  return out;
}

/** What `deferTools` takes: ids, or `'auto'` (least-used first, until the definitions fit `budgetChars`). */
export type DeferSpec = readonly string[] | 'auto';

/** Options of `deferTools`. */
export interface DeferOptions {
  /** For 'auto': the budget (default DEFER_AUTO_BUDGET_CHARS). */
  budgetChars?: number;
}

/**
 * Defers registered tools (built-ins or your own) like a lazy MCP server's: offered through
 * `tool_search` (or the provider's own search) until found. `ids` are deferred as given; with
 * `'auto'`, the tools of `candidates` (default: every registered tool; listed most used first) are
 * deferred least-used first — fewest calls in `registry.stats()`, then the later in `candidates` —
 * each time a tool set is handed out, until its definitions and tool_search's fit `budgetChars`;
 * nothing is deferred while they fit. Call again to add ids; `undeferTools` takes them back.
 */
export function deferTools(
  registry: Registry,
  spec: DeferSpec,
  options: DeferOptions & { candidates?: readonly string[] } = {},
): void {
  const deferral = registryDeferral(registry);
  if (spec === 'auto') {
    deferral.auto = {
      budgetChars: options.budgetChars ?? DEFER_AUTO_BUDGET_CHARS,
      candidates: options.candidates,
    };
  } else {
    for (const id of spec) {
      if (!registry.has(id)) throw new Error(registry.unknownToolMessage(id));
      if (id === TOOL_SEARCH_ID)
        throw new Error(`"${TOOL_SEARCH_ID}" cannot be deferred: it is how deferred tools are found.`);
      deferral.fixed.add(id);
    }
  }
  syncToolSearch(registry);
}

/** Takes tools back from deferral (all of them, and 'auto', when `ids` is absent). */
export function undeferTools(registry: Registry, ids?: readonly string[]): void {
  const deferral = registry.sources().find((s): s is RegistryDeferral => s instanceof RegistryDeferral);
  if (!deferral) return;
  if (ids) for (const id of ids) deferral.fixed.delete(id);
  else {
    deferral.fixed.clear();
    deferral.auto = undefined;
    deferral.planned.clear();
  }
  syncToolSearch(registry);
}

function registryDeferral(registry: Registry): RegistryDeferral {
  let deferral = registry.sources().find((s): s is RegistryDeferral => s instanceof RegistryDeferral);
  if (!deferral) registry.adopt((deferral = new RegistryDeferral(registry)));
  return deferral;
}

/** The characters of one tool's OpenAI Chat definition (what the 'auto' budget counts). */
function definitionChars(tool: Tool.Initialized): number {
  return JSON.stringify({
    type: 'function',
    function: { name: tool.id, description: tool.description, parameters: providerJsonSchema(tool) },
  }).length;
}

/** Built-in and user tools deferred in one registry: a tool source the registry owns. */
class RegistryDeferral implements DeferringSource {
  readonly kind = 'defer';
  readonly name = 'deferred';
  /** Deferred by id. */
  readonly fixed = new Set<string>();
  /** Deferred by the last 'auto' plan. */
  readonly planned = new Set<string>();
  auto?: { budgetChars: number; candidates?: readonly string[] };
  /** Descriptions as the last tool set initialised them. */
  private readonly described = new Map<string, string>();

  constructor(private readonly registry: Registry) {}

  private ids(): string[] {
    return this.registry.ids().filter((id) => this.fixed.has(id) || this.planned.has(id));
  }

  deferredTools(): DeferredTool[] {
    return this.ids().map((id) => entry(id, this.described.get(id) ?? ''));
  }

  async describe(initCtx: Tool.InitContext): Promise<DeferredTool[]> {
    return Promise.all(
      this.ids().map(async (id) => {
        const description = (await this.registry.initialized(id, initCtx)).description;
        this.described.set(id, description);
        return entry(id, description);
      }),
    );
  }

  /** Before a tool set is handed out: the 'auto' plan for it. */
  async prepare(initCtx: Tool.InitContext): Promise<void> {
    if (!this.auto) return;
    const { budgetChars, candidates } = this.auto;
    const registry = this.registry;
    const others = registry.sources().flatMap((s) => (s !== this && isDeferring(s) ? s.deferredTools() : []));
    const otherIds = new Set(others.map((t) => t.id));
    const candidatesHere = registry.ids().filter((id) => id !== TOOL_SEARCH_ID && !otherIds.has(id));
    const tools = new Map(
      (await Promise.all(candidatesHere.map((id) => registry.initialized(id, initCtx)))).map((t) => [t.id, t]),
    );
    // A tool that cannot run under initCtx is not offered at all (registry.tools()), so neither planned nor counted.
    const offered = candidatesHere.filter((id) => !tools.get(id)!.unavailable);
    const deferred: DeferredTool[] = [
      ...others,
      ...offered.filter((id) => this.fixed.has(id)).map((id) => entry(id, tools.get(id)!.description)),
    ];
    const eager = offered.filter((id) => !this.fixed.has(id));
    const size = new Map(eager.map((id) => [id, definitionChars(tools.get(id)!)]));
    let total = eager.reduce((n, id) => n + size.get(id)!, 0);
    const over = () => total + (deferred.length ? searchChars(deferred) : 0) > budgetChars;
    this.planned.clear();
    // Least used first: fewest calls, then the later in `candidates` (or registration) order.
    const rank = new Map((candidates ?? eager).map((id, i) => [id, i]));
    const calls = (id: string) => registry.stats(id)?.calls ?? 0;
    const queue = eager.filter((id) => rank.has(id)).sort((a, b) => calls(a) - calls(b) || rank.get(b)! - rank.get(a)!);
    for (const id of queue) {
      if (!over()) break;
      this.planned.add(id);
      deferred.push(entry(id, tools.get(id)!.description));
      total -= size.get(id)!;
    }
    syncToolSearch(registry);
  }

  close(): Promise<void> {
    this.fixed.clear();
    this.planned.clear();
    this.auto = undefined;
    this.registry.release(this);
    syncToolSearch(this.registry);
    return Promise.resolve();
  }
}

/** The characters of tool_search's OpenAI Chat definition while `deferred` are deferred. */
function searchChars(deferred: readonly DeferredTool[]): number {
  const schema = providerJsonSchema({ id: TOOL_SEARCH_ID, parameters: (parameters ??= searchParameters()) });
  return JSON.stringify({
    type: 'function',
    function: { name: TOOL_SEARCH_ID, description: describeCatalog(deferred), parameters: schema },
  }).length;
}

function entry(id: string, description: string): DeferredTool {
  const first = (description.trim().split(/\n|(?<=\.)\s/)[0] ?? '').trim();
  return { id, server: '', summary: first.length > 120 ? `${first.slice(0, 117)}...` : first, description };
}

/** Registers `tool_search` while `registry` holds deferred tools, and removes it when none are left. */
export function syncToolSearch(registry: Registry): void {
  const wanted = deferredTools(registry).length > 0;
  const existing = registry.get(TOOL_SEARCH_ID);
  const ours = !!existing && OURS in existing.info;
  if (wanted && !existing) registry.register(toolSearchTool(registry));
  else if (!wanted && ours) registry.unregister(TOOL_SEARCH_ID);
}

/**
 * The tools to offer a model for its next call: `tools` without the deferred ones that no
 * `tool_search` result in `messages` has loaded yet. Use it where you bind tools per call
 * (`lazyToolsMiddleware` does this for `createAgent`).
 */
export function toolsForTurn<T>(registry: Registry, tools: readonly T[], messages: readonly unknown[]): T[] {
  const deferred = new Set(deferredTools(registry).map((t) => t.id));
  if (!deferred.size) return [...tools];
  const found = foundIn(messages);
  return tools.filter((t) => {
    const name = (t as { name?: unknown } | null)?.name;
    return typeof name !== 'string' || !deferred.has(name) || found.has(name);
  });
}

/** The ids every `tool_search` result among `messages` loaded. */
export function foundIn(messages: readonly unknown[]): Set<string> {
  const found = new Set<string>();
  for (const m of messages) {
    const meta = (m as { artifact?: { metadata?: Partial<ToolSearchMetadata> } } | null)?.artifact?.metadata;
    if (meta?.toolSearch === true && Array.isArray(meta.found)) {
      for (const id of meta.found) if (typeof id === 'string') found.add(id);
    }
  }
  return found;
}

/** tool_search's arguments, built on first use (no zod work at import). */
const searchParameters = () =>
  z.object({
    query: z
      .string()
      .min(1)
      .describe('Words describing what you need (e.g. "list issues with labels"), or a tool name from the list.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(TOOL_SEARCH_MAX_RESULTS)
      .optional()
      .describe(`How many tools to load at most (default ${TOOL_SEARCH_DEFAULT_RESULTS}).`),
  });
type SearchParameters = ReturnType<typeof searchParameters>;
let parameters: SearchParameters | undefined;

/**
 * The deferred tools `tool_search` may show and load in `toolSet` (absent: a program's call, which
 * may run any tool): those the set holds and the registry's policy does not deny outright.
 */
async function availableTools(
  registry: Registry,
  toolSet: Tool.ToolSet | undefined,
  initCtx: Tool.InitContext,
): Promise<DeferredTool[]> {
  const catalog = (await catalogOf(registry, initCtx)).filter((t) => !toolSet || toolSet.has(t.id));
  const policy = registry.policy;
  if (!policy || !catalog.length) return catalog;
  // An MCP tool's call is judged by its id, permissions and server alone (policy/checks.ts), never
  // by its arguments: the decision for no arguments is the decision for every call.
  const env = registry.policyEnvironment(initCtx);
  const denied = await Promise.all(catalog.map(async (t) => (await policy.decide(t.id, {}, env)).action === 'deny'));
  return catalog.filter((_, i) => !denied[i]);
}

/**
 * The `tool_search` tool of `registry`, initialised once per tool set: its description lists the
 * deferred tools that set may load as they are at init; a search looks at them as they are then.
 */
function toolSearchTool(registry: Registry): Tool.Info {
  const info = Tool.define<SearchParameters, ToolSearchMetadata>(
    { id: TOOL_SEARCH_ID, permissions: { required: [] }, danger: 'safe', perToolSet: true },
    async (initCtx) => ({
      description: describeCatalog(await availableTools(registry, initCtx.toolSet, initCtx)),
      parameters: (parameters ??= searchParameters()),
      async execute(args) {
        const toolSet = initCtx.toolSet;
        const catalog = await availableTools(registry, toolSet, initCtx);
        // A whole tool id is a lookup: when no tool it may load has that id, nothing is loaded (not
        // tools sharing a word with it), so an id outside the grant gets what an unknown id gets.
        const id = args.query.trim();
        const lookup = id.includes(MCP_NAME_SEPARATOR) && Tool.ID_PATTERN.test(id);
        const missing = lookup && !catalog.some((t) => t.id.toLowerCase() === id.toLowerCase());
        const matches = missing ? [] : search(catalog, args.query, args.limit ?? TOOL_SEARCH_DEFAULT_RESULTS);
        const metadata: ToolSearchMetadata = {
          toolSearch: true,
          query: args.query,
          found: matches.map((t) => t.id),
          deferred: catalog.length,
        };
        const loaded = missing && (toolSet ? toolSet.has(id) : registry.has(id)) && !isDeferred(registry, id);
        if (loaded) {
          return { title: `${id} is loaded`, metadata, output: `Tool "${id}" is loaded already: call it directly.` };
        }
        if (!matches.length) {
          return {
            title: `no tool matches "${args.query}"`,
            metadata,
            // The same words whether a tool of that name exists outside the grant or not at all.
            output:
              `No tool available under this grant matches "${args.query}" (${catalog.length} can be loaded). ` +
              "Search again with one distinctive word, or with a tool name from this tool's description; " +
              'a tool the granted permissions or the policy exclude cannot be loaded.',
          };
        }
        const lines = matches.map((t) => `- ${t.id}: ${t.description}`);
        return {
          title: `loaded ${matches.length} tool${matches.length > 1 ? 's' : ''}`,
          metadata,
          output:
            `Loaded ${matches.length} of ${catalog.length} deferred tools for "${args.query}". ` +
            `They are callable now with their full parameters:\n${lines.join('\n')}`,
        };
      },
    }),
  );
  return Object.assign(info, { [OURS]: true });
}

const INTRO =
  'Loads tools that are available but not loaded yet (listed below). ' +
  'Before calling one of them, search for it by name or by words describing the task; ' +
  'the tools found can be called with their full parameters from then on.\n\n';

/**
 * tool_search's description, at most TOOL_SEARCH_MAX_DESCRIPTION_CHARS long: every tool with its
 * summary when that fits, else names only — all of them, or as many as fit and a count of the rest
 * (search finds those as well as the listed ones).
 */
function describeCatalog(catalog: readonly DeferredTool[]): string {
  const n = catalog.length;
  if (!n) return `${INTRO}Not loaded yet: none.`;
  const full = `${INTRO}Not loaded yet (${n}):\n${catalog.map((t) => `- ${t.id}: ${t.summary}`).join('\n')}`;
  if (full.length <= TOOL_SEARCH_MAX_DESCRIPTION_CHARS) return full;
  const head = `${INTRO}Not loaded yet (${n}), by name only (search one to see what it does):\n`;
  const names = `${head}${catalog.map((t) => t.id).join(', ')}`;
  if (names.length <= TOOL_SEARCH_MAX_DESCRIPTION_CHARS) return names;
  const rest = (left: number, listed: number) => `${listed ? ', and' : 'And'} ${left} more: search by keyword.`;
  // Names while they and the count after them fit (the last name never does: all of them did not).
  let text = head;
  let i = 0;
  for (; i < n; i++) {
    const next = `${text}${i ? ', ' : ''}${catalog[i].id}`;
    if ((next + rest(n - i - 1, i + 1)).length > TOOL_SEARCH_MAX_DESCRIPTION_CHARS) break;
    text = next;
  }
  return text + rest(n - i, i);
}

/**
 * The best `limit` matches of `query`: an exact id (or server tool name) first, then by how many
 * query words occur in the id (weighted) and in the description; ties keep catalog order.
 */
function search(catalog: DeferredTool[], query: string, limit: number): DeferredTool[] {
  const q = query.trim().toLowerCase();
  const words = q.split(/[^a-z0-9]+/).filter((w) => w.length > 1 || /\d/.test(w));
  const scored = catalog.map((t, order) => {
    const id = t.id.toLowerCase();
    const text = t.description.toLowerCase();
    let score = id === q || id.endsWith(`__${q}`) ? 1000 : 0;
    for (const w of words) {
      if (new RegExp(`(^|[^a-z0-9])${w}($|[^a-z0-9])`).test(id)) score += 10;
      else if (id.includes(w)) score += 3;
      if (text.includes(w)) score += 1;
    }
    return { t, score, order };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, limit)
    .map((s) => s.t);
}

function isDeferred(registry: Registry, id: string): boolean {
  return deferredTools(registry).some((t) => t.id === id);
}

function isDeferring(source: ToolSource): source is DeferringSource {
  return typeof (source as Partial<DeferringSource>).deferredTools === 'function';
}
