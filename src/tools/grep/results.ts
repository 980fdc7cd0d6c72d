/**
 * grep's results: bounded per-file accumulation, newest files first, and the text the model reads.
 * Shared by both backends. Must not spawn a process (grep-rg.ts) or walk a tree (grep-js.ts).
 */
import { promises as fs, writeSync, closeSync } from 'node:fs';
import type { Tool } from '../../authoring/tool.js';
import type { Workspace } from '../../workspace/workspace.js';
import type { SavedOutputs } from '../../workspace/saved-outputs.js';
import { MtimeCache, compareNewestFirst, type IncludeMatcher } from '../files/search-common.js';
import type { CompiledPattern } from './pattern.js';

/** Characters kept of one output line; the rest is cut with GREP_LINE_CUT_MARKER. */
export const MAX_LINE_LENGTH = 2000;
/** Appended to a line cut at MAX_LINE_LENGTH. */
export const GREP_LINE_CUT_MARKER = '... (line truncated)';
/**
 * Lines longer than this (bytes) are left out by ripgrep itself, and the few that are shown are
 * read back from the file (its preview mode is ~20% slower on heavy output). 4 bytes per char at
 * most, so any line of up to MAX_LINE_LENGTH chars still comes through whole.
 */
export const RG_MAX_COLUMNS = MAX_LINE_LENGTH * 4;

/**
 * Which search engine ran: ripgrep, the JS search, a backend's own literal grep (`initCtx.backend`),
 * or our regex over the files a backend's readRaw answers.
 */
export type GrepBackend = 'rg' | 'js' | 'backend-literal' | 'backend-regex';

/** grep's metadata. */
export interface GrepMetadata extends Tool.Metadata {
  /** Matching lines found in total (also those not shown). */
  matches: number;
  /** Files with at least one match. */
  files: number;
  /** Matching lines shown. */
  shown: number;
  // No `truncated` key: it would tell the pipeline grep bounds its own output and switch the
  // registry's output cap off, yet 100 shown matches of long lines can pass the cap (shown < matches
  // says the match list was cut).
  backend: GrepBackend;
  /** When the match list was cut: a file with every match (and its context), grouped by file in search order. */
  fullListPath?: string;
  /** Paths left out because the policy does not let grep read them (ctx.readFilter); absent when none. */
  skippedByPolicy?: number;
}

export interface LineRecord {
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
export interface SearchOptions {
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
  /** The policy's filter of what the search finds (ctx.readFilter): files and trees it refuses are left out. */
  filter?: Tool.ReadFilter;
  /** Names never searched below the target (DEFAULT_IGNORES less initCtx.searchIgnored). */
  ignored: ReadonlySet<string>;
}

/** Keeps per file at most `cap` matches (plus their context); drops files that can no longer be shown. */
export class FileAccumulator {
  count = 0;
  records: LineRecord[] = [];
  /** Every record of the file as a shown line, for the full list (when the collector keeps one). */
  readonly all: string[] | undefined;
  private stored = 0;
  private lastStoredMatch = -1;
  private prevLine = -1;

  constructor(
    private readonly cap: number,
    private readonly after: number,
    keepAll = false,
    private readonly withContext = false,
  ) {
    if (keepAll) this.all = [];
  }

  add(rec: LineRecord): void {
    if (this.all) {
      if (this.withContext && this.prevLine !== -1 && rec.line > this.prevLine + 1) this.all.push('  --');
      this.all.push(`  ${rec.line}${rec.match ? ':' : '-'} ${displayLine(rec.text)}`);
      this.prevLine = rec.line;
    }
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
export class Collector {
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
    /** Keeps every match for the file the model is pointed at when the shown list is cut. */
    readonly full?: FullMatchList,
  ) {}

  newFile(): FileAccumulator {
    return new FileAccumulator(this.cap, this.after, this.full !== undefined, this.withContext);
  }

  /** Adds a finished file's hits (`mtime` when the caller already has it). */
  addFile(abs: string, acc: FileAccumulator, mtime?: number): void {
    if (acc.count === 0) return;
    this.totalMatches += acc.count;
    this.fileCount++;
    if (this.full && acc.all) this.full.addFile(abs, acc.all, this.totalMatches > this.cap);
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

/**
 * Every match with its context, grouped by file in the order the search found them, written to a
 * new file in the tenant's output store — but only once there are more than the shown cap (until
 * then the text is held, at most cap matches' worth, and dropped if the search ends under it).
 * Memory stays bounded by one file's matches: each file's lines are written as the file finishes.
 */
export class FullMatchList {
  private pending: string[] = [];
  private fd: number | undefined;
  private file: string | undefined;

  constructor(
    private readonly store: SavedOutputs,
    private readonly display: (abs: string) => string,
  ) {}

  /** One file's lines; `spill` once the matches so far are more than can be shown. */
  addFile(abs: string, lines: readonly string[], spill: boolean): void {
    this.pending.push(`${this.display(abs)}:\n${lines.join('\n')}\n\n`);
    if (spill) this.flush();
  }

  /** The saved file's path when anything was saved (the list was cut); closes it. */
  finish(): string | undefined {
    if (this.fd !== undefined) {
      this.flush();
      closeSync(this.fd);
      this.fd = undefined;
    }
    this.pending = [];
    return this.file;
  }

  /** Drops the file descriptor (the search failed); the partial file stays in the private store. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private flush(): void {
    if (this.fd === undefined) ({ fd: this.fd, file: this.file } = this.store.createSync('grep'));
    if (this.pending.length) writeSync(this.fd, this.pending.join(''));
    this.pending = [];
  }
}

/** The text the model reads: files newest first, at most `collector.cap` matches, a note when cut. */
export async function render(
  collector: Collector,
  ws: Pick<Workspace, 'display'>,
  pattern: string,
  target: string,
  backend: GrepBackend,
): Promise<Tool.Result<GrepMetadata>> {
  const files = collector.finish();
  const total = collector.totalMatches;
  if (total === 0) {
    return {
      title: `grep ${JSON.stringify(pattern)}: no matches`,
      metadata: { matches: 0, files: 0, shown: 0, backend },
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
  const fullListPath = collector.full?.finish();
  const head = truncated
    ? `Found ${total} matches in ${collector.fileCount} files; showing the first ${shown}, newest files first.`
    : `Found ${total} match${total === 1 ? '' : 'es'} in ${collector.fileCount} file${collector.fileCount === 1 ? '' : 's'}.`;
  let output = `${head}\n\n${blocks.join('\n\n')}`;
  if (truncated && fullListPath) {
    output += `\n\n(Results truncated at ${collector.cap} matches. All ${total} matches, grouped by file in the order they were found, are saved at ${fullListPath}: read it with the read tool or search it with grep, or narrow the search with path, include or a more specific pattern.)`;
  } else if (truncated) {
    output += `\n\n(Results truncated at ${collector.cap} matches. Narrow the search with path, include or a more specific pattern.)`;
  }
  const metadata: GrepMetadata = { matches: total, files: collector.fileCount, shown, backend };
  if (truncated && fullListPath) metadata.fullListPath = fullListPath;
  return {
    title: `grep ${JSON.stringify(pattern)}: ${total} match${total === 1 ? '' : 'es'}`,
    metadata,
    output,
  };
}

/** A line as shown: without its `\r`, cut at MAX_LINE_LENGTH characters. */
function displayLine(text: string): string {
  const t = text.endsWith('\r') ? text.slice(0, -1) : text;
  return t.length > MAX_LINE_LENGTH ? t.slice(0, MAX_LINE_LENGTH) + GREP_LINE_CUT_MARKER : t;
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
