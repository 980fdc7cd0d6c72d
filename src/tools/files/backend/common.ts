/**
 * What the file tools share on a backend: the one guarded backend per init context, how a path the
 * model gives becomes a backend path (POSIX, rooted at `/`, `..` never above the root) and how it is
 * shown (relative to `/`, as the local tools show workspace-relative paths), the stale-write
 * stamps (the content itself while memory allows, else its hash: backends have no inode or
 * nanosecond mtime), and the whole-file CAS write.
 * Must not touch the local disk: on a backend every file is the backend's.
 */
import { createHash } from 'node:crypto';
import posix from 'node:path/posix';
import type { Tool } from '../../../authoring/tool.js';
import { GuardedBackend, BackendError, type BackendFile } from '../../../backend/guard.js';
import type { FileStamp, ReadTracker } from '../../../workspace/read-tracker.js';

const guarded = new WeakMap<object, GuardedBackend>();
const serials = new WeakMap<object, number>();
let nextSerial = 1;

/** The guarded backend of `initCtx` (one per backend object, shared by its tools). */
export function backendOf(initCtx: Tool.InitContext): GuardedBackend {
  const raw = initCtx.backend!;
  let g = guarded.get(raw);
  if (!g) guarded.set(raw, (g = new GuardedBackend(raw)));
  return g;
}

/** A model's path as the backend's path: `/`-rooted, normalised; a NUL byte is refused. */
export function backendPath(given: string): string {
  if (given.includes('\0'))
    throw new Error(`The path ${JSON.stringify(given)} contains a NUL byte; give a plain path.`);
  const trimmed = given.trim() || '.';
  return posix.resolve('/', trimmed);
}

/** How a backend path is shown: relative to the backend's root, `.` for the root itself. */
export function shownPath(p: string): string {
  return p === '/' ? '.' : p.slice(1);
}

/**
 * The read tracker's key for a backend path: tagged with the backend, so it can never equal a host
 * path (or the same path on another backend).
 */
export function trackKey(g: GuardedBackend, p: string): string {
  let n = serials.get(g.raw);
  if (n === undefined) serials.set(g.raw, (n = nextSerial++));
  return `backend#${n}:${p}`;
}

/** The undo log's domain of a backend in this process (its changes never mix with host paths, or another backend's). */
export function backendDomain(g: GuardedBackend): string {
  return trackKey(g, '').slice(0, -1);
}

/** The text hashed last and its SHA-256: a tool that stamps a text and then records it for undo hashes it once. */
let lastText: string | undefined;
let lastDigest: Buffer | undefined;

/** The SHA-256 of `text` (UTF-8). */
export function textDigest(text: string): Buffer {
  if (text !== lastText || !lastDigest) {
    lastDigest = createHash('sha256').update(text, 'utf8').digest();
    lastText = text;
  }
  return lastDigest;
}

/** A file version's stamp from its content (SHA-256), in the read tracker's shape. */
export function contentStamp(file: BackendFile): FileStamp {
  const d = file.text !== undefined ? textDigest(file.text) : createHash('sha256').update(file.bytes!).digest();
  return {
    mtimeNs: d.readBigUInt64BE(0),
    size: BigInt(file.text?.length ?? file.bytes!.length),
    ino: d.readBigUInt64BE(8),
  };
}

/**
 * Most characters of backend file content kept in memory (over all tenants and sessions) so that a
 * stale-write check compares the content seen with the content now, instead of hashing both. Past
 * it, the oldest kept content is hashed and dropped: the check is the same, only dearer.
 */
export const MAX_REMEMBERED_BACKEND_CHARS = 32 * 1024 * 1024;

/** `mtimeNs` of a stamp that stands for remembered content (a hash stamp's is unsigned, never this). */
const REMEMBERED = -1n;

/**
 * Content a session saw (as pieces: after an edit, the text read around the replacements, so no
 * copy of the whole file is made), and the stamp recorded for it in the read tracker (hashed in
 * place when dropped).
 */
interface Seen {
  stamp: FileStamp;
  parts: readonly string[];
  length: number;
}

/** Remembered content, oldest first; the key names the tracker, the session and the file. */
const seen = new Map<string, Seen>();
let seenChars = 0;
let seenSerial = 0n;
const trackerIds = new WeakMap<ReadTracker, number>();
let nextTrackerId = 1;

function seenKey(tracker: ReadTracker, session: string, key: string): string {
  let id = trackerIds.get(tracker);
  if (id === undefined) trackerIds.set(tracker, (id = nextTrackerId++));
  return `${id}\0${session}\0${key}`;
}

