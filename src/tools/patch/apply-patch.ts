/**
 * apply_patch: one patch (the format of parse.ts) changes many files, all or nothing. Every path is
 * resolved in the workspace, every file locked (in sorted order), read, checked against the
 * session's reads and every hunk located before anything is written; then each file is written
 * atomically, and a failure part-way (an abort, a file changed underneath, a full disk) puts back
 * what was already written. The whole patch is one undo record.
 * Must not parse (parse.ts), locate hunks (locate.ts) or shape the answer (result.ts).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf, type Tenant } from '../../workspace/tenant.js';
import { Workspace, atomicWriteFile, stampOf, withFileLocks, type FileStamp } from '../../workspace/workspace.js';
import { decodeLossless, encodeLossless, hasEscapeRange } from '../files/lossless-text.js';
import { recordChange } from '../files/undo-log.js';
import type { UndoEffect } from '../files/undo-record.js';
import { fileState, restoreState, type EntryState } from '../files/undo-state.js';
import { MAX_EDIT_FILE_BYTES } from '../files/edit.js';
import { parsePatch, PatchSyntaxError, type PatchOperation } from './parse.js';
import { applyHunks, describeFailure, fileText, restoreText } from './locate.js';
import { patchResult, refusal, type FileChange } from './result.js';

/** Largest patch accepted (characters of `input`). */
export const MAX_PATCH_CHARS = 10 * 1024 * 1024;
/** Most files one patch changes (a move counts its two paths as one file). */
export const MAX_PATCH_FILES = 200;

/** apply_patch's arguments (the backend variant takes the same). */
export const applyPatchParameters = z.object({
  input: z
    .string()
    .describe(
      'The whole patch, from "*** Begin Patch" to "*** End Patch": *** Add File / *** Delete File / *** Update File sections with @@ hunks.',
    ),
});

export const ApplyPatchTool = Tool.define(
  {
    id: 'apply_patch',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'apply_patch'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    return {
      description:
        'Apply a patch (*** Begin Patch ... *** End Patch) that adds, deletes, updates or moves files; all of it or nothing.',
      parameters: applyPatchParameters,
      async execute(args: z.infer<typeof applyPatchParameters>, ctx) {
        const ops = readPatch(args.input);
        const targets = await resolveAll(ws, ops);
        const paths = [...new Set(targets.flatMap((t) => (t.dest ? [t.abs, t.dest] : [t.abs])))].sort();
        return withFileLocks(paths, async () => {
          const plans: FilePlan[] = [];
          const problems: string[] = [];
          for (const t of targets) {
            try {
              plans.push(await planFile(t, tenant, ctx.sessionID));
            } catch (err) {
              if (err instanceof HunkFailures) problems.push(...err.lines);
              else problems.push((err as Error).message);
            }
          }
          if (problems.length) throw new Error(refusal(problems));
          if (ctx.abort.aborted) throw new Error('apply_patch was aborted before writing; nothing was changed.');
          await commit(plans, ctx);
          recordChange(tenant, ctx, 'apply_patch', summaryOf(plans), plans.flatMap(effectsOf));
          for (const p of plans) {
            const written = p.dest ?? p.abs;
            if (p.stamp) tenant.readTracker.record(ctx.sessionID, written, p.stamp);
          }
          return patchResult(plans.map((p) => p.change));
        });
      },
    };
  },
);

/** The patch read, or a refusal naming the line and rule it broke (nothing is changed). */
export function readPatch(input: string): PatchOperation[] {
  if (input.length > MAX_PATCH_CHARS) {
    throw new Error(
      `The patch is ${input.length} characters, above the ${MAX_PATCH_CHARS}-character limit of apply_patch. Split it into several patches. Nothing was changed.`,
    );
  }
  if (hasEscapeRange(input)) {
    throw new Error(
      'The patch contains characters U+10FF00-U+10FFFF, which apply_patch reserves for bytes that are not valid UTF-8. Remove them and retry. Nothing was changed.',
    );
  }
  let ops: PatchOperation[];
  try {
    ops = parsePatch(input);
  } catch (err) {
    if (!(err instanceof PatchSyntaxError)) throw err;
    throw new Error(`The patch is not valid, so nothing was changed: ${err.message}`, { cause: err });
  }
  if (ops.length > MAX_PATCH_FILES) {
    throw new Error(
      `The patch changes ${ops.length} files, more than the ${MAX_PATCH_FILES} one apply_patch call may change. Split it. Nothing was changed.`,
    );
  }
  return ops;
}

/** One operation with its real paths. */
interface Target {
  op: PatchOperation;
  abs: string;
  shown: string;
  /** Move to: the destination. */
  dest?: string;
  destShown?: string;
}

