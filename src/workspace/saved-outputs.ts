/**
 * Where the full text of cut outputs is saved: one private directory per registry (tenant). Its
 * name is random and made at first use with mode 0700; before every save it must still be a real
 * directory (not a symlink), owned by this process's user and closed to others, and files are
 * created exclusively (never through an existing name or symlink) with mode 0600. A shared, fixed
 * path would let anyone who creates it first decide what the read tool may read.
 * Must not decide what is cut or where: truncate.ts (and bash's head/tail) choose the text it saves.
 */
import { mkdirSync, lstatSync, openSync, readlinkSync, realpathSync, rmSync, constants as fsConstants } from 'node:fs';
import { lstat, open, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/** The directory under which registries make their private output directories: `TOOLBELT_OUTPUT_DIR`, else the OS temp dir. */
export function toolOutputDir(): string {
  return path.resolve(process.env.TOOLBELT_OUTPUT_DIR || os.tmpdir());
}

/** Mode of a saved output: readable and writable by this user only. */
const SAVED_OUTPUT_MODE = 0o600;
/** Mode of a registry's private output directory. */
const OUTPUT_DIR_MODE = 0o700;

/**
 * A private directory's name: `agent-toolbelt-<uid>-<pid>-<pid namespace>-<16 hex>`. The pid and
 * its namespace (`/proc/self/ns/pid`'s inode, 0 where there is none) tell a later process whether
 * the owner still runs: a pid is only judged in the namespace it belongs to.
 */
const PRIVATE_DIR_NAME = /^agent-toolbelt-(\d{1,10})-(\d{1,10})-(\d{1,20})-[0-9a-f]{16}$/;

/** This process's pid namespace id (the inode of `/proc/self/ns/pid`), or '0' where there is none. */
const PID_NAMESPACE = (() => {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
})();

/** Private directories this process made and has not removed yet: removed at its normal exit. */
const liveDirs = new Set<string>();
let exitHookInstalled = false;

function removeLiveDirsAtExit(): void {
  for (const dir of liveDirs) removePrivateDirSync(dir);
  liveDirs.clear();
}

/** Removes `dir` when it is a real directory of this user (never a link, never someone else's). */
function removePrivateDirSync(dir: string): void {
  try {
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (!st?.isDirectory() || !ownedByUs(st.uid)) return;
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // Best effort at exit: a leftover is swept by the next start.
  }
}

function ownedByUs(uid: number): boolean {
  const me = process.getuid?.();
  return me === undefined || uid === me;
}

const CREATE_EXCLUSIVE =
  fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0);

/** One tenant's saved outputs. */
export class SavedOutputs {
  /** The private directory (absolute, real parent); it exists once something was saved. */
  readonly dir: string;
  private readonly explicit: boolean;

  /**
   * `dir`: save exactly there (a host's choice, e.g. `createRegistry({ truncate: { outputDir } })`);
   * default: a new random directory under `toolOutputDir()`.
   */
  constructor(dir?: string) {
    this.explicit = dir !== undefined;
    if (dir !== undefined) {
      this.dir = path.resolve(dir);
    } else {
      const base = toolOutputDir();
      let realBase = base;
      try {
        realBase = realpathSync(base);
      } catch {
        // Made at first save.
      }
      const uid = process.getuid?.() ?? 0;
      this.dir = path.join(
        realBase,
        `agent-toolbelt-${uid}-${process.pid}-${PID_NAMESPACE}-${randomBytes(8).toString('hex')}`,
      );
    }
  }

