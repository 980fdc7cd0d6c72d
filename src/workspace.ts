/**
 * The workspace sandbox: which paths a tool may touch. Every file tool, bash's workdir and the MCP
 * server resolve paths here and nowhere else.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import type { Tool } from './tool.js';

/** Thrown when a path resolves outside every allowed root. */
export class PathOutsideWorkspaceError extends Error {
  constructor(
    readonly requested: string,
    readonly roots: readonly string[],
    reason = '',
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
  /** Roots where only reads are allowed (e.g. the directory holding truncated tool output). */
  readOnlyRoots?: string[];
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
        throw new Error(`Workspace root ${given} does not exist or is not accessible. Create it or choose another root.`);
      }
      return { given, real, writable };
    };
    const roots = [await make(options.root, true)];
    for (const r of options.additionalRoots ?? []) roots.push(await make(r, true));
    for (const r of options.readOnlyRoots ?? []) {
      await fs.mkdir(r, { recursive: true }).catch(() => undefined);
      roots.push(await make(r, false));
    }
    return new Workspace(roots);
  }

  /** The workspace a tool should use for this init context (cached per context object). */
  static async fromInitContext(initCtx: Tool.InitContext = {}): Promise<Workspace> {
    const cached = contextCache.get(initCtx);
    if (cached) return cached;
    const created = Workspace.create({
      root: workspaceRootFor(initCtx),
      additionalRoots: Array.isArray(initCtx.additionalRoots) ? initCtx.additionalRoots : [],
      readOnlyRoots: [toolOutputDir()],
    });
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
      throw new PathOutsideWorkspaceError(requested, this.roots, mode === 'write' && this.inAnyRoot(lexical) ? 'that root is read-only' : '');
    }
    const real = await realpathAllowingMissing(lexical);
    if (!allowed.some((r) => isWithin(real, r.real))) {
      throw new PathOutsideWorkspaceError(requested, this.roots, `it resolves through a symlink to ${real}`);
    }
    return real;
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
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
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

/** Where truncated tool output is kept (readable by the read tool). `TOOLBELT_OUTPUT_DIR` overrides. */
export function toolOutputDir(): string {
  return path.resolve(process.env.TOOLBELT_OUTPUT_DIR || path.join(os.tmpdir(), 'agent-toolbelt', 'tool-output'));
}
