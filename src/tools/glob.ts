/**
 * glob: find files by name pattern (fast-glob), .gitignore respected while walking, newest
 * modified first, at most MAX_GLOB_RESULTS paths. Never walks or returns anything outside the
 * workspace: symlinks are not followed, and the pattern's fixed leading part is resolved through
 * the sandbox like any other path.
 * Must not re-implement ignore rules or ordering (search-common.ts).
 */
import fs, { promises as fsp, type Dirent } from 'node:fs';
import path from 'node:path';
import type FastGlob from 'fast-glob';
import { z } from 'zod';
import { Tool } from '../tool.js';
import { isAtomicTempName } from '../atomic-write.js';
import { onFirstUse } from '../lazy.js';
import { descriptionBeside } from '../description.js';
import { Workspace, type RealPathGuard } from '../workspace.js';
import {
  IgnoreTree,
  MtimeCache,
  isIgnoreFileName,
  VCS_DIRS,
  compareNewestFirst,
  rootContaining,
} from './search-common.js';
import { PROGRESS_INTERVAL_MS, throttle } from '../progress.js';
import { saveFullOutput } from '../truncate.js';
import { tenantOf } from '../tenant.js';
import { abortedMessage, throwIfAborted } from '../abort.js';

/** Paths returned at most; the newest are kept. */
export const MAX_GLOB_RESULTS = 100;

/** glob's metadata. */
export interface GlobMetadata extends Tool.Metadata {
  /** Files that matched in total. */
  count: number;
  /** Files shown. */
  shown: number;
  truncated: boolean;
  /** When truncated: a file with every matching path, newest first. */
  fullListPath?: string;
}

const parameters = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('Glob pattern, e.g. "**/*.ts", "src/**/*.{js,jsx}", "*.md" (top level only). Relative to `path`.'),
  path: z
    .string()
    .optional()
    .describe('Directory to search in: absolute, or relative to the workspace root (default: the workspace root).'),
});

