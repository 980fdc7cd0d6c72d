/**
 * The undo history of one tenant: what each write, edit, move and delete changed (the entry before,
 * a fingerprint of it after), per call and per model turn, bounded in records and bytes; with a
 * store bound, each change also as one store record (so another process on the same store and
 * namespace can undo it), the in-process log staying the cache; and the local restore that puts
 * changes back only when the files are still exactly as those changes left them (undo-state.ts),
 * each change kept in a store as one record (undo-record.ts).
 * Holds no tool definitions (src/tools/files/undo.ts), no sandbox rules (callers resolve paths
 * first) and no backend calls (src/tools/files/backend/undo.ts restores over a backend).
 */
import { randomUUID } from 'node:crypto';
import type { Tenant } from '../../workspace/tenant.js';
import { MalformedRecordError, storeScope, type ScopeContext, type StoreScope } from '../../store/scope.js';
import type { StoreItem } from '../../store/types.js';
import { decodeRecord, encodeRecord, type NewChange, type UndoEffect, type UndoRecord } from './undo-record.js';
import { MAX_UNDO_BYTES, stateBytes } from './undo-state.js';
import { describeThrown } from '../../text/describe.js';

/** Changes a registry remembers for undo; the oldest is forgotten past it. */
export const MAX_UNDO_RECORDS = 100;

/** The history; a tenant owns one. */
export class UndoLog {
  private records: UndoRecord[] = [];
  private seq = 0;
  private kept = 0;
  /** Tells this log's store keys from every other process's. */
  private readonly id = randomUUID();

  /** Records a change; past the limits the oldest changes are forgotten. Returns the record kept. */
  record(change: NewChange): UndoRecord {
    let bytes = change.effects.reduce((n, e) => n + stateBytes(e.before), 0);
    const seq = ++this.seq;
    const time = Date.now();
    // Sorts as it was recorded: the time, then (within a millisecond of one process) the padded count.
    const key = `${String(time).padStart(15, '0')}-${this.id}-${String(seq).padStart(12, '0')}`;
    let rec: UndoRecord = { ...change, domain: change.domain ?? 'local', seq, bytes, key, time };
    if (bytes > MAX_UNDO_BYTES) {
      // The earlier content is dropped: a fingerprint made of views on it must not keep it alive.
      for (const e of rec.effects) if (e.after.type === 'file') e.after.fingerprint.settle();
      rec = {
        ...rec,
        effects: rec.effects.map((e) => ({ ...e, before: { type: 'absent' } })),
        bytes: 0,
        lost: `its earlier content was ${bytes} bytes, more than the ${MAX_UNDO_BYTES} bytes undo keeps`,
      };
      bytes = 0;
    }
    this.records.push(rec);
    this.kept += bytes;
    while (this.records.length > MAX_UNDO_RECORDS || this.kept > MAX_UNDO_BYTES)
      this.kept -= this.records.shift()!.bytes;
    return rec;
  }

  /** Every change remembered, oldest first. */
  all(): readonly UndoRecord[] {
    return this.records;
  }

  /** Changes remembered and the bytes of earlier content they keep. */
  usage(): { records: number; bytes: number } {
    return { records: this.records.length, bytes: this.kept };
  }

  /** Forgets changes (after they were undone), by key: a record read back from a store forgets its cached twin. */
  remove(done: readonly UndoRecord[]): void {
    const gone = new Set(done.map((r) => r.key));
    for (const r of this.records) if (gone.has(r.key)) this.kept -= r.bytes;
    this.records = this.records.filter((r) => !gone.has(r.key));
  }
}

/** The newest change in `records` (oldest first) of `session` (or its sub-agents' sessions) that touched `p`. */
export function lastFor(records: readonly UndoRecord[], sessionID: string, p: string): UndoRecord | undefined {
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i];
    if (inSession(r.sessionID, sessionID) && r.effects.some((e) => e.path === p)) return r;
  }
  return undefined;
}

/** Every change in `records` (oldest first) of the newest turn of `session` other than `currentTurn`, newest first. */
export function lastTurn(records: readonly UndoRecord[], sessionID: string, currentTurn: string): UndoRecord[] {
  const mine = records.filter((r) => inSession(r.sessionID, sessionID) && r.turn !== currentTurn);
  const turn = mine.at(-1)?.turn;
  return turn === undefined ? [] : mine.filter((r) => r.turn === turn).reverse();
}

const UNDO_LOG = Symbol('agent-toolbelt.undo-log');

/** The undo history of a tenant (one per registry). */
export function undoLogOf(tenant: Tenant): UndoLog {
  return tenant.slot(UNDO_LOG, () => new UndoLog());
}

/** The call context recording and undo need (the tool's `ctx`). */
export type UndoCallContext = ScopeContext & { sessionID: string; messageID: string; callID?: string };

/**
 * Records what a tool's call `ctx` changed in `tenant`'s undo history. Without a store that is all
 * (synchronous). With one, the change is also saved as one store record; the save is remembered
 * for `ctx`, and `undoSavesOf(ctx)` awaits it before the tool's result goes back.
 */
export function recordChange(
  tenant: Tenant,
  ctx: UndoCallContext,
  tool: string,
  summary: string,
  effects: UndoEffect[],
  extra: Pick<NewChange, 'move' | 'lost' | 'domain'> = {},
): void {
  const rec = undoLogOf(tenant).record({
    sessionID: ctx.sessionID,
    turn: ctx.messageID,
    callID: ctx.callID ?? ctx.messageID,
    tool,
    summary,
    effects,
    ...extra,
  });
  if (!tenant.storeBinding && !ctx.extra) return;
  const scope = scopeOf(tenant, ctx);
  if (!scope) return;
  let saves = pendingSaves.get(ctx);
  if (!saves) pendingSaves.set(ctx, (saves = []));
  saves.push(saveRecord(scope, rec));
}

