/**
 * `toolbelt run --session ID`: read-before-edit records that outlive the process, in a state file.
 * Must not decide what is stale: that is the read tracker's (read-tracker.ts); only persistence lives here.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { FileStamp, ReadTracker } from '../workspace/workspace.js';
import type { Tool } from '../authoring/tool.js';
import { cliSessionsDir } from './state.js';

/** Session ids `--session` accepts (they name a state file). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
/** Files one persisted CLI session remembers as read (most recent kept). */
export const MAX_SESSION_FILES = 10_000;

/**
 * A `--session` whose read-before-edit records outlive the process: files the session has read
 * (with their size/mtime/inode) are saved in the CLI's state directory (state.ts) and given back to the shared
 * registry's read tracker on the next run, so `toolbelt run read` then `toolbelt run edit` works.
 */
export class PersistedSession {
  private readonly files = new Map<string, FileStamp>();

  private constructor(
    private readonly id: string,
    private readonly file: string,
  ) {}

  static async open(id: string, initCtx: Tool.InitContext, readTracker: ReadTracker): Promise<PersistedSession> {
    const root = String(initCtx.workspaceRoot ?? initCtx.workingDir ?? process.cwd());
    const dir = cliSessionsDir();
    const key = createHash('sha256').update(`${root}\0${id}`).digest('hex').slice(0, 32);
    const session = new PersistedSession(id, path.join(dir, `${key}.json`));
    try {
      const saved = JSON.parse(await readFile(session.file, 'utf8')) as Array<{
        path: string;
        mtimeNs: string;
        size: string;
        ino: string;
      }>;
      for (const r of saved) {
        const stamp = { mtimeNs: BigInt(r.mtimeNs), size: BigInt(r.size), ino: BigInt(r.ino) };
        session.files.set(r.path, stamp);
        readTracker.record(id, r.path, stamp);
      }
    } catch {
      // no saved state yet (or unreadable): start fresh
    }
    // Hear every record the tools make for this session (the tracker keeps no list we could read back).
    const record = readTracker.record.bind(readTracker);
    readTracker.record = (s, p, stamp) => {
      if (s === id) {
        session.files.delete(p);
        session.files.set(p, stamp);
      }
      record(s, p, stamp);
    };
    return session;
  }

  async save(): Promise<void> {
    const entries = [...this.files]
      .slice(-MAX_SESSION_FILES)
      .map(([p, s]) => ({ path: p, mtimeNs: String(s.mtimeNs), size: String(s.size), ino: String(s.ino) }));
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(entries), { mode: 0o600 });
    await rename(tmp, this.file);
  }
}