export const GlobTool = Tool.define<typeof parameters, GlobMetadata>(
  {
    id: 'glob',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'glob'),
    danger: 'safe',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const outputs = tenantOf(initCtx).outputs;
    const progressMs =
      typeof initCtx.progressIntervalMs === 'number' ? initCtx.progressIntervalMs : PROGRESS_INTERVAL_MS;
    return {
      description: 'Find files by glob pattern (e.g. "**/*.ts"), newest modified first; respects .gitignore.',
      parameters,
      async execute(args, ctx) {
        const base = await ws.resolve(args.path ?? '.');
        const baseStat = await fsp.stat(base).catch(() => undefined);
        if (!baseStat)
          throw new Error(
            `Directory ${JSON.stringify(args.path)} does not exist (resolved to ${base}). Check the path, or omit it to search the workspace root.`,
          );
        if (!baseStat.isDirectory())
          throw new Error(
            `${ws.display(base)} is a file, not a directory. Give glob a directory as path and the file name as pattern.`,
          );

        const { fixed, dynamic } = splitPattern(args.pattern);
        // The fixed part goes through the sandbox: `../x/**`, `/etc/*` and symlinked dirs are refused here.
        const cwd = await ws.resolve(path.resolve(base, fixed || '.'));
        const title = `glob ${JSON.stringify(args.pattern)} in ${ws.display(base)}`;
        ctx.metadata({ title });
        const cwdStat = await fsp.stat(cwd).catch(() => undefined);

        // Files with their modification times.
        const mtimes = new MtimeCache();
        const found: Array<{ path: string; mtime: number }> = [];
        if (dynamic === '') {
          if (cwdStat?.isFile()) found.push({ path: cwd, mtime: mtimes.get(cwd) });
        } else if (cwdStat?.isDirectory()) {
          const top = rootContaining(ws.roots, cwd) ?? ws.root;
          const tree = await IgnoreTree.forWalk(top, cwd);
          let dirsRead = 0;
          const report = throttle(progressMs, () =>
            ctx.metadata({ title, metadata: { directoriesScanned: dirsRead } }),
          );
          const guard = ws.guard();
          const readdir = gitignoreAwareReaddir(tree, cwd, guard, ctx.abort, () => {
            dirsRead++;
            report();
          });
          let rel: string[];
          try {
            rel = await fastGlob()(dynamic, {
              cwd,
              dot: true,
              onlyFiles: true,
              followSymbolicLinks: false,
              unique: true,
              caseSensitiveMatch: true,
              suppressErrors: false,
              fs: { readdir } as unknown as FastGlob.Options['fs'],
            });
          } catch (err) {
            throwIfAborted(ctx.abort, abortedMessage('glob'));
            throw new Error(
              `glob could not search with pattern ${JSON.stringify(args.pattern)}: ${(err as Error).message}. Check the pattern and call glob again.`,
              { cause: err },
            );
          }
          // Stat'ing in one tight loop after the walk is cheaper than interleaving it with the walk.
          const prefix = cwd + path.sep;
          for (const r of rel) {
            const abs = r.includes('..') ? path.resolve(cwd, r) : prefix + r;
            // Whatever fast-glob makes of a pattern, only paths under cwd whose real path is inside come out.
            if (!abs.startsWith(prefix) || !guard.dirInside(path.dirname(abs))) continue;
            // One lstat per result: for a file that is not a link it is also the mtime for the order.
            const st = fs.lstatSync(abs, { throwIfNoEntry: false });
            if (!st) continue;
            if (!st.isSymbolicLink()) found.push({ path: abs, mtime: st.mtimeMs });
            else if (guard.inside(abs)) found.push({ path: abs, mtime: mtimes.get(abs) });
          }
        }
        throwIfAborted(ctx.abort, abortedMessage('glob'));

        const sorted = found.sort(compareNewestFirst);
        const shown = sorted.slice(0, MAX_GLOB_RESULTS).map((f) => ws.display(f.path));
        const truncated = sorted.length > shown.length;
        const metadata: GlobMetadata = { count: sorted.length, shown: shown.length, truncated };
        // A cut list keeps the rest within reach: every path goes to a file the model can read.
        if (truncated)
          metadata.fullListPath = await saveFullOutput(
            sorted.map((f) => ws.display(f.path)).join('\n') + '\n',
            'glob',
            outputs,
          );
        if (sorted.length === 0) {
          return {
            title,
            metadata,
            output: `No files found matching ${JSON.stringify(args.pattern)} in ${where(ws.display(base))}.`,
          };
        }
        let output = shown.join('\n');
        if (truncated) {
          output += `\n\n(Results are truncated: showing the ${MAX_GLOB_RESULTS} most recently modified of ${sorted.length} files. All ${sorted.length} paths, newest first, are saved at ${metadata.fullListPath}: read it with the read tool (offset=${MAX_GLOB_RESULTS + 1} continues this list), or use a more specific pattern or path.)`;
        }
        return { title: `${title}: ${sorted.length} file${sorted.length === 1 ? '' : 's'}`, metadata, output };
      },
    };
  },
);

/** Characters that make a path segment a pattern rather than a fixed name. */
const MAGIC = /[*?[\]{}()!+@]/;

/**
 * Splits a pattern into its fixed leading directories (resolved through the sandbox) and the
 * rest (handed to fast-glob). `..` may only appear in the fixed part.
 */
export function splitPattern(pattern: string): { fixed: string; dynamic: string } {
  const p = pattern.replace(/\\/g, '/');
  const segs = p.split('/');
  let k = 0;
  while (k < segs.length - 1 && !MAGIC.test(segs[k])) k++;
  if (k === segs.length - 1 && !MAGIC.test(segs[k])) k = segs.length; // no magic at all: a plain path
  const fixedSegs = segs.slice(0, k);
  const fixed = p.startsWith('/') ? '/' + fixedSegs.slice(1).join('/') : fixedSegs.join('/');
  const dynamic = segs.slice(k).join('/');
  // `..` as a whole segment, also inside {a,b} or @(...) alternatives.
  if (/(^|[^\w.-])\.\.($|[^\w.-])/.test(dynamic)) {
    throw new Error(
      `The pattern ${JSON.stringify(pattern)} has ".." after a wildcard, which could leave the directory being searched. Put ".." only at the start of the pattern, or set path instead.`,
    );
  }
  return { fixed, dynamic };
}

