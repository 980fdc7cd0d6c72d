/**
 * The undo history of one tenant: what each write, edit, move and delete changed (the entry before,
 * a fingerprint of it after), per call and per model turn, bounded in records and bytes; with a
 * store bound, each change also as one store record (so another process on the same store and
 * namespace can undo it), the in-process log staying the cache; and the local restore that puts
 * changes back only when the files are still exactly as those changes left them.
 * Holds no tool definitions (src/tools/files/undo.ts), no sandbox rules (callers resolve paths
 * first) and no backend calls (src/tools/files/backend/undo.ts restores over a backend).
 */
import { createHash, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Tenant } from './tenant.js';
import { atomicWriteFile } from './workspace.js';
import { MalformedRecordError, storeScope, type ScopeContext, type StoreScope } from './store/scope.js';
import type { StoreItem } from './store/types.js';

/** Changes a registry remembers for undo; the oldest is forgotten past it. */
export const MAX_UNDO_RECORDS = 100;
/** Bytes of earlier file content a registry keeps for undo; the oldest changes are forgotten past it, and a change needing more is recorded as not undoable. */
export const MAX_UNDO_BYTES = 32 * 1024 * 1024;

/** Entries of a deleted tree read at once. */
const SNAPSHOT_BATCH = 64;
/**
 * An edit's fingerprint stays unhashed only while the bytes it holds cost little beyond the earlier
 * content the change keeps anyway: at most this many parts (each a Buffer view on the heap) and
 * LAZY_FINGERPRINT_MAX_EXTRA_BYTES of new text. Past either it is hashed when recorded; the
 * result is the same, only when the hashing happens changes.
 */
const LAZY_FINGERPRINT_MAX_PARTS = 64;
const LAZY_FINGERPRINT_MAX_EXTRA_BYTES = 64 * 1024;

/**
 * The SHA-256 of a file's bytes, taken the first time it is compared: most changes are never
 * undone, so an edit does not hash 10 MB twice on the chance that they will be. Until then it
 * holds the bytes as `parts` (in order), which must be bytes the change keeps anyway (its earlier
 * content, or views on it) or small, and must never be modified.
 */
export class Fingerprint {
  private hex: string | undefined;
  private parts: ReadonlyArray<Uint8Array | string> | undefined;

  /** `parts`: bytes, or strings (hashed as UTF-8). */
  constructor(parts: ReadonlyArray<Uint8Array | string>) {
    this.parts = parts;
  }

  /** A fingerprint already taken (read back from a store record). */
  static ofDigest(hex: string): Fingerprint {
    const f = new Fingerprint([]);
    f.hex = hex;
    f.parts = undefined;
    return f;
  }

  /** The hash, taken now if it was not yet. */
  digest(): string {
    if (this.hex === undefined) {
      const h = createHash('sha256');
      for (const p of this.parts!) h.update(p);
      this.hex = h.digest('hex');
      this.parts = undefined;
    }
    return this.hex;
  }

  /** Hashes now and lets go of the bytes (for a state that outlives the bytes it was made from). */
  settle(): this {
    this.digest();
    return this;
  }
}

/**
 * What one path held, as far as undo needs to know. `data` is kept for states undo may restore;
 * a backend's file keeps `text` instead (the string it read, not copied; `size` is its UTF-8 bytes).
 */
export type EntryState =
  | { type: 'absent' }
  | { type: 'file'; size: number; fingerprint: Fingerprint; mode: number; data?: Buffer; text?: string }
  | { type: 'symlink'; target: string }
  /** A directory a move carried (compared by identity) or a delete removed (`tree`, restorable). */
  | { type: 'directory'; dev?: bigint; ino?: bigint; mode: number; tree?: TreeEntry[] }
  /** A file or link a move carried, compared by identity (the inode and, for files, size and mtime). */
  | { type: 'moved'; dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint };

/** One entry of a deleted directory, relative to it; parents come before their children. */
export interface TreeEntry {
  rel: string;
  type: 'file' | 'symlink' | 'directory';
  mode: number;
  data?: Buffer;
  target?: string;
}

