/**
 * glob: find files by name pattern (fast-glob), .gitignore respected while walking, newest
 * modified first, at most MAX_GLOB_RESULTS paths. Never walks or returns anything outside the
 * workspace: symlinks are not followed, and the pattern's fixed leading part is resolved through
 * the sandbox like any other path.
 * Must not re-implement ignore rules or ordering (search-common.ts).
 * Over 400 lines: one walk (fast-glob's readdir hook with the ignore rules, the default ignores and
 * the policy's filter) and the results it yields share the guard and the walk's state.
 */
import fs, { promises as fsp, type Dirent } from 'node:fs';
import path from 'node:path';
import type FastGlob from 'fast-glob';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { isAtomicTempName } from '../../workspace/atomic-write.js';
import { onFirstUse } from '../../platform/lazy.js';
import { descriptionBeside } from '../../authoring/description.js';
import { Workspace, type RealPathGuard } from '../../workspace/workspace.js';
import {
  IgnoreTree,
  MtimeCache,
  isIgnoreFileName,
  VCS_DIRS,
  compareNewestFirst,
  ignoredNames,
  rootContaining,
  entrySkipped,
} from './search-common.js';
import { PROGRESS_INTERVAL_MS, throttle } from '../../authoring/progress.js';
import { saveFullOutput } from '../../pipeline/truncate.js';
import { tenantOf } from '../../workspace/tenant.js';
import { abortedMessage, throwIfAborted } from '../../authoring/abort.js';

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
  /** Paths left out because the policy does not let glob read them (ctx.readFilter); absent when none. */
  skippedByPolicy?: number;
}

/** The tool's arguments (the backend variant takes the same). */
export const parameters = z.object({
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
    const ignored = ignoredNames(initCtx);
    return {
      description:
        'Find files by glob pattern (e.g. "**/*.ts"), newest modified first; skips node_modules, .git, build output and .gitignored files.',
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

        // What the walk finds is judged path by path (the call was judged by its `path` only).
        const filter = await ctx.readFilter?.();
        // Files with their modification times, each path as the model will see it.
        let found: Found[] = [];
        if (dynamic === '') {
          if (cwdStat?.isFile() && !filter?.skips(cwd, false))
            found.push({ path: ws.display(cwd), mtime: new MtimeCache().get(cwd) });
        } else if (cwdStat?.isDirectory()) {
          let dirsRead = 0;
          const report = throttle(progressMs, () =>
            ctx.metadata({ title, metadata: { directoriesScanned: dirsRead } }),
          );
          const onDir = (): void => {
            dirsRead++;
            report();
          };
          const guard = ws.guard();
          const rel = await walk({
            ws,
            cwd,
            dynamic,
            pattern: args.pattern,
            guard,
            filter,
            ignored,
            signal: ctx.abort,
            onDir,
          });
          found = statResults(ws, cwd, rel, guard, dynamic.includes('{'), filter);
        }
        throwIfAborted(ctx.abort, abortedMessage('glob'));

        const sorted = found.sort(compareNewestFirst);
        const shown = sorted.slice(0, MAX_GLOB_RESULTS).map((f) => f.path);
        const truncated = sorted.length > shown.length;
        const metadata: GlobMetadata = { count: sorted.length, shown: shown.length, truncated };
        const notice = filter?.notice() ?? '';
        if (filter?.skipped) metadata.skippedByPolicy = filter.skipped;
        // A cut list keeps the rest within reach: every path goes to a file the model can read.
        if (truncated)
          metadata.fullListPath = await saveFullOutput(sorted.map((f) => f.path).join('\n') + '\n', 'glob', outputs);
        if (sorted.length === 0) {
          return {
            title,
            metadata,
            output: `No files found matching ${JSON.stringify(args.pattern)} in ${where(ws.display(base))}.${notice && ` ${notice}`}`,
          };
        }
        let output = shown.join('\n');
        if (truncated) {
          output += `\n\n(Results are truncated: showing the ${MAX_GLOB_RESULTS} most recently modified of ${sorted.length} files. All ${sorted.length} paths, newest first, are saved at ${metadata.fullListPath}: read it with the read tool (offset=${MAX_GLOB_RESULTS + 1} continues this list), or use a more specific pattern or path.)`;
        }
        if (notice) output += `\n\n${notice}`;
        return { title: `${title}: ${sorted.length} file${sorted.length === 1 ? '' : 's'}`, metadata, output };
      },
    };
  },
);

