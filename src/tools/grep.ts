/**
 * grep: search file contents with a regular expression. Uses ripgrep when an `rg` binary is on
 * PATH, else a JavaScript search with the same output: .gitignore respected, binary files skipped,
 * at most MAX_MATCHES matches grouped by file, newest files first, long lines cut.
 */
import { spawn } from 'node:child_process';
import {
  promises as fs,
  constants as fsConstants,
  readdirSync,
  openSync,
  fstatSync,
  readFileSync,
  readSync,
  closeSync,
  type Dirent,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { Tool } from '../tool.js';
import { Workspace } from '../workspace.js';
import {
  IgnoreTree,
  IncludeMatcher,
  MtimeCache,
  PROGRESS_INTERVAL_MS,
  VCS_DIRS,
  compareNewestFirst,
  rootContaining,
  throttle,
  throwIfAborted,
} from './search-common.js';

/** Matching lines shown at most; the rest are counted ("Found N matches"). */
export const MAX_MATCHES = 100;
/** Characters kept of one output line; the rest is cut with GREP_LINE_CUT_MARKER. */
export const MAX_LINE_LENGTH = 2000;
/** Appended to a line cut at MAX_LINE_LENGTH. */
export const GREP_LINE_CUT_MARKER = '... (line truncated)';
/** Most context lines before/after a match. */
export const MAX_CONTEXT_LINES = 20;
/**
 * Lines longer than this (bytes) are left out by ripgrep itself, and the few that are shown are
 * read back from the file (its preview mode is ~20% slower on heavy output). 4 bytes per char at
 * most, so any line of up to MAX_LINE_LENGTH chars still comes through whole.
 */
const RG_MAX_COLUMNS = MAX_LINE_LENGTH * 4;
/** What ripgrep prints instead of a line longer than RG_MAX_COLUMNS. */
const RG_OMITTED_LINE = /^\[Omitted long (?:matching|context) line\]$/;
/** Files up to this size are searched in one piece by the JS backend; bigger ones in blocks. */
const JS_BLOCK_BYTES = 8 * 1024 * 1024;
/** The JS backend yields to the event loop this often (abort, progress). */
const JS_SLICE_MS = 20;
/** Bytes of ripgrep's stderr kept for error messages. */
const MAX_STDERR = 4096;

/** Which search engine ran. */
export type GrepBackend = 'rg' | 'js';

/** grep's metadata. */
export interface GrepMetadata extends Tool.Metadata {
  /** Matching lines found in total (also those not shown). */
  matches: number;
  /** Files with at least one match. */
  files: number;
  /** Matching lines shown. */
  shown: number;
  truncated: boolean;
  backend: GrepBackend;
}

const parameters = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('Regular expression to search for, e.g. "function\\s+\\w+" or "TODO|FIXME". Matched line by line.'),
  path: z
    .string()
    .optional()
    .describe(
      'File or directory to search: absolute, or relative to the workspace root (default: the workspace root).',
    ),
  include: z
    .string()
    .optional()
    .describe(
      'Only search files matching this glob, e.g. "*.ts", "*.{ts,tsx}", "src/**/*.py" (a glob with "/" is matched against the path relative to `path`).',
    ),
  context: z
    .number()
    .int()
    .min(0)
    .max(MAX_CONTEXT_LINES)
    .optional()
    .describe(`Lines of context to show before and after each match (default 0, max ${MAX_CONTEXT_LINES}).`),
  before: z
    .number()
    .int()
    .min(0)
    .max(MAX_CONTEXT_LINES)
    .optional()
    .describe('Lines of context before each match (overrides `context`).'),
  after: z
    .number()
    .int()
    .min(0)
    .max(MAX_CONTEXT_LINES)
    .optional()
    .describe('Lines of context after each match (overrides `context`).'),
  caseInsensitive: z.boolean().optional().describe('Match letters regardless of case (default false).'),
});