/** Resolves every path in the workspace; refuses a patch that names one file twice. */
async function resolveAll(ws: Workspace, ops: PatchOperation[]): Promise<Target[]> {
  const targets: Target[] = [];
  const seen = new Map<string, number>();
  const claim = (abs: string, shown: string, line: number) => {
    const earlier = seen.get(abs);
    if (earlier !== undefined) {
      throw new Error(
        `The patch changes ${shown} twice (lines ${earlier} and ${line}). Put all its hunks under one '*** Update File:' section. Nothing was changed.`,
      );
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
interface FilePlan {
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
class HunkFailures extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
  }
}

/** Reads and checks one target and works out its new content; throws what stops it. */
async function planFile(t: Target, tenant: Tenant, session: string): Promise<FilePlan> {
  const { op, abs, shown } = t;
  const tracker = tenant.readTracker;
  const current = await readIfFile(abs, shown, op.kind === 'delete');
  if (op.kind === 'add') {
    if (current) {
      if (!tracker.lastRead(session, abs)) {
        throw new Error(
          `${shown} already exists, and Add File would replace it without it having been read in this session. Read it first if you mean to replace it, or change it with '*** Update File:'.`,
        );
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
    throw new Error(
      `${shown} does not exist, so it cannot be ${op.kind === 'delete' ? 'deleted' : 'updated'}. Check the path (list or glob show what is there); to create a file use '*** Add File:'.`,
    );
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
        throw new Error(
          `${t.destShown} already exists, and moving ${shown} there would replace it without it having been read in this session. Read it first if you mean to replace it, or choose another '*** Move to:' path.`,
        );
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
  if (st.isDirectory()) throw new Error(`${shown} is a directory; apply_patch changes files only.`);
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

/**
 * Writes every plan in order; on any failure puts back each path already changed (newest first)
 * and throws a sentence saying so. Reports progress per file.
 */
async function commit(plans: FilePlan[], ctx: Tool.Context): Promise<void> {
  const undo: Array<{ abs: string; shown: string; before: EntryState }> = [];
  let current = '';
  try {
    for (const [i, p] of plans.entries()) {
      current = p.shown;
      ctx.metadata({
        title: `apply_patch: ${p.change.operation} ${p.shown} (${i + 1}/${plans.length})`,
        metadata: { path: p.shown, operation: p.change.operation, index: i + 1, total: plans.length },
      });
      const stale = `${p.shown} was changed on disk by someone else while the patch was being applied.`;
      if (p.data === undefined) {
        await assertUnchanged(p.abs, p.version!, stale);
        await fs.unlink(p.abs);
        undo.push({ abs: p.abs, shown: p.shown, before: p.before });
        continue;
      }
      const target = p.dest ?? p.abs;
      await fs.mkdir(path.dirname(target), { recursive: true });
      const expect = p.dest ? p.destVersion : p.version;
      const { stat } = await atomicWriteFile(target, p.data, {
        signal: ctx.abort,
        ...(expect ? { expect, staleMessage: stale } : {}),
        ...(p.before.type === 'file' && p.dest ? { mode: p.before.mode } : {}),
      });
      undo.push({ abs: target, shown: p.dest ? p.change.moveTo! : p.shown, before: p.dest ? p.destBefore! : p.before });
      p.stamp = stat;
      if (p.dest) {
        await assertUnchanged(p.abs, p.version!, stale);
        await fs.unlink(p.abs);
        undo.push({ abs: p.abs, shown: p.shown, before: p.before });
      }
    }
  } catch (err) {
    const why = ctx.abort.aborted ? 'the call was aborted' : (err as Error).message;
    const notRestored: string[] = [];
    for (const u of undo.reverse()) {
      try {
        await restoreState(u.abs, u.before);
      } catch (e) {
        notRestored.push(`${u.shown} (${(e as Error).message})`);
      }
    }
    if (notRestored.length) {
      throw new Error(
        `apply_patch failed at ${current} (${why}) and could not put back ${notRestored.join(', ')}; the other files are as they were. Read those files before going on.`,
        { cause: err },
      );
    }
    throw new Error(
      `apply_patch failed at ${current} (${why}); the ${undo.length} change${undo.length === 1 ? '' : 's'} already written were put back, so nothing was changed.`,
      { cause: err },
    );
  }
}

async function assertUnchanged(abs: string, version: FileStamp, message: string): Promise<void> {
  const now = await fs.stat(abs, { bigint: true }).catch(() => undefined);
  const s = now && stampOf(now);
  if (!s || s.mtimeNs !== version.mtimeNs || s.size !== version.size || s.ino !== version.ino) throw new Error(message);
}

/** The undo effects of one applied plan. */
function effectsOf(p: FilePlan): UndoEffect[] {
  const after = (data: Buffer): EntryState => fileState(data, 0, false);
  if (p.data === undefined) return [{ path: p.abs, shown: p.shown, before: p.before, after: { type: 'absent' } }];
  if (!p.dest) return [{ path: p.abs, shown: p.shown, before: p.before, after: after(p.data) }];
  return [
    { path: p.abs, shown: p.shown, before: p.before, after: { type: 'absent' } },
    { path: p.dest, shown: p.change.moveTo!, before: p.destBefore!, after: after(p.data) },
  ];
}

function summaryOf(plans: FilePlan[]): string {
  const names = plans.map((p) => p.shown);
  return `apply_patch of ${names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`}`;
}
