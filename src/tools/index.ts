/**
 * The list of built-in tools: each tool's id, permissions and danger as its own file declares
 * them, and how to load that file. A tool's module is imported on its first `init`, so importing
 * the package does not load 26 tools and their dependencies (a drift test checks this list against
 * each file's `Tool.define`).
 * Must not decide anything about a tool but its place in the list.
 * Over 400 lines: one row per built-in tool, nothing else; a table is read whole.
 */
import type { Tool } from '../authoring/tool.js';
import type { ToolPermission, ToolPermissions } from '../authoring/permissions.js';
import type { Registry } from '../registry/registry.js';
import { descriptionBeside } from '../authoring/description.js';
import { webSearchUnregisteredReason } from './web/web-search-config.js';
import { EDIT_TOOL_IDS, offersEditTool, parseEditsMode, type EditsMode } from './patch/models.js';
import { deferTools, type DeferSpec } from '../mcp/deferred.js';
import { checkOptions } from '../schema/options.js';
import { builtinToolsOptionsSchema } from './builtin-options.js';
// The tool files that declare typed init options on Tool.InitContext. Type-only re-exports keep
// their declarations in the published .d.ts without loading the modules at run time.
export type {} from '../net/ssrf.js';
export type {} from './web/http-request.js';
export type {} from './files/search-common.js';
export type {} from './grep/grep.js';
export type {} from './files/list.js';
export type {} from './todo/store.js';
export type {} from './task/task.js';
export type {} from './memory/store.js';
export type {} from './web/web-search-config.js';
export type {} from '../skills/catalog.js';
export type {} from '../lsp/config.js';

/** A built-in tool as the registry receives it (what its own file declares). */
export interface BuiltinTool {
  info: Tool.Info;
  permissions: ToolPermissions;
  descriptionPath: string;
  /** Why `registerBuiltinTools` leaves the tool out unless `only` names it (web_search without a backend). */
  unregisteredReason?: () => string | undefined;
}

/** One line of the list: what the tool's file declares, and how to import the Info it exports. */
interface Entry {
  id: string;
  required: ToolPermission[];
  danger: Tool.DangerLevel;
  /** The family folder that holds the tool's module and its `.txt`. */
  family: string;
  load: () => Promise<Tool.Info>;
  /**
   * The tool's module over `initCtx.backend` (src/tools/<family>/backend...): used instead of `load`
   * when an init context carries a backend. A file tool without one is not offered on a backend.
   */
  onBackend?: () => Promise<Tool.Info>;
}

