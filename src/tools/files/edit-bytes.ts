/**
 * edit's fast path for the common case, an exact match: the file stays bytes. The match is a
 * byte search, the new file is the old bytes around the replaced ranges (never copied into one
 * buffer), and only the lines around the change are decoded for the diff, so a one-line edit of a
 * 10 MB file neither decodes nor re-encodes 10 MB (and bytes outside the match are kept exactly,
 * whatever they are).
 * Anything else (no exact match, an ambiguous one, CRLF line breaks to translate) returns
 * undefined and goes through the string path.
 * Must not decide matching policy: edit.ts picks this path only for exact matches.
 */
import { DIFF_CONTEXT_LINES, contextWindow, diffOfReplacements, type DiffSummary, type Replacement } from './diff.js';

/** Largest stretch of the file (first match to last, plus context lines) decoded for the diff. */
export const BYTE_EDIT_MAX_WINDOW = 1024 * 1024;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The result of an exact edit made on bytes. */
export interface ByteEdit {
  /**
   * The new file in order: views on the old bytes around each match, and the replacement's bytes
   * (not joined: atomicWriteFile writes them as they are, undo fingerprints them lazily).
   */
  parts: Buffer[];
  diff: DiffSummary;
  replacements: number;
  /** 1-based line of the first replacement. */
  firstLine: number;
}

/** Replaces `oldString` by `newString` in the bytes of `file`, or says (undefined) to take the string path. */
export function exactByteEdit(
  file: Buffer,
  oldString: string,
  newString: string,
  replaceAll: boolean,
  name: string,
): ByteEdit | undefined {
  // A lone surrogate encodes as U+FFFD, which would match differently from the string path.
  if (oldString === '' || LONE_SURROGATE.test(oldString) || LONE_SURROGATE.test(newString)) return undefined;
  // The string path strips a BOM before matching, and matches a CRLF file with its line breaks
  // as LF: only text without those characters matches the same on raw bytes.
  if (oldString.includes('\uFEFF')) return undefined;
  if (/[\r\n]/.test(oldString) || /[\r\n]/.test(newString)) {
    if (file.indexOf(13) !== -1) return undefined;
  }
  const needle = Buffer.from(oldString, 'utf8');
  const starts: number[] = [];
  for (let at = file.indexOf(needle); at !== -1; at = file.indexOf(needle, at + needle.length)) {
    if (starts.length === 1 && !replaceAll) return undefined; // ambiguous: the string path words the error
    starts.push(at);
  }
  if (starts.length === 0) return undefined;
  const window = contextWindow(file, starts[0], starts[starts.length - 1] + needle.length, DIFF_CONTEXT_LINES);
  // The diff shows the text after a BOM, as the string path does.
  const bom = file[0] === 0xef && file[1] === 0xbb && file[2] === 0xbf ? 3 : 0;
  const from = Math.max(window.from, bom);
  const to = window.to;
  if (to - from > BYTE_EDIT_MAX_WINDOW) return undefined;

  const replacement = Buffer.from(newString, 'utf8');
  const pieces: Buffer[] = [];
  const ranges: Replacement[] = [];
  let pos = 0;
  let chars = 0; // characters of the window decoded so far (up to byte `pos`, once pos >= from)
  for (const s of starts) {
    pieces.push(file.subarray(pos, s), replacement);
    chars += file.toString('utf8', Math.max(pos, from), s).length;
    ranges.push({ start: chars, end: chars + oldString.length, replacement: newString });
    chars += oldString.length;
    pos = s + needle.length;
  }
  pieces.push(file.subarray(pos));
  const text = file.toString('utf8', from, to);
  const { summary, startLines } = diffOfReplacements(name, text, ranges, countNewlines(file, from));
  return {
    parts: pieces,
    diff: summary,
    replacements: starts.length,
    firstLine: startLines[0],
  };
}

/** Newline bytes in b[0, end). */
function countNewlines(b: Buffer, end: number): number {
  let n = 0;
  for (let i = b.indexOf(10); i !== -1 && i < end; i = b.indexOf(10, i + 1)) n++;
  return n;
}
