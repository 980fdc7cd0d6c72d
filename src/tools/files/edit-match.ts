/**
 * edit's matcher cascade: where does `oldString` occur in a file, exactly or tolerantly?
 *
 * Each matcher is tried in order and the first that finds anything wins, so a tolerant matcher
 * never overrides an exact hit. Everything is linear-ish in the file size: lines are split and
 * normalised once per matcher, candidates are found by comparing the block's first line, and only
 * those windows are checked further (10 MB files match in tens of milliseconds).
 * Must not read or write files: strings in, match ranges out.
 * Over 400 lines: the matcher cascade is one ordered list, read top to bottom.
 */
import { levenshteinRatio } from '../../text/similarity.js';

/** One place to change: a character range of the content and what replaces it. */
export interface MatchRange {
  start: number;
  end: number;
  replacement: string;
}

/** What a matcher found. */
export interface MatchResult {
  /** The matcher's name, reported to the model when it was not `exact`. */
  matcher: MatcherName;
  ranges: MatchRange[];
  /** For `anchored-block`: the similarity of the chosen block (0..1). */
  score?: number;
}

export type MatcherName =
  | 'exact'
  | 'trailing-whitespace'
  | 'indentation-flexible'
  | 'whitespace-normalised'
  | 'escape-normalised'
  | 'unicode-normalised'
  | 'anchored-block';

/** Minimum middle-line similarity for the first/last-line anchored block matcher. */
export const ANCHORED_MIN_SIMILARITY = 0.5;
/** Two anchored candidates closer than this in score are ambiguous. */
export const ANCHORED_AMBIGUITY_MARGIN = 0.1;
/** Anchored candidates examined at most (guards against a first line like `}` occurring everywhere). */
export const ANCHORED_MAX_CANDIDATES = 500;

/** Thrown when the anchored matcher finds several equally good blocks. */
export class AmbiguousBlockError extends Error {
  constructor(readonly startLines: number[]) {
    super(`several blocks match equally well (starting at lines ${startLines.join(', ')})`);
  }
}

/** A file split into lines once, with each line's start offset. */
class Lines {
  readonly lines: string[];
  readonly starts: number[];
  constructor(readonly content: string) {
    this.lines = content.split('\n');
    this.starts = new Array<number>(this.lines.length);
    let pos = 0;
    for (let i = 0; i < this.lines.length; i++) {
      this.starts[i] = pos;
      pos += this.lines[i].length + 1;
    }
  }
  /** The 1-based line number holding character offset `pos`. */
  lineAt(pos: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }
  endOf(i: number): number {
    return this.starts[i] + this.lines[i].length;
  }
}

/**
 * Finds `oldString` in `content` with the first matcher of the cascade that finds anything.
 * Returns undefined when none does. `content` and both strings use `\n` line ends.
 */
export function findMatches(content: string, oldString: string, newString: string): MatchResult | undefined {
  const exact = exactRanges(content, oldString, newString);
  if (exact.length) return { matcher: 'exact', ranges: exact };

  const file = new Lines(content);
  const block = splitBlock(oldString);
  if (block.lines.length === 0) return undefined;

  const tries: Array<[MatcherName, () => MatchRange[]]> = [
    ['trailing-whitespace', () => lineRanges(file, block, newString, (s) => s.trimEnd(), false)],
    ['indentation-flexible', () => lineRanges(file, block, newString, (s) => s.trim(), true)],
    [
      'whitespace-normalised',
      () => {
        const r = lineRanges(file, block, newString, collapse, false, true);
        return r.length ? r : inlineWhitespaceRanges(content, oldString, newString);
      },
    ],
    [
      'escape-normalised',
      () => {
        const old2 = unescapeString(oldString);
        if (old2 === oldString) return [];
        const new2 = unescapeString(newString);
        const r = exactRanges(content, old2, new2);
        return r.length ? r : lineRanges(file, splitBlock(old2), new2, (s) => s.trimEnd(), false);
      },
    ],
    [
      'unicode-normalised',
      () => {
        const folded = foldUnicode(content);
        const oldFolded = foldUnicode(oldString);
        if (folded === content && oldFolded === oldString) return [];
        // foldUnicode maps one character to one, so offsets in the folded text are offsets in content.
        const r = exactRanges(folded, oldFolded, newString);
        return r.length ? r : lineRanges(new Lines(folded), splitBlock(oldFolded), newString, collapse, false, true);
      },
    ],
  ];
  for (const [matcher, run] of tries) {
    const ranges = run();
    if (ranges.length) return { matcher, ranges };
  }
  const anchored = anchoredBlock(file, block, newString);
  return anchored ? { matcher: 'anchored-block', ranges: [anchored.range], score: anchored.score } : undefined;
}

