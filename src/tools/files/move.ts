/**
 * move: rename or move a file or directory inside the workspace. A symbolic link is moved as a
 * link (never followed); replacing an existing file needs `overwrite: true` and a fresh read of it.
 * Must not resolve paths itself: Workspace.resolveEntry does.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf } from '../../workspace/tenant.js';
import { Workspace, withFileLock } from '../../workspace/workspace.js';
import { recordChange } from './undo-log.js';
import { fileState, movedState, MAX_UNDO_BYTES, type EntryState } from './undo-state.js';

const parameters = z.object({
  from: z.string().describe('Path of the file or directory to move: absolute, or relative to the workspace root.'),
  to: z.string().describe('Its new path (not the directory to move it into). Parent directories are created.'),
  overwrite: z
    .boolean()
    .optional()
    .describe('Replace an existing file at "to" (it must have been read first). Default false.'),
});

export const MoveTool = Tool.define(
  {
    id: 'move',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'move'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    const readTracker = tenant.readTracker;
    return {
      description: 'Move or rename a file or directory inside the workspace.',
      parameters,
      async execute(args: z.infer<typeof parameters>, ctx) {
        const from = await ws.resolveEntry(args.from, 'write');
        const to = await ws.resolveEntry(args.to, 'write');
        const shownFrom = ws.display(from);
        const shownTo = ws.display(to);
        for (const [p, shown] of [
          [from, shownFrom],
          [to, shownTo],
        ]) {
          if (ws.roots.includes(p)) throw new Error(`${shown} is a workspace root; it cannot be moved or replaced.`);
        }
        if (from === to) throw new Error(`"from" and "to" are the same path (${shownFrom}); nothing to move.`);
        if (to.startsWith(from + path.sep)) {
          throw new Error(`Cannot move ${shownFrom} into itself (${shownTo}). Choose a destination outside it.`);
        }
        // Locks in a fixed order so two opposite moves cannot wait for each other.
        const [first, second] = from < to ? [from, to] : [to, from];
        return withFileLock(first, () =>
          withFileLock(second, async () => {
            const source = await fs.lstat(from).catch(() => undefined);
            if (!source) {
              throw new Error(`${shownFrom} does not exist. Check the path (list or glob show what is there).`);
            }
            if (source.isFile()) await readTracker.assertFreshIfRead(ctx.sessionID, from, shownFrom);
            const target = await fs.lstat(to).catch(() => undefined);
            if (target) {
              if (target.isDirectory()) {
                throw new Error(
                  `${shownTo} already exists and is a directory. Give the full new path of the entry (e.g. ${path.join(shownTo, path.basename(from))}), or delete the directory first.`,
                );
              }
              if (!args.overwrite) {
                throw new Error(
                  `${shownTo} already exists. Pass overwrite: true to replace it, or choose another path.`,
                );
              }
              if (source.isDirectory()) {
                throw new Error(
                  `${shownTo} is a file and ${shownFrom} a directory: a directory cannot replace a file.`,
                );
              }
              if (target.isFile()) await readTracker.assertFresh(ctx.sessionID, to, shownTo);
            }
            if (ctx.abort.aborted) throw new Error('move was aborted; nothing was moved.');
            // The file a move replaces is kept for undo (when it fits).
            let replaced: EntryState = { type: 'absent' };
            let lost: string | undefined;
            if (target?.isFile()) {
              if (target.size > MAX_UNDO_BYTES)
                lost = `the file it replaced held ${target.size} bytes, more than the ${MAX_UNDO_BYTES} bytes undo keeps`;
              else replaced = fileState(await fs.readFile(to), target.mode, true);
            } else if (target?.isSymbolicLink()) replaced = { type: 'symlink', target: await fs.readlink(to) };
            await fs.mkdir(path.dirname(to), { recursive: true });
            await renameOrCopy(from, to, source.isDirectory());
            const moved = await movedState(to);
            recordChange(
              tenant,
              ctx,
              'move',
              `move of ${shownFrom} to ${shownTo}`,
              [
                { path: from, shown: shownFrom, before: moved, after: { type: 'absent' } },
                { path: to, shown: shownTo, before: replaced, after: moved },
              ],
              { move: { from, to }, lost },
            );
            if (source.isFile() && readTracker.lastRead(ctx.sessionID, from)) {
              await readTracker.recordNow(ctx.sessionID, to);
            }
            const kind = source.isDirectory() ? 'directory' : source.isSymbolicLink() ? 'symbolic link' : 'file';
            return {
              title: `${shownFrom} -> ${shownTo}`,
              output: `Moved ${kind} ${shownFrom} to ${shownTo}${target ? ' (replacing the file that was there)' : ''}.`,
              metadata: { from: shownFrom, to: shownTo, kind, replaced: Boolean(target), truncated: false },
            };
          }),
        );
      },
    };
  },
);

/** rename(2); across file systems (EXDEV), a copy that keeps links as links, then removal of the source. */
async function renameOrCopy(from: string, to: string, isDir: boolean): Promise<void> {
  try {
    await fs.rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await fs.cp(from, to, { recursive: isDir, verbatimSymlinks: true, errorOnExist: false, force: true });
    await fs.rm(from, { recursive: isDir, force: true });
  }
}
