/**
 * apply_patch over a backend: the local tool's parser, hunk placement, refusals and answer, on the
 * text `readRaw` answers. Every file is read, checked against what the session saw and every hunk
 * placed before anything is written; each file then goes back through the backend's own `edit` of
 * its whole content (a compare-and-swap), `write` for a new file and `delete` for a removal, and a
 * failure part-way puts back what was already written. The whole patch is one undo record.
 * Must not touch the local disk.
 */
import type { z } from 'zod';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf } from '../../../workspace/tenant.js';
import { descriptionBeside } from '../../../authoring/description.js';
import type { ReadTracker } from '../../../workspace/read-tracker.js';
import type { GuardedBackend } from '../../../backend/guard.js';
import type { UndoEffect } from '../undo-record.js';
import { MAX_EDIT_FILE_BYTES } from '../edit.js';
import { applyPatchParameters, readPatch } from '../../patch/apply-patch.js';
import { applyHunks, describeFailure, fileText, restoreText } from '../../patch/locate.js';
import { APPLY_PATCH_SUMMARY, patchResult, refusal, refusals, type FileChange } from '../../patch/result.js';
import type { PatchOperation } from '../../patch/parse.js';
import {
  assertSeenFresh,
  backendOf,
  backendPath,
  entryAt,
  recordSeen,
  replaceContent,
  shownPath,
  textOf,
  trackKey,
} from './common.js';
import { recordBackendChange, restoreOnBackend, textState } from './history.js';

export const BackendApplyPatchTool = Tool.define(
  {
    id: 'apply_patch',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(new URL('../../patch/apply-patch.js', import.meta.url).href, 'apply_patch'),
    danger: 'moderate',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const tracker = tenantOf(initCtx).readTracker;
    return {
      description: APPLY_PATCH_SUMMARY,
      parameters: applyPatchParameters,
      async execute(args: z.infer<typeof applyPatchParameters>, ctx) {
        const ops = readPatch(args.input);
        const plans: Plan[] = [];
        const problems: string[] = [];
        const seen = new Map<string, number>();
        for (const op of ops) {
          try {
            plans.push(await planOne(g, tracker, ctx, op, seen));
          } catch (err) {
            problems.push(...(err instanceof Failures ? err.lines : [(err as Error).message]));
          }
        }
        if (problems.length) throw new Error(refusal(problems));
        if (ctx.abort.aborted) throw new Error('apply_patch was aborted before writing; nothing was changed.');
        await commit(g, plans, ctx);
        const effects: UndoEffect[] = [];
        for (const p of plans) {
          for (const w of p.writes) {
            effects.push({
              path: w.path,
              shown: shownPath(w.path),
              before: w.before === undefined ? { type: 'absent' } : textState(w.before, true),
              after: w.after === undefined ? { type: 'absent' } : textState(w.after, false),
            });
            if (w.after !== undefined) recordSeen(tracker, ctx.sessionID, trackKey(g, w.path), { text: w.after });
          }
        }
        recordBackendChange(
          initCtx,
          g,
          ctx,
          'apply_patch',
          `apply_patch of ${plans.map((p) => p.change.path).join(', ')}`,
          effects,
        );
        return patchResult(
          plans.map((p) => p.change),
          { backend: g.name },
        );
      },
    };
  },
);

/** One path's change: its text before (undefined: absent) and after (undefined: removed). */
interface Write {
  path: string;
  before?: string;
  after?: string;
}

interface Plan {
  change: FileChange;
  /** In order: a move writes its destination before it removes its source. */
  writes: Write[];
}

class Failures extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
  }
}