/** One path a change touched. */
export interface UndoEffect {
  /** Real absolute path. */
  path: string;
  /** The path as the model saw it. */
  shown: string;
  before: EntryState;
  after: EntryState;
}

/** What a tool reports after changing files. */
export interface NewChange {
  /**
   * Where the paths live: `local` (host paths, the default) or a backend (`backend#<n>` in this
   * process; read back from a store, `backend`). Undo on one never sees the other's changes.
   */
  domain?: string;
  sessionID: string;
  /** The model turn (`ctx.messageID`). */
  turn: string;
  callID: string;
  tool: string;
  /** A few words for messages: `write of a.txt`. */
  summary: string;
  effects: UndoEffect[];
  /** Set by move: undone by renaming `to` back to `from`. */
  move?: { from: string; to: string };
  /** Why the earlier state could not be kept (then nothing is restored). */
  lost?: string;
}

/** A recorded change. */
export interface UndoRecord extends NewChange {
  domain: string;
  seq: number;
  bytes: number;
  /** Its key in a store (unique across processes; also its order after `time`). */
  key: string;
  /** When it was recorded (ms since the epoch). */
  time: number;
}

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
      `The change was made, but its undo record could not be saved in the state store (${(err as Error).message}); ` +
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

/** The version of the undo record shape written to a store. */
const RECORD_VERSION = 1;

/** A change as one store record: JSON, file content as base64 (lossless), fingerprints as hex. */
function encodeRecord(r: UndoRecord): Record<string, unknown> {
  return {
    v: RECORD_VERSION,
    domain: r.domain.startsWith('backend#') ? 'backend' : r.domain,
    time: r.time,
    bytes: r.bytes,
    sessionID: r.sessionID,
    turn: r.turn,
    callID: r.callID,
    tool: r.tool,
    summary: r.summary,
    effects: r.effects.map((e) => ({
      path: e.path,
      shown: e.shown,
      before: encodeState(e.before),
      after: encodeState(e.after),
    })),
    ...(r.move ? { move: r.move } : {}),
    ...(r.lost !== undefined ? { lost: r.lost } : {}),
  };
}

function encodeState(s: EntryState): Record<string, unknown> {
  switch (s.type) {
    case 'absent':
      return { type: 'absent' };
    case 'file':
      return {
        type: 'file',
        size: s.size,
        sha256: s.fingerprint.digest(),
        mode: s.mode,
        ...(s.data
          ? { data: s.data.toString('base64') }
          : s.text !== undefined
            ? { data: Buffer.from(s.text, 'utf8').toString('base64') }
            : {}),
      };
    case 'symlink':
      return { type: 'symlink', target: s.target };
    case 'directory':
      return {
        type: 'directory',
        mode: s.mode,
        ...(s.dev !== undefined ? { dev: String(s.dev), ino: String(s.ino) } : {}),
        ...(s.tree
          ? {
              tree: s.tree.map((e) => ({
                rel: e.rel,
                type: e.type,
                mode: e.mode,
                ...(e.data ? { data: e.data.toString('base64') } : {}),
                ...(e.target !== undefined ? { target: e.target } : {}),
              })),
            }
          : {}),
      };
    case 'moved':
      return {
        type: 'moved',
        dev: String(s.dev),
        ino: String(s.ino),
        size: String(s.size),
        mtimeNs: String(s.mtimeNs),
      };
  }
}

