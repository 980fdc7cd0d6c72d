/**
 * grep's ripgrep backend: builds rg's command line, runs it, and reads its output into the collector.
 * Must not shape output (grep-results.ts) or validate patterns (grep-pattern.ts), nor walk a tree (grep-js.ts).
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { IgnoreTree, VCS_DIRS } from '../files/search-common.js';
import { abortedMessage } from '../../authoring/abort.js';
import { ATOMIC_TEMP_GLOB } from '../../workspace/atomic-write.js';
import { RG_MAX_COLUMNS, type FileAccumulator, type SearchOptions } from './results.js';
import { sandboxForCall } from '../../sandbox/index.js';
import { signalGroup } from '../bash/process-group.js';

/** What ripgrep prints instead of a line longer than RG_MAX_COLUMNS. */
const RG_OMITTED_LINE = /^\[Omitted long (?:matching|context) line\]$/;
/** Bytes of ripgrep's stderr kept for error messages. */
const MAX_STDERR = 4096;
const RG_BINARY_WARNING = /^(.*): WARNING: stopped searching binary file/;

/** Searches `o.target` with ripgrep, feeding `o.collector`; rejects with a sentence the model can act on. */
export async function searchWithRg(rg: string, o: SearchOptions): Promise<void> {
  const { args, ignoreFile } = await rgArguments(o);
  try {
    await runRg(rg, args, o);
  } finally {
    if (ignoreFile) await fs.rm(ignoreFile, { force: true });
  }
}

/**
 * rg's command line: our ignore rules (ancestors' ignore files written to a temp file, which the
 * caller removes) and a NUL-separated output format; never the user's rg config.
 */
async function rgArguments(o: SearchOptions): Promise<{ args: string[]; ignoreFile?: string }> {
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
    // Globs match below the searched path, so a skipped directory named as the path is searched.
    for (const d of new Set([...VCS_DIRS, ...o.ignored])) args.push('--glob', `!${d}`);
    // Temp files of unfinished or abandoned atomic writes (see isAtomicTempName).
    args.push('--glob', `!${ATOMIC_TEMP_GLOB}`);
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
  return { args, ignoreFile };
}

/** Runs rg to its end (or the call's abort), streaming stdout through an RgOutputReader. */
async function runRg(rg: string, args: string[], o: SearchOptions): Promise<void> {
  // In the OS sandbox when it is on: read-only, offline, secrets hidden (they read as unreadable files).
  const { runtime, options } = sandboxForCall(o.ctx);
  const contained = await runtime.containReadOnly({ file: rg, args, cwd: o.top, roots: [o.top] }, options);
  const [file, argv] = contained ? [contained.file, contained.args] : [rg, args];
  return new Promise<void>((resolve, reject) => {
    const child = spawn(file, argv, { cwd: o.top, stdio: ['ignore', 'pipe', 'pipe'], detached: !!contained });
    o.ctx.metadata({ metadata: { backend: 'rg', pid: child.pid } });
    const reader = new RgOutputReader(o);
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => reader.chunk(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < MAX_STDERR) stderr += chunk.toString('utf8');
    });
    const onAbort = (): void => {
      // Contained, rg runs in bwrap's own process group: end all of it.
      if (contained && child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      else child.kill('SIGKILL');
    };
    o.ctx.abort.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      o.ctx.abort.removeEventListener('abort', onAbort);
      reject(new Error(`Could not run ripgrep (${rg}): ${err.message}. Install ripgrep or set grepBackend: "js".`));
    });
    child.on('close', (code) => {
      o.ctx.abort.removeEventListener('abort', onAbort);
      reader.end();
      if (o.ctx.abort.aborted) return reject(new Error(abortedMessage('grep')));
      if (code === 0 || code === 1 || (code === 2 && (reader.sawOutput || onlyHidden(stderr)))) return resolve();
      reject(
        new Error(
          `ripgrep could not search for ${JSON.stringify(o.compiled.source)}: ${stderr.trim().slice(0, 1000) || `exit code ${code}`}. Fix the pattern or path and call grep again.`,
        ),
      );
    });
  });
}

/** rg's errors are only files it could not read (secrets the sandbox hides): the search itself worked. */
function onlyHidden(stderr: string): boolean {
  const lines = stderr.trim().split('\n').filter(Boolean);
  return lines.length > 0 && lines.every((l) => /Permission denied/.test(l));
}

