/**
 * Byte-exact text for files that are not (entirely) valid UTF-8: every byte of an invalid
 * sequence becomes one private-use character (U+10FF00 + byte) and turns back into that same byte
 * on encoding, so an edit can work on text and still keep every byte outside the replaced range.
 * Must not read or write files or find matches: edit.ts does both, on the text this module decodes.
 */

const ESCAPE_BASE = 0x10ff00;
/** Matches an escaped byte (or a real character in the range used for escapes). */
const ESCAPED = /[\u{10FF00}-\u{10FFFF}]/u;
const ESCAPED_GLOBAL = /[\u{10FF00}-\u{10FFFF}]/gu;

/** What `decodeLossless` made of a buffer. */
export interface LosslessText {
  text: string;
  /** True when some bytes were not valid UTF-8 (and are escaped in `text`). */
  escaped: boolean;
}

/** Whether `s` contains a character from the escape range (a model must not send those). */
export function hasEscapeRange(s: string): boolean {
  // Every character of the range is a surrogate pair led by U+DBFF: a plain indexOf rules most text out.
  return s.indexOf('\uDBFF') !== -1 && ESCAPED.test(s);
}

/** Length of the valid UTF-8 sequence starting at `i`, or 0 when the byte there starts none. */
function sequenceLength(buf: Uint8Array, i: number): number {
  const b = buf[i];
  if (b < 0x80) return 1;
  const cont = (k: number): boolean => i + k < buf.length && (buf[i + k] & 0xc0) === 0x80;
  if (b >= 0xc2 && b <= 0xdf) return cont(1) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    const b1 = buf[i + 1];
    if (!cont(1) || !cont(2)) return 0;
    if (b === 0xe0 && b1 < 0xa0) return 0; // overlong
    if (b === 0xed && b1 >= 0xa0) return 0; // surrogates
    return 3;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    const b1 = buf[i + 1];
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (b === 0xf0 && b1 < 0x90) return 0; // overlong
    if (b === 0xf4 && b1 >= 0x90) return 0; // above U+10FFFF
    return 4;
  }
  return 0;
}

/**
 * Decodes `buf` as UTF-8, escaping the bytes of invalid sequences. Returns undefined when the
 * valid part itself uses the escape range (the text would be ambiguous): callers refuse then.
 */
export function decodeLossless(buf: Buffer): LosslessText | undefined {
  const fast = buf.toString('utf8');
  // Invalid input always decodes to U+FFFD somewhere; valid UTF-8 (nearly every file) needs no escapes.
  if (!fast.includes('\uFFFD') || Buffer.from(fast, 'utf8').equals(buf)) {
    return hasEscapeRange(fast) ? undefined : { text: fast, escaped: false };
  }
  let out = '';
  let runStart = 0;
  let i = 0;
  while (i < buf.length) {
    const n = sequenceLength(buf, i);
    if (n > 0) {
      i += n;
      continue;
    }
    const run = buf.toString('utf8', runStart, i);
    // A real character of the escape range in the valid part would make the text ambiguous.
    if (hasEscapeRange(run)) return undefined;
    out += run + String.fromCodePoint(ESCAPE_BASE + buf[i]);
    i++;
    runStart = i;
  }
  const rest = buf.toString('utf8', runStart);
  if (hasEscapeRange(rest)) return undefined;
  return { text: out + rest, escaped: true };
}

/** Encodes text made by `decodeLossless` back to bytes: escapes become their original bytes. */
export function encodeLossless(text: string): Buffer {
  if (!hasEscapeRange(text)) return Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  let last = 0;
  for (const m of text.matchAll(ESCAPED_GLOBAL)) {
    parts.push(Buffer.from(text.slice(last, m.index), 'utf8'), Buffer.of(m[0].codePointAt(0)! - ESCAPE_BASE));
    last = m.index + m[0].length;
  }
  parts.push(Buffer.from(text.slice(last), 'utf8'));
  return Buffer.concat(parts);
}