/** The 1-based line numbers where each range starts. */
export function rangeLines(content: string, ranges: MatchRange[]): number[] {
  // One newline count up to the last range, not a split of the whole file.
  const order = ranges.map((r, i) => i).sort((a, b) => ranges[a].start - ranges[b].start);
  const out = new Array<number>(ranges.length);
  let line = 1;
  let nl = content.indexOf('\n');
  for (const i of order) {
    while (nl !== -1 && nl < ranges[i].start) {
      line++;
      nl = content.indexOf('\n', nl + 1);
    }
    out[i] = line;
  }
  return out;
}

/** The block of the file most like `oldString`: used to show the model what it probably meant. */
export function closestCandidate(
  content: string,
  oldString: string,
): { startLine: number; endLine: number; lines: string[] } | undefined {
  const file = new Lines(content);
  const block = splitBlock(foldUnicode(oldString));
  const k = block.lines.length;
  if (k === 0) return undefined;
  // Vote: each distinctive old line found in the file votes for the window it implies.
  const wanted = new Map<string, number[]>();
  block.lines.forEach((l, j) => {
    const t = collapse(l);
    if (t.length >= 4) wanted.set(t, [...(wanted.get(t) ?? []), j].slice(0, 5));
  });
  const votes = new Map<number, number>();
  for (let i = 0; i < file.lines.length; i++) {
    const js = wanted.get(collapse(foldUnicode(file.lines[i])));
    if (js) for (const j of js) if (i - j >= 0) votes.set(i - j, (votes.get(i - j) ?? 0) + 1);
  }
  let best = -1;
  let bestVotes = 0;
  for (const [start, v] of votes)
    if (v > bestVotes || (v === bestVotes && start < best)) [best, bestVotes] = [start, v];
  if (best < 0) {
    // No line matches even loosely: fall back to the line sharing most words with the block.
    const words = new Set((foldUnicode(oldString).match(/[A-Za-z_$][\w$]{2,}/g) ?? []).map((w) => w.toLowerCase()));
    if (words.size === 0) return undefined;
    let bestHits = 0;
    for (let i = 0; i < file.lines.length; i++) {
      const found = file.lines[i].match(/[A-Za-z_$][\w$]{2,}/g);
      if (!found) continue;
      let hits = 0;
      for (const w of new Set(found.map((x) => x.toLowerCase()))) if (words.has(w)) hits++;
      if (hits > bestHits) [best, bestHits] = [i, hits];
    }
    if (best < 0) return undefined;
  }
  const end = Math.min(file.lines.length, best + Math.max(k, 1));
  return { startLine: best + 1, endLine: end, lines: file.lines.slice(best, end) };
}

// ---------------------------------------------------------------------------------------------

interface Block {
  /** The block's lines, without a trailing empty line from a final newline. */
  lines: string[];
  /** The old string ended with a newline. */
  trailingNewline: boolean;
}

function splitBlock(s: string): Block {
  const lines = s.split('\n');
  const trailingNewline = lines.length > 1 && lines[lines.length - 1] === '';
  if (trailingNewline) lines.pop();
  // Blank lines around the block carry no information for tolerant matching.
  while (lines.length && lines[0].trim() === '') lines.shift();
  while (lines.length && lines[lines.length - 1].trim() === '') lines.pop();
  return { lines, trailingNewline };
}

