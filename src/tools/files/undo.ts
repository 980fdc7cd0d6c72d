/**
 * undo_file and undo_turn: put back what write, edit, move and delete changed, from the registry's
 * undo history (src/tools/files/undo-log.ts), only when every file is still exactly as those changes left it.
 * Changes made through bash or outside the tools are not recorded and are never touched.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf } from '../../workspace/tenant.js';
import type { ReadTracker } from '../../workspace/read-tracker.js';
import { Workspace, withFileLocks } from '../../workspace/workspace.js';
import type { Tenant } from '../../workspace/tenant.js';
import {
  MAX_UNDO_RECORDS,
  forgetChanges,
  lastFor,
  lastTurn,
  type UndoCallContext,
  type UndoHistory,
  undoHistory,
} from './undo-log.js';
import { MAX_UNDO_BYTES, currentState, fileState, restoreState, sameState, type EntryState } from './undo-state.js';
import { type UndoRecord } from './undo-record.js';

export { MAX_UNDO_BYTES, MAX_UNDO_RECORDS };

export const fileParameters = z.object({
  path: z
    .string()
    .describe('The file (or directory) whose last change to undo: absolute, or relative to the workspace root.'),
});
export const turnParameters = z.object({});

/** The sentences naming store records undo could not read, after `text` (none: `text` itself). */
export function withUnreadable(text: string, history: UndoHistory): string {
  return history.unreadable.length ? `${text}\n\n${history.unreadable.join('\n')}` : text;
}

export const NOT_RECORDED = `(undo remembers the last ${MAX_UNDO_RECORDS} changes made by write, edit, move and delete in this session, up to ${MAX_UNDO_BYTES} bytes of earlier content; changes made through bash are not recorded)`;

export const UndoFileTool = Tool.define(
  {
    id: 'undo_file',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'undo_file'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    return {
      description: 'Undo the last change made to a file by write, edit, move or delete in this session.',
      parameters: fileParameters,
      async execute(args: z.infer<typeof fileParameters>, ctx) {
        const abs = await ws.resolveEntry(args.path, 'write');
        const shown = ws.display(abs);
        return undoLastChange(tenant, ctx, 'local', abs, shown, (records) => undoRecords(ws, tenant, ctx, records));
      },
    };
  },
);

export const UndoTurnTool = Tool.define(
  {
    id: 'undo_turn',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'undo_turn'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    return {
      description: 'Undo every file change (write, edit, move, delete) of your previous turn, newest first.',
      parameters: turnParameters,
      async execute(_args: z.infer<typeof turnParameters>, ctx) {
        return undoLastTurn(tenant, ctx, 'local', (records) => undoRecords(ws, tenant, ctx, records));
      },
    };
  },
);

/** Undoes records through `undo` (which answers one line per record, then any notes). */
type UndoWith = (records: UndoRecord[]) => Promise<string[]>;

/**
 * undo_file's answer wherever the files live (`domain`): the session's last change to `key` (shown
 * as `shown`), undone through `undo`; a sentence when none is recorded.
 */
export async function undoLastChange(
  tenant: Tenant,
  ctx: UndoCallContext,
  domain: string,
  key: string,
  shown: string,
  undo: UndoWith,
): Promise<Tool.Result> {
  const history = await undoHistory(tenant, ctx, domain);
  const record = lastFor(history.records, ctx.sessionID, key);
  if (!record)
    throw new Error(
      withUnreadable(`No change to ${shown} is recorded for undo ${NOT_RECORDED}. Nothing was undone.`, history),
    );
  const lines = await undo([record]);
  return {
    title: `undo ${shown}`,
    output: withUnreadable(`Undid the ${record.summary} (call ${record.callID}): ${lines.join(' ')}`, history),
    metadata: { undone: [undoneMeta(record)] },
  };
}

/** undo_turn's answer wherever the files live (`domain`): the session's previous turn, undone through `undo`. */
export async function undoLastTurn(
  tenant: Tenant,
  ctx: UndoCallContext & { messageID?: string },
  domain: string,
  undo: UndoWith,
): Promise<Tool.Result> {
  const history = await undoHistory(tenant, ctx, domain);
  const records = lastTurn(history.records, ctx.sessionID, ctx.messageID);
  if (!records.length)
    throw new Error(
      withUnreadable(`No earlier turn of this session changed files ${NOT_RECORDED}. Nothing was undone.`, history),
    );
  const lines = await undo(records);
  const n = records.length;
  return {
    title: `undo turn (${n} change${n === 1 ? '' : 's'})`,
    output: withUnreadable(
      `Undid ${n} change${n === 1 ? '' : 's'} of the previous turn, newest first:\n` +
        records.map((r, i) => `- ${r.summary} (call ${r.callID}): ${lines[i]}`).join('\n') +
        (lines.length > records.length ? `\n${lines.slice(records.length).join(' ')}` : ''),
      history,
    ),
    metadata: { turn: records[0].turn, undone: records.map(undoneMeta) },
  };
}

