/**
 * The paths of `toDeepAgentsBackend`, both ways: what a caller's path names on this host, and how an
 * answer names what was found, in the form the caller used. `virtualMode` (deepagents' option name and
 * meaning): `true`, `/` is the workspace root (`/src/a.ts` is `<root>/src/a.ts`); `false`, an absolute
 * path is the host's own (`<root>/src/a.ts`), so files and `execute` name a file the same way. Either
 * way a relative path is relative to the workspace root (the cwd of `execute`), and answers keep the
 * caller's form: relative in, relative out.
 * Must not check paths against the workspace (Workspace.resolve does) nor touch the disk.
 */
import path from 'node:path';
import posix from 'node:path/posix';

/** One backend's path mapping. */
export class BackendPaths {
  constructor(
    /** The workspace root (real path). */
    private readonly root: string,
    readonly virtualMode: boolean,
  ) {}

  /**
   * The host path (lexical: not yet checked, links not followed) that `given` names. `search`: for
   * ls, glob and grep, whose tools in deepagents default to `/`, `/` is the workspace root in real
   * mode too (deepagents' LocalShellBackend does the same for glob), so a default search stays inside.
   */
  host(given: unknown, search = false): string {
    if (typeof given !== 'string') throw new Error(`The path must be text, not ${typeof given}.`);
    if (this.virtualMode) return path.join(this.root, posix.resolve('/', given));
    if (search && (given === '/' || given.trim() === '')) return this.root;
    return path.resolve(this.root, given);
  }

  /**
   * The directory `given` as answers about paths under it spell it: relative to the workspace root
   * when `given` is relative (`.` for the root), else `/`-rooted (virtual) or the host path (real).
   */
  base(given: string, search = false): string {
    const host = this.host(given, search);
    const rel = path.relative(this.root, host).split(path.sep).join('/');
    if (!given.startsWith('/')) return rel || '.';
    if (this.virtualMode) return `/${rel}`;
    return host;
  }

  /** `rel` (POSIX, relative to a `base`) in the base's form. */
  static join(base: string, rel: string): string {
    if (base === '.') return rel;
    return posix.join(base, rel);
  }
}
