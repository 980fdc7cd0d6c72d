/**
 * The workspace sandbox: which paths a tool may touch. Every file tool, bash's workdir and the MCP
 * server resolve paths here and nowhere else.
 * Holds the sandbox (`Workspace.resolve`), per-file locks and `RealPathGuard`; re-exports the
 * atomic writes (atomic-write.ts) and the read tracker (read-tracker.ts), which live in files of
 * their own, so the tools have one door to the workspace.
 * Must not hold tool-specific rules: each tool asks it, none re-implements it.
 */
import { promises as fs, lstatSync, realpathSync, type Dirent } from 'node:fs';
import path from 'node:path';
import type { Tool } from '../authoring/tool.js';
import { tenantOf, standaloneTenant } from './tenant.js';

export { toolOutputDir } from './saved-outputs.js';
export {
  atomicWriteFile,
  isAtomicTempName,
  STALE_TEMP_MIN_AGE_MS,
  STALE_TEMP_MAX_AGE_MS,
  type AtomicWriteOptions,
  type AtomicWriteResult,
} from './atomic-write.js';

export {
  ReadTracker,
  StaleFileError,
  stampOf,
  MAX_TRACKED_SESSIONS,
  MAX_TRACKED_FILES_PER_SESSION,
  type FileStamp,
} from './read-tracker.js';
/** The read tracker of tools initialised without a registry (each registry has its own: `registry.tenant.readTracker`). */
export const readTracker = standaloneTenant.readTracker;

/** Thrown when a path resolves outside every allowed root. */
export class PathOutsideWorkspaceError extends Error {
  constructor(
    readonly requested: string,
    readonly roots: readonly string[],
    readonly reason = '',
  ) {
    super(
      `Path ${JSON.stringify(requested)} is outside the workspace${reason ? ` (${reason})` : ''}. ` +
        `Allowed roots: ${roots.join(', ')}. Use a path inside one of them (absolute, or relative to ${roots[0]}).`,
    );
    this.name = 'PathOutsideWorkspaceError';
  }
}

/** Options for a workspace; `fromInitContext` fills them from a tool's init context. */
export interface WorkspaceOptions {
  /** The main root; relative paths resolve against it. */
  root: string;
  /** More roots where reads and writes are allowed. */
  additionalRoots?: string[];
  /** Roots where only reads are allowed. */
  readOnlyRoots?: string[];
  /**
   * A read-only root that is a private directory (a tenant's saved outputs): taken by its own name,
   * never followed if someone replaced it with a symlink, so it cannot widen the sandbox.
   */
  privateRoot?: string;
}

/** How a path is going to be used: writes are not allowed in read-only roots. */
export type AccessMode = 'read' | 'write';

interface Root {
  /** The root as given, resolved to absolute (may contain symlinks). */
  given: string;
  /** Its realpath. */
  real: string;
  writable: boolean;
}

/** Upper bound on symlink hops followed while resolving one not-yet-existing path. */
const MAX_LINK_HOPS = 40;