export const GrepTool = Tool.define<typeof parameters, GrepMetadata>('grep', async (initCtx) => {
  const ws = await Workspace.fromInitContext(initCtx);
  const wanted = initCtx.grepBackend === 'js' || initCtx.grepBackend === 'rg' ? initCtx.grepBackend : 'auto';
  const rgPath =
    wanted === 'js' ? undefined : typeof initCtx.rgPath === 'string' ? initCtx.rgPath : await findExecutable('rg');
  const progressMs = typeof initCtx.progressIntervalMs === 'number' ? initCtx.progressIntervalMs : PROGRESS_INTERVAL_MS;
  // Tuning knob for tests: a tiny block size exercises the large-file path on small files.
  const blockBytes =
    typeof initCtx.grepBlockBytes === 'number' && initCtx.grepBlockBytes > 0 ? initCtx.grepBlockBytes : JS_BLOCK_BYTES;
  return {
    description:
      'Search file contents with a regular expression (ripgrep when available); results grouped by file, newest first.',
    parameters,
    async execute(args, ctx) {
      if (wanted === 'rg' && !rgPath) {
        throw new Error(
          'grep is configured to use ripgrep (grepBackend: "rg") but no `rg` binary was found on PATH. Install ripgrep or use grepBackend "auto".',
        );
      }
      const backend: GrepBackend = rgPath ? 'rg' : 'js';
      const compiled = compilePattern(args.pattern, !!args.caseInsensitive);
      const before = args.before ?? args.context ?? 0;
      const after = args.after ?? args.context ?? 0;
      const include = args.include !== undefined ? new IncludeMatcher(args.include) : undefined;
      const target = await ws.resolve(args.path ?? '.');
      const stat = await fs.stat(target).catch(() => undefined);
      if (!stat)
        throw new Error(
          `Path ${JSON.stringify(args.path)} does not exist (resolved to ${target}). Check the path, or use glob to find it.`,
        );
      const isFile = stat.isFile();
      if (!isFile && !stat.isDirectory())
        throw new Error(`${ws.display(target)} is neither a file nor a directory; give grep a file or directory.`);
      throwIfAborted(ctx.abort, 'grep');
      if (isFile && (await containsNul(target))) {
        throw new Error(
          `${ws.display(target)} is a binary file (it contains NUL bytes); grep skips binary files. Use read to inspect it.`,
        );
      }
      const top = rootContaining(ws.roots, target) ?? ws.root;
      const collector = new Collector(MAX_MATCHES, after, before > 0 || after > 0);
      const title = `grep ${JSON.stringify(args.pattern)} in ${ws.display(target)}`;
      ctx.metadata({ title, metadata: { backend } });
      const report = throttle(progressMs, () =>
        ctx.metadata({
          title,
          metadata: {
            backend,
            matches: collector.totalMatches,
            files: collector.fileCount,
            filesScanned: collector.filesScanned,
          },
        }),
      );
      const opts: SearchOptions = {
        target,
        isFile,
        top,
        compiled,
        before,
        after,
        include,
        ctx,
        collector,
        report,
        blockBytes,
      };
      if (backend === 'rg') await searchWithRg(rgPath as string, opts);
      else await searchWithJs(opts);
      throwIfAborted(ctx.abort, 'grep');
      return render(collector, ws, args.pattern, target, backend);
    },
  };
});

// ---------------------------------------------------------------------------------------------
// Pattern: the regex subset ripgrep and JavaScript read the same way
// ---------------------------------------------------------------------------------------------

/** A validated pattern: the source handed to both engines, and the JS regexes. */
interface CompiledPattern {
  source: string;
  caseInsensitive: boolean;
  /** Tests one line (without its `\n`). */
  line: RegExp;
  /** Quick test of a whole block of lines (a superset: a hit is confirmed line by line). */
  block: RegExp;
}

/** Escapes both engines accept as-is outside a character class. */
const KEEP_ESCAPED = new Set('^$\\.*+?()[]{}|'.split(''));
/** ...and inside one. */
const KEEP_ESCAPED_IN_CLASS = new Set('^$\\.*+?()[]{}|-'.split(''));

/**
 * Validates `pattern` and normalises escapes the two engines disagree on (`\:`, `\/`, `\-` ...
 * become the plain character). Rejects what ripgrep's default engine lacks (look-around,
 * back-references, named groups), POSIX classes (a different meaning in JS) and `\n`.
 */
