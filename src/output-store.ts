/**
 * Where the full text of cut outputs is saved: one private directory per registry (tenant). Its
 * name is random and made at first use with mode 0700; before every save it must still be a real
 * directory (not a symlink), owned by this process's user and closed to others, and files are
 * created exclusively (never through an existing name or symlink) with mode 0600. A shared, fixed
 * path would let anyone who creates it first decide what the read tool may read.
 * Must not decide what is cut or where: truncate.ts (and bash's head/tail) choose the text it saves.
 */
import { mkdirSync, lstatSync, openSync, realpathSync, constants as fsConstants } from 'node:fs';
import { open } from 'node:fs/promises';
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

const CREATE_EXCLUSIVE =
  fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0);

/** One tenant's saved outputs. */
export class OutputStore {
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
      const uid = process.getuid?.() ?? 'u';
      this.dir = path.join(realBase, `agent-toolbelt-${uid}-${randomBytes(8).toString('hex')}`);
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
    return this.dir;
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