/** Every built-in tool, in the order agents see them. */
const ENTRIES: Entry[] = [
  {
    id: 'read',
    required: ['read'],
    danger: 'safe',
    family: 'files',
    load: async () => (await import('./files/read.js')).ReadTool,
    onBackend: async () => (await import('./files/backend/read.js')).BackendReadTool,
  },
  {
    id: 'write',
    required: ['write'],
    danger: 'moderate',
    family: 'files',
    load: async () => (await import('./files/write.js')).WriteTool,
    onBackend: async () => (await import('./files/backend/write.js')).BackendWriteTool,
  },
  {
    id: 'edit',
    required: ['write'],
    danger: 'moderate',
    family: 'files',
    load: async () => (await import('./files/edit.js')).EditTool,
    onBackend: async () => (await import('./files/backend/edit.js')).BackendEditTool,
  },
  {
    id: 'apply_patch',
    required: ['write'],
    danger: 'moderate',
    family: 'patch',
    load: async () => (await import('./patch/apply-patch.js')).ApplyPatchTool,
    onBackend: async () => (await import('./files/backend/apply-patch.js')).BackendApplyPatchTool,
  },
  {
    id: 'move',
    required: ['write'],
    danger: 'moderate',
    family: 'files',
    load: async () => (await import('./files/move.js')).MoveTool,
    onBackend: async () => (await import('./files/backend/move.js')).BackendMoveTool,
  },
  {
    id: 'delete',
    required: ['write'],
    danger: 'dangerous',
    family: 'files',
    load: async () => (await import('./files/delete.js')).DeleteTool,
    onBackend: async () => (await import('./files/backend/delete.js')).BackendDeleteTool,
  },
  {
    id: 'undo_file',
    required: ['write'],
    danger: 'moderate',
    family: 'files',
    load: async () => (await import('./files/undo.js')).UndoFileTool,
    onBackend: async () => (await import('./files/backend/undo.js')).BackendUndoFileTool,
  },
  {
    id: 'undo_turn',
    required: ['write'],
    danger: 'moderate',
    family: 'files',
    load: async () => (await import('./files/undo.js')).UndoTurnTool,
    onBackend: async () => (await import('./files/backend/undo.js')).BackendUndoTurnTool,
  },
  {
    id: 'file_info',
    required: ['read'],
    danger: 'safe',
    family: 'files',
    load: async () => (await import('./files/file-info.js')).FileInfoTool,
    onBackend: async () => (await import('./files/backend/file-info.js')).BackendFileInfoTool,
  },
  {
    id: 'list',
    required: ['read'],
    danger: 'safe',
    family: 'files',
    load: async () => (await import('./files/list.js')).ListTool,
    onBackend: async () => (await import('./files/backend/list.js')).BackendListTool,
  },
  {
    id: 'glob',
    required: ['read'],
    danger: 'safe',
    family: 'files',
    load: async () => (await import('./files/glob.js')).GlobTool,
    onBackend: async () => (await import('./files/backend/glob.js')).BackendGlobTool,
  },
  {
    id: 'grep',
    required: ['read'],
    danger: 'safe',
    family: 'grep',
    load: async () => (await import('./grep/grep.js')).GrepTool,
    onBackend: async () => (await import('./grep/backend.js')).BackendGrepTool,
  },
  {
    id: 'bash',
    required: ['execute'],
    danger: 'dangerous',
    family: 'bash',
    load: async () => (await import('./bash/bash.js')).BashTool,
    onBackend: async () => (await import('./bash/backend.js')).BackendBashTool,
  },
  {
    id: 'bash_output',
    required: ['execute'],
    danger: 'safe',
    family: 'bash',
    load: async () => (await import('./bash/jobs.js')).BashOutputTool,
    onBackend: async () => (await import('./bash/backend.js')).BackendBashOutputTool,
  },
  {
    id: 'bash_kill',
    required: ['execute'],
    danger: 'moderate',
    family: 'bash',
    load: async () => (await import('./bash/jobs.js')).BashKillTool,
    onBackend: async () => (await import('./bash/backend.js')).BackendBashKillTool,
  },
  {
    id: 'task',
    required: ['execute'],
    danger: 'dangerous',
    family: 'task',
    load: async () => (await import('./task/task.js')).TaskTool,
  },
  {
    id: 'webfetch',
    required: ['network'],
    danger: 'moderate',
    family: 'web',
    load: async () => (await import('./web/webfetch.js')).WebfetchTool,
  },
  {
    id: 'http_request',
    required: ['network'],
    danger: 'moderate',
    family: 'web',
    load: async () => (await import('./web/http-request.js')).HttpRequestTool,
  },
  {
    id: 'todowrite',
    required: ['read'],
    danger: 'safe',
    family: 'todo',
    load: async () => (await import('./todo/todo.js')).TodoWriteTool,
  },
  {
    id: 'todoread',
    required: ['read'],
    danger: 'safe',
    family: 'todo',
    load: async () => (await import('./todo/todo.js')).TodoReadTool,
  },
  {
    id: 'current_time',
    required: [],
    danger: 'safe',
    family: 'time',
    load: async () => (await import('./time/current-time.js')).CurrentTimeTool,
  },
  {
    id: 'memory_list',
    required: ['memory'],
    danger: 'safe',
    family: 'memory',
    load: async () => (await import('./memory/memory.js')).MemoryListTool,
  },
  {
    id: 'memory_read',
    required: ['memory'],
    danger: 'safe',
    family: 'memory',
    load: async () => (await import('./memory/memory.js')).MemoryReadTool,
  },
  {
    id: 'memory_write',
    required: ['memory'],
    danger: 'moderate',
    family: 'memory',
    load: async () => (await import('./memory/memory.js')).MemoryWriteTool,
  },
  {
    id: 'memory_patch',
    required: ['memory'],
    danger: 'moderate',
    family: 'memory',
    load: async () => (await import('./memory/memory.js')).MemoryPatchTool,
  },
  {
    id: 'memory_append',
    required: ['memory'],
    danger: 'moderate',
    family: 'memory',
    load: async () => (await import('./memory/memory.js')).MemoryAppendTool,
  },
  {
    id: 'web_search',
    required: ['network'],
    danger: 'safe',
    family: 'web',
    load: async () => (await import('./web/web-search.js')).WebSearchTool,
  },
  {
    id: 'skill',
    required: ['read'],
    danger: 'safe',
    family: 'skill',
    load: async () => (await import('./skill/skill.js')).SkillTool,
  },
  {
    id: 'lsp',
    required: ['read'],
    danger: 'safe',
    family: 'lsp',
    load: async () => (await import('./lsp/lsp.js')).LspTool,
    onBackend: async () => (await import('./lsp/backend.js')).BackendLspTool,
  },
];

