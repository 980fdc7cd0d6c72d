/**
 * What one path held, as far as undo needs to know (EntryState, Fingerprint), and how the local
 * workspace reads and restores it: snapshots before a change, the state after it, the comparison
 * that decides whether undo may run, and the restore itself. The log that keeps these is
 * undo-log.ts; the store record that carries them is undo-record.ts.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { atomicWriteFile } from '../../workspace/workspace.js';
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

export function stateBytes(s: EntryState): number {
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
