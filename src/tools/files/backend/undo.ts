/**
 * undo_file and undo_turn over a backend: put back what write, edit, move and delete changed there,
 * only when every file is still exactly what those changes left (by content hash), through the
 * backend's `write`, `edit` and `delete`; the local tools' refusal sentences. A restore the backend
 * fails part-way is rolled back, so nothing is left half-restored. Offered only where the backend
 * has `readRaw` and `write` (and undoing a created file needs `delete`).
 * Must not touch the local disk.
 */
import { z } from 'zod';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf, type Tenant } from '../../../workspace/tenant.js';
import { descriptionBeside } from '../../../authoring/description.js';
import type { GuardedBackend } from '../../../backend/guard.js';
import { forgetChanges, type UndoCallContext } from '../undo-log.js';
import { sameState, type EntryState } from '../undo-state.js';
import { type UndoRecord } from '../undo-record.js';
import { changedSince, fileParameters, refuseLost, turnParameters, undoLastChange, undoLastTurn } from '../undo.js';
import { backendDomain, backendOf, backendPath, recordSeen, shownPath, trackKey } from './common.js';
import { describeThrown } from '../../../text/describe.js';
import { backendNow, restoreOnBackend, type BackendNow } from './history.js';

/** Why undo cannot work on `g` (a method it needs is missing), or undefined. */
function missing(g: GuardedBackend, tool: string): string | undefined {
  const raw = g.raw as unknown as Record<string, unknown>;
  const lacks = ['readRaw', 'write'].filter((m) => typeof raw[m] !== 'function');
  if (!lacks.length) return undefined;
  return `${tool} is not available: the backend ${g.name} has no ${lacks.join(' or ')} method, which undo needs to check a file and put its earlier content back.`;
}

export const BackendUndoFileTool = Tool.define(
  {
    id: 'undo_file',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(new URL('../undo.js', import.meta.url).href, 'undo_file'),
    danger: 'moderate',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const tenant = tenantOf(initCtx);
    const unavailable = missing(g, 'undo_file');
    return {
      description: 'Undo the last change made to a file by write, edit, move or delete in this session.',
      parameters: fileParameters,
      ...(unavailable ? { unavailable } : {}),
      async execute(args: z.infer<typeof fileParameters>, ctx) {
        if (unavailable) throw new Error(unavailable);
        const p = backendPath(args.path);
        const shown = shownPath(p);
        const result = await undoLastChange(tenant, ctx, backendDomain(g), p, shown, (records) =>
          undoOnBackend(g, tenant, ctx, records),
        );
        return { ...result, metadata: { ...result.metadata, backend: g.name } };
      },
    };
  },
);

export const BackendUndoTurnTool = Tool.define(
  {
    id: 'undo_turn',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(new URL('../undo.js', import.meta.url).href, 'undo_turn'),
    danger: 'moderate',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const tenant = tenantOf(initCtx);
    const unavailable = missing(g, 'undo_turn');
    return {
      description: 'Undo every file change (write, edit, move, delete) of your previous turn, newest first.',
      parameters: turnParameters,
      ...(unavailable ? { unavailable } : {}),
      async execute(_args: z.infer<typeof turnParameters>, ctx) {
        if (unavailable) throw new Error(unavailable);
        const result = await undoLastTurn(tenant, ctx, backendDomain(g), (records) =>
          undoOnBackend(g, tenant, ctx, records),
        );
        return { ...result, metadata: { ...result.metadata, backend: g.name } };
      },
    };
  },
);

/**
 * Undoes `records` (newest first) all or nothing: every path is checked before anything is
 * changed, each path is then restored once (to what it held before the oldest of them), and a
 * restore the backend fails puts back the paths already restored. One line per record.
 */
