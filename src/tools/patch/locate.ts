/**
 * Where an Update File section's hunks go in a file's text, and the text after them. Each hunk's
 * `@@` anchors are found in order, then its old lines (context and removed) after them, by a
 * cascade that stops at the first level that finds them: exact, then ignoring trailing whitespace,
 * then ignoring the whitespace around each line, then with Unicode punctuation look-alikes (dashes,
 * quotes, odd spaces) folded to ASCII. Context lines keep the file's own text; only '+' lines are
 * the patch's.
 * Must not read or write files, nor parse patches (parse.ts): text and hunks in, text or failures out.
 */
import { closestCandidate, foldUnicode } from '../files/edit-match.js';
import type { PatchHunk } from './parse.js';

/** How a hunk's lines were found, loosest last. */
export type LocateLevel = 'exact' | 'trailing-whitespace' | 'surrounding-whitespace' | 'unicode-punctuation';

const LEVELS: ReadonlyArray<[LocateLevel, (s: string) => string]> = [
  ['exact', (s) => s],
  ['trailing-whitespace', (s) => s.trimEnd()],
  ['surrounding-whitespace', (s) => s.trim()],
  ['unicode-punctuation', (s) => foldUnicode(s).trim()],
];

/** Lines of the nearest place quoted when a hunk is not found. */
export const MAX_NEAREST_LINES = 12;
/** Lines of a failed hunk quoted in its message (its header, then its first old lines). */
export const MAX_QUOTED_HUNK_LINES = 4;

/** One hunk that could not be placed, said so the model can fix it. */
export interface HunkFailure {
  hunk: PatchHunk;
  /** 1-based index of the hunk in its file section. */
  index: number;
  message: string;
}

/** The outcome for one file: its new text, or why some hunks did not fit. */
export type LocateResult = { ok: true; text: string; levels: LocateLevel[] } | { ok: false; failures: HunkFailure[] };

/**
 * Applies `hunks` to `text` (LF line ends, no BOM) in memory. `finalNewline` of the result is the
 * original's: a file without one keeps having none. Every hunk is tried, so one answer lists each
 * failure.
 */
export function applyHunks(text: string, hunks: readonly PatchHunk[]): LocateResult {
  const hadFinalNewline = text.endsWith('\n');
  const lines = text === '' ? [] : (hadFinalNewline ? text.slice(0, -1) : text).split('\n');
  const file = new Normalised(lines);
  const edits: Array<{ start: number; end: number; out: string[] }> = [];
  const failures: HunkFailure[] = [];
  const levels: LocateLevel[] = [];
  let cursor = 0;
  hunks.forEach((hunk, k) => {
    const placed = placeHunk(file, hunk, cursor, edits);
    if ('message' in placed) {
      failures.push({ hunk, index: k + 1, message: placed.message });
      return;
    }
    edits.push(placed.edit);
    levels.push(placed.level);
    cursor = placed.edit.end;
  });
  if (failures.length) return { ok: false, failures };
  edits.sort((a, b) => a.start - b.start);
  const out: string[] = [];
  let pos = 0;
  for (const e of edits) {
    for (; pos < e.start; pos++) out.push(lines[pos]);
    out.push(...e.out);
    pos = e.end;
  }
  for (; pos < lines.length; pos++) out.push(lines[pos]);
  const body = out.join('\n');
  return { ok: true, text: out.length && (hadFinalNewline || text === '') ? `${body}\n` : body, levels };
}

type Placed = { edit: { start: number; end: number; out: string[] }; level: LocateLevel } | { message: string };

/** Finds one hunk at or after `cursor` (or, failing that, anywhere it overlaps no earlier hunk). */
function placeHunk(
  file: Normalised,
  hunk: PatchHunk,
  cursor: number,
  taken: ReadonlyArray<{ start: number; end: number }>,
): Placed {
  const lines = file.lines;
  let from = cursor;
  for (const anchor of hunk.anchors) {
    const at = findAnchor(file, anchor, from) ?? (from > 0 ? findAnchor(file, anchor, 0) : undefined);
    if (at === undefined) return { message: anchorMissing(lines, anchor) };
    from = at + 1;
  }
  let old = hunk.lines.filter((l) => l.kind !== '+').map((l) => l.text);
  let body = hunk.lines;
  if (old.length === 0) {
    // Only additions: right after the anchor, or at the end of the file without one.
    const at = hunk.anchors.length ? from : lines.length;
    return { edit: { start: at, end: at, out: body.map((l) => l.text) }, level: 'exact' };
  }
  const free = (start: number) =>
    taken.every((t) => start + old.length <= t.start || start >= t.end || t.start === t.end);
  let found = seek(file, old, from, hunk.endOfFile, free);
  if (!found && old[old.length - 1] === '' && old.length > 1) {
    // A last empty context line stands for the file's final newline, which is not a line here.
    const lastOld = body.map((l) => l.kind !== '+').lastIndexOf(true);
    body = body.filter((_, i) => i !== lastOld);
    old = old.slice(0, -1);
    found = seek(file, old, from, hunk.endOfFile, free);
  }
  if (!found && from > 0 && hunk.anchors.length === 0) found = seek(file, old, 0, hunk.endOfFile, free);
  if (!found) return { message: linesMissing(lines, old, hunk.endOfFile) };
  if (found.also !== undefined) {
    return {
      message: `its ${old.length === 1 ? 'line to match' : `${old.length} lines to match`} (context and removed) fit at line ${found.start + 1} and again at line ${found.also + 1}${hunk.anchors.length ? ' after its anchor' : ''}. Add context lines, or an '@@' line naming the function or class it is in, so that only one place fits.`,
    };
  }
  const out: string[] = [];
  let fileLine = found.start;
  for (const l of body) {
    if (l.kind === '+') out.push(l.text);
    else if (l.kind === ' ') out.push(lines[fileLine++]);
    else fileLine++;
  }
  return { edit: { start: found.start, end: found.start + old.length, out }, level: found.level };
}