function exactRanges(content: string, oldString: string, replacement: string): MatchRange[] {
  if (!oldString) return [];
  const out: MatchRange[] = [];
  for (let at = content.indexOf(oldString); at !== -1; at = content.indexOf(oldString, at + oldString.length)) {
    out.push({ start: at, end: at + oldString.length, replacement });
  }
  return out;
}

/**
 * Whole-line matches of `block` whose lines equal the file's after `norm`. With
 * `checkIndent`, the lines' indentation must differ from the block's by one constant amount
 * (the block was copied at another nesting level); newString is then re-indented by that amount.
 */
function lineRanges(
  file: Lines,
  block: Block,
  newString: string,
  norm: (s: string) => string,
  checkIndent: boolean,
  reindent = checkIndent,
): MatchRange[] {
  const k = block.lines.length;
  if (k === 0) return [];
  const want = block.lines.map(norm);
  const out: MatchRange[] = [];
  const n = file.lines.length;
  for (let i = 0; i + k <= n; i++) {
    if (norm(file.lines[i]) !== want[0]) continue;
    let ok = true;
    for (let j = 1; j < k && ok; j++) ok = norm(file.lines[i + j]) === want[j];
    if (!ok || (checkIndent && !sameRelativeIndent(file.lines.slice(i, i + k), block.lines))) continue;
    let replacement = newString;
    if (block.trailingNewline && replacement.endsWith('\n')) replacement = replacement.slice(0, -1);
    if (reindent) replacement = reindentText(replacement, block.lines, file.lines.slice(i, i + k));
    let end = file.endOf(i + k - 1);
    // Deleting whole lines: take their newline too, so no blank line is left behind.
    if (replacement === '' && block.trailingNewline && i + k < n) end += 1;
    out.push({ start: file.starts[i], end, replacement });
    i += k - 1;
  }
  return out;
}

/** A one-line old string matched inside lines, with any run of whitespace standing for any other. */
function inlineWhitespaceRanges(content: string, oldString: string, newString: string): MatchRange[] {
  const tokens = oldString.trim().split(/\s+/).filter(Boolean);
  if (tokens.length < 2 || oldString.includes('\n')) return [];
  const re = new RegExp(tokens.map(escapeRegExp).join('[ \\t]+'), 'g');
  const out: MatchRange[] = [];
  for (const m of content.matchAll(re))
    out.push({
      start: m.index,
      end: m.index + m[0].length,
      replacement: newString.trim() === newString ? newString : newString.trim(),
    });
  return out;
}

function indentWidth(line: string): number {
  let w = 0;
  for (const ch of line) {
    if (ch === ' ') w += 1;
    else if (ch === '\t') w += 4;
    else break;
  }
  return w;
}

function leadingWhitespace(line: string): string {
  return /^[ \t]*/.exec(line)![0];
}

function sameRelativeIndent(fileLines: string[], blockLines: string[]): boolean {
  let delta: number | undefined;
  for (let j = 0; j < blockLines.length; j++) {
    if (blockLines[j].trim() === '') continue;
    const d = indentWidth(fileLines[j]) - indentWidth(blockLines[j]);
    if (delta === undefined) delta = d;
    else if (d !== delta) return false;
  }
  return true;
}

/** Moves newString's lines from the block's indentation to the file's. */
function reindentText(text: string, blockLines: string[], fileLines: string[]): string {
  const j = blockLines.findIndex((l) => l.trim() !== '');
  if (j < 0) return text;
  const from = leadingWhitespace(blockLines[j]);
  const to = leadingWhitespace(fileLines[j]);
  if (from === to) return text;
  return text
    .split('\n')
    .map((l) => {
      if (l.trim() === '') return l;
      if (from && l.startsWith(from)) return to + l.slice(from.length);
      if (!from) return to + l;
      return l;
    })
    .join('\n');
}

function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** Undoes one level of string escaping, as models produce when they escape code twice. */
function unescapeString(s: string): string {
  return s.replace(/\\(n|t|r|"|'|`|\\|\$)/g, (_, c: string) => {
    switch (c) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      default:
        return c;
    }
  });
}

