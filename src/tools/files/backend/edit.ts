/**
 * edit over a backend: the local edit's matchers (exact, then the tolerant cascade), refusals,
 * sentences and diff, applied to the text `readRaw` answers; the stale check compares it with the
 * content the session saw (common.ts); the result goes back through the backend's own `edit` (of
 * the matched text for one exact match, else of the whole content read: a compare-and-swap), so a
 * change made meanwhile is never overwritten.
 * Must not touch the local disk.
 */
import type { z } from 'zod';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf } from '../../../workspace/tenant.js';
import { descriptionBeside } from '../../../authoring/description.js';
import { MAX_EDIT_FILE_BYTES, createdResult, editParameters, edited, planTextEdit } from '../edit.js';
import type { MatchRange } from '../edit-match.js';
import {
  backendOf,
  assertSeenFresh,
  backendPath,
  editExactMatch,
  entryAt,
  recordSeen,
  recordSeenParts,
  replaceContent,
  shownPath,
  textOf,
  trackKey,
} from './common.js';
import { recordBackendChange, textState } from './history.js';
import { Fingerprint, type EntryState } from '../undo-state.js';

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
          recordSeen(readTracker, ctx.sessionID, key, { text: args.newString });
          recordBackendChange(initCtx, g, ctx, 'edit', `edit of ${shown}`, [
            { path: p, shown, before: { type: 'absent' }, after: textState(args.newString, false) },
          ]);
          const result = createdResult(shown, args.newString);
          return { ...result, metadata: { ...result.metadata, backend: g.name } };
        }
        const raw = textOf(entry.file, shown);
        // UTF-8 takes at most 3 bytes per UTF-16 unit: a short enough text needs no count.
        if (raw.length * 3 > MAX_EDIT_FILE_BYTES && Buffer.byteLength(raw) > MAX_EDIT_FILE_BYTES)
          throw new Error(
            `${shown} is larger than the ${MAX_EDIT_FILE_BYTES}-byte limit of edit. Change it with a command or a script instead.`,
          );
        await assertSeenFresh(readTracker, ctx.sessionID, key, shown, entry.file);
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
          // One exact match: the backend's own edit of that text (with some around it) is enough, and
          // cheaper than sending the whole file; it refuses when the text is no longer there exactly once.
          const bom = raw.charCodeAt(0) === 0xfeff ? 1 : 0; // the ranges index the text after the BOM
          await editExactMatch(g, p, raw, ranges[0].start + bom, ranges[0].end + bom, newString, ctx.abort);
        } else {
          await replaceContent(g, p, raw, final, ctx.abort);
        }
        const parts = crlf ? [final] : partsOf(raw, ranges);
        recordSeenParts(readTracker, ctx.sessionID, key, parts);
        const before = textState(raw, true);
        recordBackendChange(initCtx, g, ctx, 'edit', `edit of ${shown}`, [
          { path: p, shown, before, after: crlf ? textState(final, false) : editedState(before, raw, ranges, parts) },
        ]);
        const result = edited(shown, d, ranges.length, startLines[0], matcher, score);
        return { ...result, metadata: { ...result.metadata, backend: g.name } };
      },
    };
  },
);

/**
 * What the file holds after an edit that left it as `parts` (pieces of `raw` around the
 * replacements, see partsOf): its size worked out from the replacements, and a fingerprint taken
 * only if undo ever compares it. The pieces are views on `raw`, which `before` keeps anyway, and
 * the replacements; past a few pieces or a little new text it is hashed now instead.
 */
function editedState(
  before: EntryState,
  raw: string,
  ranges: readonly MatchRange[],
  parts: readonly string[],
): EntryState {
  const bom = raw.charCodeAt(0) === 0xfeff ? 1 : 0;
  let size = before.type === 'file' ? before.size : Buffer.byteLength(raw);
  let added = 0;
  for (const r of ranges) {
    size += Buffer.byteLength(r.replacement) - Buffer.byteLength(raw.slice(r.start + bom, r.end + bom));
    added += r.replacement.length;
  }
  const fingerprint = new Fingerprint(parts);
  if (parts.length > LAZY_AFTER_MAX_PARTS || added > LAZY_AFTER_MAX_NEW_CHARS) fingerprint.settle();
  return { type: 'file', size, fingerprint, mode: 0 };
}

/** Past these, an edit's after-state is hashed when recorded rather than holding its pieces. */
const LAZY_AFTER_MAX_PARTS = 64;
const LAZY_AFTER_MAX_NEW_CHARS = 64 * 1024;

/**
 * The edited text as pieces of `raw` (the text read, LF kept as it was) around the replacements:
 * what `planTextEdit`'s final text is when no line endings were converted, without building it.
 */
function partsOf(raw: string, ranges: readonly MatchRange[]): string[] {
  const bom = raw.charCodeAt(0) === 0xfeff ? 1 : 0; // the ranges index the text after the BOM
  const parts: string[] = [];
  let pos = 0;
  for (const r of ranges) {
    parts.push(raw.slice(pos, r.start + bom), r.replacement);
    pos = r.end + bom;
  }
  parts.push(raw.slice(pos));
  return parts;
}
