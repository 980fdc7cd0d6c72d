/**
 * The literal value of one shell word from its tree-sitter-bash node: quotes removed, escapes and
 * `$'...'` (ANSI-C) sequences decoded, so `r""m`, `'rm'`, `\rm` and `$'\x72\x6d'` all read `rm`.
 * Parts the shell computes at run time (`$VAR`, `$(...)`, globs, brace lists) cannot be known
 * here: they are kept as written and the word is marked `dynamic`.
 * Must not walk command structure: bash-parser.ts does and calls this for each word.
 */
import type { Node } from 'web-tree-sitter';

/** A word's value as the shell would see it, as far as it can be known without running anything. */
export interface WordValue {
  text: string;
  /** Part of the value is only known at run time (an expansion, a substitution, a glob, a brace list). */
  dynamic: boolean;
}

const EXPANSIONS = new Set([
  'simple_expansion',
  'expansion',
  'command_substitution',
  'process_substitution',
  'arithmetic_expansion',
]);

/** The literal value of a word-like node (word, string, raw_string, ansi_c_string, concatenation, ...). */
export function wordValue(node: Node): WordValue {
  switch (node.type) {
    case 'word':
      return bareWord(node.text);
    case 'raw_string':
      return { text: node.text.slice(1, -1), dynamic: false };
    case 'ansi_c_string':
      return { text: decodeAnsiC(node.text.slice(2, -1)), dynamic: false };
    case 'string':
    case 'translated_string':
      return joinParts(node, doubleQuoted);
    case 'concatenation':
      return joinParts(node, bareWord);
    case 'number':
    case 'variable_name':
      return { text: node.text, dynamic: false };
    default:
      return { text: node.text, dynamic: EXPANSIONS.has(node.type) || node.type !== 'word' };
  }
}

/** Joins a node's children's values, reading the source between them with `gap`. */
function joinParts(node: Node, gap: (raw: string) => WordValue): WordValue {
  const src = node.text;
  const base = node.startIndex;
  let text = '';
  let dynamic = false;
  const quoted = node.type !== 'concatenation';
  const start = quoted ? node.text.indexOf('"') + 1 : 0;
  const end = quoted ? src.length - 1 : src.length;
  let at = start;
  for (const child of node.children) {
    if (!child || !child.isNamed) continue;
    const from = child.startIndex - base;
    if (from > at) text += gap(src.slice(at, from)).text;
    const part = child.type === 'string_content' ? gap(child.text) : wordValue(child);
    text += part.text;
    dynamic ||= part.dynamic;
    at = child.endIndex - base;
  }
  if (end > at) {
    const rest = gap(src.slice(at, end));
    text += rest.text;
    dynamic ||= rest.dynamic;
  }
  return { text, dynamic };
}

/** An unquoted word: backslashes escape the next character; globs and brace lists expand at run time. */
function bareWord(raw: string): WordValue {
  let text = '';
  let dynamic = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === '\\') {
      if (raw[i + 1] !== '\n') text += raw[i + 1] ?? '';
      i++;
      continue;
    }
    if (c === '*' || c === '?' || c === '[') dynamic = true;
    if (c === '{' && /^\{[^}]*,[^}]*\}|^\{[^}]*\.\.[^}]*\}/.test(raw.slice(i))) dynamic = true;
    if (c === '$') dynamic = true;
    text += c;
  }
  return { text, dynamic };
}

/** Inside double quotes only `\"`, `\\`, `\$`, `` \` `` and a backslash-newline are escapes. */
function doubleQuoted(raw: string): WordValue {
  return { text: raw.replace(/\\(["\\$`])|\\\n/g, (_m, c: string | undefined) => c ?? ''), dynamic: false };
}

const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

/** Decodes the body of `$'...'`: `\xHH`, `\uHHHH`, `\UHHHHHHHH`, octal `\NNN`, `\cX` and the letter escapes. */
function decodeAnsiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (whole, esc: string) => {
      const kind = esc[0];
      if (kind === 'x' && esc.length > 1) return String.fromCharCode(parseInt(esc.slice(1), 16));
      if ((kind === 'u' || kind === 'U') && esc.length > 1) {
        const code = parseInt(esc.slice(1), 16);
        return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
      }
      if (/^[0-7]/.test(esc)) return String.fromCharCode(parseInt(esc, 8) & 0xff);
      if (kind === 'c' && esc.length === 2) return String.fromCharCode(esc.charCodeAt(1) & 0x1f);
      return SIMPLE_ESCAPES[esc] ?? whole;
    },
  );
}
