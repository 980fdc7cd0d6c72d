/**
 * What list, glob and grep share: .gitignore-style ignore rules (read once per directory, applied
 * while walking so ignored trees are never entered), the include-glob matcher, brace expansion,
 * newest-first ordering and throttled progress. Each mechanism lives here once.
 * Must not hold one tool's behaviour: only what list, glob and grep all use.
 * Over 400 lines: the ignore rules (files, defaults, search-on-purpose), the include globs and the
 * ordering that list, glob and grep share; each piece is small and used by all three.
 */
import { promises as fs, statSync, constants as fsConstants } from 'node:fs';
import path from 'node:path';
import posix from 'node:path/posix';
import ignoreFactory, { type Ignore } from 'ignore';
import type { Tool } from '../../authoring/tool.js';
import { expandBraces } from '../../text/braces.js';

export { expandBraces, MAX_BRACE_EXPANSIONS } from '../../text/braces.js';

declare module '../../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** grep and glob: minimum time between progress reports (ms); default PROGRESS_INTERVAL_MS (src/authoring/progress.ts). */
      progressIntervalMs?: number;
      /**
       * list, glob and grep: names of DEFAULT_IGNORES to search anyway (e.g. `['dist']`), or `true`
       * for all of them; default none. A call that names such a directory as its `path` searches it
       * regardless.
       */
      searchIgnored?: boolean | string[];
    }
  }
}

/**
 * Names list, glob and grep skip at any depth below the directory searched: dependencies, version
 * control, build output, caches and editor folders, as .gitignore files usually say (and a tree
 * without one still is not searched through `node_modules`). A call that names one as its `path`
 * searches it; `initCtx.searchIgnored` searches some or all of them.
 */
export const DEFAULT_IGNORES: readonly string[] = [
  'node_modules',
  '.git',
  '.hg',
  '.svn',
  '.jj',
  'dist',
  'build',
  'coverage',
  '.nyc_output',
  '.venv',
  'venv',
  '__pycache__',
  '.pytest_cache',
  '.mypy_cache',
  '.ruff_cache',
  '.tox',
  '.next',
  '.nuxt',
  '.svelte-kit',
  '.turbo',
  '.parcel-cache',
  '.cache',
  'target',
  '.gradle',
  '.idea',
  '.DS_Store',
];

const DEFAULT_IGNORE_SET: ReadonlySet<string> = new Set(DEFAULT_IGNORES);
const NOTHING: ReadonlySet<string> = new Set();

/** The names of DEFAULT_IGNORES a search under `initCtx` skips (all of them unless `searchIgnored` says otherwise). */
export function ignoredNames(initCtx: Tool.InitContext): ReadonlySet<string> {
  const wanted = initCtx.searchIgnored;
  if (wanted === true) return NOTHING;
  if (!Array.isArray(wanted) || wanted.length === 0) return DEFAULT_IGNORE_SET;
  return new Set(DEFAULT_IGNORES.filter((n) => !wanted.includes(n)));
}

/** A backend's answer (`path`s absolute, or relative to `base`) less what lies below a name `initCtx` skips. */
export function withoutIgnored<F extends { path: string }>(
  base: string,
  files: readonly F[],
  initCtx: Tool.InitContext,
): F[] {
  const names = ignoredNames(initCtx);
  return files.filter((f) => !underIgnoredName(base, f.path, names));
}

/** Whether the posix path `p` (absolute, or relative to `base`) lies below `base` through a name in `names`. */
export function underIgnoredName(base: string, p: string, names: ReadonlySet<string>): boolean {
  if (names.size === 0) return false;
  const rel = posix.relative(base, posix.resolve(base, p));
  for (const segment of rel.split('/')) if (names.has(segment)) return true;
  return false;
}

/** Ignore files honoured in every directory, lowest precedence first (ripgrep's order). */
export const IGNORE_FILE_NAMES: readonly string[] = ['.gitignore', '.ignore', '.rgignore'];