function forgetSeen(k: string): void {
  const old = seen.get(k);
  if (!old) return;
  seen.delete(k);
  seenChars -= old.length;
}

/**
 * Records that `session` saw `file` at `key` (a `trackKey`): text is kept (up to
 * MAX_REMEMBERED_BACKEND_CHARS in all) so the next check compares it directly; bytes, or text past
 * the budget, are recorded by hash. Every backend tool records through here, so what is
 * remembered and what the tracker holds agree.
 */
export function recordSeen(tracker: ReadTracker, session: string, key: string, file: BackendFile): void {
  if (file.text === undefined) {
    forgetSeen(seenKey(tracker, session, key));
    tracker.record(session, key, contentStamp(file));
    return;
  }
  recordSeenParts(tracker, session, key, [file.text]);
}

/** `recordSeen` of the text that is `parts` joined (without joining them). */
export function recordSeenParts(tracker: ReadTracker, session: string, key: string, parts: readonly string[]): void {
  const k = seenKey(tracker, session, key);
  forgetSeen(k);
  let length = 0;
  for (const part of parts) length += part.length;
  if (length > MAX_REMEMBERED_BACKEND_CHARS) {
    tracker.record(session, key, contentStamp({ text: parts.join('') }));
    return;
  }
  const stamp: FileStamp = { mtimeNs: REMEMBERED, size: BigInt(length), ino: ++seenSerial };
  seen.set(k, { stamp, parts, length });
  seenChars += length;
  while (seenChars > MAX_REMEMBERED_BACKEND_CHARS) {
    const [oldestKey, oldest] = seen.entries().next().value as [string, Seen];
    // The tracker still holds this stamp object: it becomes the content's hash stamp.
    Object.assign(oldest.stamp, contentStamp({ text: oldest.parts.join('') }));
    forgetSeen(oldestKey);
  }
  tracker.record(session, key, stamp);
}

/** Characters of backend file content remembered now (all tenants and sessions). */
export function rememberedChars(): number {
  return seenChars;
}

/** Whether `text` is `was`'s pieces joined (compared piece by piece: slices of `text` copy nothing). */
function sameText(was: Seen, text: string): boolean {
  if (text.length !== was.length) return false;
  let at = 0;
  for (const part of was.parts) {
    if (text.slice(at, at + part.length) !== part) return false;
    at += part.length;
  }
  return true;
}

/**
 * The read tracker's stale check for a backend file: throws unless `session` saw `key` and its
 * content then equals `file` now (compared directly when remembered, else by hash).
 */
export async function assertSeenFresh(
  tracker: ReadTracker,
  session: string,
  key: string,
  shown: string,
  file: BackendFile,
): Promise<void> {
  const was = seen.get(seenKey(tracker, session, key));
  const same = was !== undefined && file.text !== undefined && sameText(was, file.text);
  await tracker.assertFresh(session, key, shown, same ? was.stamp : contentStamp(file));
}

/** What is at `p`: a file, a directory (the backend lists entries under it), or nothing. */
export type Entry =
  { kind: 'file'; file: BackendFile } | { kind: 'dir'; entries: number } | { kind: 'missing'; error?: string };

/**
 * What is at `p`. A backend says "not found" in its own words, so a failed `readRaw` is followed by a
 * listing: entries under `p` make it a directory, none make it missing. A file the listing of its
 * directory shows but `readRaw` cannot read fails with the backend's failure, never as a directory
 * (guard.ts refuses a listing that names the directory asked about itself).
 */
export async function entryAt(g: GuardedBackend, p: string, signal: AbortSignal): Promise<Entry> {
  if (p === '/') return { kind: 'dir', entries: (await g.ls(p, signal)).length };
  let failure: BackendError | undefined;
  let error: string | undefined;
  try {
    const r = await g.readRaw(p, signal);
    if (r.file) return { kind: 'file', file: r.file };
    error = r.error;
  } catch (err) {
    // Some backends throw for a missing file (deepagents' FilesystemBackend.readRaw does).
    if (!(err instanceof BackendError) || err.kind !== 'threw') throw err;
    failure = err;
  }
  // When readRaw threw, a listing that fails too must not hide why: the read's failure is the sentence.
  const ls = async (dir: string) => {
    try {
      return await g.ls(dir, signal);
    } catch (err) {
      throw failure ?? err;
    }
  };
  const listed = await ls(p);
  if (listed.length) return { kind: 'dir', entries: listed.length };
  const name = posix.basename(p);
  const siblings = await ls(posix.dirname(p));
  if (siblings.some((f) => !f.is_dir && !f.path.endsWith('/') && posix.basename(f.path) === name)) {
    // It is there but cannot be read: the backend's own failure, not "missing".
    throw (
      failure ??
      new BackendError(`The backend ${g.name} refused readRaw of ${p}: ${error ?? 'no reason given'}`, 'refused')
    );
  }
  return { kind: 'missing', error };
}