/**
 * Reads rg's `path\0N:text` / `path\0N-text` lines into one FileAccumulator per file, handing each
 * finished file to the collector. Drops files rg found binary and anything outside the target.
 */
class RgOutputReader {
  sawOutput = false;
  private current: { path: string; acc: FileAccumulator } | undefined;
  private lastPathBytes: Buffer | undefined;
  private pending: Buffer | undefined;
  private readonly binary = new Set<string>();
  private readonly includeCache = new Map<string, boolean>();
  private readonly dirCache = new Map<string, boolean>();

  constructor(private readonly o: SearchOptions) {}

  /** Feeds a chunk of stdout; a partial last line waits for the next chunk. */
  chunk(chunk: Buffer): void {
    const buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      this.line(buf, start, nl);
      start = nl + 1;
    }
    this.pending = start < buf.length ? buf.subarray(start) : undefined;
  }

  /** rg exited: the last line (if unterminated) and the last file. */
  end(): void {
    if (this.pending) this.line(this.pending, 0, this.pending.length);
    this.flush();
  }

  private line(buf: Buffer, start: number, end: number): void {
    this.sawOutput = true;
    const nul = buf.indexOf(0, start);
    if (nul === -1 || nul >= end) return this.notice(buf.toString('utf8', start, end));
    const file = this.pathOf(buf, start, nul);
    let i = nul + 1;
    let line = 0;
    while (i < end && buf[i] >= 48 && buf[i] <= 57) line = line * 10 + (buf[i++] - 48);
    const sep = buf[i];
    if (sep !== 58 && sep !== 45) return; // not "N:" or "N-": not a line record
    if (this.current?.path !== file) {
      this.flush();
      this.current = { path: file, acc: this.o.collector.newFile() };
    }
    const text = buf.toString('utf8', i + 1, end);
    this.current.acc.add(
      RG_OMITTED_LINE.test(text) ? { line, text, match: sep === 58, omitted: true } : { line, text, match: sep === 58 },
    );
  }

  /** A line without a path: "--" group separators, and warnings such as "binary file" ones. */
  private notice(text: string): void {
    const warn = RG_BINARY_WARNING.exec(text);
    if (!warn) return;
    this.binary.add(warn[1]);
    if (this.current?.path === warn[1]) this.current = undefined;
  }

  /** The path of a line; consecutive lines mostly share a file, so bytes are compared before decoding again. */
  private pathOf(buf: Buffer, start: number, nul: number): string {
    const last = this.lastPathBytes;
    if (
      this.current !== undefined &&
      last !== undefined &&
      nul - start === last.length &&
      buf.compare(last, 0, last.length, start, nul) === 0
    )
      return this.current.path;
    this.lastPathBytes = Buffer.from(buf.subarray(start, nul));
    return buf.toString('utf8', start, nul);
  }

  private flush(): void {
    const { current, o } = this;
    if (!current) return;
    const abs = path.resolve(o.top, current.path);
    if (!this.binary.has(current.path) && this.wanted(abs)) o.collector.addFile(abs, current.acc);
    this.current = undefined;
    o.report();
  }

  /** Whether the policy refuses the directory `dir` (under the target) or one above it; cached per directory. */
  private refusedDir(dir: string): boolean {
    const { o } = this;
    if (dir === o.target || !dir.startsWith(o.target + path.sep)) return false;
    let refused = this.dirCache.get(dir);
    if (refused === undefined) {
      refused = this.refusedDir(path.dirname(dir)) || o.filter!.skips(dir, true);
      this.dirCache.set(dir, refused);
    }
    return refused;
  }

  private wanted(abs: string): boolean {
    const { o } = this;
    if (o.isFile) return abs === o.target;
    if (!abs.startsWith(o.target + path.sep)) return false; // never report anything rg should not have walked into
    let ok = this.includeCache.get(abs);
    if (ok === undefined) {
      ok = !o.include || o.include.matches(path.relative(o.target, abs).split(path.sep).join('/'));
      // rg read it; the policy decides whether the model sees it (judged by its real path, and by
      // the directories it is in, as the JS walk judges them before entering).
      if (ok && o.filter && (this.refusedDir(path.dirname(abs)) || o.filter.skips(abs, false))) ok = false;
      this.includeCache.set(abs, ok);
    }
    return ok;
  }
}