/** One result: its path as shown (ws.display's form) and its modification time. */
interface Found {
  path: string;
  mtime: number;
}

/**
 * Walks `cwd` with fast-glob through the ignore-aware, sandboxed `readdir` below; returns the
 * matching paths relative to `cwd`, as fast-glob gives them.
 */
async function walk(w: {
  ws: Workspace;
  cwd: string;
  /** The pattern less its fixed part: what fast-glob matches below cwd. */
  dynamic: string;
  /** The whole pattern, for the error message. */
  pattern: string;
  guard: RealPathGuard;
  /** The policy's filter: refused files and trees are dropped from listings (never entered). */
  filter: Tool.ReadFilter | undefined;
  /** Names never entered or returned below cwd (DEFAULT_IGNORES less initCtx.searchIgnored). */
  ignored: ReadonlySet<string>;
  signal: AbortSignal;
  /** Called for each directory listed (progress). */
  onDir: () => void;
}): Promise<string[]> {
  const { ws, cwd, dynamic, pattern, guard, signal } = w;
  const top = rootContaining(ws.roots, cwd) ?? ws.root;
  const tree = await IgnoreTree.forWalk(top, cwd);
  const readdir = gitignoreAwareReaddir(tree, cwd, guard, w.filter, w.ignored, signal, w.onDir);
  try {
    return await fastGlob()(dynamic, {
      cwd,
      dot: true,
      onlyFiles: true,
      followSymbolicLinks: false,
      // Checking every walked entry against a set of the paths already returned cost ~10% of a
      // walk; only brace alternatives can return a path twice, and statResults drops those.
      unique: false,
      caseSensitiveMatch: true,
      suppressErrors: false,
      fs: { readdir } as unknown as FastGlob.Options['fs'],
    });
  } catch (err) {
    throwIfAborted(signal, abortedMessage('glob'));
    throw new Error(
      `glob could not search with pattern ${JSON.stringify(pattern)}: ${(err as Error).message}. Check the pattern and call glob again.`,
      { cause: err },
    );
  }
}

/**
 * Keeps the walk's results that are inside the sandbox and stats each once (an lstat: for a file
 * that is not a link it is also the mtime for the order). Stat'ing in one tight loop after the
 * walk is cheaper than interleaving it with the walk. `mayRepeat`: brace alternatives can
 * return a path twice.
 */
function statResults(
  ws: Workspace,
  cwd: string,
  rel: string[],
  guard: RealPathGuard,
  mayRepeat: boolean,
  filter: Tool.ReadFilter | undefined,
): Found[] {
  const found: Found[] = [];
  const prefix = cwd + path.sep;
  const seen = mayRepeat ? new Set<string>() : undefined;
  // A plain relative path is shown as cwd's shown form plus itself: path.relative per result
  // (which resolves both paths again) was ~15% of a large glob.
  const cwdShown = path.sep === '/' ? shownPrefix(ws, cwd) : undefined;
  const mtimes = new MtimeCache();
  // Results come grouped by directory: one guard lookup per run of the same directory.
  let lastDir = '';
  let lastDirInside = false;
  for (const r of rel) {
    const plain = !NOT_PLAIN.test(r);
    const abs = plain ? prefix + r : path.resolve(cwd, r);
    if (!abs.startsWith(prefix)) continue;
    if (seen) {
      if (seen.has(abs)) continue;
      seen.add(abs);
    }
    // Whatever fast-glob makes of a pattern, only paths under cwd whose real path is inside come out.
    const dir = path.dirname(abs);
    if (dir !== lastDir) {
      lastDir = dir;
      lastDirInside = guard.dirInside(dir);
    }
    if (!lastDirInside) continue;
    const st = fs.lstatSync(abs, { throwIfNoEntry: false });
    if (!st) continue;
    let mtime = st.mtimeMs;
    let real: string | undefined;
    if (st.isSymbolicLink()) {
      if (!guard.inside(abs)) continue;
      mtime = mtimes.get(abs);
      real = realpathOrSelf(abs);
    }
    // Also what fast-glob returned without a listing (a pattern's static alternatives).
    if (filter && entrySkipped(filter, dir, path.basename(abs), false, real)) continue;
    found.push({ path: plain && cwdShown !== undefined ? cwdShown + r : ws.display(abs), mtime });
  }
  return found;
}