function undoneMeta(r: UndoRecord): Record<string, unknown> {
  return { tool: r.tool, callID: r.callID, paths: r.effects.map((e) => e.shown) };
}

/** Refuses a batch holding a change whose earlier state was not kept (the same sentence on every backend). */
export function refuseLost(records: readonly UndoRecord[]): void {
  const lost = records.find((r) => r.lost);
  if (lost) {
    throw new Error(
      `The ${lost.summary} (call ${lost.callID}) cannot be undone: ${lost.lost}. Nothing was undone; restore it another way (e.g. from version control).`,
    );
  }
}

/** The refusal for a path that is no longer what the change left (the same sentence on every backend). */
export function changedSince(shown: string, r: UndoRecord, now: EntryState): Error {
  return new Error(
    `${shown} changed since the ${r.summary} (call ${r.callID}): it ${describe(now)}, not what that change left. ` +
      'Nothing was undone; read the file and make the change you want with edit or write instead.',
  );
}

/**
 * Undoes `records` (newest first) all or nothing: every path is locked and checked before anything
 * is changed. Returns one line per record saying what was restored (and, when a store record could
 * not be removed, a last line saying so).
 */
async function undoRecords(
  ws: Workspace,
  tenant: Tenant,
  ctx: UndoCallContext,
  records: UndoRecord[],
): Promise<string[]> {
  const readTracker: ReadTracker = tenant.readTracker;
  const sessionID = ctx.sessionID;
  refuseLost(records);
  const paths = [...new Set(records.flatMap((r) => r.effects.map((e) => e.path)))].sort();
  // A path must still resolve to itself: a link planted since must not redirect the restore.
  for (const p of paths) {
    const shown = ws.display(p);
    if ((await ws.resolveEntry(p, 'write')) !== p) {
      throw new Error(`${shown} now resolves to another place (a symbolic link changed). Nothing was undone.`);
    }
  }
  return withFileLocks(paths, async () => {
    await checkUnchanged(records);
    const lines: string[] = [];
    for (const r of records) lines.push(await undoOne(r));
    const note = await forgetChanges(tenant, ctx, records);
    for (const r of records)
      for (const e of r.effects) if (e.before.type === 'file') await readTracker.recordNow(sessionID, e.path);
    return note ? [...lines, note] : lines;
  });
}

/** Refuses unless each path is as the change left it (newer changes of the same batch undone first, in thought). */
async function checkUnchanged(records: UndoRecord[]): Promise<void> {
  const virtual = new Map<string, EntryState>();
  for (const r of records) {
    for (const e of r.effects) {
      const now = virtualState(virtual, e.path) ?? (await currentState(e.path, e.after));
      if (!sameState(e.after, now)) throw changedSince(e.shown, r, now);
    }
    for (const e of r.effects) virtual.set(e.path, e.before);
  }
}

/** What an earlier-undone change would leave at `p` (also inside a directory it would restore). */
function virtualState(virtual: Map<string, EntryState>, p: string): EntryState | undefined {
  const own = virtual.get(p);
  if (own) return own;
  for (const [dir, state] of virtual) {
    if (!p.startsWith(dir + path.sep)) continue;
    if (state.type !== 'directory' || !state.tree) return { type: 'absent' };
    const rel = p
      .slice(dir.length + 1)
      .split(path.sep)
      .join('/');
    const e = state.tree.find((t) => t.rel === rel);
    if (!e) return { type: 'absent' };
    if (e.type === 'file') return fileState(e.data!, e.mode, false);
    if (e.type === 'symlink') return { type: 'symlink', target: e.target! };
    return { type: 'directory', mode: e.mode };
  }
  return undefined;
}

function describe(s: EntryState): string {
  if (s.type === 'absent') return 'no longer exists';
  if (s.type === 'file') return `now holds ${s.size} bytes`;
  if (s.type === 'symlink') return `is now a symbolic link to ${s.target}`;
  if (s.type === 'directory') return 'is now a different directory';
  return 'is now a different file';
}

async function undoOne(r: UndoRecord): Promise<string> {
  if (r.move) {
    const [from, to] = r.effects;
    await fs.mkdir(path.dirname(r.move.from), { recursive: true });
    await fs.rename(r.move.to, r.move.from);
    if (to.before.type !== 'absent') await restoreState(r.move.to, to.before);
    return `moved ${to.shown} back to ${from.shown}${to.before.type !== 'absent' ? ` and restored the ${to.shown} it replaced` : ''}.`;
  }
  const parts: string[] = [];
  for (const e of r.effects) {
    await restoreState(e.path, e.before);
    const b = e.before;
    parts.push(
      b.type === 'absent'
        ? `removed ${e.shown} (the change had created it)`
        : b.type === 'file'
          ? `restored ${e.shown} (${b.size} bytes)`
          : b.type === 'symlink'
            ? `restored the symbolic link ${e.shown} -> ${b.target}`
            : `restored the directory ${e.shown} and the ${b.type === 'directory' ? (b.tree?.length ?? 0) : 0} entries in it`,
    );
  }
  return `${parts.join('; ')}.`;
}
