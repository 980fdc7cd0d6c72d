/**
 * Unified diffs of file changes, built from the places that changed rather than from a whole-file
 * comparison: edit knows its replaced ranges, write finds the one changed region with a chunked
 * prefix/suffix compare. Only those regions (plus context lines) go to the `diff` package, so one
 * changed line in a 10 MB file costs a newline count up to it, not a diff of 10 MB.
 * Must not read or write files: write.ts and edit.ts pass the text they already hold.
 */
import type * as Diff from 'diff';
import type { StructuredPatchHunk } from 'diff';
import { onFirstUse } from '../../platform/lazy.js';

/** jsdiff is loaded on the first diff, not when the package is imported. */
const diffLib = onFirstUse<typeof Diff>('diff');

/** Lines of context around each change in a unified diff. */
export const DIFF_CONTEXT_LINES = 3;

/** A unified diff of two versions of a file and its +/- line counts. */
export interface DiffSummary {
  diff: string;
  additions: number;
  deletions: number;
}

/** A character range of the old text and the text that replaces it. */
export interface Replacement {
  start: number;
  end: number;
  replacement: string;
}

/** The diff of `before` -> `after`, whatever changed between them. */
export function unifiedDiff(name: string, before: string, after: string): DiffSummary {
  const head = commonPrefix(before, after);
  const tail = commonSuffix(before, after, head);
  if (head === before.length && head === after.length) return diffOfReplacements(name, before, []).summary;
  return diffOfReplacements(name, before, [
    { start: head, end: before.length - tail, replacement: after.slice(head, after.length - tail) },
  ]).summary;
}

/**
 * The diff of applying `ranges` (sorted, not overlapping) to `content`, and the 1-based line on
 * which each range starts. Each range is widened to whole lines plus DIFF_CONTEXT_LINES on both
 * sides; widened regions that touch are merged into one, and each region is diffed on its own.
 * `linesBefore`: lines of the file before `content` when it is a window of a larger file.
 */
export function diffOfReplacements(
  name: string,
  content: string,
  ranges: readonly Replacement[],
  linesBefore = 0,
): { summary: DiffSummary; startLines: number[] } {
  const lines = new LineCounter(content, linesBefore);
  const startLines: number[] = [];
  const hunks: StructuredPatchHunk[] = [];
  let additions = 0;
  let deletions = 0;
  let shift = 0; // new-file lines minus old-file lines so far
  for (let i = 0; i < ranges.length;) {
    // A region: the first range's lines with context, grown while the next range's context touches it.
    const { from } = contextWindow(content, ranges[i].start, ranges[i].end, DIFF_CONTEXT_LINES);
    const firstLine = lines.lineOf(from) - 1; // ascending calls: first the region, then its ranges
    let to = from;
    let j = i;
    for (; j < ranges.length; j++) {
      const w = contextWindow(content, ranges[j].start, ranges[j].end, DIFF_CONTEXT_LINES);
      if (j > i && w.from > to) break;
      startLines.push(lines.lineOf(ranges[j].start));
      to = w.to;
    }
    let after = '';
    let pos = from;
    for (let k = i; k < j; k++) {
      after += content.slice(pos, ranges[k].start) + ranges[k].replacement;
      pos = ranges[k].end;
    }
    after += content.slice(pos, to);
    const before = content.slice(from, to);
    const patch = diffLib().structuredPatch(name, name, before, after, '', '', { context: DIFF_CONTEXT_LINES });
    for (const h of patch.hunks) {
      h.oldStart += firstLine;
      h.newStart += firstLine + shift;
      for (const l of h.lines) {
        if (l[0] === '+') additions++;
        else if (l[0] === '-') deletions++;
      }
      hunks.push(h);
    }
    shift += countNewlines(after) - countNewlines(before);
    i = j;
  }
  const diff = diffLib().formatPatch({ oldFileName: name, newFileName: name, oldHeader: '', newHeader: '', hunks });
  return { summary: { diff, additions, deletions }, startLines };
}

/** 1-based line numbers of ascending offsets, counting newlines once from the start. */
class LineCounter {
  private pos = 0;
  private line: number;
  constructor(
    private readonly s: string,
    private readonly linesBefore: number,
  ) {
    this.line = linesBefore + 1;
  }
  lineOf(offset: number): number {
    if (offset < this.pos) {
      this.pos = 0;
      this.line = this.linesBefore + 1;
    }
    for (let i = this.s.indexOf('\n', this.pos); i !== -1 && i < offset; i = this.s.indexOf('\n', i + 1)) this.line++;
    this.pos = offset;
    return this.line;
  }
}

/** Text searched for line breaks: a string or the bytes of a file (both index the same way). */
type Text = string | Uint8Array;
type Searchable = {
  length: number;
  indexOf(v: string | number, from: number): number;
  lastIndexOf(v: string | number, from: number): number;
};

/**
 * The whole lines holding [start, end] plus `context` lines on each side, as offsets [from, to)
 * into `text` (characters of a string, bytes of a Buffer).
 */
export function contextWindow(text: Text, start: number, end: number, context: number): { from: number; to: number } {
  const t = text as unknown as Searchable;
  const nl = typeof text === 'string' ? '\n' : 10;
  // The start of the line holding `start`, then `context` lines further back.
  let from = start === 0 ? 0 : t.lastIndexOf(nl, start - 1) + 1;
  for (let k = 0; k < context && from > 0; k++) from = from < 2 ? 0 : t.lastIndexOf(nl, from - 2) + 1;
  // Just past the newline ending the line holding `end`, then `context` lines further on.
  let to = end;
  for (let k = 0; k <= context && to < t.length; k++) {
    const i = t.indexOf(nl, to);
    to = i === -1 ? t.length : i + 1;
  }
  return { from, to };
}

function countNewlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/** Characters compared per step of the prefix/suffix search (string equality of slices is a memcmp). */
const COMPARE_CHUNK = 4096;

function commonPrefix(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  let i = 0;
  while (i + COMPARE_CHUNK <= max && a.slice(i, i + COMPARE_CHUNK) === b.slice(i, i + COMPARE_CHUNK))
    i += COMPARE_CHUNK;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** Length of the common suffix that does not reach into the first `head` characters of either. */
function commonSuffix(a: string, b: string, head: number): number {
  const max = Math.min(a.length, b.length) - head;
  let n = 0;
  while (
    n + COMPARE_CHUNK <= max &&
    a.slice(a.length - n - COMPARE_CHUNK, a.length - n) === b.slice(b.length - n - COMPARE_CHUNK, b.length - n)
  )
    n += COMPARE_CHUNK;
  while (n < max && a.charCodeAt(a.length - 1 - n) === b.charCodeAt(b.length - 1 - n)) n++;
  return n;
}
