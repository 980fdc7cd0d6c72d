/** The built-in tools: each with its permissions and its `.txt` description beside its module. */
import { fileURLToPath } from 'node:url';
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
import { TodoWriteTool, TodoReadTool } from './todo.js';
import { TaskTool } from './task.js';
import { WebfetchTool } from './webfetch.js';
import { MoveTool } from './move.js';
import { DeleteTool } from './delete.js';
import { FileInfoTool } from './file-info.js';
import { CurrentTimeTool } from './current-time.js';
import { MemoryListTool, MemoryReadTool, MemoryWriteTool, MemoryPatchTool, MemoryAppendTool } from './memory.js';

/** A built-in tool as the registry receives it. */
export interface BuiltinTool {
  info: Tool.Info;
  permissions: ToolPermissions;
  descriptionPath: string;
}

function txt(name: string): string {
  return fileURLToPath(new URL(`./${name}.txt`, import.meta.url));
}

/** Every built-in tool, in the order agents see them. */
export const builtinTools: BuiltinTool[] = [
  { info: ReadTool, permissions: { required: ['read'] }, descriptionPath: txt('read') },
  { info: WriteTool, permissions: { required: ['write'] }, descriptionPath: txt('write') },
  { info: EditTool, permissions: { required: ['write'] }, descriptionPath: txt('edit') },
  { info: MoveTool, permissions: { required: ['write'] }, descriptionPath: txt('move') },
  { info: DeleteTool, permissions: { required: ['write'] }, descriptionPath: txt('delete') },
  { info: FileInfoTool, permissions: { required: ['read'] }, descriptionPath: txt('file_info') },
  { info: ListTool, permissions: { required: ['read'] }, descriptionPath: txt('list') },
  { info: GlobTool, permissions: { required: ['read'] }, descriptionPath: txt('glob') },
  { info: GrepTool, permissions: { required: ['read'] }, descriptionPath: txt('grep') },
  { info: BashTool, permissions: { required: ['execute'] }, descriptionPath: txt('bash') },
  { info: TaskTool, permissions: { required: ['execute'] }, descriptionPath: txt('task') },
  { info: WebfetchTool, permissions: { required: ['network'] }, descriptionPath: txt('webfetch') },
  { info: TodoWriteTool, permissions: { required: ['read'] }, descriptionPath: txt('todowrite') },
  { info: TodoReadTool, permissions: { required: ['read'] }, descriptionPath: txt('todoread') },
  { info: CurrentTimeTool, permissions: { required: [] }, descriptionPath: txt('current_time') },
  { info: MemoryListTool, permissions: { required: ['memory'] }, descriptionPath: txt('memory_list') },
  { info: MemoryReadTool, permissions: { required: ['memory'] }, descriptionPath: txt('memory_read') },
  { info: MemoryWriteTool, permissions: { required: ['memory'] }, descriptionPath: txt('memory_write') },
  { info: MemoryPatchTool, permissions: { required: ['memory'] }, descriptionPath: txt('memory_patch') },
  { info: MemoryAppendTool, permissions: { required: ['memory'] }, descriptionPath: txt('memory_append') },
];

/** Registers every built-in tool (or those named in `only`) into `registry`. */
export function registerBuiltinTools(registry: ToolRegistryImpl, only?: string[]): ToolRegistryImpl {
  for (const tool of builtinTools) {
    if (only && !only.includes(tool.info.id)) continue;
    registry.register(tool.info, {
      permissions: tool.permissions,
      descriptionPath: tool.descriptionPath,
      replace: true,
    });
  }
  return registry;
}