  /**
   * Makes the directory if needed and checks it is still private; returns it. Throws a sentence
   * saying what is wrong when it is a symlink, not a directory, someone else's, or open to others.
   */
  ensureSync(): string {
    const parent = path.dirname(this.dir);
    if (this.explicit || process.env.TOOLBELT_OUTPUT_DIR) mkdirSync(parent, { recursive: true, mode: OUTPUT_DIR_MODE });
    try {
      mkdirSync(this.dir, { mode: OUTPUT_DIR_MODE }); // never follows: an existing name (or symlink) is EEXIST
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const st = lstatSync(this.dir);
    const refuse = (why: string): never => {
      throw new Error(
        `The tool-output directory ${this.dir} ${why}, so full outputs are not saved there. Remove it or set TOOLBELT_OUTPUT_DIR to a private directory.`,
      );
    };
    if (st.isSymbolicLink()) refuse('is a symbolic link');
    if (!st.isDirectory()) refuse('is not a directory');
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) refuse(`belongs to another user (uid ${st.uid})`);
    if (this.explicit ? (st.mode & 0o022) !== 0 : (st.mode & 0o077) !== 0)
      refuse(`is open to other users (mode ${(st.mode & 0o777).toString(8)})`);
    if (!this.explicit && !liveDirs.has(this.dir)) {
      liveDirs.add(this.dir);
      if (!exitHookInstalled) {
        exitHookInstalled = true;
        process.on('exit', removeLiveDirsAtExit);
      }
    }
    return this.dir;
  }

  /**
   * Removes the private directory with every output saved in it (the registry's `dispose()`). A
   * directory the host chose (`outputDir`) is left as it is. A later save makes a new one.
   */
  async remove(): Promise<void> {
    if (this.explicit) return;
    liveDirs.delete(this.dir);
    const st = await lstat(this.dir).catch(() => undefined);
    if (!st?.isDirectory() || !ownedByUs(st.uid)) return;
    await rm(this.dir, { recursive: true, force: true });
  }

  /** A new file path in the directory, created empty and exclusively with mode 0600; returns its descriptor and path. */
  createSync(prefix: string): { fd: number; file: string } {
    const dir = this.ensureSync();
    const file = path.join(dir, `${prefix}-${Date.now()}-${randomBytes(4).toString('hex')}.txt`);
    return { fd: openSync(file, CREATE_EXCLUSIVE, SAVED_OUTPUT_MODE), file };
  }

  /** Saves `text` as a new 0600 file; returns its path. */
  async save(prefix: string, text: string): Promise<string> {
    const dir = this.ensureSync();
    const file = path.join(dir, `${prefix}-${Date.now()}-${randomBytes(4).toString('hex')}.txt`);
    const handle = await open(file, CREATE_EXCLUSIVE, SAVED_OUTPUT_MODE);
    try {
      await handle.writeFile(text, 'utf8');
    } finally {
      await handle.close();
    }
    return file;
  }
}

const sweeps = new Map<string, Promise<number>>();

/**
 * Removes, under `base` (default `toolOutputDir()`), the private output directories that processes
 * which are gone left behind (killed before their exit could remove them); resolves to how many.
 * Only names of our pattern made by this user in this pid namespace, only real directories (a link
 * with our name is left alone, never followed), only when the owning pid no longer runs. Runs
 * once per process and base (a registry's creation starts it); never throws.
 */
export function sweepStaleOutputDirs(base: string = toolOutputDir()): Promise<number> {
  let sweep = sweeps.get(base);
  if (!sweep) {
    sweep = sweepOnce(base).catch(() => 0);
    sweeps.set(base, sweep);
  }
  return sweep;
}

async function sweepOnce(base: string): Promise<number> {
  const names = await readdir(base).catch(() => [] as string[]);
  const me = String(process.getuid?.() ?? 0);
  let removed = 0;
  for (const name of names) {
    const m = PRIVATE_DIR_NAME.exec(name);
    if (!m || m[1] !== me || m[3] !== PID_NAMESPACE) continue;
    const pid = Number(m[2]);
    if (pid === process.pid || processAlive(pid)) continue;
    const dir = path.join(base, name);
    const st = await lstat(dir).catch(() => undefined);
    if (!st?.isDirectory() || !ownedByUs(st.uid)) continue;
    await rm(dir, { recursive: true, force: true }).then(
      () => removed++,
      () => undefined,
    );
  }
  return removed;
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