export function compilePattern(pattern: string, caseInsensitive: boolean): CompiledPattern {
  const fail = (why: string): never => {
    throw new Error(
      `Invalid regular expression ${JSON.stringify(pattern)}: ${why}. grep accepts the regex subset shared by ripgrep and JavaScript ` +
        '(literals, . [] [^] groups (...) (?:...) | ^ $ \\b \\d \\w \\s, quantifiers * + ? {n,m}). Escape special characters with \\ (e.g. \\( \\. \\[) and call grep again.',
    );
  };
  if (pattern.includes('\n') || pattern.includes('\r'))
    fail('it contains a line break, but grep matches one line at a time');
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const n = pattern[i + 1];
      if (n === undefined) fail('it ends with a lone backslash');
      i++;
      if (n === 'n') fail('it contains \\n, but grep matches one line at a time');
      if (/[1-9]/.test(n) || (n === 'k' && pattern[i + 1] === '<'))
        fail('back-references (\\1, \\k<name>) are not supported');
      const keep = inClass ? KEEP_ESCAPED_IN_CLASS : KEEP_ESCAPED;
      if (/[!-/:-@[-`{-~]/.test(n) && !keep.has(n))
        out += n; // needless escape of punctuation
      else out += c + n;
      continue;
    }
    if (inClass) {
      if (c === '[' && pattern[i + 1] === ':')
        fail('POSIX classes like [[:alpha:]] are not supported; use [a-zA-Z] or \\w');
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      if (pattern[i + 1] === '^') {
        out += '^';
        i++;
      }
      if (pattern[i + 1] === ']')
        fail('an empty or "]"-first character class is read differently by the two engines; escape it as \\]');
      continue;
    }
    if (c === '(' && pattern[i + 1] === '?') {
      const rest = pattern.slice(i + 2);
      if (/^(=|!|<=|<!)/.test(rest))
        fail('look-ahead and look-behind ((?=...), (?!...), (?<=...), (?<!...)) are not supported');
      if (/^(<|P<)/.test(rest)) fail('named groups are not supported; use a plain group (...)');
      if (!rest.startsWith(':')) fail('inline flags like (?i) are not supported; use caseInsensitive: true');
    }
    out += c;
  }
  const flags = caseInsensitive ? 'i' : '';
  try {
    return { source: out, caseInsensitive, line: new RegExp(out, `su${flags}`), block: new RegExp(out, `msu${flags}`) };
  } catch (err) {
    return fail((err as Error).message.replace(/^Invalid regular expression: /, ''));
  }
}

// ---------------------------------------------------------------------------------------------
// Collecting results: bounded memory, newest files first
// ---------------------------------------------------------------------------------------------

interface LineRecord {
  line: number;
  text: string;
  match: boolean;
  /** ripgrep left the (long) line out: `text` is its notice; the line is read back when shown. */
  omitted?: boolean;
}

interface FileHits {
  abs: string;
  count: number;
  records: LineRecord[];
  mtime: number;
}

/** Everything that one search run needs. */
interface SearchOptions {
  target: string;
  isFile: boolean;
  top: string;
  compiled: CompiledPattern;
  before: number;
  after: number;
  include?: IncludeMatcher;
  ctx: Tool.Context<GrepMetadata>;
  collector: Collector;
  report: () => void;
  /** JS backend: files above this size are read in blocks of this size. */
  blockBytes: number;
}

/** Keeps per file at most `cap` matches (plus their context); drops files that can no longer be shown. */
class FileAccumulator {
  count = 0;
  records: LineRecord[] = [];
  private stored = 0;
  private lastStoredMatch = -1;

  constructor(
    private readonly cap: number,
    private readonly after: number,
  ) {}

  add(rec: LineRecord): void {
    if (rec.match) {
      this.count++;
      if (this.stored < this.cap) {
        this.stored++;
        this.lastStoredMatch = rec.line;
        this.records.push(rec);
      }
    } else if (this.stored < this.cap || rec.line <= this.lastStoredMatch + this.after) {
      this.records.push(rec);
    }
  }
}

/**
 * Gathers files' hits. Records are kept only for files that may still be shown: once the newest
 * files hold `cap` matches, older ones are reduced to counts, and can never come back (newer
 * files only push them further down).
 */
class Collector {
  totalMatches = 0;
  filesScanned = 0;
  fileCount = 0;
  /** Files whose records may still be shown. */
  private live: FileHits[] = [];
  private stored = 0;
  private readonly mtimes = new MtimeCache();

  constructor(
    readonly cap: number,
    readonly after: number,
    readonly withContext: boolean,
  ) {}

  newFile(): FileAccumulator {
    return new FileAccumulator(this.cap, this.after);
  }

  /** Adds a finished file's hits (`mtime` when the caller already has it). */
  addFile(abs: string, acc: FileAccumulator, mtime?: number): void {
    if (acc.count === 0) return;
    this.totalMatches += acc.count;
    this.fileCount++;
    // A synchronous stat measured faster than a thread-pool one here: the main thread mostly waits on rg.
    this.live.push({ abs, count: acc.count, records: acc.records, mtime: mtime ?? this.mtimes.get(abs) });
    this.stored += Math.min(acc.count, this.cap);
    if (this.stored > this.cap * 4) this.prune();
  }

  /** Files ordered newest first; only the first ones carry records. */
  finish(): FileHits[] {
    this.prune();
    return this.live;
  }

  private prune(): void {
    this.live.sort((a, b) => compareNewestFirst({ mtime: a.mtime, path: a.abs }, { mtime: b.mtime, path: b.abs }));
    let kept = 0;
    let i = 0;
    for (; i < this.live.length && kept < this.cap; i++) kept += Math.min(this.live[i].count, this.cap);
    this.live.length = i;
    this.stored = kept;
  }
}

async function render(
  collector: Collector,
  ws: Workspace,
  pattern: string,
  target: string,
  backend: GrepBackend,
): Promise<Tool.Result<GrepMetadata>> {
  const files = collector.finish();
  const total = collector.totalMatches;
  if (total === 0) {
    return {
      title: `grep ${JSON.stringify(pattern)}: no matches`,
      metadata: { matches: 0, files: 0, shown: 0, truncated: false, backend },
      output: `No matches found for ${JSON.stringify(pattern)} in ${ws.display(target)}.`,
    };
  }
  const blocks: string[] = [];
  let budget = collector.cap;
  for (const f of files) {
    if (budget <= 0) break;
    const lines: string[] = [`${ws.display(f.abs)}:`];
    let prev = -1;
    let lastShownMatch = -1;
    for (const r of f.records) {
      if (r.match) {
        if (budget <= 0) break;
        budget--;
        lastShownMatch = r.line;
      } else if (budget <= 0 && r.line > lastShownMatch + collector.after) break;
      if (collector.withContext && prev !== -1 && r.line > prev + 1) lines.push('  --');
      if (r.omitted) r.text = (await readLinePrefix(f.abs, r.line, RG_MAX_COLUMNS)) ?? r.text;
      lines.push(`  ${r.line}${r.match ? ':' : '-'} ${displayLine(r.text)}`);
      prev = r.line;
    }
    blocks.push(lines.join('\n'));
  }
  const shown = collector.cap - budget;
  const truncated = total > shown;
  const head = truncated
    ? `Found ${total} matches in ${collector.fileCount} files; showing the first ${shown}, newest files first.`
    : `Found ${total} match${total === 1 ? '' : 'es'} in ${collector.fileCount} file${collector.fileCount === 1 ? '' : 's'}.`;
  let output = `${head}\n\n${blocks.join('\n\n')}`;
  if (truncated) {
    output += `\n\n(Results truncated at ${collector.cap} matches. Narrow the search with path, include or a more specific pattern.)`;
  }
  return {
    title: `grep ${JSON.stringify(pattern)}: ${total} match${total === 1 ? '' : 'es'}`,
    metadata: { matches: total, files: collector.fileCount, shown, truncated, backend },
    output,
  };
}

/** A line as shown: without its `\r`, cut at MAX_LINE_LENGTH characters. */
export function displayLine(text: string): string {
  const t = text.endsWith('\r') ? text.slice(0, -1) : text;
  return t.length > MAX_LINE_LENGTH ? t.slice(0, MAX_LINE_LENGTH) + GREP_LINE_CUT_MARKER : t;
}

// ---------------------------------------------------------------------------------------------
// ripgrep backend
// ---------------------------------------------------------------------------------------------

const RG_BINARY_WARNING = /^(.*): WARNING: stopped searching binary file/;

async function searchWithRg(rg: string, o: SearchOptions): Promise<void> {
  const args = [
    '--no-config',
    '--no-require-git',
    '--no-ignore-parent',
    '--no-ignore-exclude',
    '--no-ignore-global',
    '--hidden',
    '--encoding',
    'none',
    '--line-number',
    '--with-filename',
    '--null',
    '--no-heading',
    '--color',
    'never',
    '--max-columns',
    String(RG_MAX_COLUMNS),
  ];
  if (o.compiled.caseInsensitive) args.push('--ignore-case');
  if (o.before) args.push('--before-context', String(o.before));
  if (o.after) args.push('--after-context', String(o.after));
  let ignoreFile: string | undefined;
  if (!o.isFile) {
    for (const d of VCS_DIRS) args.push('--glob', `!${d}`);
    const names = o.include?.nameGlobs();
    if (names) {
      for (const g of names) args.push('--type-add', `tbinclude:${g}`);
      args.push('--type', 'tbinclude');
    }
    const tree = await IgnoreTree.forWalk(o.top, o.target);
    const rules = tree.ancestorsAsIgnoreFile();
    if (rules) {
      ignoreFile = path.join(os.tmpdir(), `toolbelt-grep-${randomBytes(6).toString('hex')}.ignore`);
      await fs.writeFile(ignoreFile, rules);
      args.push('--ignore-file', ignoreFile);
    }
  }
  args.push('--regexp', o.compiled.source, '--', path.relative(o.top, o.target) || '.');

  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(rg, args, { cwd: o.top, stdio: ['ignore', 'pipe', 'pipe'] });
      o.ctx.metadata({ metadata: { backend: 'rg', pid: child.pid } });
      let stderr = '';
      let sawOutput = false;
      let current: { path: string; acc: FileAccumulator } | undefined;
      let lastPathBytes: Buffer | undefined;
      const binary = new Set<string>();
      const includeCache = new Map<string, boolean>();
      const flush = (): void => {
        if (!current) return;
        const abs = path.resolve(o.top, current.path);
        if (!binary.has(current.path) && wanted(abs)) o.collector.addFile(abs, current.acc);
        current = undefined;
        o.report();
      };
      const wanted = (abs: string): boolean => {
        if (o.isFile) return abs === o.target;
        if (!abs.startsWith(o.target + path.sep)) return false; // never report anything rg should not have walked into
        if (!o.include) return true;
        let ok = includeCache.get(abs);
        if (ok === undefined) {
          ok = o.include.matches(path.relative(o.target, abs).split(path.sep).join('/'));
          includeCache.set(abs, ok);
        }
        return ok;
      };
      const onLine = (buf: Buffer, start: number, end: number): void => {
        sawOutput = true;
        const nul = buf.indexOf(0, start);
        if (nul === -1 || nul >= end) {
          const text = buf.toString('utf8', start, end);
          const warn = RG_BINARY_WARNING.exec(text);
          if (warn) {
            binary.add(warn[1]);
            if (current?.path === warn[1]) current = undefined;
          }
          return; // "--" group separators and other notices
        }
        // Consecutive lines mostly share a file: compare bytes before decoding the path again.
        const samePath =
          current !== undefined &&
          lastPathBytes !== undefined &&
          nul - start === lastPathBytes.length &&
          buf.compare(lastPathBytes, 0, lastPathBytes.length, start, nul) === 0;
        const file = samePath ? (current as { path: string }).path : buf.toString('utf8', start, nul);
        if (!samePath) lastPathBytes = Buffer.from(buf.subarray(start, nul));
        let i = nul + 1;
        let line = 0;
        while (i < end && buf[i] >= 48 && buf[i] <= 57) line = line * 10 + (buf[i++] - 48);
        const sep = buf[i];
        if (sep !== 58 && sep !== 45) return; // not "N:" or "N-": not a line record
        if (current?.path !== file) {
          flush();
          current = { path: file, acc: o.collector.newFile() };
        }
        const text = buf.toString('utf8', i + 1, end);
        current.acc.add(
          RG_OMITTED_LINE.test(text)
            ? { line, text, match: sep === 58, omitted: true }
            : { line, text, match: sep === 58 },
        );
      };
      let pending: Buffer | undefined;
      child.stdout.on('data', (chunk: Buffer) => {
        const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
        let start = 0;
        for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
          onLine(buf, start, nl);
          start = nl + 1;
        }
        pending = start < buf.length ? buf.subarray(start) : undefined;
      });
      child.stderr.on('data', (chunk: Buffer) => {
        if (stderr.length < MAX_STDERR) stderr += chunk.toString('utf8');
      });
      const onAbort = (): void => {
        child.kill('SIGKILL');
      };
      o.ctx.abort.addEventListener('abort', onAbort, { once: true });
      child.on('error', (err) => {
        o.ctx.abort.removeEventListener('abort', onAbort);
        reject(new Error(`Could not run ripgrep (${rg}): ${err.message}. Install ripgrep or set grepBackend: "js".`));
      });
      child.on('close', (code) => {
        o.ctx.abort.removeEventListener('abort', onAbort);
        if (pending) onLine(pending, 0, pending.length);
        flush();
        if (o.ctx.abort.aborted)
          return reject(new Error('grep was aborted before it finished. Run it again if you still need the result.'));
        if (code === 0 || code === 1 || (code === 2 && sawOutput)) return resolve();
        reject(
          new Error(
            `ripgrep could not search for ${JSON.stringify(o.compiled.source)}: ${stderr.trim().slice(0, 1000) || `exit code ${code}`}. Fix the pattern or path and call grep again.`,
          ),
        );
      });
    });
  } finally {
    if (ignoreFile) await fs.rm(ignoreFile, { force: true });
  }
}

/** Full path of an executable `name` on PATH, or undefined. */
export async function findExecutable(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
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

// ---------------------------------------------------------------------------------------------
// JavaScript backend
// ---------------------------------------------------------------------------------------------

async function searchWithJs(o: SearchOptions): Promise<void> {
  // Synchronous file I/O in time slices: one thread-pool round trip per file would cost more than
  // the search itself on trees of small files. Between slices the event loop runs, so abort and
  // progress stay live.
  let sliceStart = performance.now();
  const maybeYield = async (): Promise<boolean> => {
    if (performance.now() - sliceStart < JS_SLICE_MS) return !o.ctx.abort.aborted;
    await new Promise<void>((r) => setImmediate(r));
    sliceStart = performance.now();
    return !o.ctx.abort.aborted;
  };
  const searchOne = (abs: string): void => {
    const hit = searchFileSync(abs, o);
    o.collector.filesScanned++;
    if (hit) o.collector.addFile(abs, hit.acc, hit.mtime);
    o.report();
  };
  if (o.isFile) {
    searchOne(o.target);
    return;
  }
  const tree = await IgnoreTree.forWalk(o.top, o.target);
  const stack = [o.target];
  while (stack.length) {
    if (!(await maybeYield())) return;
    const dir = stack.pop() as string;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // unreadable directory: skipped, as ripgrep does
    }
    const pending = tree.enter(
      dir,
      entries.map((e) => e.name),
    );
    const chain = Array.isArray(pending) ? pending : await pending;
    const rules = chain.length > 0;
    const subdirs: string[] = [];
    for (const e of entries) {
      if (VCS_DIRS.has(e.name) || e.isSymbolicLink()) continue;
      const isDir = e.isDirectory();
      if (!isDir && !e.isFile()) continue;
      const abs = dir.endsWith(path.sep) ? dir + e.name : dir + path.sep + e.name;
      if (rules && tree.isIgnored(chain, abs, isDir)) continue;
      if (isDir) subdirs.push(abs);
      else if (!o.include || o.include.matches(path.relative(o.target, abs).split(path.sep).join('/'))) {
        if (!(await maybeYield())) return;
        searchOne(abs);
      }
    }
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i]);
  }
}

/** Searches one file; null when it is binary (contains a NUL byte) or unreadable. */
function searchFileSync(abs: string, o: SearchOptions): { acc: FileAccumulator; mtime: number } | null {
  let fd: number;
  try {
    fd = openSync(abs, 'r');
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    const scanner = new LineScanner(o.compiled, o.before, o.after, o.collector.newFile());
    if (st.size <= o.blockBytes) {
      const buf = readFileSync(fd);
      if (buf.indexOf(0) !== -1) return null;
      scanner.block(buf, true);
      return { acc: scanner.acc, mtime: st.mtimeMs };
    }
    // Large file: blocks of whole lines, so memory stays flat.
    let carry: Buffer | undefined;
    const chunk = Buffer.allocUnsafe(o.blockBytes);
    for (;;) {
      const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      let data = chunk.subarray(0, bytesRead);
      if (data.indexOf(0) !== -1) return null;
      if (carry) data = Buffer.concat([carry, data]);
      const lastNl = data.lastIndexOf(10);
      if (lastNl === -1) {
        carry = Buffer.from(data);
        continue;
      }
      scanner.block(data.subarray(0, lastNl + 1), false);
      carry = lastNl + 1 < data.length ? Buffer.from(data.subarray(lastNl + 1)) : undefined;
    }
    if (carry) scanner.block(carry, true);
    return { acc: scanner.acc, mtime: st.mtimeMs };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Finds matching lines block by block, with before/after context carried across blocks. A block
 * is first tested as a whole (one native regex pass); only blocks with a hit are split into lines.
 */
class LineScanner {
  private nextLine = 1;
  private tail: string[] = [];
  private afterUntil = 0;
  private lastEmitted = 0;

  constructor(
    private readonly re: CompiledPattern,
    private readonly before: number,
    private readonly after: number,
    readonly acc: FileAccumulator,
  ) {}

  /** Scans a block of whole lines (the last block may lack its final `\n`). */
  block(buf: Buffer, last: boolean): void {
    if (buf.length === 0) return;
    const text = buf.toString('utf8');
    const pendingAfter = this.afterUntil >= this.nextLine;
    if (!pendingAfter && !this.re.block.test(text)) {
      if (!last) this.skip(buf, text);
      return;
    }
    const lines = text.split('\n');
    if (text.endsWith('\n')) lines.pop();
    const first = this.nextLine;
    for (let i = 0; i < lines.length; i++) {
      const n = first + i;
      const line = lines[i];
      if (this.re.line.test(line)) {
        for (let k = Math.max(this.lastEmitted + 1, n - this.before); k < n; k++) {
          const t = k >= first ? lines[k - first] : this.tail[this.tail.length - (first - k)];
          if (t !== undefined) this.emit(k, t, false);
        }
        this.emit(n, line, true);
        this.afterUntil = n + this.after;
      } else if (n <= this.afterUntil) {
        this.emit(n, line, false);
      }
    }
    this.nextLine = first + lines.length;
    if (this.before) this.tail = [...this.tail, ...lines.slice(-this.before)].slice(-this.before);
  }

  private emit(line: number, text: string, match: boolean): void {
    this.acc.add({ line, text, match });
    this.lastEmitted = line;
  }

  /** A block without hits: count its lines and keep the last few for before-context. */
  private skip(buf: Buffer, text: string): void {
    let count = 0;
    for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) count++;
    if (buf[buf.length - 1] !== 10) count++;
    this.nextLine += count;
    if (this.before) this.tail = lastLines(text, this.before);
  }
}

/** The last `n` lines of a block that ends with `\n`. */
function lastLines(text: string, n: number): string[] {
  let end = text.endsWith('\n') ? text.length - 1 : text.length;
  const out: string[] = [];
  while (out.length < n && end >= 0) {
    const start = text.lastIndexOf('\n', end - 1) + 1;
    out.unshift(text.slice(start, end));
    if (start === 0) break;
    end = start - 1;
  }
  return out;
}

/** The first `maxBytes` bytes of line `lineNo` (1-based) of a file, read in chunks; undefined if gone. */
async function readLinePrefix(abs: string, lineNo: number, maxBytes: number): Promise<string | undefined> {
  let handle;
  try {
    handle = await fs.open(abs, 'r');
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    let line = 1;
    const parts: Buffer[] = [];
    let have = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      let i = 0;
      while (line < lineNo) {
        const nl = buf.indexOf(10, i);
        if (nl === -1 || nl >= bytesRead) {
          i = bytesRead;
          break;
        }
        line++;
        i = nl + 1;
      }
      if (line < lineNo) continue;
      const nl = buf.indexOf(10, i);
      const end = nl === -1 || nl >= bytesRead ? bytesRead : nl;
      const take = Math.min(end - i, maxBytes - have);
      parts.push(Buffer.from(buf.subarray(i, i + take)));
      have += take;
      if (end < bytesRead || have >= maxBytes) break;
    }
    return Buffer.concat(parts).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** Whether the file contains a NUL byte anywhere (ripgrep's binary rule), read in chunks. */
async function containsNul(abs: string): Promise<boolean> {
  const handle = await fs.open(abs, 'r');
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (;;) {
      const { bytesRead } = await handle.read(buf, 0, buf.length, null);
      if (bytesRead === 0) return false;
      if (buf.subarray(0, bytesRead).indexOf(0) !== -1) return true;
    }
  } finally {
    await handle.close();
  }
}
