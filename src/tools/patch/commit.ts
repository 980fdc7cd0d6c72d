/**
 * apply_patch's writes, once every file is checked (plan.ts): each file written atomically, several
 * at once (different files, so no order between them matters); a failure anywhere stops what has not
 * started and puts back every path already changed, newest first. Also what the undo log records.
 * Must not decide what to write.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Tool } from '../../authoring/tool.js';
import { atomicWriteFile, stampOf, type FileStamp } from '../../workspace/workspace.js';
import { sameStamp } from '../../workspace/read-tracker.js';
import type { UndoEffect } from '../files/undo-record.js';
import { Fingerprint, fileState, restoreState, type EntryState } from '../files/undo-state.js';
import type { FilePlan } from './plan.js';

/** Files apply_patch writes at once. */
export const PATCH_WRITE_CONCURRENCY = 8;
/** A file's new version up to this size is kept by its undo record and hashed only if compared; a larger one is hashed when written. */
const LAZY_AFTER_MAX_BYTES = 64 * 1024;

/** A path changed so far, and what to put back there; or a directory made for a new file (removed again if empty). */
type Written = { abs: string; shown: string; before: EntryState } | { madeDir: string; under: string };

/**
 * Writes every plan (PATCH_WRITE_CONCURRENCY at a time, progress per file as each starts); on any
 * failure lets the writes under way finish, starts no more, puts back every path changed (newest
 * first) and throws a sentence saying so.
 */
export async function commit(plans: FilePlan[], ctx: Tool.Context): Promise<void> {
  const done: Written[] = [];
  let failure: { at: string; err: unknown } | undefined;
  let next = 0;
  const worker = async () => {
    while (!failure && next < plans.length) {
      const i = next++;
      const p = plans[i];
      ctx.metadata({
        title: `apply_patch: ${p.change.operation} ${p.shown} (${i + 1}/${plans.length})`,
        metadata: { path: p.shown, operation: p.change.operation, index: i + 1, total: plans.length },
      });
      try {
        await writeOne(p, ctx.abort, done);
      } catch (err) {
        failure ??= { at: p.shown, err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PATCH_WRITE_CONCURRENCY, plans.length) }, worker));
  if (!failure) return;
  const why = ctx.abort.aborted ? 'the call was aborted' : (failure.err as Error).message;
  const notRestored: string[] = [];
  for (const w of [...done].reverse()) {
    try {
      if ('madeDir' in w) await removeMadeDirs(w.madeDir, w.under);
      else await restoreState(w.abs, w.before);
    } catch (e) {
      if (!('madeDir' in w)) notRestored.push(`${w.shown} (${(e as Error).message})`);
    }
  }
  if (notRestored.length) {
    throw new Error(
      `apply_patch failed at ${failure.at} (${why}) and could not put back ${notRestored.join(', ')}; the other files are as they were. Read those files before going on.`,
      { cause: failure.err },
    );
  }
  const n = done.filter((w) => !('madeDir' in w)).length;
  throw new Error(
    `apply_patch failed at ${failure.at} (${why}); ${n === 0 ? 'nothing had been written yet' : `the ${n} change${n === 1 ? '' : 's'} already written were put back`}, so nothing was changed.`,
    { cause: failure.err },
  );
}

/** One plan's writes: a delete, a write in place, or a write at the destination then the source's removal. */
async function writeOne(p: FilePlan, signal: AbortSignal, done: Written[]): Promise<void> {
  const stale = `${p.shown} was changed on disk by someone else while the patch was being applied.`;
  if (p.data === undefined) {
    await removeUnchanged(p, stale, signal, done);
    return;
  }
  const target = p.dest ?? p.abs;
  if (p.dest || p.before.type === 'absent') {
    const made = await fs.mkdir(path.dirname(target), { recursive: true });
    if (made) done.push({ madeDir: made, under: path.dirname(target) });
  }
  const expect = p.dest ? p.destVersion : p.version;
  const { stat } = await atomicWriteFile(target, p.data, {
    signal,
    ...(expect ? { expect, staleMessage: stale } : {}),
    ...(p.before.type === 'file' && p.dest ? { mode: p.before.mode } : {}),
  });
  done.push({ abs: target, shown: p.dest ? p.change.moveTo! : p.shown, before: p.dest ? p.destBefore! : p.before });
  p.stamp = stat;
  if (p.dest) await removeUnchanged(p, stale, signal, done);
}

/** Removes the directories a write made (`under` up to `top`, which it created), as long as they are empty. */
async function removeMadeDirs(top: string, under: string): Promise<void> {
  for (let d = under; d.startsWith(top); d = path.dirname(d)) {
    const gone = await fs.rmdir(d).then(
      () => true,
      () => false,
    );
    if (!gone || d === top) return;
  }
}

/** Removes the plan's own path, unless it changed since it was read or the call was aborted. */
async function removeUnchanged(p: FilePlan, stale: string, signal: AbortSignal, done: Written[]): Promise<void> {
  if (signal.aborted) throw new Error('the call was aborted');
  const now = await fs.stat(p.abs, { bigint: true }).catch(() => undefined);
  if (!now || !sameStamp(stampOf(now), p.version as FileStamp)) throw new Error(stale);
  await fs.unlink(p.abs);
  done.push({ abs: p.abs, shown: p.shown, before: p.before });
}

/** The undo effects of one applied plan. */
export function effectsOf(p: FilePlan): UndoEffect[] {
  // A small new version is hashed only if undo ever compares it; a large one now, so the record does not hold it.
  const after = (data: Buffer): EntryState =>
    data.length > LAZY_AFTER_MAX_BYTES
      ? fileState(data, 0, false)
      : { type: 'file', size: data.length, fingerprint: new Fingerprint([data]), mode: 0 };
  if (p.data === undefined) return [{ path: p.abs, shown: p.shown, before: p.before, after: { type: 'absent' } }];
  if (!p.dest) return [{ path: p.abs, shown: p.shown, before: p.before, after: after(p.data) }];
  return [
    { path: p.abs, shown: p.shown, before: p.before, after: { type: 'absent' } },
    { path: p.dest, shown: p.change.moveTo!, before: p.destBefore!, after: after(p.data) },
  ];
}
