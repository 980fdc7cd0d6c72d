/**
 * The list of built-in tools. Each tool's file declares its own id, permissions, danger and `.txt`
 * description.
 * Must not decide anything about a tool but its place in the list.
 */
import type { Tool } from '../tool.js';
import type { ToolPermissions } from '../permissions.js';
import type { ToolRegistryImpl } from '../registry.js';
import { ReadTool } from './read.js';
import { WriteTool } from './write.js';
import { EditTool } from './edit.js';
import { ListTool } from './list.js';
import { GlobTool } from './glob.js';
import { GrepTool } from './grep.js';
import { BashTool } from './bash.js';
import { BashOutputTool, BashKillTool } from './bash-jobs.js';
import { TodoWriteTool, TodoReadTool } from './todo.js';
import { TaskTool } from './task.js';
import { WebfetchTool } from './webfetch.js';
import { HttpRequestTool } from './http-request.js';
import { MoveTool } from './move.js';
import { DeleteTool } from './delete.js';
import { UndoFileTool, UndoTurnTool } from './undo.js';
import { FileInfoTool } from './file-info.js';
import { CurrentTimeTool } from './current-time.js';
import { MemoryListTool, MemoryReadTool, MemoryWriteTool, MemoryPatchTool, MemoryAppendTool } from './memory.js';
import { WebSearchTool } from './web-search.js';
import { webSearchUnregisteredReason } from './web-search-config.js';
// Tool files that declare typed init options on Tool.InitContext: named imports used only as
// values are dropped from the published .d.ts, these side-effect imports keep the declarations.
import '../net/ssrf.js';
import './http-request.js';
import './search-common.js';
import './grep.js';
import './list.js';
import './todo-store.js';
import './task.js';
import './memory-store.js';
import './web-search.js';

/** A built-in tool as the registry receives it (what its own file declares). */
export interface BuiltinTool {
  info: Tool.Info;
  permissions: ToolPermissions;
  descriptionPath: string;
  /** Why `registerBuiltinTools` leaves the tool out unless `only` names it (web_search without a backend). */
  unregisteredReason?: () => string | undefined;
}

/** Every built-in tool's Info, in the order agents see them. */
const BUILTIN_INFOS: Tool.Info[] = [
  ReadTool,
  WriteTool,
  EditTool,
  MoveTool,
  DeleteTool,
  UndoFileTool,
  UndoTurnTool,
  FileInfoTool,
  ListTool,
  GlobTool,
  GrepTool,
  BashTool,
  BashOutputTool,
  BashKillTool,
  TaskTool,
  WebfetchTool,
  HttpRequestTool,
  TodoWriteTool,
  TodoReadTool,
  CurrentTimeTool,
  MemoryListTool,
  MemoryReadTool,
  MemoryWriteTool,
  MemoryPatchTool,
  MemoryAppendTool,
  WebSearchTool,
];

/** Tools registered only when configured: the reason each is left out, or undefined. */
const CONDITIONS: Record<string, () => string | undefined> = { web_search: () => webSearchUnregisteredReason() };

/** Every built-in tool, in the order agents see them, with the permissions and description file it declares. */
export const builtinTools: BuiltinTool[] = BUILTIN_INFOS.map((info) => {
  if (!info.permissions || !info.descriptionPath)
    throw new Error(`Built-in tool "${info.id}" must declare its permissions and descriptionPath in Tool.define.`);
  const tool: BuiltinTool = { info, permissions: info.permissions, descriptionPath: info.descriptionPath };
  if (CONDITIONS[info.id]) tool.unregisteredReason = CONDITIONS[info.id];
  return tool;
});

/** Built-in tools `registerBuiltinTools` leaves out here (no backend configured), with what to set. */
export function unregisteredBuiltins(): Array<{ id: string; reason: string }> {
  return builtinTools.flatMap((t) => {
    const reason = t.unregisteredReason?.();
    return reason ? [{ id: t.info.id, reason }] : [];
  });
}

/**
 * Registers every built-in tool (or those named in `only`) into `registry`. A tool that needs
 * configuration (web_search) is left out when it has none, unless `only` names it.
 */
export function registerBuiltinTools(registry: ToolRegistryImpl, only?: string[]): ToolRegistryImpl {
  for (const tool of builtinTools) {
    if (only ? !only.includes(tool.info.id) : tool.unregisteredReason?.()) continue;
    registry.register(tool.info, { replace: true });
  }
  return registry;
}