/** Reads and checks one operation's files and works out what to write. */
async function planOne(
  g: GuardedBackend,
  tracker: ReadTracker,
  ctx: Tool.Context,
  op: PatchOperation,
  seen: Map<string, number>,
): Promise<Plan> {
  const p = backendPath(op.path);
  const shown = shownPath(p);
  claim(seen, p, shown, op.line);
  if (p === '/') throw new Error(`${shown} is the backend's root, not a file.`);
  const entry = await entryAt(g, p, ctx.abort);
  if (entry.kind === 'dir') throw new Error(refusals.directory(shown));
  const existing = entry.kind === 'file' ? textOf(entry.file, shown) : undefined;
  if (
    existing !== undefined &&
    existing.length * 3 > MAX_EDIT_FILE_BYTES &&
    Buffer.byteLength(existing) > MAX_EDIT_FILE_BYTES
  )
    throw new Error(
      `${shown} is larger than the ${MAX_EDIT_FILE_BYTES}-byte limit of apply_patch. Change it with a command instead.`,
    );
  const fresh = async (path: string, shownAs: string, file: typeof entry) => {
    if (file.kind === 'file') await assertSeenFresh(tracker, ctx.sessionID, trackKey(g, path), shownAs, file.file);
  };
  if (op.kind === 'add') {
    if (entry.kind === 'file') {
      if (!tracker.lastRead(ctx.sessionID, trackKey(g, p))) throw new Error(refusals.addOverUnread(shown));
      await fresh(p, shown, entry);
    }
    return {
      change: { operation: 'add', path: shown, before: existing ?? '', after: op.contents },
      writes: [{ path: p, before: existing, after: op.contents }],
    };
  }
  if (existing === undefined) throw new Error(refusals.missing(shown, op.kind));
  if (op.kind === 'delete') {
    if (!g.canDelete) throw new Error(`${shown} cannot be deleted: the backend ${g.name} has no delete method.`);
    if (tracker.lastRead(ctx.sessionID, trackKey(g, p))) await fresh(p, shown, entry);
    return {
      change: { operation: 'delete', path: shown, before: existing, after: '' },
      writes: [{ path: p, before: existing }],
    };
  }
  await fresh(p, shown, entry);
  const text = fileText(existing);
  const located = applyHunks(text.content, op.hunks);
  if (!located.ok) throw new Failures(located.failures.map((f) => describeFailure(shown, f)));
  const final = restoreText(text, located.text);
  const change: FileChange = {
    operation: 'update',
    path: shown,
    before: text.content,
    after: located.text,
    levels: located.levels,
  };
  if (op.moveTo === undefined || backendPath(op.moveTo) === p)
    return { change, writes: [{ path: p, before: existing, after: final }] };
  const dest = backendPath(op.moveTo);
  const destShown = shownPath(dest);
  claim(seen, dest, destShown, op.line);
  if (!g.canDelete)
    throw new Error(
      `${shown} cannot be moved: the backend ${g.name} has no delete method to remove it from its old path.`,
    );
  const there = await entryAt(g, dest, ctx.abort);
  if (there.kind === 'dir')
    throw new Error(`${destShown} is a directory; give the full new path of the file in '*** Move to:'.`);
  let destBefore: string | undefined;
  if (there.kind === 'file') {
    if (!tracker.lastRead(ctx.sessionID, trackKey(g, dest))) throw new Error(refusals.moveOverUnread(destShown, shown));
    await fresh(dest, destShown, there);
    destBefore = textOf(there.file, destShown);
  }
  return {
    change: { ...change, operation: 'move', moveTo: destShown },
    writes: [
      { path: dest, before: destBefore, after: final },
      { path: p, before: existing },
    ],
  };
}

function claim(seen: Map<string, number>, p: string, shown: string, line: number): void {
  const earlier = seen.get(p);
  if (earlier !== undefined) throw new Error(refusals.namedTwice(shown, earlier, line));
  seen.set(p, line);
}

/** Writes every plan; a failure puts back what was written (newest first) and says so. */
async function commit(g: GuardedBackend, plans: Plan[], ctx: Tool.Context): Promise<void> {
  const done: Write[] = [];
  let at = '';
  try {
    for (const [i, plan] of plans.entries()) {
      at = plan.change.path;
      ctx.metadata({
        title: `apply_patch: ${plan.change.operation} ${plan.change.path} (${i + 1}/${plans.length})`,
        metadata: { path: plan.change.path, operation: plan.change.operation, index: i + 1, total: plans.length },
      });
      for (const w of plan.writes) {
        if (ctx.abort.aborted) throw new Error('the call was aborted');
        if (w.after === undefined) await g.delete(w.path, ctx.abort);
        else await replaceContent(g, w.path, w.before || undefined, w.after, ctx.abort);
        done.push(w);
      }
    }
  } catch (err) {
    const lost: string[] = [];
    for (const w of done.reverse()) {
      try {
        await restoreOnBackend(
          g,
          w.path,
          { present: w.after !== undefined, text: w.after },
          w.before === undefined ? undefined : { text: w.before },
          new AbortController().signal,
        );
      } catch (e) {
        lost.push(`${shownPath(w.path)} (${(e as Error).message})`);
      }
    }
    const why = (err as Error).message;
    if (lost.length)
      throw new Error(
        `apply_patch failed at ${at} (${why}) and could not put back ${lost.join(', ')} on the backend ${g.name}. Read those files before going on.`,
        { cause: err },
      );
    throw new Error(
      `apply_patch failed at ${at} (${why}); the ${done.length} change${done.length === 1 ? '' : 's'} already written were put back, so nothing was changed.`,
      { cause: err },
    );
  }
}
