/**
 * Small file-system idioms shared by tools: a stat where "missing" is an answer, an executable on PATH.
 * Must not sandbox or resolve paths: callers pass paths the workspace already resolved.
 */
import { promises as fs, constants as fsConstants, statSync, type Stats } from 'node:fs';
import path from 'node:path';

/** The path's stats, or undefined when it does not exist (ENOENT, or a parent that is a file: ENOTDIR); other errors throw. */
export async function statIfExists(p: string): Promise<Stats | undefined> {
  try {
    return await fs.stat(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/** statIfExists without a thread-pool round trip, for a caller about to read the file synchronously anyway. */
export function statIfExistsSync(p: string): Stats | undefined {
  try {
    return statSync(p, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/** Full path of the executable file `name` in a PATH directory (then in `alsoIn`), or undefined. */
export async function findExecutable(name: string, alsoIn: readonly string[] = []): Promise<string | undefined> {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), ...alsoIn]) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      await fs.access(candidate, fsConstants.X_OK);
      if ((await fs.stat(candidate)).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
