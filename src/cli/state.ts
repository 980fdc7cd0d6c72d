/**
 * Where the `toolbelt` command keeps what outlives one process: its state directory
 * (`TOOLBELT_STATE_DIR`, else `agent-toolbelt-<uid>` under the OS temp dir), the `--session`
 * records in it (session.ts), and the full outputs its calls save (`outputs/`), so a path a run
 * printed ("The full output is saved at ...") can still be read after the run ended. Saved outputs
 * are bounded: past CLI_MAX_SAVED_OUTPUTS files or CLI_MAX_SAVED_OUTPUT_BYTES, the oldest go.
 * Must not save outputs itself (output-store.ts does, for the registry) nor decide what is cut (truncate.ts).
 */
import { lstat, mkdir, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Saved full outputs the CLI keeps across runs; the oldest are removed past it. */
export const CLI_MAX_SAVED_OUTPUTS = 200;
/** Bytes of saved full outputs the CLI keeps across runs; the oldest are removed past it (the newest file always stays). */
export const CLI_MAX_SAVED_OUTPUT_BYTES = 100 * 1024 * 1024;

/** The names output-store.ts gives saved outputs (`<tool>-<ms>-<hex>.txt`): nothing else is ever removed. */
const SAVED_OUTPUT_NAME = /^[A-Za-z0-9_.-]+-\d+-[0-9a-f]{8}\.txt$/;

/** The CLI's state directory: `TOOLBELT_STATE_DIR`, else `agent-toolbelt-<uid>` under the OS temp dir. */
export function cliStateDir(): string {
  return path.resolve(process.env.TOOLBELT_STATE_DIR || path.join(os.tmpdir(), `agent-toolbelt-${uid()}`));
}

/** Where `--session` records live (kept where earlier versions put them). */
export function cliSessionsDir(): string {
  return process.env.TOOLBELT_STATE_DIR ? cliStateDir() : path.join(cliStateDir(), 'sessions');
}

/**
 * The directory the CLI's registry saves full outputs in, made private (0700) if needed; or a
 * sentence saying why it cannot be used (the state directory is someone else's, a link, or open to
 * others), and the caller keeps the per-process directory (removed at exit) instead.
 */
export async function cliOutputDir(): Promise<{ dir: string } | { problem: string }> {
  const state = cliStateDir();
  const dir = path.join(state, 'outputs');
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    for (const d of [state, dir]) {
      const problem = privacyProblem(d, await lstat(d));
      if (problem) return { problem };
    }
    return { dir };
  } catch (err) {
    return { problem: `the state directory ${state} cannot be used (${(err as Error).message})` };
  }
}

function privacyProblem(dir: string, st: Awaited<ReturnType<typeof lstat>>): string | undefined {
  if (st.isSymbolicLink()) return `${dir} is a symbolic link`;
  if (!st.isDirectory()) return `${dir} is not a directory`;
  const me = process.getuid?.();
  if (me !== undefined && st.uid !== me) return `${dir} belongs to another user (uid ${st.uid})`;
  if ((Number(st.mode) & 0o022) !== 0)
    return `${dir} is writable by other users (mode ${(Number(st.mode) & 0o777).toString(8)})`;
  return undefined;
}

/**
 * Removes the oldest saved outputs in `dir` past `maxFiles` files or `maxBytes` bytes (the newest
 * file always stays, however large); resolves to how many were removed. Only regular files named
 * as saved outputs are counted or removed; never throws.
 */
export async function pruneSavedOutputs(
  dir: string,
  maxFiles = CLI_MAX_SAVED_OUTPUTS,
  maxBytes = CLI_MAX_SAVED_OUTPUT_BYTES,
): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const files: Array<{ file: string; mtime: number; size: number }> = [];
  for (const name of names) {
    if (!SAVED_OUTPUT_NAME.test(name)) continue;
    const file = path.join(dir, name);
    const st = await lstat(file).catch(() => undefined);
    if (st?.isFile()) files.push({ file, mtime: st.mtimeMs, size: st.size });
  }
  // Newest first; equal times by name (which carries the save time in ms), newest name first.
  files.sort((a, b) => b.mtime - a.mtime || (a.file < b.file ? 1 : a.file > b.file ? -1 : 0));
  let kept = 0;
  let bytes = 0;
  let removed = 0;
  let full = false;
  for (const f of files) {
    // Once one file does not fit, it and every older one go (a smaller older file is not kept instead).
    full ||= kept > 0 && (kept >= maxFiles || bytes + f.size > maxBytes);
    if (!full) {
      kept++;
      bytes += f.size;
      continue;
    }
    await rm(f.file, { force: true }).then(
      () => removed++,
      () => undefined,
    );
  }
  return removed;
}

function uid(): number {
  return process.getuid?.() ?? os.userInfo().uid;
}