/**
 * Replaces the whole content of `p`: through `edit(before -> after)` when the file has text, so a
 * change made by anyone since `before` was read makes the backend refuse (nothing half-written),
 * else through `write`.
 */
export async function replaceContent(
  g: GuardedBackend,
  p: string,
  before: string | undefined,
  after: string,
  signal: AbortSignal,
): Promise<void> {
  if (before) {
    await editOrExplain(g, p, before, after, signal);
    return;
  }
  await g.write(p, after, signal);
}

/**
 * The backend's `edit` of `oldString` (which was there once when read); a refusal (the text is no
 * longer there exactly once: the file changed meanwhile, or the backend refuses edits) becomes one
 * sentence saying nothing was written, with the backend's own words.
 */
export async function editOrExplain(
  g: GuardedBackend,
  p: string,
  oldString: string,
  newString: string,
  signal: AbortSignal,
): Promise<void> {
  try {
    await g.edit(p, oldString, newString, signal);
  } catch (err) {
    if (!(err instanceof BackendError) || err.kind !== 'refused') throw err;
    const why = err.message.replace(/^The backend .*? refused edit of \S+: /, '');
    throw new Error(
      `File ${shownPath(p)} was not changed: the backend ${g.name} refused the edit (${why}). The file may have changed there since it was read: read it again and retry. Nothing was written.`,
      { cause: err },
    );
  }
}

/**
 * Characters of the text read sent along on each side of a single exact match to the backend's
 * `edit`: a longer needle is found faster (deepagents' FilesystemBackend spent a third less on
 * its search and split of 10 MB with 256 on each side), and the text around the match must still be there.
 */
const EDIT_CONTEXT_CHARS = 256;

/**
 * The backend's `edit` of the one exact match at [start, end) of `raw` (the text read) with
 * `replacement`, sent with up to EDIT_CONTEXT_CHARS of the text around it (never splitting a
 * surrogate pair, never reaching into a BOM). When the backend refuses that (the text around it
 * changed meanwhile), the bare match is sent as before, so what is written and every sentence are
 * `editOrExplain`'s.
 */
export async function editExactMatch(
  g: GuardedBackend,
  p: string,
  raw: string,
  start: number,
  end: number,
  replacement: string,
  signal: AbortSignal,
): Promise<void> {
  const floor = raw.charCodeAt(0) === 0xfeff ? 1 : 0;
  let from = Math.max(floor, start - EDIT_CONTEXT_CHARS);
  let to = Math.min(raw.length, end + EDIT_CONTEXT_CHARS);
  if (from < start && isLowSurrogate(raw.charCodeAt(from))) from++;
  if (to > end && isHighSurrogate(raw.charCodeAt(to - 1))) to--;
  const oldString = raw.slice(start, end);
  if (from < start || to > end) {
    try {
      await g.edit(p, raw.slice(from, to), raw.slice(from, start) + replacement + raw.slice(end, to), signal);
      return;
    } catch (err) {
      if (!(err instanceof BackendError) || err.kind !== 'refused') throw err;
    }
  }
  await editOrExplain(g, p, oldString, replacement, signal);
}

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

/** Text of a backend file, or a sentence saying it is binary. */
export function textOf(file: BackendFile, shown: string): string {
  if (file.text !== undefined) return file.text;
  throw new Error(`${shown} is a binary file (${file.mimeType ?? 'bytes'}); this tool only works on text files.`);
}

/**
 * `tool` with a backend that did not answer before the call was stopped (timeout or abort) reported
 * as a result carrying the sentence naming the backend and the operation: the pipeline then adds its
 * own stop notice to it, where a thrown error would have been replaced by that notice alone.
 */
export function answerStops(tool: Tool.Initialized): Tool.Initialized {
  const execute = tool.execute.bind(tool);
  return {
    ...tool,
    execute: (args, ctx) =>
      execute(args, ctx).catch((err: unknown) => {
        if (!(err instanceof BackendError) || err.kind !== 'stopped') throw err;
        return { title: tool.id, output: err.message, metadata: { error: err.message, truncated: false } };
      }),
  };
}
