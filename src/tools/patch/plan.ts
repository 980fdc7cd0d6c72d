/**
 * What apply_patch checks before it writes anything: every path resolved in the workspace (one file
 * named twice refused), then per file, under its lock, the file read, the session's read of it
 * checked, every hunk placed and the new bytes made; the refusals a model can act on.
 * Must not write files (commit.ts) nor parse the patch (parse.ts).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Tenant } from '../../workspace/tenant.js';
import { stampOf, type FileStamp, type Workspace } from '../../workspace/workspace.js';
import { decodeLossless, encodeLossless } from '../files/lossless-text.js';
import { fileState, type EntryState } from '../files/undo-state.js';
import { MAX_EDIT_FILE_BYTES } from '../files/edit.js';
import type { PatchOperation } from './parse.js';
import { applyHunks, describeFailure, fileText, restoreText } from './locate.js';
import { refusals, type FileChange } from './result.js';

/** One operation with its real paths. */
export interface Target {
  op: PatchOperation;
  abs: string;
  shown: string;
  /** Move to: the destination. */
  dest?: string;
  destShown?: string;
}

/** Resolves every path in the workspace; refuses a patch that names one file twice. */
export async function resolveAll(ws: Workspace, ops: PatchOperation[]): Promise<Target[]> {
  const targets: Target[] = [];
  const seen = new Map<string, number>();
  const claim = (abs: string, shown: string, line: number) => {
    const earlier = seen.get(abs);
    if (earlier !== undefined) {
      throw new Error(refusals.namedTwice(shown, earlier, line));
    }
    seen.set(abs, line);
  };
  for (const op of ops) {
    const abs = op.kind === 'delete' ? await ws.resolveEntry(op.path, 'write') : await ws.resolve(op.path, 'write');
    if (ws.roots.includes(abs))
      throw new Error(`${ws.display(abs)} is a workspace root, not a file. Nothing was changed.`);
    const t: Target = { op, abs, shown: ws.display(abs) };
    claim(abs, t.shown, op.line);
    if (op.kind === 'update' && op.moveTo !== undefined) {
      t.dest = await ws.resolve(op.moveTo, 'write');
      t.destShown = ws.display(t.dest);
      if (t.dest !== abs) claim(t.dest, t.destShown, op.line);
      else t.dest = undefined;
    }
    targets.push(t);
  }
  return targets;
}

/** What one file will become, checked and ready to write. */
export interface FilePlan {
  abs: string;
  shown: string;
  dest?: string;
  /** The version read (updates, deletes and replaced files): the write refuses if it changed since. */
  version?: FileStamp;
  destVersion?: FileStamp;
  before: EntryState;
  destBefore?: EntryState;
  /** New bytes (absent for a delete). */
  data?: Buffer;
  /** Set once written: the stamp of the file written (for the read tracker). */
  stamp?: FileStamp;
  change: FileChange;
}

/** Several hunks of one file that did not fit, one line each. */
export class HunkFailures extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
  }
}

/** Reads and checks one target and works out its new content; throws what stops it. */
export async function planFile(t: Target, tenant: Tenant, session: string): Promise<FilePlan> {
  const { op, abs, shown } = t;
  const tracker = tenant.readTracker;
  const current = await readIfFile(abs, shown, op.kind === 'delete');
  if (op.kind === 'add') {
    if (current) {
      if (!tracker.lastRead(session, abs)) {
        throw new Error(refusals.addOverUnread(shown));
      }
      await tracker.assertFresh(session, abs, shown, current.stamp);
    }
    const data = Buffer.from(op.contents, 'utf8');
    return {
      abs,
      shown,
      version: current?.stamp,
      before: current ? fileState(current.bytes, current.mode, true) : { type: 'absent' },
      data,
      change: { operation: 'add', path: shown, before: current?.bytes.toString('utf8') ?? '', after: op.contents },
    };
  }
  if (!current) {
    throw new Error(refusals.missing(shown, op.kind));
  }
  const before = fileState(current.bytes, current.mode, true);
  if (op.kind === 'delete') {
    await tracker.assertFreshIfRead(session, abs, shown);
    return {
      abs,
      shown,
      version: current.stamp,
      before,
      change: { operation: 'delete', path: shown, before: current.bytes.toString('utf8'), after: '' },
    };
  }
  await tracker.assertFresh(session, abs, shown, current.stamp);
  const decoded = decodeLossless(current.bytes);
  if (!decoded) {
    throw new Error(
      `${shown} mixes bytes that are not valid UTF-8 with characters U+10FF00-U+10FFFF, so apply_patch cannot change it without risking other bytes; change it with a command instead.`,
    );
  }
  const text = fileText(decoded.text);
  const located = applyHunks(text.content, op.hunks);
  if (!located.ok) throw new HunkFailures(located.failures.map((f) => describeFailure(shown, f)));
  const final = restoreText(text, located.text);
  const data = decoded.escaped ? encodeLossless(final) : Buffer.from(final, 'utf8');
  const plan: FilePlan = {
    abs,
    shown,
    version: current.stamp,
    before,
    data,
    change: {
      operation: t.dest ? 'move' : 'update',
      path: shown,
      moveTo: t.destShown,
      before: text.content,
      after: located.text,
      levels: located.levels,
    },
  };
  if (t.dest) {
    const there = await readIfFile(t.dest, t.destShown!, false);
    plan.dest = t.dest;
    plan.destBefore = { type: 'absent' };
    if (there) {
      if (!tracker.lastRead(session, t.dest)) {
        throw new Error(refusals.moveOverUnread(t.destShown!, shown));
      }
      await tracker.assertFresh(session, t.dest, t.destShown, there.stamp);
      plan.destVersion = there.stamp;
      plan.destBefore = fileState(there.bytes, there.mode, true);
    }
  }
  return plan;
}

/** The file at `abs` with the stamp of the version read, or undefined when nothing is there; refuses what is not a regular file. */
async function readIfFile(
  abs: string,
  shown: string,
  entry: boolean,
): Promise<{ bytes: Buffer; stamp: FileStamp; mode: number } | undefined> {
  const st = await (entry ? fs.lstat(abs) : fs.stat(abs)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
    throw err;
  });
  if (!st) {
    await assertCreatable(abs, shown);
    return undefined;
  }
  if (st.isDirectory()) throw new Error(refusals.directory(shown));
  if (st.isSymbolicLink()) throw new Error(`${shown} is a symbolic link; delete it with the delete tool.`);
  if (!st.isFile()) throw new Error(`${shown} is not a regular file; apply_patch changes files only.`);
  if (st.size > MAX_EDIT_FILE_BYTES) {
    throw new Error(
      `${shown} is ${st.size} bytes, above the ${MAX_EDIT_FILE_BYTES}-byte limit of apply_patch. Change it with a command (e.g. sed through bash) or split the file.`,
    );
  }
  const handle = await fs.open(abs, 'r');
  try {
    const stamp = stampOf(await handle.stat({ bigint: true }));
    return { bytes: await handle.readFile(), stamp, mode: st.mode };
  } finally {
    await handle.close();
  }
}

/** A missing file can be created only if no ancestor of it is a file. */
async function assertCreatable(abs: string, shown: string): Promise<void> {
  for (let dir = path.dirname(abs); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const st = await fs.stat(dir).catch(() => undefined);
    if (!st) continue;
    if (!st.isDirectory()) throw new Error(`${shown} cannot be created: ${dir} is a file, not a directory.`);
    return;
  }
}
