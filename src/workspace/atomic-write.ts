/**
 * Atomic file writes (temp file beside the target, fsync, rename) and the cleanup of temp files a
 * killed writer left behind. Path checks are not here: callers pass real paths from Workspace.resolve.
 */
import { promises as fs, constants as fsConstants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { throwIfAborted } from '../authoring/abort.js';
import { statIfExists } from '../platform/files.js';
import { stampOf, sameStamp, StaleFileError, type FileStamp } from './read-tracker.js';

/**
 * A leftover temp file whose writer is no longer running is removed once it is this old (ms): a
 * writer in another PID namespace (a container sharing the directory) may look dead from here,
 * and no write takes this long.
 */
export const STALE_TEMP_MIN_AGE_MS = 60_000;
/** A leftover temp file this old (ms) is removed whoever wrote it (its pid may have been reused). */
export const STALE_TEMP_MAX_AGE_MS = 3_600_000;

/** `.<name>.<pid>-<12 hex>.toolbelt.tmp`: the writer's pid tells whether the file may still be in use. */
const TEMP_NAME = /^\..*\.(\d{1,10})-[0-9a-f]{12}\.toolbelt\.tmp$/s;

/** A glob matching every temp file name (and a few more): what ripgrep is told to skip. */
export const ATOMIC_TEMP_GLOB = '.*.[0-9]*-*.toolbelt.tmp';

/** The temp file name for `target` written by this process. */
function tempNameFor(target: string): string {
  const base = path.basename(target).slice(0, 100);
  return path.join(path.dirname(target), `.${base}.${process.pid}-${randomBytes(6).toString('hex')}.toolbelt.tmp`);
}

/** Whether `name` (a file name, not a path) is one of atomicWriteFile's temp files; list, glob and grep never show them. */
export function isAtomicTempName(name: string): boolean {
  return name.endsWith('.toolbelt.tmp') && TEMP_NAME.test(name);
}

/** Options for `atomicWriteFile`. */
export interface AtomicWriteOptions {
  /** Mode for a new file (default 0o666 minus umask). An existing file keeps its own mode. */
  mode?: number;
  /** Stops before the rename when aborted; the target is then untouched. */
  signal?: AbortSignal;
  /**
   * The version of the existing file the new content was made from: checked again just before the
   * rename, so a write from outside during the read-modify-write makes this throw `staleMessage`
   * (a StaleFileError) instead of being silently overwritten.
   */
  expect?: FileStamp;
  /** The message when `expect` no longer matches. */
  staleMessage?: string;
}

/** What `atomicWriteFile` did. */
export interface AtomicWriteResult {
  /** True when the file did not exist before. */
  created: boolean;
  /** The written file's stat, taken from its own descriptor (for the read tracker). */
  stat: FileStamp;
}

/**
 * Writes `data` (a string, bytes, or bytes in parts written in order without being joined) to
 * `target` so that readers (and a crash at any instant) see either the complete
 * old content or the complete new one, never a mix. Existing file: a random temp file beside it,
 * fsync'd, given the old file's mode (and owner, when we may), renamed over it. New file: the
 * temp file is hard-linked into place, which fails if something appeared there meanwhile
 * (exclusive create without ever exposing a half-written file); where hard links are not
 * supported, `open(..., 'wx')` is used. `target` should be a real path (`Workspace.resolve`
 * returns one): rename replaces a symlink rather than following it.
 */
export async function atomicWriteFile(
  target: string,
  data: string | Uint8Array | readonly Uint8Array[],
  options: AtomicWriteOptions = {},
): Promise<AtomicWriteResult> {
  const parts = typeof data === 'string' ? [Buffer.from(data, 'utf8')] : data instanceof Uint8Array ? [data] : data;
  const existing = await statIfExists(target);
  if (existing?.isDirectory()) throw new Error(`${target} is a directory; give the path of a file inside it.`);
  const dir = path.dirname(target);
  const tmp = tempNameFor(target);
  const mode = existing ? existing.mode & 0o7777 : (options.mode ?? 0o666);
  let stamp: FileStamp;
  const handle = await fs.open(tmp, fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY, mode);
  let linked = false;
  try {
    try {
      await writeAll(handle, parts);
      // Temp files are created through the umask; an existing file's exact mode is restored.
      if (existing) {
        await handle.chmod(mode);
        if (process.getuid?.() === 0) await handle.chown(existing.uid, existing.gid).catch(() => undefined);
      }
      await handle.sync();
      stamp = stampOf(await handle.stat({ bigint: true }));
    } finally {
      await handle.close();
    }
    throwIfAborted(options.signal, 'The write was aborted before it was committed; the file is unchanged.');
    if (options.expect) {
      const now = await fs.stat(target, { bigint: true }).catch(() => undefined);
      if (!now || !sameStamp(stampOf(now), options.expect)) {
        throw new StaleFileError(
          options.staleMessage ?? `${target} changed on disk while it was being rewritten; read it again and retry.`,
          target,
          'changed',
        );
      }
    }
    if (existing) {
      await fs.rename(tmp, target);
    } else {
      try {
        await fs.link(tmp, target);
        linked = true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST')
          throw new Error(`${target} was created by someone else while it was being written; read it and try again.`, {
            cause: err,
          });
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw err;
        // No hard links here: fall back to a plain exclusive create.
        const h = await fs.open(target, 'wx', mode);
        try {
          await writeAll(h, parts);
          await h.sync();
          stamp = stampOf(await h.stat({ bigint: true }));
        } finally {
          await h.close();
        }
      }
      await fs.unlink(tmp).catch(() => undefined);
    }
  } catch (err) {
    if (!linked) await fs.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await syncDir(dir);
  await removeStaleTemps(dir, path.basename(tmp));
  return { created: !existing, stat: stamp };
}

/**
 * Writes `parts` in order with writev: no joined copy of the parts, and one call where
 * `FileHandle.writeFile` makes a thread-pool round trip per 512 KiB (10 MB: ~11 ms against ~26 ms
 * for concat + writeFile, measured). Loops on a short write.
 */
async function writeAll(handle: FileHandle, parts: readonly Uint8Array[]): Promise<void> {
  let rest = parts.filter((p) => p.byteLength > 0);
  while (rest.length > 0) {
    let { bytesWritten: n } = await handle.writev(rest);
    if (n === 0) throw new Error('the file system accepted no bytes; the file is unchanged.');
    let i = 0;
    while (i < rest.length && n >= rest[i].byteLength) n -= rest[i++].byteLength;
    rest = rest.slice(i);
    if (n > 0) rest[0] = rest[0].subarray(n);
  }
}

/**
 * Removes temp files of earlier writes to `dir` that a killed writer left behind: only names of
 * our own pattern, only regular files owned by this user, only when their writer is gone and they
 * are older than STALE_TEMP_MIN_AGE_MS (or older than STALE_TEMP_MAX_AGE_MS in any case). Never
 * fails the write that triggered it.
 */
async function removeStaleTemps(dir: string, own: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return;
  }
  const now = Date.now();
  for (const name of names) {
    if (name === own || !name.endsWith('.toolbelt.tmp')) continue;
    const m = TEMP_NAME.exec(name);
    if (!m) continue;
    const file = path.join(dir, name);
    const st = await fs.lstat(file).catch(() => undefined);
    if (!st?.isFile() || (process.getuid && st.uid !== process.getuid())) continue;
    const age = now - st.mtimeMs;
    const pid = Number(m[1]);
    const writerGone = pid !== process.pid && !processAlive(pid);
    if ((writerGone && age >= STALE_TEMP_MIN_AGE_MS) || age >= STALE_TEMP_MAX_AGE_MS)
      await fs.unlink(file).catch(() => undefined);
  }
}

/** Whether a process with this pid exists (EPERM: it exists but is someone else's). */
function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function syncDir(dir: string): Promise<void> {
  // Makes the rename itself durable; not every platform lets a directory be opened, so best-effort.
  const h = await fs.open(dir, 'r').catch(() => undefined);
  if (!h) return;
  await h.sync().catch(() => undefined);
  await h.close().catch(() => undefined);
}