/** A store record back as a change; undefined when it is not in the shape `encodeRecord` writes. */
function decodeRecord(key: string, v: Record<string, unknown>): UndoRecord | undefined {
  if (v.v !== RECORD_VERSION || !Array.isArray(v.effects)) return undefined;
  for (const f of ['domain', 'sessionID', 'turn', 'callID', 'tool', 'summary'] as const)
    if (typeof v[f] !== 'string') return undefined;
  if (typeof v.time !== 'number' || typeof v.bytes !== 'number') return undefined;
  if (v.lost !== undefined && typeof v.lost !== 'string') return undefined;
  let move: NewChange['move'];
  if (v.move !== undefined) {
    const m = v.move as Record<string, unknown> | null;
    if (!m || typeof m.from !== 'string' || typeof m.to !== 'string') return undefined;
    move = { from: m.from, to: m.to };
  }
  const effects: UndoEffect[] = [];
  for (const raw of v.effects as unknown[]) {
    const e = raw as Record<string, unknown> | null;
    if (!e || typeof e.path !== 'string' || typeof e.shown !== 'string') return undefined;
    const before = decodeState(e.before);
    const after = decodeState(e.after);
    if (!before || !after) return undefined;
    effects.push({ path: e.path, shown: e.shown, before, after });
  }
  if (!effects.length) return undefined;
  // A move is undone by renaming its two effects' paths back: it names no other path.
  if (move && (effects.length !== 2 || move.from !== effects[0].path || move.to !== effects[1].path)) return undefined;
  return {
    domain: v.domain as string,
    sessionID: v.sessionID as string,
    turn: v.turn as string,
    callID: v.callID as string,
    tool: v.tool as string,
    summary: v.summary as string,
    effects,
    ...(move ? { move } : {}),
    ...(v.lost !== undefined ? { lost: v.lost } : {}),
    seq: 0,
    bytes: v.bytes,
    key,
    time: v.time,
  };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DIGITS = /^\d+$/;
const HEX64 = /^[0-9a-f]{64}$/;

function decodeBytes(value: unknown): Buffer | undefined {
  return typeof value === 'string' && value.length % 4 === 0 && BASE64.test(value)
    ? Buffer.from(value, 'base64')
    : undefined;
}

function isMode(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0o7777;
}

function decodeState(raw: unknown): EntryState | undefined {
  const s = raw as Record<string, unknown> | null;
  if (!s || typeof s !== 'object') return undefined;
  switch (s.type) {
    case 'absent':
      return { type: 'absent' };
    case 'file': {
      if (typeof s.size !== 'number' || typeof s.sha256 !== 'string' || !HEX64.test(s.sha256) || !isMode(s.mode))
        return undefined;
      const state: EntryState = {
        type: 'file',
        size: s.size,
        fingerprint: Fingerprint.ofDigest(s.sha256),
        mode: s.mode,
      };
      if (s.data !== undefined) {
        const data = decodeBytes(s.data);
        // The content must be what the fingerprint says: a record edited by hand is refused, not restored.
        if (!data || data.length !== s.size || createHash('sha256').update(data).digest('hex') !== s.sha256)
          return undefined;
        state.data = data;
      }
      return state;
    }
    case 'symlink':
      return typeof s.target === 'string' ? { type: 'symlink', target: s.target } : undefined;
    case 'directory': {
      if (!isMode(s.mode)) return undefined;
      const state: EntryState = { type: 'directory', mode: s.mode };
      if (s.dev !== undefined || s.ino !== undefined) {
        if (typeof s.dev !== 'string' || typeof s.ino !== 'string' || !DIGITS.test(s.dev) || !DIGITS.test(s.ino))
          return undefined;
        state.dev = BigInt(s.dev);
        state.ino = BigInt(s.ino);
      }
      if (s.tree !== undefined) {
        if (!Array.isArray(s.tree)) return undefined;
        const tree: TreeEntry[] = [];
        for (const raw of s.tree as unknown[]) {
          const t = raw as Record<string, unknown> | null;
          if (!t || typeof t.rel !== 'string' || !isMode(t.mode)) return undefined;
          // A relative path inside the directory: no way out of it.
          if (
            t.rel === '' ||
            t.rel.startsWith('/') ||
            t.rel.split('/').some((x) => x === '..' || x === '.' || x === '')
          )
            return undefined;
          if (t.type === 'file') {
            const data = decodeBytes(t.data);
            if (!data) return undefined;
            tree.push({ rel: t.rel, type: 'file', mode: t.mode, data });
          } else if (t.type === 'symlink') {
            if (typeof t.target !== 'string') return undefined;
            tree.push({ rel: t.rel, type: 'symlink', mode: t.mode, target: t.target });
          } else if (t.type === 'directory') tree.push({ rel: t.rel, type: 'directory', mode: t.mode });
          else return undefined;
        }
        state.tree = tree;
      }
      return state;
    }
    case 'moved': {
      for (const f of ['dev', 'ino', 'size', 'mtimeNs'] as const)
        if (typeof s[f] !== 'string' || !DIGITS.test(s[f])) return undefined;
      return {
        type: 'moved',
        dev: BigInt(s.dev as string),
        ino: BigInt(s.ino as string),
        size: BigInt(s.size as string),
        mtimeNs: BigInt(s.mtimeNs as string),
      };
    }
    default:
      return undefined;
  }
}

/** Whether a change made in `recorded` belongs to `session` (itself, or a sub-agent's child session). */
function inSession(recorded: string, session: string): boolean {
  return recorded === session || recorded.startsWith(`${session}/`);
}

function stateBytes(s: EntryState): number {
  if (s.type === 'file') return s.data?.length ?? (s.text !== undefined ? s.size : 0);
  if (s.type === 'directory') return (s.tree ?? []).reduce((n, e) => n + (e.data?.length ?? 0) + e.rel.length, 0);
  return 0;
}

/**
 * The state of a file holding `data`. `keep`: with the bytes, so undo can restore it (hashed only
 * when compared); otherwise hashed now, so the state does not hold the bytes.
 */
export function fileState(data: Buffer, mode: number, keep: boolean): EntryState {
  const fingerprint = new Fingerprint([data]);
  const state: EntryState = { type: 'file', size: data.length, fingerprint, mode: mode & 0o7777 };
  if (keep) state.data = data;
  else fingerprint.settle();
  return state;
}

/**
 * The state of a file an edit wrote as `parts` (in order): views on `before.data`, which the change
 * keeps, and the new text. Hashed only when compared, unless holding the parts would cost much.
 */
export function editedState(before: EntryState, parts: readonly Uint8Array[]): EntryState {
  if (before.type !== 'file' || !before.data) throw new Error('an edited state needs the earlier bytes kept');
  let size = 0;
  let extra = 0;
  for (const p of parts) {
    size += p.byteLength;
    if (p.buffer !== before.data.buffer) extra += p.byteLength;
  }
  const fingerprint = new Fingerprint(parts);
  if (parts.length > LAZY_FINGERPRINT_MAX_PARTS || extra > LAZY_FINGERPRINT_MAX_EXTRA_BYTES) fingerprint.settle();
  return { type: 'file', size, fingerprint, mode: before.mode };
}

/** The state of the bytes `data` just read, for an immediate comparison (not to be kept). */
function readState(data: Buffer, mode: number): EntryState {
  return { type: 'file', size: data.length, fingerprint: new Fingerprint([data]), mode: mode & 0o7777 };
}

/**
 * The state a delete removes, with everything needed to restore it; for a directory, undefined
 * when its files hold more than `maxBytes` (the delete is then recorded as not undoable).
 */
export async function snapshotEntry(abs: string, maxBytes = MAX_UNDO_BYTES): Promise<EntryState | undefined> {
  const st = await fs.lstat(abs);
  if (st.isSymbolicLink()) return { type: 'symlink', target: await fs.readlink(abs) };
  if (st.isFile()) return st.size > maxBytes ? undefined : fileState(await fs.readFile(abs), st.mode, true);
  if (!st.isDirectory()) return undefined;
  const tree: TreeEntry[] = [];
  let total = 0;
  const walk = async (dir: string, rel: string): Promise<boolean> => {
    const items = await fs.readdir(dir);
    // Entries are read SNAPSHOT_BATCH at a time: a big tree is read in parallel without running out of descriptors.
    for (let i = 0; i < items.length; i += SNAPSHOT_BATCH) {
      const batch = await Promise.all(
        items.slice(i, i + SNAPSHOT_BATCH).map(async (name): Promise<TreeEntry | undefined> => {
          const p = path.join(dir, name);
          const r = rel ? `${rel}/${name}` : name;
          const s = await fs.lstat(p);
          if (s.isSymbolicLink()) return { rel: r, type: 'symlink', mode: 0, target: await fs.readlink(p) };
          if (s.isDirectory()) return { rel: r, type: 'directory', mode: s.mode & 0o7777 };
          if (!s.isFile() || (total += s.size) > maxBytes) return undefined;
          return { rel: r, type: 'file', mode: s.mode & 0o7777, data: await fs.readFile(p) };
        }),
      );
      if (total > maxBytes) return false;
      for (const e of batch) {
        if (!e) continue;
        tree.push(e);
        if (e.type === 'directory' && !(await walk(path.join(dir, path.basename(e.rel)), e.rel))) return false;
      }
    }
    return true;
  };
  return (await walk(abs, '')) ? { type: 'directory', mode: st.mode & 0o7777, tree } : undefined;
}

/** The identity of an entry a move carries (rename keeps the inode, and a file's size and mtime). */
export async function movedState(abs: string): Promise<EntryState> {
  const st = await fs.lstat(abs, { bigint: true });
  if (st.isDirectory()) return { type: 'directory', dev: st.dev, ino: st.ino, mode: Number(st.mode & 0o7777n) };
  return { type: 'moved', dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs };
}

/** What `abs` holds now, in the terms of `like` (hashing a file only when `like` is a file state). */
export async function currentState(abs: string, like: EntryState): Promise<EntryState> {
  const st = await fs.lstat(abs, { bigint: true }).catch(() => undefined);
  if (!st) return { type: 'absent' };
  if (like.type === 'moved' || (like.type === 'directory' && like.ino !== undefined)) {
    if (st.isDirectory()) return { type: 'directory', dev: st.dev, ino: st.ino, mode: Number(st.mode & 0o7777n) };
    return { type: 'moved', dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs };
  }
  if (st.isSymbolicLink()) return { type: 'symlink', target: await fs.readlink(abs) };
  // Hashed only if the sizes agree (sameState compares sizes first).
  if (st.isFile()) return readState(await fs.readFile(abs), Number(st.mode));
  if (st.isDirectory()) return { type: 'directory', mode: Number(st.mode & 0o7777n), dev: st.dev, ino: st.ino };
  return { type: 'symlink', target: '(not a file)' };
}

/** Whether two states describe the same content (or, for moved entries, the same entry). */
export function sameState(a: EntryState, b: EntryState): boolean {
  switch (a.type) {
    case 'absent':
      return b.type === 'absent';
    case 'file':
      return b.type === 'file' && a.size === b.size && a.fingerprint.digest() === b.fingerprint.digest();
    case 'symlink':
      return b.type === 'symlink' && a.target === b.target;
    case 'moved':
      return b.type === 'moved' && a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs;
    case 'directory':
      if (b.type !== 'directory') return false;
      // A deleted tree is only ever compared while it is still virtual (restored by an older change).
      return a.ino === undefined || (a.dev === b.dev && a.ino === b.ino);
  }
}

/** Puts `state` at `abs` (whatever is there now was checked by the caller). */
export async function restoreState(abs: string, state: EntryState): Promise<void> {
  const now = await fs.lstat(abs).catch(() => undefined);
  switch (state.type) {
    case 'absent':
      if (now?.isDirectory()) await fs.rm(abs, { recursive: true });
      else if (now) await fs.unlink(abs);
      return;
    case 'file':
      await fs.mkdir(path.dirname(abs), { recursive: true });
      if (now && !now.isFile()) await fs.unlink(abs);
      await atomicWriteFile(abs, state.data!, { mode: state.mode });
      await fs.chmod(abs, state.mode);
      return;
    case 'symlink':
      await fs.mkdir(path.dirname(abs), { recursive: true });
      if (now) await fs.unlink(abs);
      await fs.symlink(state.target, abs);
      return;
    case 'directory': {
      await fs.mkdir(path.dirname(abs), { recursive: true });
      await fs.mkdir(abs, { mode: state.mode });
      for (const e of state.tree ?? []) {
        const p = path.join(abs, ...e.rel.split('/'));
        if (e.type === 'directory') await fs.mkdir(p, { mode: e.mode });
        else if (e.type === 'symlink') await fs.symlink(e.target!, p);
        else await fs.writeFile(p, e.data!, { mode: e.mode, flag: 'wx' });
      }
      await fs.chmod(abs, state.mode);
      return;
    }
    case 'moved':
      throw new Error('a moved entry is restored by moving it back');
  }
}