/**
 * What ws.display puts before a path relative to `cwd` (`cwd`'s own shown form and a slash, or
 * nothing at the root), or undefined when cwd is not under the main root (paths show absolute).
 */
function shownPrefix(ws: Workspace, cwd: string): string | undefined {
  const shown = ws.display(cwd);
  if (path.isAbsolute(shown)) return undefined;
  return shown === '.' ? '' : shown + '/';
}

/** The real path of a link found by the walk (itself when it cannot be resolved: judged as found). */
function realpathOrSelf(abs: string): string {
  try {
    return fs.realpathSync.native(abs);
  } catch {
    return abs;
  }
}

/** A relative path with an empty, `.` or `..` segment (or a leading or trailing slash): not plain. */
const NOT_PLAIN = /(^|\/)\.{0,2}(\/|$)/;

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

const DOT = 0x2e;

/**
 * Entries a walk never enters or returns: symlinks, the default-ignored names (`ignored`),
 * version-control directories and temp files of unfinished or abandoned atomic writes.
 */
function neverListed(e: Dirent, ignored: ReadonlySet<string>): boolean {
  if (e.isSymbolicLink() || ignored.has(e.name)) return true;
  return e.name.charCodeAt(0) === DOT && (VCS_DIRS.has(e.name) || isAtomicTempName(e.name));
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
  policy: Tool.ReadFilter | undefined,
  ignored: ReadonlySet<string>,
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
  const cwdPrefix = cwd + path.sep;
  return (dir: string, optsOrCb: unknown, maybeCb?: ReaddirCallback): void => {
    const cb = (typeof optsOrCb === 'function' ? optsOrCb : maybeCb) as ReaddirCallback;
    if (signal.aborted) {
      later(() => cb(Object.assign(new Error('aborted'), { code: 'ABORT_ERR' }), []));
      return;
    }
    const abs = dir.startsWith(cwd) && !dir.includes('..') ? dir : path.resolve(cwd, dir);
    // Never list a directory above the search root, nor one whose real path is outside (a pattern's
    // static part such as `{docs,x}/etc` names a directory through a symlink without listing it).
    if ((abs !== cwd && !abs.startsWith(cwdPrefix)) || !guard.dirInside(abs)) {
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
    let refused: Set<Dirent> | undefined;
    for (const e of entries) {
      if (neverListed(e, ignored)) drop = true;
      else {
        if (e.name.charCodeAt(0) === DOT && isIgnoreFileName(e.name)) ruleFiles = true;
        if (policy && entrySkipped(policy, abs, e.name, e.isDirectory())) (refused ??= new Set()).add(e);
      }
    }
    if (refused) drop = true;
    const keep = (chain: Awaited<ReturnType<IgnoreTree['enter']>>): void => {
      if (!drop && chain.length === 0) {
        cb(null, entries);
        return;
      }
      const rules = chain.length > 0;
      cb(
        null,
        entries.filter((e) => {
          if (neverListed(e, ignored) || refused?.has(e)) return false;
          return !rules || !tree.isIgnored(chain, path.join(abs, e.name), e.isDirectory());
        }),
      );
    };
    const chain = tree.enter(abs, ruleFiles ? entries.map((e) => e.name) : []);
    if (Array.isArray(chain)) later(() => keep(chain));
    else chain.then(keep, (e: NodeJS.ErrnoException) => cb(e, []));
  };
}

/** fast-glob (with micromatch and picomatch) is loaded on the first walk, not when the package is imported. */
const fastGlob = onFirstUse<typeof FastGlob>('fast-glob');

/** Where a search looked, for a sentence: "the workspace root" rather than a bare "." (which read as ".."). */
function where(shown: string): string {
  return shown === '.' ? 'the workspace root' : shown;
}