/** `lines` under each level's normalisation, computed on first use (one file, many hunks). */
class Normalised {
  private readonly cache: Array<string[] | undefined> = [];
  constructor(readonly lines: string[]) {}
  at(level: number): string[] {
    if (level === 0) return this.lines;
    return (this.cache[level] ??= this.lines.map(LEVELS[level][1]));
  }
}

/**
 * The window at or after `from` (only the last one, for an end-of-file hunk) equal to `old`, at the
 * strictest level that has one; `also` is a second window that matches as well (the hunk is then ambiguous).
 */
function seek(
  file: Normalised,
  old: string[],
  from: number,
  endOfFile: boolean,
  free: (start: number) => boolean,
): { start: number; level: LocateLevel; also?: number } | undefined {
  const last = file.lines.length - old.length;
  if (last < 0) return undefined;
  for (let level = 0; level < LEVELS.length; level++) {
    const lines = file.at(level);
    const want = old.map(LEVELS[level][1]);
    const matches = (start: number) => {
      for (let j = 0; j < want.length; j++) if (lines[start + j] !== want[j]) return false;
      return free(start);
    };
    for (let start = endOfFile ? last : from; start <= last; start++) {
      if (!matches(start)) continue;
      for (let other = start + 1; other <= last && !endOfFile; other++)
        if (matches(other)) return { start, level: LEVELS[level][0], also: other };
      return { start, level: LEVELS[level][0] };
    }
  }
  return undefined;
}

/** The line an `@@` anchor names: by the cascade, then as a part of a line (`@@ class Foo` for `export class Foo {`). */
function findAnchor(file: Normalised, anchor: string, from: number): number | undefined {
  for (let level = 0; level < LEVELS.length; level++) {
    const lines = file.at(level);
    const want = LEVELS[level][1](anchor);
    for (let i = from; i < lines.length; i++) if (lines[i] === want) return i;
  }
  const lines = file.at(LEVELS.length - 1);
  const want = foldUnicode(anchor).trim();
  for (let i = from; i < lines.length; i++) if (lines[i].includes(want)) return i;
  return undefined;
}

function anchorMissing(lines: string[], anchor: string): string {
  return `its anchor ${JSON.stringify(anchor)} was not found (also not with whitespace or Unicode punctuation ignored, nor as part of a line).${nearest(lines, anchor)}`;
}

function linesMissing(lines: string[], old: string[], endOfFile: boolean): string {
  const where = endOfFile ? ' at the end of the file (the hunk ends with *** End of File)' : '';
  const what =
    old.length === 1
      ? 'its line to match (context or removed) was'
      : `its ${old.length} lines to match (context and removed) were`;
  return `${what} not found${where} (also not with trailing whitespace, surrounding whitespace or Unicode punctuation ignored).${nearest(lines, old.join('\n'))}`;
}

/** " The nearest lines are 40-43:\n40: ..." (edit's closest candidate), or a hint to re-read. */
function nearest(lines: string[], wanted: string): string {
  const c = closestCandidate(lines.join('\n'), wanted);
  if (!c) return ' Nothing in the file resembles them; read the file again.';
  const shown = c.lines
    .slice(0, MAX_NEAREST_LINES)
    .map((l, i) => `${c.startLine + i}: ${l.length > 200 ? `${l.slice(0, 200)}...` : l}`);
  const more = c.lines.length > MAX_NEAREST_LINES ? '\n...' : '';
  const at = c.startLine === c.endLine ? `line is ${c.startLine}` : `lines are ${c.startLine}-${c.endLine}`;
  return ` The nearest ${at}:\n${shown.join('\n')}${more}`;
}

/** A file's text as hunks see it: BOM off, a consistently CRLF file as LF; and how to put them back. */
export interface FileText {
  bom: string;
  crlf: boolean;
  /** LF text without the BOM. */
  content: string;
}

/** Splits the BOM and CRLF line ends off `raw` (the same rules as edit: a mixed file stays as it is). */
export function fileText(raw: string): FileText {
  const bom = raw.charCodeAt(0) === 0xfeff ? '\uFEFF' : '';
  const body = bom ? raw.slice(1) : raw;
  const crlf = body.includes('\r\n') && !/(^|[^\r])\n/.test(body);
  return { bom, crlf, content: crlf ? body.replace(/\r\n/g, '\n') : body };
}

/** `content` (LF) back in the file's BOM and line ends. */
export function restoreText(t: Omit<FileText, 'content'>, content: string): string {
  return t.bom + (t.crlf ? content.replace(/\n/g, '\r\n') : content);
}

/** One failed hunk as the model reads it: the file, the hunk's header and first lines, and why. */
export function describeFailure(shown: string, f: HunkFailure): string {
  const quoted = [
    ...(f.hunk.header ? [f.hunk.header] : []),
    ...f.hunk.lines.filter((l) => l.kind !== '+').map((l) => `${l.kind}${l.text}`),
  ]
    .slice(0, MAX_QUOTED_HUNK_LINES)
    .map((l) => JSON.stringify(l.length > 100 ? `${l.slice(0, 100)}...` : l));
  return `${shown}, hunk ${f.index} (patch line ${f.hunk.line}: ${quoted.join(', ')}): ${f.message}`;
}
