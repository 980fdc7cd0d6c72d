/**
 * grep's pattern dialect: the regex subset ripgrep and JavaScript read the same way, validated and
 * normalised once for both backends.
 * Must not search or shape output: the backends (grep-js.ts, grep-rg.ts) and grep-results.ts do.
 */
import { RE2JS } from 're2js';

/** Something that tests a string: a linear-time re2js pattern, or a V8 RegExp for a plain literal. */
interface Tester {
  test(text: string): boolean;
}

/** A validated pattern: the source handed to both engines, and the JS backend's matchers. */
export interface CompiledPattern {
  source: string;
  caseInsensitive: boolean;
  /** Tests one line (without its `\n`). */
  line: Tester;
  /** Quick test of a whole block of lines (a superset: a hit is confirmed line by line). */
  block: Tester;
  /** True when the JS backend matches with re2js (linear time, slower per byte than V8). */
  automaton: boolean;
  /**
   * For a case-sensitive literal or alternation of literals: each branch's UTF-8 bytes. A block
   * containing none of them cannot match, which the JS backend learns without decoding it (a
   * byte search; valid UTF-8 never decodes around a whole character's bytes, and a pattern with
   * U+FFFD, which invalid bytes decode to, gets none).
   */
  literals?: readonly Buffer[];
  /**
   * Marks the lines of a block that match (`lines` is the block split at `\n`), in time linear in
   * the block: each match found in the block is confirmed on its own line, then the search goes on
   * from the next line.
   */
  matchLines(text: string, lines: string[]): Uint8Array;
}

/** U+FFFD in UTF-8: what undecodable bytes become in the text a regex sees. */
const REPLACEMENT_CHARACTER = Buffer.from('\uFFFD', 'utf8');

/** The regex metacharacters: a pattern without them (once unescaped) is a plain literal. */
const META = /[\\^$.*+?()[\]{}|]/;

/**
 * The JS backend's matchers for a validated pattern. Any pattern with regex syntax runs on re2js
 * (an automaton: linear time, so `(a+)+$` cannot hang the process); a plain literal, which cannot
 * backtrack, uses V8's faster literal search.
 */
function makeMatchers(
  source: string,
  caseInsensitive: boolean,
): Pick<CompiledPattern, 'line' | 'block' | 'matchLines' | 'automaton' | 'literals'> {
  // Plain literals, or a top-level alternation of them (`readFileSync|createRequire`): no
  // quantifier or group, so V8 cannot backtrack badly; everything else goes to re2js.
  const branches = source.split(/(?<!\\)\|/);
  const plain = branches.every((b) => !META.test(b.replace(/\\[^a-zA-Z0-9]/g, '')) && !/\\[a-zA-Z0-9]/.test(b));
  if (plain && branches.every((b) => b !== '')) {
    const re = new RegExp(source, `u${caseInsensitive ? 'i' : ''}`);
    const global = new RegExp(source, `gu${caseInsensitive ? 'i' : ''}`);
    const literals = branches.map((b) => Buffer.from(b.replace(/\\([^a-zA-Z0-9])/g, '$1'), 'utf8'));
    const bytesExact = !caseInsensitive && literals.every((l) => !l.includes(REPLACEMENT_CHARACTER));
    return {
      line: re,
      block: re,
      automaton: false,
      ...(bytesExact ? { literals } : {}),
      matchLines(text, lines) {
        // One pass over the block: a literal never spans a line break, so each match marks its
        // line and the search goes on from the next one (no per-line test of lines without one).
        const hits = new Uint8Array(lines.length);
        global.lastIndex = 0;
        let lineIdx = 0;
        let lineStart = 0;
        for (let m = global.exec(text); m !== null; m = global.exec(text)) {
          while (lineIdx < lines.length - 1 && lineStart + lines[lineIdx].length < m.index) {
            lineStart += lines[lineIdx].length + 1;
            lineIdx++;
          }
          hits[lineIdx] = 1;
          lineStart += lines[lineIdx].length + 1;
          lineIdx++;
          if (lineIdx >= lines.length) break;
          global.lastIndex = lineStart;
        }
        return hits;
      },
    };
  }
  const flags = caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0;
  const line = RE2JS.compile(source, flags);
  const block = RE2JS.compile(source, flags | RE2JS.MULTILINE);
  return {
    line,
    block,
    automaton: true,
    matchLines(text, lines) {
      const hits = new Uint8Array(lines.length);
      const m = block.matcher(text);
      let lineIdx = 0;
      let lineStart = 0;
      let pos = 0;
      while (pos <= text.length && m.find(pos)) {
        const at = m.start();
        while (lineIdx < lines.length - 1 && lineStart + lines[lineIdx].length < at) {
          lineStart += lines[lineIdx].length + 1;
          lineIdx++;
        }
        if (lineIdx >= lines.length) break;
        // A match that runs across a line break (\s, [^x]) counts only if the line matches on its own.
        const lineEnd = lineStart + lines[lineIdx].length;
        if (m.end() <= lineEnd || line.test(lines[lineIdx])) hits[lineIdx] = 1;
        lineStart += lines[lineIdx].length + 1;
        lineIdx++;
        pos = lineStart;
        if (lineIdx >= lines.length) break;
      }
      return hits;
    },
  };
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
  try {
    // Both engines must accept it: ripgrep reads the same syntax as V8, the JS backend runs re2js.
    new RegExp(out, `su${caseInsensitive ? 'i' : ''}`);
    return { source: out, caseInsensitive, ...makeMatchers(out, caseInsensitive) };
  } catch (err) {
    return fail((err as Error).message.replace(/^Invalid regular expression: /, ''));
  }
}