const IGNORE_FILE_SET: ReadonlySet<string> = new Set(IGNORE_FILE_NAMES);

/** Whether `name` is one of IGNORE_FILE_NAMES. */
export function isIgnoreFileName(name: string): boolean {
  return IGNORE_FILE_SET.has(name);
}

/** Version-control directories that are never walked (they are implementation detail, not source). */
export const VCS_DIRS: ReadonlySet<string> = new Set(['.git', '.hg', '.svn', '.jj']);

/** Bytes read from one ignore file at most; the rest (and a line cut by the cap) is not used. */
export const MAX_IGNORE_FILE_BYTES = 1024 * 1024;

/** Opening never blocks (a FIFO would hold a thread-pool thread forever) and never follows a symlink. */
const IGNORE_OPEN_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | (fsConstants.O_NOFOLLOW ?? 0);

/**
 * Reads one ignore file, or undefined when it must not be read. Only a regular file is read: a
 * FIFO, device or socket is skipped without blocking, and a symlink is not followed (as git does
 * since 2.32), so a link to /dev/zero or to a file outside the workspace gives no rules. At most
 * MAX_IGNORE_FILE_BYTES are read; a line cut by the cap is dropped.
 */
export async function readIgnoreFile(file: string): Promise<string | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, IGNORE_OPEN_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return undefined;
    const size = Math.min(st.size, MAX_IGNORE_FILE_BYTES);
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await handle.read(buf, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    let text = buf.subarray(0, got).toString('utf8');
    if (st.size > MAX_IGNORE_FILE_BYTES) text = text.slice(0, text.lastIndexOf('\n') + 1);
    return text;
  } catch {
    return undefined;
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** A compiled ignore file set of one directory. */
interface DirRules {
  /** Absolute directory the patterns are relative to. */
  dir: string;
  ig: Ignore;
  /** The raw pattern lines, for handing to ripgrep as an `--ignore-file`. */
  lines: string[];
}

/** Makes a case-sensitive matcher (git and ripgrep are case-sensitive on Linux). */
export function makeIgnore(patterns: string[] = []): Ignore {
  return ignoreFactory({ ignorecase: false }).add(patterns);
}

/** Reads the ignore files of one directory; `names`, when known from a listing, saves failed opens. */
async function readDirRules(dir: string, names?: ReadonlySet<string>): Promise<DirRules | null> {
  const lines: string[] = [];
  for (const name of IGNORE_FILE_NAMES) {
    if (names && !names.has(name)) continue;
    const text = await readIgnoreFile(path.join(dir, name));
    if (text !== undefined) lines.push(...text.split(/\r?\n/));
  }
  const effective = lines.filter((l) => l.trim() !== '' && !l.startsWith('#'));
  if (effective.length === 0) return null;
  return { dir, ig: makeIgnore(effective), lines: effective };
}

/**
 * The ignore rules in force while walking one tree: the ignore files of every directory from the
 * workspace root (`top`) down to the directory being read. Deeper files win over shallower ones,
 * and within one file the last matching pattern wins, as in git.
 */
export class IgnoreTree {
  /** Per directory: the chain of rules in force for its entries, deepest first. */
  private readonly chains = new Map<string, DirRules[]>();

  private constructor(
    readonly top: string,
    /** The walk's first directory. */
    readonly start: string,
    /** Rules of the directories above the walk's start (`top` .. parent of start). */
    readonly ancestors: DirRules[],
  ) {}

  /**
   * Prepares a walk starting at `start` (inside `top`). When `start` itself is ignored by the
   * rules above it, those rules are dropped: naming an ignored directory explicitly searches it.
   */
  static async forWalk(top: string, start: string): Promise<IgnoreTree> {
    const dirs: string[] = [];
    for (let d = path.dirname(start); isWithinOrSame(d, top) && d !== start; d = path.dirname(d)) {
      dirs.unshift(d);
      if (d === top) break;
    }
    const rules: DirRules[] = [];
    for (const d of dirs) {
      const r = await readDirRules(d);
      if (r) rules.unshift(r); // deepest first
    }
    const tree = new IgnoreTree(top, start, rules);
    if (rules.length && testChain(rules, start, true)) tree.ancestors.length = 0;
    tree.chains.set(path.dirname(start), tree.ancestors);
    return tree;
  }

  /**
   * Registers the directory `dir` (already known not to be ignored) and reads its own ignore
   * files; returns the chain for its entries. `entryNames`, the directory's listing when the caller
   * has it, saves opening files that are not there: with no ignore file among them the answer is
   * immediate (no promise), which keeps walks of huge trees cheap.
   */
  enter(dir: string, entryNames?: Iterable<string>): DirRules[] | Promise<DirRules[]> {
    const existing = this.chains.get(dir);
    if (existing) return existing;
    const parentDir = path.dirname(dir);
    const known = this.chains.get(parentDir);
    if (!known && dir !== this.start && isWithinOrSame(parentDir, this.start)) {
      // A walk that begins below its start (fast-glob reads `{src,docs}/*` from src and docs, never
      // listing the start): the rules of the directories in between apply all the same.
      return (async () => {
        await this.enter(parentDir);
        return this.enter(dir, entryNames);
      })();
    }
    const parent = known ?? this.ancestors;
    let present: Set<string> | undefined;
    if (entryNames) {
      for (const n of entryNames) if (IGNORE_FILE_SET.has(n)) (present ??= new Set()).add(n);
      if (!present) {
        this.chains.set(dir, parent);
        return parent;
      }
    }
    return readDirRules(dir, present).then((own) => {
      const chain = own ? [own, ...parent] : parent;
      this.chains.set(dir, chain);
      return chain;
    });
  }

  /** Whether the entry `abs` (a child of a directory passed to `enter`) is ignored. */
  isIgnored(chain: DirRules[], abs: string, isDir: boolean): boolean {
    return chain.length > 0 && testChain(chain, abs, isDir);
  }

  /**
   * The rules above the walk's start, rewritten as one ignore file whose patterns are relative to
   * `top` (ripgrep's `--ignore-file` matches relative to its working directory). Shallow first,
   * so deeper rules come later and win. Empty when there are none.
   */
  ancestorsAsIgnoreFile(): string {
    const out: string[] = [];
    for (const r of [...this.ancestors].reverse()) {
      const prefix = path.relative(this.top, r.dir).split(path.sep).join('/');
      for (const line of r.lines) out.push(rebaseIgnorePattern(line, prefix));
    }
    return out.join('\n');
  }
}

function testChain(chain: DirRules[], abs: string, isDir: boolean): boolean {
  for (const r of chain) {
    const rel = abs
      .slice(r.dir.length + 1)
      .split(path.sep)
      .join('/');
    if (!rel) continue;
    let res: { ignored: boolean; unignored: boolean };
    try {
      res = r.ig.test(isDir ? `${rel}/` : rel);
    } catch {
      continue; // a name the matcher cannot take (e.g. "..."): no pattern can be meant for it
    }
    if (res.ignored) return true;
    if (res.unignored) return false;
  }
  return false;
}

/**
 * Rewrites one gitignore pattern written in directory `prefix` (relative to the top, posix) so it
 * means the same when read from the top: anchored patterns get the prefix, floating ones
 * (no inner slash) get `prefix/**`.
 */
export function rebaseIgnorePattern(line: string, prefix: string): string {
  if (!prefix) return line;
  let neg = '';
  let p = line;
  if (p.startsWith('!')) {
    neg = '!';
    p = p.slice(1);
  }
  const body = p.endsWith('/') ? p.slice(0, -1) : p;
  const anchored = body.includes('/');
  if (p.startsWith('/')) p = p.slice(1);
  return anchored ? `${neg}/${prefix}/${p}` : `${neg}/${prefix}/**/${p}`;
}

function isWithinOrSame(candidate: string, root: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/** The allowed root that contains `abs` (the longest match), or undefined. */
export function rootContaining(roots: readonly string[], abs: string): string | undefined {
  let best: string | undefined;
  for (const r of roots) if (isWithinOrSame(abs, r) && (!best || r.length > best.length)) best = r;
  return best;
}

/**
 * Decides whether a file (path relative to the search directory, posix) matches `include`: a glob
 * without `/` is matched against the file name only; one with `/` against the relative path
 * (gitignore-style: `src/*.ts` is anchored at the search directory, `**\/x` floats).
 */
export class IncludeMatcher {
  private readonly byName: Ignore | undefined;
  private readonly byPath: Ignore | undefined;
  /** The expanded alternatives. */
  readonly globs: string[];
  /** True when every alternative is a plain file-name glob. */
  readonly nameOnly: boolean;

  constructor(readonly include: string) {
    const trimmed = include.trim();
    if (!trimmed || trimmed.startsWith('!')) {
      throw new Error(
        `include must be one positive glob such as "*.ts" or "src/**/*.{ts,tsx}", got ${JSON.stringify(include)}.`,
      );
    }
    this.globs = expandBraces(trimmed).map((g) => (g.startsWith('./') ? g.slice(2) : g));
    const names = this.globs.filter((g) => !g.includes('/'));
    const paths = this.globs.filter((g) => g.includes('/'));
    this.nameOnly = paths.length === 0;
    this.byName = names.length ? makeIgnore(names) : undefined;
    this.byPath = paths.length ? makeIgnore(paths) : undefined;
  }

  /** Whether the file at `relPosix` (relative to the search directory) is included. */
  matches(relPosix: string): boolean {
    try {
      if (this.byName && this.byName.ignores(relPosix.slice(relPosix.lastIndexOf('/') + 1))) return true;
      return !!this.byPath && this.byPath.ignores(relPosix);
    } catch {
      return false;
    }
  }

  /** File-name globs that every included file must match, for a backend's pre-filter; undefined when any is possible. */
  nameGlobs(): string[] | undefined {
    const out: string[] = [];
    for (const g of this.globs) {
      const base = g.slice(g.lastIndexOf('/') + 1);
      if (!base || base.includes('**')) return undefined;
      out.push(base);
    }
    return out;
  }
}

/** Modification time in ms, cached; a file that vanished sorts last. */
export class MtimeCache {
  private readonly cache = new Map<string, number>();

  get(abs: string): number {
    let t = this.cache.get(abs);
    if (t === undefined) {
      try {
        t = statSync(abs, { throwIfNoEntry: false })?.mtimeMs ?? -Infinity;
      } catch {
        t = -Infinity; // unreadable: sorts last
      }
      this.cache.set(abs, t);
    }
    return t;
  }
}

/** Newest first; equal times by path, so results never depend on walk order. */
export function compareNewestFirst(a: { mtime: number; path: string }, b: { mtime: number; path: string }): number {
  if (a.mtime !== b.mtime) return b.mtime - a.mtime;
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/**
 * Whether the policy's filter leaves out the entry `name` of the directory `dir` a walk listed:
 * `skipsIn` when the filter has it (the directory's forms worked out once), else `skips`; a link
 * whose target is known (`real`) is judged by `skips` with it.
 */
export function entrySkipped(
  filter: Tool.ReadFilter,
  dir: string,
  name: string,
  isDir: boolean,
  real?: string,
): boolean {
  if (real === undefined && filter.skipsIn) return filter.skipsIn(dir, name, isDir);
  return filter.skips(dir.endsWith(path.sep) ? dir + name : dir + path.sep + name, isDir, real);
}
