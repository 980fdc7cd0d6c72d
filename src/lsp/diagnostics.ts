/**
 * Diagnostics as the tools word them: what a server sent (LSP `Diagnostic`s, or tsserver's own shape)
 * checked and normalised to 1-based positions, the comparison of a file's diagnostics before and after
 * a change (what it introduced, what it fixed), and the lines a model reads.
 * Must not talk to a server (server.ts) nor decide when to ask (hook.ts).
 */
import { LSP_MAX_DIAGNOSTICS, LSP_MAX_KEPT_DIAGNOSTICS, LSP_MAX_MESSAGE_CHARS } from './config.js';

/** How bad a diagnostic is, in LSP's order (1 = error). */
export type Severity = 'error' | 'warning' | 'info' | 'hint';

/** One diagnostic, 1-based. */
export interface Diag {
  line: number;
  column: number;
  severity: Severity;
  /** The server's code, as the server's tools write it (`TS2345`, `reportArgumentType`). */
  code?: string;
  message: string;
}

const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info', 'hint'];
const RANK: Record<Severity, number> = { error: 0, warning: 1, info: 2, hint: 3 };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function whole(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** A message on one line, cut at LSP_MAX_MESSAGE_CHARS. */
function oneLine(message: string): string {
  const flat = message.replace(/\s*\n\s*/g, ' ').trim();
  return flat.length > LSP_MAX_MESSAGE_CHARS ? `${flat.slice(0, LSP_MAX_MESSAGE_CHARS)}...` : flat;
}

/** An LSP `Diagnostic` (0-based range) as a Diag, or undefined when it is not one. */
export function fromLsp(d: unknown, typescript = false): Diag | undefined {
  if (!isRecord(d) || typeof d.message !== 'string' || !isRecord(d.range) || !isRecord(d.range.start)) return undefined;
  const { line, character } = d.range.start;
  if (!whole(line) || !whole(character)) return undefined;
  const sev = typeof d.severity === 'number' ? SEVERITIES[d.severity - 1] : undefined;
  const code = typeof d.code === 'number' || typeof d.code === 'string' ? String(d.code) : undefined;
  return {
    line: line + 1,
    column: character + 1,
    severity: sev ?? 'error',
    code: code && typescript && /^\d+$/.test(code) ? `TS${code}` : code,
    message: oneLine(d.message),
  };
}

/** A tsserver diagnostic (`{ start: { line, offset }, text, code, category }`, 1-based) as a Diag. */
export function fromTsserver(d: unknown): Diag | undefined {
  if (!isRecord(d) || typeof d.text !== 'string' || !isRecord(d.start)) return undefined;
  const { line, offset } = d.start;
  if (!whole(line) || !whole(offset) || line < 1 || offset < 1) return undefined;
  const category = d.category;
  const severity: Severity =
    category === 'warning' ? 'warning' : category === 'suggestion' ? 'hint' : category === 'message' ? 'info' : 'error';
  return {
    line,
    column: offset,
    severity,
    code: typeof d.code === 'number' ? `TS${d.code}` : undefined,
    message: oneLine(d.text),
  };
}

/** `items` (a server's list) as Diags: malformed entries dropped, at most LSP_MAX_KEPT_DIAGNOSTICS kept; undefined when not a list. */
export function diagsOf(items: unknown, convert: (d: unknown) => Diag | undefined): Diag[] | undefined {
  if (!Array.isArray(items)) return undefined;
  const out: Diag[] = [];
  for (const item of items) {
    const d = convert(item);
    if (d) out.push(d);
    if (out.length >= LSP_MAX_KEPT_DIAGNOSTICS) break;
  }
  return out;
}

/** Errors first, then by position. */
export function sortDiags(diags: readonly Diag[]): Diag[] {
  return [...diags].sort((a, b) => RANK[a.severity] - RANK[b.severity] || a.line - b.line || a.column - b.column);
}

/** The diagnostics a model is told about (errors, warnings and information; hints are the editor's faded text). */
export function worthSaying(diags: readonly Diag[]): Diag[] {
  return diags.filter((d) => d.severity !== 'hint');
}

/**
 * What a change did to a file's diagnostics. A diagnostic is the same before and after when its
 * severity, code, message and the text of its line are (so one that only moved is neither new nor fixed).
 */
export function compareDiags(
  before: readonly Diag[],
  beforeText: string,
  after: readonly Diag[],
  afterText: string,
): { introduced: Diag[]; fixed: Diag[]; remaining: Diag[] } {
  const key = (d: Diag, lines: string[]) =>
    `${d.severity}\0${d.code ?? ''}\0${d.message}\0${(lines[d.line - 1] ?? '').trim()}`;
  const beforeLines = beforeText.split('\n');
  const afterLines = afterText.split('\n');
  const left = new Map<string, Diag[]>();
  for (const d of before) {
    const k = key(d, beforeLines);
    left.set(k, [...(left.get(k) ?? []), d]);
  }
  const introduced: Diag[] = [];
  for (const d of after) {
    const same = left.get(key(d, afterLines));
    if (same?.length) same.pop();
    else introduced.push(d);
  }
  const fixed = [...left.values()].flat();
  return { introduced: sortDiags(introduced), fixed: sortDiags(fixed), remaining: sortDiags(after) };
}

/** One diagnostic as a line: `b.ts:2:23 - error TS2345: Argument of type ...`. */
export function diagLine(shown: string, d: Diag): string {
  return `${shown}:${d.line}:${d.column} - ${d.severity}${d.code ? ` ${d.code}` : ''}: ${d.message}`;
}

/** `diags` as lines, at most `max`, with a count of the rest. */
export function diagLines(shown: string, diags: readonly Diag[], max = LSP_MAX_DIAGNOSTICS): string {
  const lines = diags.slice(0, max).map((d) => diagLine(shown, d));
  if (diags.length > max)
    lines.push(`(${diags.length - max} more not shown; lsp with operation "diagnostics" lists ${max} at a time.)`);
  return lines.join('\n');
}

/** "1 error", "2 errors and 1 warning". */
export function countWords(diags: readonly Diag[]): string {
  const parts: string[] = [];
  for (const s of SEVERITIES) {
    const n = diags.filter((d) => d.severity === s).length;
    if (n) parts.push(`${n} ${s === 'info' ? 'information' : s}${n === 1 || s === 'info' ? '' : 's'}`);
  }
  return parts.length ? parts.join(' and ') : 'no problems';
}

/**
 * The paragraph an edit's answer gains: what the change introduced (listed), what it fixed, and what
 * the file still has. `before` undefined: the diagnostics before the change were not known.
 */
export function changeParagraph(
  server: string,
  shown: string,
  before: { diags: Diag[]; text: string } | undefined,
  after: { diags: Diag[]; text: string },
): { text: string; introduced: Diag[] } {
  const afterSaid = worthSaying(after.diags);
  if (!before) {
    const text = afterSaid.length
      ? `${server} reports ${countWords(afterSaid)} in ${shown} (its diagnostics before this change were not known, so some may be older):\n${diagLines(shown, sortDiags(afterSaid))}`
      : `${server} reports no problems in ${shown}.`;
    return { text, introduced: sortDiags(afterSaid) };
  }
  const { introduced, fixed, remaining } = compareDiags(worthSaying(before.diags), before.text, afterSaid, after.text);
  const now = remaining.some((d) => d.severity === 'error')
    ? `${shown} has ${countWords(remaining)} now`
    : remaining.length
      ? `${shown} has no errors now (${countWords(remaining)})`
      : `${shown} has no errors now`;
  const fixedList = fixed
    .slice(0, 3)
    .map((d) => `line ${d.line}: ${d.code ? `${d.code} ` : ''}${d.message}`)
    .join('; ');
  const fixedWords = `${countWords(fixed)} (${fixedList}${fixed.length > 3 ? '; ...' : ''})`;
  if (introduced.length) {
    return {
      text: `${server} found ${countWords(introduced)} this change introduced:\n${diagLines(shown, introduced)}${fixed.length ? `\nIt fixed ${fixedWords}.` : ''}\n(${now}.)`,
      introduced,
    };
  }
  return {
    text: fixed.length ? `${server}: this change fixed ${fixedWords}; ${now}.` : `${server}: no new problems; ${now}.`,
    introduced,
  };
}
