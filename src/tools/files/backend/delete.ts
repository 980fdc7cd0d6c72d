/**
 * delete over a backend: the local delete's refusals and sentences (a directory needs
 * `recursive: true`; a file read in this session must be unchanged since), carried out by the
 * backend's `delete`. A backend without `delete` gets a tool that says so.
 * Must not touch the local disk.
 */
import posix from 'node:path/posix';
import { z } from 'zod';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf } from '../../../workspace/tenant.js';
import { descriptionBeside } from '../../../authoring/description.js';
import { assertSeenFresh, backendOf, backendPath, entryAt, shownPath, trackKey } from './common.js';
import { parameters } from '../delete.js';
import type { UndoCallContext } from '../undo-log.js';
import { recordBackendChange, snapshotForUndo } from './history.js';

export const BackendDeleteTool = Tool.define(
  {
    id: 'delete',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(new URL('../delete.js', import.meta.url).href, 'delete'),
    danger: 'dangerous',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const readTracker = tenantOf(initCtx).readTracker;
    const unavailable = g.canDelete
      ? undefined
      : `delete is not available: the backend ${g.name} has no delete method. Overwrite the file's content with write instead, or give the agent a backend that deletes.`;
    /** Records the delete for undo: each file removed with its text, or why it cannot be put back. */
    const recordDelete = (
      ctx: UndoCallContext,
      shown: string,
      p: string,
      kept: Awaited<ReturnType<typeof snapshotForUndo>>,
      dir: boolean,
    ) =>
      recordBackendChange(
        initCtx,
        g,
        ctx,
        'delete',
        `delete of ${shown}`,
        'kept' in kept
          ? [
              // A directory is named by its own effect (undo_file of it finds the delete); its files are restored.
              ...(dir
                ? [
                    {
                      path: p,
                      shown,
                      before: { type: 'directory', mode: 0 } as const,
                      after: { type: 'absent' } as const,
                    },
                  ]
                : []),
              ...kept.kept.map((k) => ({
                path: k.path,
                shown: shownPath(k.path),
                before: k.state,
                after: { type: 'absent' } as const,
              })),
            ]
          : [{ path: p, shown, before: { type: 'absent' }, after: { type: 'absent' } }],
        'lost' in kept ? { lost: kept.lost } : {},
      );
    return {
      description: 'Delete a file, or a directory with recursive: true.',
      parameters,
      ...(unavailable ? { unavailable } : {}),
      async execute(args: z.infer<typeof parameters>, ctx) {
        if (unavailable) throw new Error(unavailable);
        const p = backendPath(args.path);
        const shown = shownPath(p);
        if (p === '/') throw new Error(`${shown} is a workspace root; it cannot be deleted.`);
        const entry = await entryAt(g, p, ctx.abort);
        if (entry.kind === 'missing')
          throw new Error(`${shown} does not exist; nothing was deleted. Check the path with list or glob.`);
        if (entry.kind === 'file') {
          const key = trackKey(g, p);
          if (readTracker.lastRead(ctx.sessionID, key))
            await assertSeenFresh(readTracker, ctx.sessionID, key, shown, entry.file);
          if (ctx.abort.aborted) throw new Error('delete was aborted; nothing was deleted.');
          const kept = await snapshotForUndo(
            g,
            [{ path: p, text: entry.file.text, binary: entry.file.text === undefined }],
            ctx.abort,
          );
          await g.delete(p, ctx.abort);
          recordDelete(ctx, shown, p, kept, false);
          const size = entry.file.text !== undefined ? Buffer.byteLength(entry.file.text) : entry.file.bytes!.length;
          return {
            title: `deleted ${shown}`,
            output: `Deleted file ${shown} (${size} bytes).`,
            metadata: { path: shown, kind: 'file', entries: 1, danger: 'dangerous', backend: g.name, truncated: false },
          };
        }
        const all = (await g.glob('**/*', p, ctx.abort)).files.length;
        if (!args.recursive) {
          throw new Error(
            `${shown} is a directory with ${all} entr${all === 1 ? 'y' : 'ies'}. ` +
              'Pass recursive: true to delete it and everything in it, or give the path of a file.',
          );
        }
        if (ctx.abort.aborted) throw new Error('delete was aborted; nothing was deleted.');
        const files = (await g.glob('**/*', p, ctx.abort)).files
          .filter((f) => f.is_dir !== true && !f.path.endsWith('/'))
          .map((f) => ({ path: posix.resolve(p, f.path) }));
        const kept = await snapshotForUndo(g, files, ctx.abort);
        await g.delete(p, ctx.abort);
        recordDelete(ctx, shown, p, kept, true);
        return {
          title: `deleted ${shown}`,
          output: `Deleted directory ${shown} and the ${all} entr${all === 1 ? 'y' : 'ies'} in it.`,
          metadata: {
            path: shown,
            kind: 'directory',
            entries: all,
            danger: 'dangerous',
            backend: g.name,
            truncated: false,
          },
        };
      },
    };
  },
);
