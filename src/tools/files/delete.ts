/**
 * delete: remove a file, a symbolic link (never its target) or, with `recursive: true`, a
 * directory and everything in it. Danger level `dangerous`; what it removes is kept
 * for undo (src/tools/files/undo-log.ts) when it fits.
 * Must not resolve paths itself: Workspace.resolveEntry does.
 */
import { promises as fs, type Dirent } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf } from '../../workspace/tenant.js';
import { Workspace, withFileLock } from '../../workspace/workspace.js';
import { recordChange } from './undo-log.js';
import { snapshotEntry, MAX_UNDO_BYTES } from './undo-state.js';

/** Most entries one recursive delete removes; a bigger tree is refused before anything is removed. */
export const MAX_DELETE_ENTRIES = 10_000;
/** A recursive delete reports progress after every this many entries. */
export const DELETE_PROGRESS_EVERY = 500;

/** The tool's arguments (the backend variant takes the same). */
export const parameters = z.object({
  path: z.string().describe('Path of the file or directory to delete: absolute, or relative to the workspace root.'),
  recursive: z
    .boolean()
    .optional()
    .describe('Must be true to delete a directory, together with everything inside it. Default false.'),
});

export const DeleteTool = Tool.define(
  {
    id: 'delete',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'delete'),
    danger: 'dangerous',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    const readTracker = tenant.readTracker;
    return {
      description: 'Delete a file, or a directory with recursive: true.',
      parameters,
      async execute(args: z.infer<typeof parameters>, ctx) {
        const abs = await ws.resolveEntry(args.path, 'write');
        const shown = ws.display(abs);
        if (ws.roots.includes(abs)) throw new Error(`${shown} is a workspace root; it cannot be deleted.`);
        /** Records the delete for undo_file / undo_turn; a tree too big to keep is recorded as not undoable. */
        const recordDelete = (kept: Awaited<ReturnType<typeof snapshotEntry>>) =>
          recordChange(
            tenant,
            ctx,
            'delete',
            `delete of ${shown}`,
            [{ path: abs, shown, before: kept ?? { type: 'absent' }, after: { type: 'absent' } }],
            kept ? {} : { lost: `what it removed held more than the ${MAX_UNDO_BYTES} bytes undo keeps` },
          );
        return withFileLock(abs, async () => {
          const st = await fs.lstat(abs).catch(() => undefined);
          if (!st) throw new Error(`${shown} does not exist; nothing was deleted. Check the path with list or glob.`);
          if (!st.isDirectory()) {
            if (st.isFile()) await readTracker.assertFreshIfRead(ctx.sessionID, abs, shown);
            if (ctx.abort.aborted) throw new Error('delete was aborted; nothing was deleted.');
            const kept = await snapshotEntry(abs);
            await fs.unlink(abs);
            recordDelete(kept);
            const kind = st.isSymbolicLink() ? 'symbolic link' : 'file';
            return {
              title: `deleted ${shown}`,
              output: `Deleted ${kind} ${shown}${st.isFile() ? ` (${st.size} bytes)` : ''}.`,
              metadata: { path: shown, kind, entries: 1, danger: 'dangerous', truncated: false },
            };
          }
          const entries = await listTree(abs, shown, ctx.abort);
          if (!args.recursive) {
            throw new Error(
              `${shown} is a directory with ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}. ` +
                'Pass recursive: true to delete it and everything in it, or give the path of a file.',
            );
          }
          const kept = await snapshotEntry(abs);
          let removed = 0;
          // Deepest first: listTree returns parents before children.
          for (let i = entries.length - 1; i >= 0; i--) {
            if (ctx.abort.aborted) {
              throw new Error(
                `delete was aborted after removing ${removed} of ${entries.length} entries in ${shown}; the rest is still there.`,
              );
            }
            const e = entries[i];
            await (e.dir ? fs.rmdir(e.path) : fs.unlink(e.path));
            removed++;
            if (removed % DELETE_PROGRESS_EVERY === 0) {
              ctx.metadata({ title: `deleting ${shown}`, metadata: { removed, total: entries.length } });
            }
          }
          await fs.rmdir(abs);
          recordDelete(kept);
          return {
            title: `deleted ${shown}`,
            output: `Deleted directory ${shown} and the ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} in it.`,
            metadata: {
              path: shown,
              kind: 'directory',
              entries: entries.length + 1,
              danger: 'dangerous',
              truncated: false,
            },
          };
        });
      },
    };
  },
);

/** Every entry under `dir`, parents before children, links not followed; refuses past the cap. */
async function listTree(
  dir: string,
  shown: string,
  signal: AbortSignal,
): Promise<Array<{ path: string; dir: boolean }>> {
  const out: Array<{ path: string; dir: boolean }> = [];
  const walk = async (d: string): Promise<void> => {
    const items: Dirent[] = await fs.readdir(d, { withFileTypes: true });
    for (const item of items) {
      if (signal.aborted) throw new Error('delete was aborted while listing; nothing was deleted.');
      if (out.length === MAX_DELETE_ENTRIES) {
        throw new Error(
          `${shown} holds more than ${MAX_DELETE_ENTRIES} entries, the most one delete removes; nothing was deleted. ` +
            'Delete its subdirectories one at a time, or ask the user to remove it.',
        );
      }
      const p = path.join(d, item.name);
      out.push({ path: p, dir: item.isDirectory() });
      if (item.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return out;
}
