/**
 * One recorded change (UndoRecord, with what each path held before and after) and its store
 * form: JSON with file content as base64 (lossless) and fingerprints as hex, versioned, and read
 * back only when every field has the shape written (a record that does not is reported, never
 * restored).
 */
import { createHash } from 'node:crypto';
import { Fingerprint, type EntryState, type TreeEntry } from './undo-state.js';

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

/** The version of the undo record shape written to a store. */
const RECORD_VERSION = 1;

/** A change as one store record: JSON, file content as base64 (lossless), fingerprints as hex. */
export function encodeRecord(r: UndoRecord): Record<string, unknown> {
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
export function decodeRecord(key: string, v: Record<string, unknown>): UndoRecord | undefined {
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
