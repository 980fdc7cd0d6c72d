/**
 * Which paths the sandbox hides: the home directory's credential stores, the files in the
 * workspace roots and the home directory that match the default policy's secret patterns
 * (`.env*`, `*.pem`, `*.key`, ...) or the user's `denyRead` globs, the unix sockets found there,
 * the user's `denyRead` paths, and other hard links of a hidden file found in the roots.
 * Must not build engine arguments (bwrap.ts) nor decide when to scan again (runtime.ts).
 */
import { promises as fs, type Dirent } from 'node:fs';
import path from 'node:path';
import { SECRET_FILE_PATTERNS } from '../policy/defaults.js';
import { matchPath } from '../policy/glob.js';

/** Paths under the home directory hidden whole, whether or not a pattern names them. */
export const SANDBOX_HIDDEN_HOME_PATHS: readonly string[] = [
  '.ssh',
  '.aws',
  '.azure',
  '.config/gcloud',
  '.kube',
  '.gnupg',
  '.docker',
  '.netrc',
  '.pgpass',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
];
/** Entries one scan for secret files looks at (workspace roots and home together); past it the rest are not hidden. */
export const MAX_SECRET_SCAN_ENTRIES = 20_000;
/** How deep the scan goes below the home directory (the workspace roots are walked to any depth). */
export const SECRET_SCAN_HOME_DEPTH = 2;
/** Directories the scan does not enter: version control data and installed packages. */
export const SECRET_SCAN_SKIPPED_DIRS: readonly string[] = ['.git', 'node_modules'];

/** What to hide: files (bound over by an unreadable empty file) and directories (an unreadable empty tmpfs). */
export interface HiddenPaths {
  files: string[];
  dirs: string[];
  /** The scan stopped at MAX_SECRET_SCAN_ENTRIES. */
  truncated: boolean;
  /** `.git` entries (directories or gitdir files) found in the workspace roots: their config and hooks are protected. */
  repositories?: string[];
}

/** The inputs of one scan. */
export interface SecretScanInput {
  /** Workspace roots and other writable paths (real paths). */
  roots: string[];
  home: string;
  /** The user's extra entries: paths (`/x`, `~/x`) and globs. */
  denyRead: readonly string[];
}

/** Finds every path the sandbox must hide for these roots, home and `denyRead`. */
export async function findHiddenPaths(input: SecretScanInput): Promise<HiddenPaths> {
  const out: HiddenPaths = { files: [], dirs: [], truncated: false, repositories: [] };
  const add = (p: string, isDir: boolean) => {
    const list = isDir ? out.dirs : out.files;
    if (!list.includes(p)) list.push(p);
  };
  const globs = [...SECRET_FILE_PATTERNS];
  const paths = SANDBOX_HIDDEN_HOME_PATHS.map((p) => path.join(input.home, p));
  for (const entry of input.denyRead) {
    if (entry.startsWith('/')) paths.push(path.resolve(entry));
    else if (entry === '~' || entry.startsWith('~/')) paths.push(path.join(input.home, entry.slice(1)));
    else globs.push(entry);
  }
  for (const p of paths) {
    const st = await fs.lstat(p).catch(() => undefined);
    if (st && !st.isSymbolicLink()) add(p, st.isDirectory());
  }
  const budget = { left: MAX_SECRET_SCAN_ENTRIES };
  for (const root of input.roots) await walk(root, root, Infinity, globs, add, budget, out, true);
  await walk(input.home, input.home, SECRET_SCAN_HOME_DEPTH, globs, add, budget, out, false);
  await addHardLinks(input.roots, out);
  return out;
}

/**
 * Other names of a hidden file (hard links made before the session, under names no pattern
 * matches): when a hidden file has more than one link, the roots are walked again, skipped
 * directories included, and every file with the same inode is hidden too (at most
 * MAX_SECRET_SCAN_ENTRIES entries). A contained command cannot add a link to a mask (it crosses mounts).
 */
async function addHardLinks(roots: string[], out: HiddenPaths): Promise<void> {
  const inodes = new Set<string>();
  for (const f of out.files) {
    const st = await fs.lstat(f).catch(() => undefined);
    if (st && st.isFile() && st.nlink > 1) inodes.add(`${st.dev}:${st.ino}`);
  }
  if (!inodes.size) return;
  let left = MAX_SECRET_SCAN_ENTRIES;
  const visit = async (dir: string): Promise<void> => {
    const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
    for (const e of entries) {
      if (--left < 0) {
        out.truncated = true;
        return;
      }
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (!out.dirs.includes(abs)) await visit(abs);
      } else if (e.isFile() && !out.files.includes(abs)) {
        const st = await fs.lstat(abs).catch(() => undefined);
        if (st && inodes.has(`${st.dev}:${st.ino}`)) out.files.push(abs);
      }
    }
  };
  for (const root of roots) await visit(root);
}

async function walk(
  root: string,
  dir: string,
  depth: number,
  globs: readonly string[],
  add: (p: string, isDir: boolean) => void,
  budget: { left: number },
  out: HiddenPaths,
  findRepositories: boolean,
): Promise<void> {
  if (depth <= 0) return;
  let entries: Dirent[];
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return; // unreadable or gone: nothing the command could read there either
  }
  for (const e of entries) {
    if (--budget.left < 0) {
      out.truncated = true;
      return;
    }
    // A symlink is judged where it points: a link into ~/.ssh lands on the hidden directory.
    if (e.isSymbolicLink()) continue;
    const abs = path.join(dir, e.name);
    if (findRepositories && e.name === '.git') out.repositories!.push(abs);
    const rel = path.relative(root, abs).split(path.sep).join('/');
    if (e.isDirectory()) {
      if (globs.some((g) => matchPath(g, rel) || matchPath(g, `${rel}/x`))) add(abs, true);
      else if (!SECRET_SCAN_SKIPPED_DIRS.includes(e.name))
        await walk(root, abs, depth - 1, globs, add, budget, out, findRepositories);
    } else if (e.isSocket() || globs.some((g) => matchPath(g, rel))) {
      // A unix socket on a read-only mount still accepts connections (an agent, a daemon): hidden too.
      add(abs, false);
    }
  }
}

/** Drops hidden paths deleted since the scan: bwrap would create a mount point in their place. */
export async function stillThere(h: HiddenPaths): Promise<HiddenPaths> {
  const keep = async (list: string[], dir: boolean) => {
    const checked = await Promise.all(
      list.map(async (p) => {
        const st = await fs.lstat(p).catch(() => undefined);
        return st && !st.isSymbolicLink() && st.isDirectory() === dir ? p : undefined;
      }),
    );
    return checked.filter((p): p is string => p !== undefined);
  };
  return { ...h, files: await keep(h.files, false), dirs: await keep(h.dirs, true) };
}
