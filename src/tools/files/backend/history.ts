/**
 * Undo over a backend: the states write, edit, move and delete record there (a file's text before,
 * its SHA-256 after; backends have no reliable mtime, so a file is recognised by its content), what
 * a backend path holds now in those terms, and the restore of one path through the backend's own
 * `write`, `edit` and `delete`. Paths are the backend's paths; the undo log keeps them apart from
 * host paths (its `backend#<n>` domain).
 * Must not touch the local disk, nor decide which changes to undo (undo.ts beside it does).
 */
import type { GuardedBackend } from '../../../backend/guard.js';
import { tenantOf } from '../../../workspace/tenant.js';
import type { Tool } from '../../../authoring/tool.js';
import { recordChange, type UndoCallContext } from '../undo-log.js';
import { Fingerprint, MAX_UNDO_BYTES, fileState, type EntryState } from '../undo-state.js';
import { type NewChange, type UndoEffect } from '../undo-record.js';
import { backendDomain, entryAt, replaceContent, textDigest } from './common.js';

/** Most files a delete of a directory over a backend keeps for undo (each read before the delete); past it the delete is recorded as not undoable. */
export const MAX_BACKEND_UNDO_FILES = 1000;

/** A file holding `text`: with its bytes when undo must be able to put it back (`keep`), else only hashed. */
export function textState(text: string, keep: boolean): EntryState {
  // The text itself is kept (no copy), and hashed only if it is ever compared.
  if (keep) return { type: 'file', size: Buffer.byteLength(text), fingerprint: new Fingerprint([text]), mode: 0, text };
  // The digest the read tracker's stamp of the same text just took, when it did.
  const fingerprint = Fingerprint.ofDigest(textDigest(text).toString('hex'));
  return { type: 'file', size: Buffer.byteLength(text), fingerprint, mode: 0 };
}

/** The state after a change that left `before`'s very bytes elsewhere (a move): the same fingerprint, no bytes. */
export function sameContent(before: EntryState): EntryState {
  if (before.type !== 'file') return before;
  return { type: 'file', size: before.size, fingerprint: before.fingerprint, mode: 0 };
}

/** Records what a backend tool's call changed, in the backend's own undo domain. */
export function recordBackendChange(
  initCtx: Tool.InitContext,
  g: GuardedBackend,
  ctx: UndoCallContext,
  tool: string,
  summary: string,
  effects: UndoEffect[],
  extra: Pick<NewChange, 'lost'> = {},
): void {
  recordChange(tenantOf(initCtx), ctx, tool, summary, effects, { ...extra, domain: backendDomain(g) });
}

/**
 * What a delete of `p` (a file or directory) removes, file by file, with the text to put back; or
 * why it cannot be kept (binary content the backend's `write` cannot put back, more than
 * MAX_UNDO_BYTES, more than MAX_BACKEND_UNDO_FILES files).
 */
export async function snapshotForUndo(
  g: GuardedBackend,
  files: ReadonlyArray<{ path: string; text?: string; binary?: boolean }>,
  signal: AbortSignal,
): Promise<{ kept: Array<{ path: string; state: EntryState }> } | { lost: string }> {
  if (files.length > MAX_BACKEND_UNDO_FILES)
    return {
      lost: `it removed ${files.length} files, more than the ${MAX_BACKEND_UNDO_FILES} undo keeps on a backend`,
    };
  const kept: Array<{ path: string; state: EntryState }> = [];
  let bytes = 0;
  for (const f of files) {
    let text = f.text;
    if (text === undefined && !f.binary) {
      const r = await g.readRaw(f.path, signal);
      if (r.file?.text !== undefined) text = r.file.text;
      else if (!r.file)
        return { lost: `${f.path} could not be read before it was removed (${r.error ?? 'no reason'})` };
    }
    if (text === undefined)
      return { lost: `${f.path} holds binary content, which the backend's write (text only) cannot put back` };
    bytes += Buffer.byteLength(text);
    if (bytes > MAX_UNDO_BYTES)
      return { lost: `what it removed held more than the ${MAX_UNDO_BYTES} bytes undo keeps` };
    kept.push({ path: f.path, state: textState(text, true) });
  }
  return { kept };
}

/** What a backend path holds now: its state, and its text (to put it back should a restore fail). */
export interface BackendNow {
  state: EntryState;
  text?: string;
}

/** What `p` holds now, in undo's terms (a directory or binary file never equals a recorded text). */
export async function backendNow(g: GuardedBackend, p: string, signal: AbortSignal): Promise<BackendNow> {
  const entry = await entryAt(g, p, signal);
  if (entry.kind === 'missing') return { state: { type: 'absent' } };
  if (entry.kind === 'dir') return { state: { type: 'directory', mode: 0 } };
  const f = entry.file;
  if (f.text !== undefined) return { state: textState(f.text, false), text: f.text };
  return { state: fileState(Buffer.from(f.bytes!), 0, false) };
}

/**
 * Puts `target` (absent, or a file's text) at `p`, which holds `now` (`present`, with `text` when
 * it is text): a removal through `delete`, a new file through `write`, an existing one through the
 * backend's `edit` of its whole content (a compare-and-swap: a change made meanwhile makes the
 * backend refuse).
 */
export async function restoreOnBackend(
  g: GuardedBackend,
  p: string,
  now: { present: boolean; text?: string },
  target: { text: string } | undefined,
  signal: AbortSignal,
): Promise<void> {
  if (!target) {
    if (now.present) await g.delete(p, signal);
    return;
  }
  if (!now.present) {
    await g.write(p, target.text, signal);
    return;
  }
  if (now.text) {
    await replaceContent(g, p, now.text, target.text, signal);
    return;
  }
  // An empty (or binary) file: there is no text to swap, so it is replaced whole.
  await g.delete(p, signal);
  await g.write(p, target.text, signal);
}
