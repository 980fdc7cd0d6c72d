/**
 * Read tracking for stale-write checks: which files each session has read and what they looked
 * like then. Each registry (tenant) owns one tracker (see tenant.ts).
 * Must not resolve paths or write files: Workspace does both and asks the tracker before a write.
 */
import { promises as fs, type BigIntStats } from 'node:fs';

/** What identifies one version of a file on disk. */
export interface FileStamp {
  mtimeNs: bigint;
  size: bigint;
  ino: bigint;
}

/** Reduces a bigint stat to the fields that tell versions apart. */
export function stampOf(st: BigIntStats): FileStamp {
  return { mtimeNs: st.mtimeNs, size: st.size, ino: st.ino };
}

/** Whether two stamps describe the same version of a file. */
export function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return a.mtimeNs === b.mtimeNs && a.size === b.size && a.ino === b.ino;
}

interface ReadRecord {
  stamp: FileStamp;
  /** When the read happened (ms since epoch). */
  at: number;
}

/** Thrown by `assertFresh` when a file was not read, or changed since it was read. */
export class StaleFileError extends Error {
  constructor(
    message: string,
    readonly filePath: string,
    readonly reason: 'not-read' | 'changed',
  ) {
    super(message);
    this.name = 'StaleFileError';
  }
}

/** Upper bounds so a long-lived host cannot grow the tracker without limit (oldest dropped first). */
export const MAX_TRACKED_SESSIONS = 1000;
export const MAX_TRACKED_FILES_PER_SESSION = 10000;

/**
 * Which files each agent session has read, and what they looked like then. write/edit on an
 * existing file call `assertFresh` first, and `record` after their own write, so a session can
 * edit the same file again and again without re-reading it, while a change made by anyone else
 * (another session, the user, a formatter) forces a fresh read.
 */
export class ReadTracker {
  private readonly sessions = new Map<string, Map<string, ReadRecord>>();

  /** Records that `session` has seen `realPath` as it is described by `stamp`. */
  record(session: string, realPath: string, stamp: FileStamp): void {
    let files = this.sessions.get(session);
    if (files) this.sessions.delete(session);
    else files = new Map();
    this.sessions.set(session, files); // most recently used last
    files.delete(realPath);
    files.set(realPath, { stamp, at: Date.now() });
    if (files.size > MAX_TRACKED_FILES_PER_SESSION) files.delete(files.keys().next().value as string);
    if (this.sessions.size > MAX_TRACKED_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
  }

  /** Stats `realPath` now and records it for `session`. */
  async recordNow(session: string, realPath: string): Promise<void> {
    this.record(session, realPath, stampOf(await fs.stat(realPath, { bigint: true })));
  }

  /** When `session` last read `realPath`, if it did. */
  lastRead(session: string, realPath: string): Date | undefined {
    const r = this.sessions.get(session)?.get(realPath);
    return r ? new Date(r.at) : undefined;
  }

  /**
   * Throws `StaleFileError` unless `session` read `realPath` and the file is unchanged since.
   * `shown` is the path as the model should see it in the message (default: `realPath`); `current`,
   * when the caller already has the file's stamp (from the descriptor it reads), is used instead of a stat.
   */
  async assertFresh(session: string, realPath: string, shown = realPath, current?: FileStamp): Promise<void> {
    const rec = this.sessions.get(session)?.get(realPath);
    if (!rec) {
      throw new StaleFileError(
        `File ${shown} has not been read in this session. Read it first with the read tool, then retry the change.`,
        realPath,
        'not-read',
      );
    }
    const now = current ?? stampOf(await fs.stat(realPath, { bigint: true }));
    if (!sameStamp(now, rec.stamp)) {
      throw new StaleFileError(
        `File ${shown} has changed on disk since it was read (${clock(rec.at)}). Read it again before editing.`,
        realPath,
        'changed',
      );
    }
  }

  /**
   * Like `assertFresh`, but a file `session` never read passes: for tools that move or delete a
   * whole file, which must not act on a version newer than the one the session saw.
   */
  async assertFreshIfRead(session: string, realPath: string, shown = realPath): Promise<void> {
    if (this.sessions.get(session)?.has(realPath)) await this.assertFresh(session, realPath, shown);
  }

  /** Forgets everything `session` read (call when a session ends). */
  forget(session: string): void {
    this.sessions.delete(session);
  }
}

function clock(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}
