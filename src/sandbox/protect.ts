/**
 * Which writable paths a contained command may not write because the host runs what they hold
 * without asking (git's config and hooks, direnv's `.envrc`, editors' task files, shell start-up
 * files), and which directories must stay where they are so that a hidden or protected path cannot
 * be moved out from under its mask (a mount point cannot be renamed or removed).
 * Must not build engine arguments (bwrap.ts) nor scan (secrets.ts): paths in, paths out.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { within } from './bwrap.js';

/**
 * Paths under each workspace root (and under each git repository the secret scan finds) that stay
 * read-only inside the sandbox; a missing one is blocked by an empty read-only directory for the
 * command's lifetime, so it cannot be created either. `filesystem.allowWrite` naming one opens it.
 */
export const SANDBOX_PROTECTED_PATHS: readonly string[] = [
  '.git/config', // core.fsmonitor, core.pager, core.hooksPath, aliases: run by the next git command
  '.git/hooks', // pre-commit, post-checkout, ...: run by git commit, checkout, merge
  '.git/modules', // submodules' own config and hooks
  '.gitmodules', // submodule URLs and update commands
  '.envrc', // direnv runs it on cd
  '.vscode', // tasks.json (runOn folderOpen), settings (terminal profiles, tool paths)
  '.idea', // run configurations, startup tasks
  '.husky', // hooks of repositories whose core.hooksPath points there
  '.mcp.json', // MCP servers an agent host starts (a command line each)
];
/** Paths under the home directory kept read-only when the home lies inside a writable path: shell start-up files and git's user config. */
export const SANDBOX_PROTECTED_HOME_PATHS: readonly string[] = [
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zshenv',
  '.zprofile',
  '.zlogin',
  '.zlogout',
  '.config/fish',
  '.gitconfig',
  '.config/git',
];
/** Paths protected in a git repository found below a root (only those that exist). */
const REPOSITORY_PATHS = ['.git/config', '.git/hooks', '.git/modules', '.gitmodules'];

/** What one contained command may not write. */
export interface ProtectedPaths {
  /** Existing paths bound read-only over themselves. */
  existing: string[];
  /** Missing paths: an empty read-only directory is mounted there while the command runs. */
  missing: string[];
  /** allowWrite entries inside a protected path: bound writable again over the protection. */
  reopen: string[];
}

/** The inputs: real paths throughout. */
export interface ProtectInput {
  /** Every writable path (workspace roots and allowWrite). */
  writable: string[];
  /** The workspace roots (where the root-level list applies, missing entries included). */
  roots: string[];
  home: string;
  /** `.git` entries the scan found at any depth. */
  repositories: string[];
  /** `filesystem.allowWrite` as real paths: an entry at or above a protected path (inside a root) opens it. */
  allowWrite: string[];
  /** Whether a path is another running command's placeholder (it exists only while that command runs). */
  placeholder?: (p: string) => boolean;
}

/** The protected paths for one command. */
export async function findProtectedPaths(input: ProtectInput): Promise<ProtectedPaths> {
  const out: ProtectedPaths = { existing: [], missing: [], reopen: [] };
  const writable = (p: string) => input.writable.some((w) => within(p, w));
  // An allowWrite entry opens what it names, or what lies under it, but never by naming a root.
  const opened = (p: string) => input.allowWrite.some((a) => within(p, a) && !input.roots.some((r) => within(r, a)));
  const consider = async (p: string, createIfMissing: boolean) => {
    if (!writable(p) || opened(p) || out.existing.includes(p) || out.missing.includes(p)) return;
    const st = input.placeholder?.(p) ? undefined : await fs.lstat(p).catch(() => undefined);
    if (st) out.existing.push(p);
    else if (createIfMissing && (await fs.lstat(path.dirname(p)).catch(() => undefined))?.isDirectory())
      out.missing.push(p);
  };
  for (const root of input.roots) {
    const git = await fs.lstat(path.join(root, '.git')).catch(() => undefined);
    for (const rel of SANDBOX_PROTECTED_PATHS) {
      // A `.git` file (a worktree's or submodule's pointer) is protected itself; a missing `.git`
      // is blocked whole, so no repository can be made where the host would find it.
      if (rel.startsWith('.git/') && !git?.isDirectory()) continue;
      await consider(path.join(root, rel), true);
    }
    if (!git || !git.isDirectory()) await consider(path.join(root, '.git'), true);
  }
  for (const entry of input.repositories) {
    const st = await fs.lstat(entry).catch(() => undefined);
    if (!st) continue;
    if (!st.isDirectory()) await consider(entry, false);
    else for (const rel of REPOSITORY_PATHS) await consider(path.join(path.dirname(entry), rel), false);
  }
  for (const rel of SANDBOX_PROTECTED_HOME_PATHS) await consider(path.join(input.home, rel), false);
  out.reopen = input.allowWrite.filter((a) => [...out.existing, ...out.missing].some((p) => within(a, p) && a !== p));
  return out;
}

/**
 * Directories to bind over themselves so the paths under them cannot be moved: every directory
 * between the writable path holding one of `paths` and that path (a mount point cannot be renamed
 * or removed, so neither can a directory holding one further down the chain).
 */
export function pinnedDirectories(paths: readonly string[], writable: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    const top = writable.filter((w) => within(p, w) && w !== p).sort((a, b) => b.length - a.length)[0];
    if (!top) continue;
    for (let d = path.dirname(p); d !== top && within(d, top); d = path.dirname(d)) out.add(d);
  }
  // Outer directories first: a bind inside another must come after it.
  return [...out].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b));
}