function isWithin(candidate: string, root: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

/** The workspace root for an init context: `workspaceRoot`, else `AGENT_WORKSPACE_ROOT`, else `workingDir`, else cwd. */
export function workspaceRootFor(initCtx: Tool.InitContext = {}): string {
  const raw =
    (typeof initCtx.workspaceRoot === 'string' && initCtx.workspaceRoot) ||
    process.env.AGENT_WORKSPACE_ROOT ||
    (typeof initCtx.workingDir === 'string' && initCtx.workingDir) ||
    process.cwd();
  return path.resolve(raw);
}

/** A set of allowed roots and the rules for resolving paths against them. */
export class Workspace {
  private constructor(private readonly rootList: Root[]) {}

  /** Creates a workspace, realpath-ing every root once (a missing root is an error). */
  static async create(options: WorkspaceOptions): Promise<Workspace> {
    const make = async (p: string, writable: boolean): Promise<Root> => {
      const given = path.resolve(p);
      let real: string;
      try {
        real = await fs.realpath(given);
      } catch {
        throw new Error(
          `Workspace root ${given} does not exist or is not accessible. Create it or choose another root.`,
        );
      }
      return { given, real, writable };
    };
    const roots = [await make(options.root, true)];
    for (const r of options.additionalRoots ?? []) roots.push(await make(r, true));
    for (const r of options.readOnlyRoots ?? []) roots.push(await make(r, false));
    if (options.privateRoot) {
      const given = path.resolve(options.privateRoot);
      const real = path.join(await realpathAllowingMissing(path.dirname(given)), path.basename(given));
      roots.push({ given: real, real, writable: false });
    }
    return new Workspace(roots);
  }

  /** The workspace a tool should use for this init context (cached per context object). */
  static async fromInitContext(initCtx: Tool.InitContext = {}): Promise<Workspace> {
    const cached = contextCache.get(initCtx);
    if (cached) return cached;
    const tenant = tenantOf(initCtx);
    const created = (async () =>
      Workspace.create({
        root: workspaceRootFor(initCtx),
        additionalRoots: Array.isArray(initCtx.additionalRoots) ? initCtx.additionalRoots : [],
        // The tenant's own saved outputs, and no one else's.
        privateRoot: tenant.outputs.dir,
        // Folders other modules let the tools read (skills outside the workspace).
        readOnlyRoots: (await tenant.readRoots?.(initCtx)) ?? [],
      }))();
    contextCache.set(initCtx, created);
    created.catch(() => contextCache.delete(initCtx));
    return created;
  }

  /** The main root (realpath'd). */
  get root(): string {
    return this.rootList[0].real;
  }

  /** All roots (realpath'd), main root first. */
  get roots(): string[] {
    return this.rootList.map((r) => r.real);
  }

  /**
   * Resolves `requested` (absolute, or relative to the main root) to a real absolute path inside
   * the workspace, or throws `PathOutsideWorkspaceError`. The target need not exist; then its
   * nearest existing ancestor (following symlinks, dangling ones too) must be inside.
   */
  async resolve(requested: string, mode: AccessMode = 'read'): Promise<string> {
    if (typeof requested !== 'string') throw new Error(`Path must be a string, got ${typeof requested}.`);
    if (requested.includes('\0')) throw new PathOutsideWorkspaceError(requested, this.roots, 'it contains a NUL byte');
    const lexical = this.toRealRootForm(path.resolve(this.root, requested));
    const allowed = this.rootList.filter((r) => mode === 'read' || r.writable);
    if (!allowed.some((r) => isWithin(lexical, r.real))) {
      throw new PathOutsideWorkspaceError(
        requested,
        this.roots,
        mode === 'write' && this.inAnyRoot(lexical) ? 'that root is read-only' : '',
      );
    }
    let real: string;
    try {
      real = await realpathAllowingMissing(lexical);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOOP' || /Too many symbolic links/.test(String((err as Error).message))) {
        throw new Error(
          `Path ${JSON.stringify(requested)} cannot be resolved: it goes through a symbolic link loop. Use a path without the looping link.`,
          { cause: err },
        );
      }
      const shown = JSON.stringify(requested.length > 120 ? `${requested.slice(0, 120)}...` : requested);
      if (code === 'ENAMETOOLONG') {
        throw new Error(
          `Path ${shown} (${requested.length} characters) is too long for the file system: each name may have at most 255 bytes and the whole path 4096. Use a shorter path.`,
          { cause: err },
        );
      }
      if (code === 'EACCES' || code === 'EPERM') {
        throw new Error(
          `Path ${shown} cannot be resolved: permission denied on one of its directories. Use another path.`,
          { cause: err },
        );
      }
      throw err;
    }
    if (!allowed.some((r) => isWithin(real, r.real))) {
      // The link target is not named: it would reveal a path outside the workspace.
      throw new PathOutsideWorkspaceError(
        requested,
        this.roots,
        'it resolves through a symbolic link to a place outside',
      );
    }
    return real;
  }

  /**
   * Like `resolve`, but a symbolic link as the last component stays the entry itself instead of
   * being followed: for tools that act on directory entries (move, delete, file_info), where
   * following a link would move or delete what it points to. The parent is resolved (and checked)
   * as `resolve` does.
   */
  async resolveEntry(requested: string, mode: AccessMode = 'read'): Promise<string> {
    if (typeof requested !== 'string') throw new Error(`Path must be a string, got ${typeof requested}.`);
    if (requested.includes('\0')) throw new PathOutsideWorkspaceError(requested, this.roots, 'it contains a NUL byte');
    const lexical = this.toRealRootForm(path.resolve(this.root, requested));
    if (this.rootList.some((r) => r.real === lexical) || path.dirname(lexical) === lexical) {
      return this.resolve(requested, mode);
    }
    let parent: string;
    try {
      parent = await this.resolve(path.dirname(lexical), mode);
    } catch (err) {
      if (err instanceof PathOutsideWorkspaceError)
        throw new PathOutsideWorkspaceError(requested, this.roots, err.reason);
      throw err;
    }
    return path.join(parent, path.basename(lexical));
  }

  /** Whether `requested` resolves inside the workspace (never throws). */
  async contains(requested: string, mode: AccessMode = 'read'): Promise<boolean> {
    try {
      await this.resolve(requested, mode);
      return true;
    } catch {
      return false;
    }
  }

  /** A path for display: relative to the main root when inside it, else absolute. */
  display(absolute: string): string {
    if (isWithin(absolute, this.root)) return path.relative(this.root, absolute) || '.';
    return absolute;
  }

  /**
   * A checker for paths a walk found (glob, grep, list): whatever pattern syntax produced them, a
   * path is only returned when its real path is inside an allowed root. One per walk; it caches
   * each directory's verdict.
   */
  guard(): RealPathGuard {
    return new RealPathGuard(this.roots);
  }

  private inAnyRoot(p: string): boolean {
    return this.rootList.some((r) => isWithin(p, r.real));
  }

  /** Maps a path written against a root's given (symlinked) form onto its real form. */
  private toRealRootForm(p: string): string {
    for (const r of this.rootList) {
      if (r.given !== r.real && isWithin(p, r.given)) return path.join(r.real, path.relative(r.given, p));
    }
    return p;
  }
}