/** Tools registered only when configured: the reason each is left out, or undefined. */
const CONDITIONS: Record<string, () => string | undefined> = { web_search: () => webSearchUnregisteredReason() };

/** The tail of the tool-module imports: one at a time, so two first inits never link the same module at once. */
let importing: Promise<unknown> = Promise.resolve();
const loadedInfos = new Map<Entry, Promise<Tool.Info>>();

const loadedBackendInfos = new Map<Entry, Promise<Tool.Info>>();

/** The Info `entry`'s module exports, imported once (after any import already under way). */
function load(entry: Entry, onBackend = false): Promise<Tool.Info> {
  const cache = onBackend ? loadedBackendInfos : loadedInfos;
  const loader = onBackend ? entry.onBackend! : entry.load;
  let info = cache.get(entry);
  if (!info) {
    info = importing.then(loader, loader);
    importing = info.catch(() => undefined);
    cache.set(entry, info);
  }
  return info;
}

/**
 * A file tool with no backend version, asked for over a backend: it would act on this host's files,
 * so it is not offered; it says why. (Every file tool has a backend version today.)
 */
async function notOnBackend(entry: Entry): Promise<Tool.Initialized> {
  const { z } = await import('zod');
  const unavailable = `${entry.id} is not available when the files live on a backend: it works on this host's workspace only, and the agent's files are elsewhere.`;
  return {
    id: entry.id,
    description: `${entry.id} (not available on a backend).`,
    parameters: z.object({}).passthrough(),
    unavailable,
    execute: () => Promise.reject(new Error(unavailable)),
  };
}

/** The tools that record changes for undo (src/tools/files/undo-log.ts). */
const RECORDS_UNDO = new Set(['write', 'edit', 'move', 'delete', 'apply_patch']);

/**
 * `tool` (one that records changes for undo) answering only once its undo records are saved in the
 * store, when one is bound: a record that could not be saved is said in the result. Without a store
 * the wait is one WeakMap lookup.
 */
async function savesUndo(entry: Entry, tool: Tool.Initialized): Promise<Tool.Initialized> {
  if (!RECORDS_UNDO.has(entry.id) || tool.unavailable) return tool;
  const { undoSavesOf } = await import('./files/undo-log.js');
  const execute = tool.execute.bind(tool);
  return {
    ...tool,
    execute: async (args, ctx) => {
      let result: Awaited<ReturnType<typeof execute>>;
      try {
        result = await execute(args, ctx);
      } catch (err) {
        await undoSavesOf(ctx);
        throw err;
      }
      const note = await undoSavesOf(ctx);
      return note ? { ...result, output: `${result.output}\n\n${note}` } : result;
    },
  };
}

/** An Info that imports the tool's module on its first `init` and hands every `init` to the real Info. */
function lazyInfo(entry: Entry, descriptionPath: string): Tool.Info {
  return {
    id: entry.id,
    permissions: { required: [...entry.required] },
    descriptionPath,
    danger: entry.danger,
    async init(initCtx) {
      // The seam: one check per init (the registry caches inits), none per call.
      if (initCtx?.backend !== undefined) {
        if (entry.onBackend) {
          // After the tool's module: it has loaded common.js already (imports one at a time).
          const info = await load(entry, true);
          const { answerStops } = await import('./files/backend/common.js');
          return savesUndo(entry, answerStops(await info.init(initCtx)));
        }
        if (entry.family === 'files') return notOnBackend(entry);
      }
      return savesUndo(entry, await (await load(entry)).init(initCtx));
    },
  };
}

/** Every built-in tool, in the order agents see them, with the permissions and description file it declares. */
export const builtinTools: BuiltinTool[] = ENTRIES.map((entry) => {
  const descriptionPath = descriptionBeside(new URL(`./${entry.family}/`, import.meta.url).href, entry.id);
  const info = lazyInfo(entry, descriptionPath);
  const tool: BuiltinTool = { info, permissions: info.permissions!, descriptionPath };
  if (CONDITIONS[entry.id]) tool.unregisteredReason = CONDITIONS[entry.id];
  return tool;
});