const UNICODE_FOLD: Record<string, string> = {
  '\u00A0': ' ',
  '\u2007': ' ',
  '\u202F': ' ',
  '\u2002': ' ',
  '\u2003': ' ',
  '\u2004': ' ',
  '\u2005': ' ',
  '\u2006': ' ',
  '\u2008': ' ',
  '\u2009': ' ',
  '\u200A': ' ',
  '\u205F': ' ',
  '\u3000': ' ',
  '\u2018': "'",
  '\u2019': "'",
  '\u201A': "'",
  '\u201B': "'",
  '\u2032': "'",
  '\u201C': '"',
  '\u201D': '"',
  '\u201E': '"',
  '\u201F': '"',
  '\u2033': '"',
  '\u2010': '-',
  '\u2011': '-',
  '\u2012': '-',
  '\u2013': '-',
  '\u2014': '-',
  '\u2015': '-',
  '\u2212': '-',
};
const UNICODE_FOLD_RE = new RegExp(`[${Object.keys(UNICODE_FOLD).join('')}]`, 'g');

/** NBSP and other odd spaces to a space, smart quotes to ASCII quotes, dashes to `-` (one char to one). */
export function foldUnicode(s: string): string {
  return s.replace(UNICODE_FOLD_RE, (c) => UNICODE_FOLD[c]);
}

/** First/last-line anchored block of about the same length, chosen by middle-line similarity. */
function anchoredBlock(file: Lines, block: Block, newString: string): { range: MatchRange; score: number } | undefined {
  const k = block.lines.length;
  if (k < 3) return undefined;
  const first = collapse(foldUnicode(block.lines[0]));
  const last = collapse(foldUnicode(block.lines[k - 1]));
  const middle = block.lines.slice(1, -1).map((l) => collapse(foldUnicode(l)));
  const slack = Math.max(2, Math.floor(k / 4));
  const scored: Array<{ i: number; j: number; score: number }> = [];
  for (let i = 0; i < file.lines.length && scored.length < ANCHORED_MAX_CANDIDATES; i++) {
    if (collapse(foldUnicode(file.lines[i])) !== first) continue;
    const lo = i + Math.max(1, k - 1 - slack);
    const hi = Math.min(file.lines.length - 1, i + k - 1 + slack);
    for (let j = lo; j <= hi; j++) {
      if (collapse(foldUnicode(file.lines[j])) !== last) continue;
      const mid = file.lines.slice(i + 1, j).map((l) => collapse(foldUnicode(l)));
      scored.push({ i, j, score: blockSimilarity(middle, mid) });
      break;
    }
  }
  if (!scored.length) return undefined;
  scored.sort((a, b) => b.score - a.score);
  const best = scored[0];
  if (best.score < ANCHORED_MIN_SIMILARITY) return undefined;
  const rivals = scored.filter(
    (s) => s.score >= ANCHORED_MIN_SIMILARITY && best.score - s.score < ANCHORED_AMBIGUITY_MARGIN,
  );
  if (rivals.length > 1) throw new AmbiguousBlockError(rivals.map((r) => r.i + 1).sort((a, b) => a - b));
  let replacement = newString;
  if (block.trailingNewline && replacement.endsWith('\n')) replacement = replacement.slice(0, -1);
  replacement = reindentText(replacement, block.lines, file.lines.slice(best.i, best.j + 1));
  return { range: { start: file.starts[best.i], end: file.endOf(best.j), replacement }, score: best.score };
}

/** 0..1: line-by-line similarity of two blocks (aligned when equally long, else best pairing). */
function blockSimilarity(a: string[], b: string[]): number {
  if (a.length === 0 && b.length === 0) return 1;
  if (a.length === 0 || b.length === 0) return 0;
  let total = 0;
  if (a.length === b.length) {
    for (let x = 0; x < a.length; x++) total += lineSimilarity(a[x], b[x]);
    return total / a.length;
  }
  for (const line of a) {
    let best = 0;
    for (const other of b) best = Math.max(best, lineSimilarity(line, other));
    total += best;
  }
  return total / Math.max(a.length, b.length);
}

/** 0..1 from the Levenshtein distance of the first 200 characters. */
function lineSimilarity(a: string, b: string): number {
  return levenshteinRatio(a, b, 200);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