const pendingSaves = new WeakMap<object, Array<Promise<string | undefined>>>();

/**
 * Waits for the store saves of the changes call `ctx` recorded; says in a sentence which failed
 * (the change itself was made, and stays undoable in this process). Undefined when all landed
 * (or there was nothing to save: no store).
 */
export async function undoSavesOf(ctx: object): Promise<string | undefined> {
  const saves = pendingSaves.get(ctx);
  if (!saves) return undefined;
  pendingSaves.delete(ctx);
  const notes = (await Promise.all(saves)).filter((n): n is string => n !== undefined);
  return notes.length ? notes.join(' ') : undefined;
}

/** The store scope of a call, or undefined (a namespace that cannot be resolved leaves undo in process). */
function scopeOf(tenant: Tenant, ctx: ScopeContext): StoreScope | undefined {
  try {
    return storeScope(tenant, ctx);
  } catch {
    return undefined;
  }
}

/** Saves `rec` as one record, then removes the oldest past the caps; a failure becomes a sentence. */
async function saveRecord(scope: StoreScope, rec: UndoRecord): Promise<string | undefined> {
  try {
    await scope.put('undo', rec.key, encodeRecord(rec));
    savedRecords.add(rec);
  } catch (err) {
    return (
      `The change was made, but its undo record could not be saved in the state store (${describeThrown(err)}); ` +
      'it can be undone from this process only.'
    );
  }
  try {
    await trimStore(scope);
  } catch {
    // The record landed; older ones are trimmed by the next save.
  }
  return undefined;
}

/** Deletes the oldest undo records past MAX_UNDO_RECORDS or MAX_UNDO_BYTES. */
async function trimStore(scope: StoreScope): Promise<void> {
  const items = (await scope.all('undo')).sort(byTimeThenKey);
  let bytes = 0;
  for (const item of items) bytes += recordBytes(item);
  let count = items.length;
  for (const item of items) {
    if (count <= MAX_UNDO_RECORDS && bytes <= MAX_UNDO_BYTES) break;
    await scope.delete('undo', item.key);
    count--;
    bytes -= recordBytes(item);
  }
}

function recordBytes(item: StoreItem): number {
  const b = item.value?.bytes;
  return typeof b === 'number' && Number.isFinite(b) && b > 0 ? b : 0;
}

function byTimeThenKey(a: StoreItem, b: StoreItem): number {
  const ta = typeof a.value?.time === 'number' ? a.value.time : 0;
  const tb = typeof b.value?.time === 'number' ? b.value.time : 0;
  return ta - tb || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** The changes undo can choose from, oldest first, and sentences naming store records that could not be read. */
export interface UndoHistory {
  records: UndoRecord[];
  unreadable: string[];
}

/**
 * The history undo on `domain` chooses from: this process's log, or with a store every record
 * there (this process's own taken from the log, the cache), plus those of this process whose save
 * failed. A malformed record is left out, with a sentence naming its key.
 */
export async function undoHistory(tenant: Tenant, ctx: UndoCallContext, domain: string): Promise<UndoHistory> {
  const log = undoLogOf(tenant);
  const scope = tenant.storeBinding || ctx.extra ? scopeOf(tenant, ctx) : undefined;
  const mine = (r: UndoRecord) => r.domain === domain || (r.domain === 'backend' && domain.startsWith('backend#'));
  if (!scope) return { records: log.all().filter(mine), unreadable: [] };
  const items = (await scope.all('undo')).sort(byTimeThenKey);
  const cached = new Map(log.all().map((r) => [r.key, r]));
  const inStore = new Set<string>();
  const records: UndoRecord[] = [];
  const unreadable: string[] = [];
  for (const item of items) {
    inStore.add(item.key);
    const own = cached.get(item.key);
    if (own) {
      records.push(own);
      continue;
    }
    try {
      records.push(scope.parsed('undo', item, (v) => decodeRecord(item.key, v)));
    } catch (err) {
      if (!(err instanceof MalformedRecordError)) throw err;
      unreadable.push(err.message);
    }
  }
  // Changes this process recorded whose save failed: still undoable here.
  for (const r of log.all()) if (!inStore.has(r.key) && !savedRecords.has(r)) records.push(r);
  return { records: records.filter(mine).sort((a, b) => a.time - b.time || (a.key < b.key ? -1 : 1)), unreadable };
}

/** Records this process saved in a store (one gone from the store since was trimmed, or undone elsewhere). */
const savedRecords = new WeakSet<UndoRecord>();

/**
 * Forgets undone changes: from the log and, with a store, their records. Says in a sentence which
 * store records could not be deleted (the files were restored all the same).
 */
export async function forgetChanges(
  tenant: Tenant,
  ctx: UndoCallContext,
  records: readonly UndoRecord[],
): Promise<string | undefined> {
  undoLogOf(tenant).remove(records);
  const scope = tenant.storeBinding || ctx.extra ? scopeOf(tenant, ctx) : undefined;
  if (!scope) return undefined;
  const failed: string[] = [];
  for (const r of records) await scope.delete('undo', r.key).catch(() => failed.push(r.key));
  if (!failed.length) return undefined;
  return `The undo record${failed.length === 1 ? '' : 's'} ${failed.map((k) => `"${k}"`).join(', ')} could not be removed from the state store; undoing ${failed.length === 1 ? 'it' : 'them'} again is refused, as the files no longer match.`;
}

/** Whether a change made in `recorded` belongs to `session` (itself, or a sub-agent's child session). */
function inSession(recorded: string, session: string): boolean {
  return recorded === session || recorded.startsWith(`${session}/`);
}
