/**
 * edit over a backend: the local edit's matchers (exact, then the tolerant cascade), refusals,
 * sentences and diff, applied to the text `readRaw` answers; the stale check compares content
 * hashes; the result goes back through the backend's `edit` of the whole content read (a
 * compare-and-swap), so a change made meanwhile leaves the file as it was.
 * Must not touch the local disk.
 */
import type { z } from 'zod';
import { Tool } from '../../../tool.js';
import { tenantOf } from '../../../tenant.js';
import { descriptionBeside } from '../../../description.js';
import { diffOfReplacements } from '../../../diff.js';
import { MAX_EDIT_FILE_BYTES, countLines, editParameters, edited, planTextEdit } from '../edit.js';
import {
  backendOf,
  backendPath,
  contentStamp,
  editOrExplain,
  entryAt,
  replaceContent,
  shownPath,
  textOf,
  trackKey,
} from './common.js';
import { recordBackendChange, textState } from './history.js';

export const BackendEditTool = Tool.define(
  {
    id: 'edit',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(new URL('../edit.js', import.meta.url).href, 'edit'),
    danger: 'moderate',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const readTracker = tenantOf(initCtx).readTracker;
    return {
      description:
        'Replace oldString with newString in a file (exact match first, then whitespace/indentation-tolerant matching).',
      parameters: editParameters,
      async execute(args: z.infer<typeof editParameters>, ctx) {
        if (args.oldString === args.newString) {
          throw new Error(
            'oldString and newString are identical, so there is nothing to change. Put the new text in newString.',
          );
        }
        const p = backendPath(args.filePath);
        const shown = shownPath(p);
        const key = trackKey(g, p);
        const entry = p === '/' ? ({ kind: 'dir' } as const) : await entryAt(g, p, ctx.abort);
        if (entry.kind === 'dir') throw new Error(`${shown} is a directory; give the path of a file inside it.`);
        if (entry.kind === 'missing') {
          if (args.oldString !== '') {
            throw new Error(
              `File ${shown} does not exist. To create it, call edit with an empty oldString (or use write); otherwise check the path.`,
            );
          }
          await g.write(p, args.newString, ctx.abort);
          readTracker.record(ctx.sessionID, key, contentStamp({ text: args.newString }));
          recordBackendChange(initCtx, g, ctx, 'edit', `edit of ${shown}`, [
            { path: p, shown, before: { type: 'absent' }, after: textState(args.newString, false) },
          ]);
          const d = diffOfReplacements(shown, '', [{ start: 0, end: 0, replacement: args.newString }]).summary;
          return {
            title: shown,
            output: `Created ${shown} (${countLines(args.newString)} lines).`,
            metadata: {
              path: shown,
              created: true,
              diff: d.diff,
              additions: d.additions,
              deletions: d.deletions,
              replacements: 1,
              matcher: 'create',
              backend: g.name,
              truncated: false,
            },
          };
        }
        const raw = textOf(entry.file, shown);
        if (Buffer.byteLength(raw) > MAX_EDIT_FILE_BYTES)
          throw new Error(
            `${shown} is larger than the ${MAX_EDIT_FILE_BYTES}-byte limit of edit. Change it with a command or a script instead.`,
          );
        await readTracker.assertFresh(ctx.sessionID, key, shown, contentStamp(entry.file));
        const {
          ranges,
          matcher,
          score,
          summary: d,
          startLines,
          final,
          crlf,
          oldString,
          newString,
        } = planTextEdit(shown, raw, args);
        if (ctx.abort.aborted) throw new Error('edit was aborted; the file is unchanged.');
        if (matcher === 'exact' && ranges.length === 1 && !crlf && oldString !== '') {
          // One exact match: the backend's own edit of just that text is enough, and cheaper than
          // sending the whole file; it refuses when the text is no longer there exactly once.
          await editOrExplain(g, p, oldString, newString, ctx.abort);
        } else {
          await replaceContent(g, p, raw, final, ctx.abort);
        }
        readTracker.record(ctx.sessionID, key, contentStamp({ text: final }));
        recordBackendChange(initCtx, g, ctx, 'edit', `edit of ${shown}`, [
          { path: p, shown, before: textState(raw, true), after: textState(final, false) },
        ]);
        const result = edited(shown, d, ranges.length, startLines[0], matcher, score);
        return { ...result, metadata: { ...result.metadata, backend: g.name } };
      },
    };
  },
);
