/**
 * grep's results: bounded per-file accumulation, newest files first, and the text the model reads.
 * Shared by both backends. Must not spawn a process (grep-rg.ts) or walk a tree (grep-js.ts).
 */
import { promises as fs } from 'node:fs';
import type { Tool } from '../tool.js';
import type { Workspace } from '../workspace.js';
import { MtimeCache, compareNewestFirst, type IncludeMatcher } from './search-common.js';
import type { CompiledPattern } from './grep-pattern.js';

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
}

/** Keeps per file at most `cap` matches (plus their context); drops files that can no longer be shown. */
export class FileAccumulator {
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

/** The text the model reads: files newest first, at most `collector.cap` matches, a note when cut. */
export async function render(
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
