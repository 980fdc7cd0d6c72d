/**
 * move over a backend, which has no rename: each file is copied (its text through `write`), and only
 * when every copy is in place is the source deleted; a copy that fails removes the copies made, so
 * nothing is left half-moved. The local move's refusals and sentences; needs `delete`.
 * Must not touch the local disk.
 */
import posix from 'node:path/posix';
import { z } from 'zod';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf } from '../../../workspace/tenant.js';
import { descriptionBeside } from '../../../authoring/description.js';
import type { GuardedBackend } from '../../../backend/guard.js';
import { assertSeenFresh, backendOf, backendPath, entryAt, recordSeen, shownPath, textOf, trackKey } from './common.js';
import type { EntryState } from '../undo-state.js';
import type { UndoEffect } from '../undo-record.js';
import { recordBackendChange, sameContent, textState } from './history.js';

/** Most files one move over a backend copies (each is a read and a write there). */
export const MAX_BACKEND_MOVE_FILES = 1000;

const parameters = z.object({
  from: z.string().describe('Path of the file or directory to move: absolute, or relative to the workspace root.'),
  to: z
    .string()
    .describe('Its new path (not the directory to move it into): absolute, or relative to the workspace root.'),
  overwrite: z
    .boolean()
    .optional()
    .describe('Replace an existing file at "to" (it must have been read first). Default false.'),
});

export const BackendMoveTool = Tool.define(
  {
    id: 'move',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(new URL('../move.js', import.meta.url).href, 'move'),
    danger: 'moderate',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const readTracker = tenantOf(initCtx).readTracker;
    const unavailable = g.canDelete
      ? undefined
      : `move is not available: the backend ${g.name} has no delete method, so a moved file would stay at its old path too. Copy it with read and write instead.`;
    return {
      description: 'Move or rename a file or directory inside the workspace.',
      parameters,
      ...(unavailable ? { unavailable } : {}),
      async execute(args: z.infer<typeof parameters>, ctx) {
        if (unavailable) throw new Error(unavailable);
        const from = backendPath(args.from);
        const to = backendPath(args.to);
        const shownFrom = shownPath(from);
        const shownTo = shownPath(to);
        for (const [p, shown] of [
          [from, shownFrom],
          [to, shownTo],
        ]) {
          if (p === '/') throw new Error(`${shown} is a workspace root; it cannot be moved or replaced.`);
        }
        if (from === to) throw new Error(`"from" and "to" are the same path (${shownFrom}); nothing to move.`);
        if (to.startsWith(`${from}/`))
          throw new Error(`Cannot move ${shownFrom} into itself (${shownTo}). Choose a destination outside it.`);
        const source = await entryAt(g, from, ctx.abort);
        if (source.kind === 'missing')
          throw new Error(`${shownFrom} does not exist. Check the path (list or glob show what is there).`);
        const fromKey = trackKey(g, from);
        if (source.kind === 'file' && readTracker.lastRead(ctx.sessionID, fromKey))
          await assertSeenFresh(readTracker, ctx.sessionID, fromKey, shownFrom, source.file);
        const target = await entryAt(g, to, ctx.abort);
        if (target.kind === 'dir')
          throw new Error(
            `${shownTo} already exists and is a directory. Give the full new path of the entry (e.g. ${posix.join(shownTo, posix.basename(from))}), or delete the directory first.`,
          );
        if (target.kind === 'file') {
          if (!args.overwrite)
            throw new Error(`${shownTo} already exists. Pass overwrite: true to replace it, or choose another path.`);
          if (source.kind === 'dir')
            throw new Error(`${shownTo} is a file and ${shownFrom} a directory: a directory cannot replace a file.`);
          await assertSeenFresh(readTracker, ctx.sessionID, trackKey(g, to), shownTo, target.file);
        }
        const pairs: Array<[string, string]> =
          source.kind === 'file'
            ? [[from, to]]
            : (await g.glob('**/*', from, ctx.abort)).files
                .filter((f) => f.is_dir !== true && !f.path.endsWith('/'))
                .map((f) => {
                  const abs = posix.resolve(from, f.path);
                  return [abs, posix.join(to, posix.relative(from, abs))] as [string, string];
                });
        if (pairs.length > MAX_BACKEND_MOVE_FILES)
          throw new Error(
            `${shownFrom} holds ${pairs.length} files, above the ${MAX_BACKEND_MOVE_FILES} one move copies on a backend (it has no rename); nothing was moved. Move its subdirectories one by one.`,
          );
        const texts = await copyAll(g, pairs, source.kind === 'file' ? source.file.text : undefined, ctx.abort);
        await g.delete(from, ctx.abort);
        // For undo: each file's text left its old path for the new one (and replaced what was there).
        let replaced: EntryState = { type: 'absent' };
        let lost: string | undefined;
        if (target.kind === 'file') {
          if (target.file.text !== undefined) replaced = textState(target.file.text, true);
          else
            lost = `the file it replaced at ${shownTo} held binary content, which the backend's write cannot put back`;
        }
        const effects: UndoEffect[] = pairs.flatMap(([src, dst], i) => {
          const before = textState(texts[i], true);
          return [
            { path: src, shown: shownPath(src), before, after: { type: 'absent' } },
            {
              path: dst,
              shown: shownPath(dst),
              before: i === 0 ? replaced : { type: 'absent' },
              after: sameContent(before),
            },
          ];
        });
        // A directory's two paths are named by their own effects (undo_file of either finds the move);
        // only its files are restored (a backend has no empty directories to make or remove).
        if (source.kind === 'dir')
          effects.unshift(
            { path: from, shown: shownFrom, before: { type: 'directory', mode: 0 }, after: { type: 'absent' } },
            { path: to, shown: shownTo, before: { type: 'directory', mode: 0 }, after: { type: 'directory', mode: 0 } },
          );
        recordBackendChange(
          initCtx,
          g,
          ctx,
          'move',
          `move of ${shownFrom} to ${shownTo}`,
          effects,
          lost ? { lost } : {},
        );
        if (source.kind === 'file' && readTracker.lastRead(ctx.sessionID, fromKey))
          recordSeen(readTracker, ctx.sessionID, trackKey(g, to), source.file);
        const kind = source.kind === 'dir' ? 'directory' : 'file';
        return {
          title: `${shownFrom} -> ${shownTo}`,
          output: `Moved ${kind} ${shownFrom} to ${shownTo}${target.kind === 'file' ? ' (replacing the file that was there)' : ''}.`,
          metadata: {
            from: shownFrom,
            to: shownTo,
            kind,
            replaced: target.kind === 'file',
            backend: g.name,
            truncated: false,
          },
        };
      },
    };
  },
);

/** Copies every pair and answers the texts copied; on a failure removes the copies already made (new paths only) and rethrows. */
async function copyAll(
  g: GuardedBackend,
  pairs: Array<[string, string]>,
  knownText: string | undefined,
  signal: AbortSignal,
): Promise<string[]> {
  const made: string[] = [];
  const texts: string[] = [];
  try {
    for (const [src, dst] of pairs) {
      if (signal.aborted) throw new Error('move was aborted; nothing was moved.');
      let text = knownText;
      if (text === undefined) {
        const r = await g.readRaw(src, signal);
        if (!r.file) throw new Error(`The backend ${g.name} could not read ${shownPath(src)} to move it: ${r.error}`);
        text = textOf(r.file, shownPath(src));
      }
      await g.write(dst, text, signal);
      made.push(dst);
      texts.push(text);
    }
  } catch (err) {
    for (const dst of made) await g.delete(dst, new AbortController().signal).catch(() => undefined);
    throw err;
  }
  return texts;
}