/**
 * Decides, by real path, whether paths found while walking lie inside the allowed roots. Checking
 * the output (not parsing the pattern) closes every pattern-syntax escape at once: brace groups,
 * extglobs, absolute branches, a symlinked directory named by a static part of a pattern.
 */
export class RealPathGuard {
  private readonly dirs = new Map<string, boolean>();

  constructor(private readonly roots: readonly string[]) {}

  /**
   * Records what a listing of `dir` proved: when `dir` is inside, each entry that is a directory
   * (a symlink's entry says symlink, never directory) is inside too, as its real path is `dir`'s
   * plus its name. A walk then realpaths only the directories it did not reach through its own
   * listings (its start, a pattern's static part) — glibc's realpath costs one readlink per path
   * component, which was a quarter of a glob of a deep tree. A directory swapped for a symlink
   * between the listing and its own read is the check-then-use race docs/security.md lists as a
   * known limit; checking realpath right before the read narrowed that window, it did not close it.
   */
  listed(dir: string, entries: readonly Dirent[]): void {
    if (this.dirs.get(dir) !== true) return;
    const prefix = dir.endsWith(path.sep) ? dir : dir + path.sep;
    for (const e of entries) if (e.isDirectory()) this.dirs.set(prefix + e.name, true);
  }

  /** Whether the directory `dir` (absolute) really is inside a root (realpath, cached). */
  dirInside(dir: string): boolean {
    let ok = this.dirs.get(dir);
    if (ok === undefined) {
      try {
        const real = realpathSync.native(dir);
        ok = this.roots.some((r) => isWithin(real, r));
      } catch {
        ok = false; // vanished or unreadable: nothing from it is returned
      }
      this.dirs.set(dir, ok);
    }
    return ok;
  }

  /**
   * Whether `abs` is inside a root: its directory really is, and it is not a symlink leading out.
   * `knownNotLink` skips the lstat when the caller's own listing already said what it is.
   */
  inside(abs: string, knownNotLink = false): boolean {
    if (!this.dirInside(path.dirname(abs))) return false;
    if (knownNotLink) return true;
    let link: boolean;
    try {
      link = lstatSync(abs).isSymbolicLink();
    } catch {
      return false;
    }
    if (!link) return true;
    try {
      const real = realpathSync.native(abs);
      return this.roots.some((r) => isWithin(real, r));
    } catch {
      return false; // dangling: it names nothing inside
    }
  }
}

const contextCache = new WeakMap<Tool.InitContext, Promise<Workspace>>();

/**
 * realpath for a path that may not exist: the real path of its nearest existing ancestor plus the
 * rest. A dangling symlink on the way is followed to where it points, so a link to a
 * not-yet-existing file outside the workspace is caught.
 */
export async function realpathAllowingMissing(p: string, hops = 0): Promise<string> {
  try {
    return await fs.realpath(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR')
      throw err;
  }
  if (hops > MAX_LINK_HOPS) throw new Error(`Too many symbolic links while resolving ${p}.`);
  const stat = await fs.lstat(p).catch(() => undefined);
  if (stat?.isSymbolicLink()) {
    const target = path.resolve(path.dirname(p), await fs.readlink(p));
    return realpathAllowingMissing(target, hops + 1);
  }
  const parent = path.dirname(p);
  if (parent === p) return p;
  return path.join(await realpathAllowingMissing(parent, hops), path.basename(p));
}

// ---------------------------------------------------------------------------------------------
// Per-file locks
// ---------------------------------------------------------------------------------------------

const lockTails = new Map<string, Promise<unknown>>();

/**
 * Runs `fn` while holding the lock of `realPath`: calls for one file run one after another, in
 * call order; different files do not wait for each other. Key by the real path (from
 * `Workspace.resolve`) so two spellings of one file share a lock.
 */
export async function withFileLock<T>(realPath: string, fn: () => Promise<T>): Promise<T> {
  const previous = lockTails.get(realPath) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = previous.then(() => mine);
  lockTails.set(realPath, tail);
  await previous;
  try {
    return await fn();
  } finally {
    release();
    if (lockTails.get(realPath) === tail) lockTails.delete(realPath);
  }
}

/**
 * Runs `fn` holding the locks of every path in `paths` (real paths), taken in sorted order so two
 * callers locking overlapping sets cannot wait on each other (undo, apply_patch).
 */
export function withFileLocks<T>(paths: readonly string[], fn: () => Promise<T>): Promise<T> {
  return [...new Set(paths)].sort().reduceRight<() => Promise<T>>((inner, p) => () => withFileLock(p, inner), fn)();
}

/** How many files currently have a lock held or queued (for tests and diagnostics). */
export function activeFileLocks(): number {
  return lockTails.size;
}