type ReaddirCallback = (err: NodeJS.ErrnoException | null, entries: Dirent[]) => void;

/** How long the synchronous directory reads may hold the event loop before yielding. */
const SLICE_MS = 20;

/**
 * A `readdir` for fast-glob that drops what must never be walked or returned before fast-glob sees
 * it: .gitignored entries (rules read from each directory as it is listed, so ignored trees are
 * never entered), version-control directories and symlinks. Listings are read synchronously: a
 * thread-pool round trip per directory costs more than the read itself, and yielding every
 * SLICE_MS keeps abort and progress live.
 */
function gitignoreAwareReaddir(
  tree: IgnoreTree,
  cwd: string,
  guard: RealPathGuard,
  signal: AbortSignal,
  onDir: () => void,
) {
  let sliceStart = performance.now();
  const later = (fn: () => void): void => {
    if (performance.now() - sliceStart < SLICE_MS) {
      process.nextTick(fn);
      return;
    }
    setImmediate(() => {
      sliceStart = performance.now();
      fn();
    });
  };
  return (dir: string, optsOrCb: unknown, maybeCb?: ReaddirCallback): void => {
    const cb = (typeof optsOrCb === 'function' ? optsOrCb : maybeCb) as ReaddirCallback;
    if (signal.aborted) {
      later(() => cb(Object.assign(new Error('aborted'), { code: 'ABORT_ERR' }), []));
      return;
    }
    const abs = dir.startsWith(cwd) && !dir.includes('..') ? dir : path.resolve(cwd, dir);
    // Never list a directory above the search root, nor one whose real path is outside (a pattern's
    // static part such as `{docs,x}/etc` names a directory through a symlink without listing it).
    if ((abs !== cwd && !abs.startsWith(cwd + path.sep)) || !guard.dirInside(abs)) {
      later(() => cb(null, []));
      return;
    }
    let entries: Dirent[];
    try {
      entries = fs.readdirSync(abs, { withFileTypes: true });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      // Unreadable or vanished directories are skipped, not fatal.
      later(() => cb(['ENOENT', 'EACCES', 'EPERM', 'ENOTDIR'].includes(err.code ?? '') ? null : err, []));
      return;
    }
    onDir();
    guard.listed(abs, entries);
    // One pass to see whether anything needs filtering; the common case passes the listing through untouched.
    let drop = false;
    let ruleFiles = false;
    for (const e of entries) {
      if (VCS_DIRS.has(e.name) || e.isSymbolicLink() || isAtomicTempName(e.name)) drop = true;
      else if (isIgnoreFileName(e.name)) ruleFiles = true;
    }
    const filter = (chain: Awaited<ReturnType<IgnoreTree['enter']>>): void => {
      if (!drop && chain.length === 0) {
        cb(null, entries);
        return;
      }
      const rules = chain.length > 0;
      cb(
        null,
        entries.filter((e) => {
          // Temp files of unfinished or abandoned atomic writes are never results.
          if (VCS_DIRS.has(e.name) || e.isSymbolicLink() || isAtomicTempName(e.name)) return false;
          return !rules || !tree.isIgnored(chain, path.join(abs, e.name), e.isDirectory());
        }),
      );
    };
    const chain = tree.enter(abs, ruleFiles ? entries.map((e) => e.name) : []);
    if (Array.isArray(chain)) later(() => filter(chain));
    else chain.then(filter, (e: NodeJS.ErrnoException) => cb(e, []));
  };
}

/** fast-glob (with micromatch and picomatch) is loaded on the first walk, not when the package is imported. */
const fastGlob = onFirstUse<typeof FastGlob>('fast-glob');

/** Where a search looked, for a sentence: "the workspace root" rather than a bare "." (which read as ".."). */
function where(shown: string): string {
  return shown === '.' ? 'the workspace root' : shown;
}