/**
 * The Info each built-in tool's own module exports, loaded now (the registry loads them on first
 * use). For checks that the list above says what each file declares.
 */
export async function loadBuiltinInfos(): Promise<Tool.Info[]> {
  return Promise.all(ENTRIES.map((e) => load(e)));
}

/** Built-in tools `registerBuiltinTools` leaves out here (no backend configured), with what to set. */
export function unregisteredBuiltins(): Array<{ id: string; reason: string }> {
  return builtinTools.flatMap((t) => {
    const reason = t.unregisteredReason?.();
    return reason ? [{ id: t.info.id, reason }] : [];
  });
}

/**
 * The built-ins agents call most, most used first: 'auto' deferral keeps these longest (the other
 * built-ins follow in list order). Measured use replaces this order as `registry.stats()` fills.
 */
export const BUILTIN_USAGE_ORDER: readonly string[] = ['read', 'edit', 'bash', 'grep', 'glob', 'write', 'list'];

/** Options of `registerBuiltinTools`. */
export interface BuiltinToolsOptions {
  /** Only these built-ins (a tool that needs configuration is registered when named here). */
  only?: string[];
  /**
   * Defer these built-ins (offered through `tool_search`, or the provider's own search, until
   * found), or `'auto'`: the least-used ones once the definitions offered would pass `deferBudgetChars`.
   */
  defer?: DeferSpec;
  /** The 'auto' budget, in characters of definitions (default DEFER_AUTO_BUDGET_CHARS). */
  deferBudgetChars?: number;
  /**
   * The edit tools (docs/tools/apply_patch.md): `replace` (default) edit + write; `patch` apply_patch
   * instead; `both`; `auto` apply_patch for OpenAI GPT-4.1+/GPT-5/o-series/Codex models and edit +
   * write for the rest, decided by `tools({ model })`.
   */
  edits?: EditsMode;
}

/**
 * Registers every built-in tool (or those named in `only`) into `registry`. A tool that needs
 * configuration (web_search) is left out when it has none, unless `only` names it. `defer` defers
 * some of them (see docs/tools.md, "Deferred tools").
 */
export function registerBuiltinTools(registry: Registry, onlyOrOptions?: string[] | BuiltinToolsOptions): Registry {
  const options: BuiltinToolsOptions = Array.isArray(onlyOrOptions) ? { only: onlyOrOptions } : (onlyOrOptions ?? {});
  checkOptions(builtinToolsOptionsSchema, options);
  const { only } = options;
  const edits = options.edits === undefined ? 'replace' : parseEditsMode(options.edits);
  const registered: string[] = [];
  for (const tool of builtinTools) {
    const id = tool.info.id;
    if (only) {
      if (!only.includes(id)) continue;
    } else if (EDIT_TOOL_IDS.includes(id)) {
      if (!editsRegister(edits, id)) continue;
    } else if (tool.unregisteredReason?.()) continue;
    registry.register(tool.info, { replace: true });
    registered.push(tool.info.id);
  }
  if (options.defer === 'auto') {
    const usage = (id: string) =>
      BUILTIN_USAGE_ORDER.includes(id) ? BUILTIN_USAGE_ORDER.indexOf(id) : BUILTIN_USAGE_ORDER.length;
    const candidates = [...registered].sort(
      (a, b) => usage(a) - usage(b) || registered.indexOf(a) - registered.indexOf(b),
    );
    deferTools(registry, 'auto', { budgetChars: options.deferBudgetChars, candidates });
  } else if (options.defer?.length) deferTools(registry, options.defer);
  // An explicit choice also filters what `tools({ model })` offers: `only` may have registered all three.
  if (options.edits !== undefined) registry.offerByModel((id, model) => offersEditTool(edits, id, model));
  return registry;
}

/** Registers apply_patch, edit and write, offered as `edits` chooses (by model under `auto`): `toolbelt agent --edits`. */
export function useEdits(registry: Registry, edits: EditsMode): Registry {
  return registerBuiltinTools(registry, { only: [...EDIT_TOOL_IDS], edits });
}

/** Whether `edits` registers the edit tool `id` (under `auto` all three are, and the model chooses). */
function editsRegister(edits: EditsMode, id: string): boolean {
  return edits === 'auto' || offersEditTool(edits, id, undefined);
}
