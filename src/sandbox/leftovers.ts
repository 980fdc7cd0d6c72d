/**
 * What one contained command leaves behind, dealt with when it ends: the placeholders that blocked
 * missing protected paths (removed when no command of this process needs them), the protected git
 * paths no placeholder can block (`.git/commondir`, removed if the command made one), and the list
 * of files it left in its private /tmp (the one line saying which the host never sees); and the
 * private directories of runtimes not closed when the process exits.
 * Must not build engine arguments (bwrap.ts) nor decide what is protected (protect.ts).
 */
import { promises as fs, rmSync } from 'node:fs';
import path from 'node:path';
import { SANDBOX_TMP_REPORT_LINES, within } from './bwrap.js';
import { tmpWritesNote } from './explain.js';

// Placeholders (empty directories bwrap creates on the host as mount points for missing protected
// paths) are shared by every command of this process: removed when the last one using a path ends.
export const placeholderUsers = new Map<string, number>();

export function holdPlaceholders(paths: string[]): string[] {
  for (const p of paths) placeholderUsers.set(p, (placeholderUsers.get(p) ?? 0) + 1);
  return paths;
}

export async function releasePlaceholders(paths: string[]): Promise<void> {
  const gone: string[] = [];
  for (const p of paths) {
    const left = Math.max(0, (placeholderUsers.get(p) ?? 1) - 1);
    placeholderUsers.set(p, left);
    if (left === 0) gone.push(p);
  }
  // Only an empty directory is ours: anything else was put there by someone else since. A path is
  // forgotten only once removed, so a command starting meanwhile still takes it for a placeholder.
  await Promise.all(
    gone.map((p) =>
      fs
        .rmdir(p)
        .catch(() => undefined)
        .finally(() => {
          if (!placeholderUsers.get(p)) placeholderUsers.delete(p);
        }),
    ),
  );
}

/**
 * Paths in `.git` directories that git reads only when they exist and that no placeholder can
 * block (git fails on any `commondir` that is not its own): absent before the command, removed
 * after it if the command made one.
 */
const UNBLOCKABLE_GIT_PATHS = ['commondir'];

export async function absentUnblockable(
  repositories: string[],
  roots: string[],
  writable: string[],
): Promise<string[]> {
  const gitDirs = [...roots.map((r) => path.join(r, '.git')), ...repositories];
  const out: string[] = [];
  for (const g of new Set(gitDirs)) {
    if (!writable.some((w) => within(g, w)) || !(await fs.lstat(g).catch(() => undefined))?.isDirectory()) continue;
    for (const name of UNBLOCKABLE_GIT_PATHS) {
      const p = path.join(g, name);
      if (!(await fs.lstat(p).catch(() => undefined))) out.push(p);
    }
  }
  return out;
}

export async function undoUnblockable(absent: string[]): Promise<string | undefined> {
  const made: string[] = [];
  for (const p of absent) {
    if (!(await fs.lstat(p).catch(() => undefined))) continue;
    await fs.rm(p, { recursive: true, force: true }).catch(() => undefined);
    made.push(p);
  }
  return made.length
    ? `[sandbox: ${made.join(', ')} ${made.length === 1 ? 'is' : 'are'} protected (git would read ${made.length === 1 ? 'it' : 'them'} and run what the repository's config names), so the sandbox removed what the command created there. To write it on purpose, ask the user to add the path to sandbox.filesystem.allowWrite.]`
    : undefined;
}

/** The line about files the command left in its private /tmp where the host has the path or its directory. */
export async function readTmpReport(report: string, writable: string[]): Promise<string | undefined> {
  const text = await fs.readFile(report, 'utf8').catch(() => '');
  await fs.rm(report, { force: true });
  const lost: string[] = [];
  for (const p of text.split('\n', SANDBOX_TMP_REPORT_LINES).filter(Boolean)) {
    if (writable.some((w) => within(p, w))) continue;
    const dir = path.dirname(p);
    const hostHas =
      (await fs.lstat(p).catch(() => undefined)) !== undefined ||
      (dir !== '/tmp' && (await fs.lstat(dir).catch(() => undefined))?.isDirectory() === true);
    if (hostHas) lost.push(p);
  }
  return tmpWritesNote(lost);
}

// Private directories of runtimes not closed before the process exits are removed then.
export const liveDirs = new Set<string>();
let cleanupInstalled = false;
export function installExitCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', () => {
    for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
  });
}
