/**
 * Lazy (deferred) MCP tools: a `lazy: true` server's tools are registered in full, but a model is
 * offered only their names and one-line summaries — in the description of `tool_search` — until a
 * search finds them; `toolsForTurn` then binds the found ones for the rest of the run. Holds the
 * search tool and the per-turn selection; no MCP SDK and no langchain (lazy-middleware.ts loads that).
 */
import { z } from 'zod';
import { Tool } from '../tool.js';
import type { ToolRegistryImpl, ToolSource } from '../registry.js';

/** The id of the search tool a registry gets while it holds deferred tools. */
export const TOOL_SEARCH_ID = 'tool_search';
/** How many tools one `tool_search` call loads unless it asks for another `limit`. */
export const TOOL_SEARCH_DEFAULT_RESULTS = 5;
/** The most tools one `tool_search` call may load. */
export const TOOL_SEARCH_MAX_RESULTS = 20;

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

/** Every deferred tool of `registry`, in the order its sources registered them. */
export function deferredTools(registry: ToolRegistryImpl): DeferredTool[] {
  return registry
    .sources()
    .flatMap((s) => (isDeferring(s) ? s.deferredTools() : []))
    .filter((t) => registry.has(t.id));
}

/** Registers `tool_search` while `registry` holds deferred tools, and removes it when none are left. */
export function syncToolSearch(registry: ToolRegistryImpl): void {
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
export function toolsForTurn<T>(registry: ToolRegistryImpl, tools: readonly T[], messages: readonly unknown[]): T[] {
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

/** The `tool_search` tool of `registry`: its description lists the deferred tools as they are at init. */
function toolSearchTool(registry: ToolRegistryImpl): Tool.Info {
  const info = Tool.define<SearchParameters, ToolSearchMetadata>(
    { id: TOOL_SEARCH_ID, permissions: { required: [] }, danger: 'safe' },
    () => ({
      description: describeCatalog(deferredTools(registry)),
      parameters: (parameters ??= searchParameters()),
      async execute(args) {
        const catalog = deferredTools(registry);
        const matches = search(catalog, args.query, args.limit ?? TOOL_SEARCH_DEFAULT_RESULTS);
        const metadata: ToolSearchMetadata = {
          toolSearch: true,
          query: args.query,
          found: matches.map((t) => t.id),
          deferred: catalog.length,
        };
        if (!matches.length) {
          return {
            title: `no tool matches "${args.query}"`,
            metadata,
            output:
              `No deferred tool matches "${args.query}" (${catalog.length} deferred). ` +
              "Search again with one distinctive word, or with a tool name from this tool's description.",
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

function describeCatalog(catalog: DeferredTool[]): string {
  const lines = catalog.map((t) => `- ${t.id}: ${t.summary}`);
  return (
    'Loads tools that are available but not loaded yet (listed below by name and summary). ' +
    'Before calling one of them, search for it by name or by words describing the task; ' +
    'the tools found can be called with their full parameters from then on.\n\n' +
    `Not loaded yet (${catalog.length}):\n${lines.join('\n')}`
  );
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

function isDeferring(source: ToolSource): source is DeferringSource {
  return typeof (source as Partial<DeferringSource>).deferredTools === 'function';
}