async function undoOnBackend(
  g: GuardedBackend,
  tenant: Tenant,
  ctx: UndoCallContext & { abort: AbortSignal },
  records: UndoRecord[],
): Promise<string[]> {
  refuseLost(records);
  const signal = ctx.abort;
  const now = new Map<string, BackendNow>();
  const target = new Map<string, EntryState>();
  for (const r of records) {
    for (const e of r.effects) {
      let state = target.get(e.path);
      if (!state) {
        const n = await backendNow(g, e.path, signal);
        now.set(e.path, n);
        state = n.state;
      }
      if (!sameState(e.after, state)) throw changedSince(e.shown, r, state);
    }
    for (const e of r.effects) target.set(e.path, e.before);
  }
  // A deleted directory comes back with its files (a backend has no empty directories to make).
  const paths = [...target.keys()]
    .sort()
    .filter((p) => target.get(p)!.type !== 'directory' && !sameState(target.get(p)!, now.get(p)!.state));
  const removals = paths.filter((p) => target.get(p)!.type === 'absent');
  if (removals.length && !g.canDelete) {
    throw new Error(
      `Undoing would remove ${removals.map(shownPath).join(', ')} (created by the change), but the backend ${g.name} has no delete method. Nothing was undone; empty the file with write instead.`,
    );
  }
  const touched: string[] = [];
  try {
    for (const p of paths) {
      if (signal.aborted) throw new Error('undo was aborted.');
      touched.push(p);
      const n = now.get(p)!;
      await restoreOnBackend(
        g,
        p,
        { present: n.state.type !== 'absent', text: n.text },
        textOf(target.get(p)!),
        signal,
      );
    }
  } catch (err) {
    throw new Error(await rollBack(g, touched, now, err), { cause: err });
  }
  const note = await forgetChanges(tenant, ctx, records);
  for (const p of paths) {
    const t = textOf(target.get(p)!);
    if (t) recordSeen(tenant.readTracker, ctx.sessionID, trackKey(g, p), { text: t.text });
  }
  const lines = records.map((r) => describeUndone(r));
  return note ? [...lines, note] : lines;
}

/** The text a target state puts back (undefined: the path is removed). */
function textOf(state: EntryState): { text: string } | undefined {
  if (state.type === 'absent') return undefined;
  if (state.type === 'file' && state.text !== undefined) return { text: state.text };
  if (state.type === 'file' && state.data) return { text: state.data.toString('utf8') };
  throw new Error('a backend change keeps only absent paths and files with their content');
}

/**
 * Puts every path touched (`touched`: those restored, and the one that failed) back as it was
 * before the undo began, reading each again first; the sentence the failed undo answers.
 */
async function rollBack(
  g: GuardedBackend,
  touched: string[],
  now: Map<string, BackendNow>,
  err: unknown,
): Promise<string> {
  // The backend's own sentence, without its "nothing more was done" (this answer says what was).
  const reason = describeThrown(err)
    .replace(/\s*Nothing more was done; check the backend, or retry\.\s*$/, '')
    .trim();
  const stuck: string[] = [];
  let putBack = 0;
  // The backend failed: its own signal may be spent, and the rollback must still run (move's cleanup does the same).
  const calm = new AbortController().signal;
  for (const p of [...touched].reverse()) {
    const was = now.get(p)!;
    try {
      const cur = await backendNow(g, p, calm);
      if (sameState(was.state, cur.state)) continue;
      // Only text or nothing can be put back; anything else (a binary file, a directory) is reported.
      if (was.state.type !== 'absent' && was.text === undefined) throw new Error('not text');
      await restoreOnBackend(
        g,
        p,
        { present: cur.state.type !== 'absent', text: cur.text },
        was.text !== undefined ? { text: was.text } : undefined,
        calm,
      );
      putBack++;
    } catch {
      stuck.push(shownPath(p));
    }
  }
  if (stuck.length) {
    return (
      `Undo failed part-way: ${reason} ${stuck.join(', ')} could not be put back as ${stuck.length === 1 ? 'it was' : 'they were'} before the undo. ` +
      'Check those files with read, and retry once the backend works.'
    );
  }
  const put = putBack
    ? ` (the ${putBack} file${putBack === 1 ? '' : 's'} already restored ${putBack === 1 ? 'was' : 'were'} put back as ${putBack === 1 ? 'it was' : 'they were'})`
    : '';
  return `Undo failed: ${reason} Nothing was undone${put}; retry once the backend works.`;
}

/** What undoing `r` put back, in a line. */
function describeUndone(r: UndoRecord): string {
  const dir = r.effects.find((e) => e.before.type === 'directory');
  if (dir) {
    const files = r.effects.filter((e) => e.before.type === 'file').length;
    return r.tool === 'move'
      ? `put the ${files} file${files === 1 ? '' : 's'} back in ${dir.shown} and removed their copies.`
      : `restored the directory ${dir.shown} and the ${files} file${files === 1 ? '' : 's'} in it.`;
  }
  return `${r.effects
    .map((e) =>
      e.before.type === 'absent'
        ? `removed ${e.shown} (the change had created it)`
        : `restored ${e.shown} (${e.before.type === 'file' ? e.before.size : 0} bytes)`,
    )
    .join('; ')}.`;
}
