/**
 * grep's pattern dialect: the regex subset ripgrep and JavaScript read the same way, validated and
 * normalised once for both backends. No searching or output here.
 */

/** A validated pattern: the source handed to both engines, and the JS regexes. */
export interface CompiledPattern {
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
