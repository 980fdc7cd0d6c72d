/**
 * The apply_patch format (the one OpenAI's GPT-4.1+/GPT-5/Codex models are trained to write) read
 * into operations: `*** Begin Patch`, then `*** Add File:` / `*** Delete File:` / `*** Update File:`
 * (with an optional `*** Move to:`) sections, `@@` hunks of ' ', '-' and '+' lines, an optional
 * `*** End of File`, and `*** End Patch`. Lenient where models drift (padded markers, a heredoc or
 * code-fence wrapper, unified-diff `@@ -a,b +c,d @@` headers, several `@@` anchors in a row), strict
 * everywhere else: every refusal names the line and the rule it broke.
 * Must not touch files or find lines in them: text in, operations out (locate.ts finds, apply-patch.ts writes).
 */

/** One hunk of an Update File section: where it is (anchors, context), what it removes and adds. */
export interface PatchHunk {
  /** 1-based line of the patch where the hunk starts (its first `@@` or first change line). */
  line: number;
  /** The `@@` header as written (empty when the hunk had none), for messages. */
  header: string;
  /** Lines to find, in order, before the hunk's own lines (`@@ class Foo`, then `@@ def bar():`). */
  anchors: string[];
  /** The hunk's lines in order: context (' '), removed ('-') and added ('+'). */
  lines: Array<{ kind: ' ' | '-' | '+'; text: string }>;
  /** `*** End of File` closed it: its old lines must end the file. */
  endOfFile: boolean;
}

/** One file the patch changes. `path` is as written (relative or absolute). */
export type PatchOperation =
  | { kind: 'add'; path: string; line: number; contents: string }
  | { kind: 'delete'; path: string; line: number }
  | { kind: 'update'; path: string; line: number; moveTo?: string; hunks: PatchHunk[] };

/** A patch that does not follow the format: `line` (1-based, in the text given) broke `rule`. */
export class PatchSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly rule: string,
  ) {
    super(`line ${line}: ${rule}`);
    this.name = 'PatchSyntaxError';
  }
}

export const BEGIN_PATCH = '*** Begin Patch';
export const END_PATCH = '*** End Patch';
const ADD_FILE = '*** Add File:';
const DELETE_FILE = '*** Delete File:';
const UPDATE_FILE = '*** Update File:';
const MOVE_TO = '*** Move to:';
const END_OF_FILE = '*** End of File';
const FILE_HEADERS = `'${ADD_FILE} <path>', '${DELETE_FILE} <path>' or '${UPDATE_FILE} <path>'`;
const HUNK_LINE_RULE = "expected a line starting with ' ' (context), '-' (removed), '+' (added) or '@@' (a new hunk)";
/** A unified-diff hunk header (`@@ -12,7 +12,8 @@ optional text`): its numbers are ignored, its text is an anchor. */
const UNIFIED_HEADER = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$/;

/** Reads a whole patch; throws PatchSyntaxError naming the first line that breaks the format. */
export function parsePatch(text: string): PatchOperation[] {
  const { lines, first } = patchBody(text);
  const ops: PatchOperation[] = [];
  let i = 0;
  while (i < lines.length) {
    const at = first + i;
    const head = lines[i].trim();
    if (head === '') {
      i++;
      continue;
    }
    const header = fileHeader(head, at);
    if (!header) {
      throw new PatchSyntaxError(
        at,
        `expected a file header (${FILE_HEADERS}), found ${quote(lines[i])}. Every file section starts with one.`,
      );
    }
    i++;
    if (header.kind === 'delete') {
      ops.push({ kind: 'delete', path: header.path, line: at });
    } else if (header.kind === 'add') {
      const { contents, next } = addedContents(lines, i);
      ops.push({ kind: 'add', path: header.path, line: at, contents });
      i = next;
    } else {
      let moveTo: string | undefined;
      if (i < lines.length && lines[i].trim().startsWith(MOVE_TO)) {
        moveTo = headerPath(lines[i].trim(), MOVE_TO, first + i);
        i++;
      }
      const { hunks, next } = updateHunks(lines, i, first);
      if (hunks.length === 0 && moveTo === undefined) {
        throw new PatchSyntaxError(
          at,
          `'${UPDATE_FILE} ${header.path}' has no hunks: follow it with '@@' and the lines to change (or with '${MOVE_TO} <path>' to rename it).`,
        );
      }
      ops.push({ kind: 'update', path: header.path, line: at, moveTo, hunks });
      i = next;
    }
  }
  if (ops.length === 0) {
    throw new PatchSyntaxError(
      first,
      `the patch changes no file: put at least one ${FILE_HEADERS} section between '${BEGIN_PATCH}' and '${END_PATCH}'.`,
    );
  }
  return ops;
}

/** One file a patch changes, and the tool that would make that change. */
export interface PatchFile {
  as: 'write' | 'delete' | 'move';
  path: string;
}

/**
 * The files a patch changes and how, as the tool that would make each change is named (a move at
 * both ends), for the policy; undefined when the text is not a valid patch.
 */
export function patchFiles(text: string): PatchFile[] | undefined {
  let ops: PatchOperation[];
  try {
    ops = parsePatch(text);
  } catch {
    return undefined;
  }
  return ops.flatMap((op): PatchFile[] =>
    op.kind === 'delete'
      ? [{ as: 'delete', path: op.path }]
      : op.kind === 'update' && op.moveTo !== undefined
        ? [
            { as: 'move', path: op.path },
            { as: 'move', path: op.moveTo },
          ]
        : [{ as: 'write', path: op.path }],
  );
}

/**
 * The lines between `*** Begin Patch` and `*** End Patch`, and the 1-based line number of the first
 * of them in `text`. A heredoc (`<<'EOF'` ... `EOF`) or a Markdown code fence around the patch is
 * taken off; blank lines around it are ignored.
 */
function patchBody(text: string): { lines: string[]; first: number } {
  const all = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  let start = 0;
  let end = all.length; // exclusive
  const skipBlank = () => {
    while (start < end && all[start].trim() === '') start++;
    while (end > start && all[end - 1].trim() === '') end--;
  };
  skipBlank();
  if (start < end && /^(?:<<-?\s*['"]?\w+['"]?|```[\w-]*)$/.test(all[start].trim())) {
    const opener = all[start].trim();
    const closer = opener.startsWith('```') ? '```' : opener.replace(/^<<-?\s*['"]?(\w+)['"]?$/, '$1');
    if (end - start >= 2 && all[end - 1].trim() === closer) {
      start++;
      end--;
      skipBlank();
    }
  }
  if (start >= end) throw new PatchSyntaxError(1, `the patch is empty: it must start with '${BEGIN_PATCH}'.`);
  if (all[start].trim() !== BEGIN_PATCH) {
    throw new PatchSyntaxError(start + 1, `the patch must start with '${BEGIN_PATCH}', found ${quote(all[start])}.`);
  }
  const endAt = all.findIndex((l, k) => k > start && k < end && l.trim() === END_PATCH);
  if (endAt === -1) {
    throw new PatchSyntaxError(
      end,
      `the patch must end with '${END_PATCH}' on a line of its own; the last line is ${quote(all[end - 1])}. Send the whole patch again.`,
    );
  }
  if (endAt !== end - 1) {
    throw new PatchSyntaxError(
      endAt + 2,
      `found ${quote(all[endAt + 1])} after '${END_PATCH}' (line ${endAt + 1}); nothing may follow it. Put every file section before '${END_PATCH}'.`,
    );
  }
  return { lines: all.slice(start + 1, endAt), first: start + 2 };
}

function fileHeader(head: string, at: number): { kind: 'add' | 'delete' | 'update'; path: string } | undefined {
  if (head.startsWith(ADD_FILE)) return { kind: 'add', path: headerPath(head, ADD_FILE, at) };
  if (head.startsWith(DELETE_FILE)) return { kind: 'delete', path: headerPath(head, DELETE_FILE, at) };
  if (head.startsWith(UPDATE_FILE)) return { kind: 'update', path: headerPath(head, UPDATE_FILE, at) };
  return undefined;
}

function headerPath(head: string, marker: string, at: number): string {
  const p = head.slice(marker.length).trim();
  if (!p) throw new PatchSyntaxError(at, `'${marker}' must be followed by the file's path.`);
  return p;
}

/**
 * An Add File section's contents: its '+' lines. A bare empty line between '+' lines is taken as an
 * empty line of the file (models drop the '+' of empty lines); trailing ones are not.
 */
function addedContents(lines: string[], from: number): { contents: string; next: number } {
  const out: string[] = [];
  let i = from;
  let blanks = 0;
  for (; i < lines.length; i++) {
    const l = lines[i];
    if (l.startsWith('+')) {
      for (; blanks > 0; blanks--) out.push('');
      out.push(l.slice(1));
    } else if (l === '') blanks++;
    else break;
  }
  // Trailing blank lines belong to no one: step back over them so the section ends at its last '+'.
  return { contents: out.length ? `${out.join('\n')}\n` : '', next: i - blanks };
}

/** The hunks of an Update File section starting at `from`, up to the next file header. */
function updateHunks(lines: string[], from: number, first: number): { hunks: PatchHunk[]; next: number } {
  const hunks: PatchHunk[] = [];
  let i = from;
  while (i < lines.length) {
    const l = lines[i];
    const t = l.trim();
    if (t === '') {
      i++;
      continue;
    }
    if (fileHeader(t, first + i)) break;
    if (t.startsWith(MOVE_TO)) {
      throw new PatchSyntaxError(first + i, `'${MOVE_TO}' must come right after its '${UPDATE_FILE}' line.`);
    }
    if (t === END_OF_FILE) {
      throw new PatchSyntaxError(first + i, `'${END_OF_FILE}' must close a hunk that has lines.`);
    }
    if (!t.startsWith('@@') && hunks.length > 0)
      throw new PatchSyntaxError(first + i, `${HUNK_LINE_RULE}, found ${quote(l)}.`);
    const { hunk, next } = oneHunk(lines, i, first);
    hunks.push(hunk);
    i = next;
  }
  return { hunks, next: i };
}

/** One hunk: its `@@` lines (none for a first hunk written without one), then its change lines. */
function oneHunk(lines: string[], from: number, first: number): { hunk: PatchHunk; next: number } {
  const anchors: string[] = [];
  const headers: string[] = [];
  let i = from;
  for (; i < lines.length && lines[i].trim().startsWith('@@'); i++) {
    const t = lines[i].trim();
    headers.push(t);
    const unified = UNIFIED_HEADER.exec(t);
    const anchor = unified ? unified[1].trim() : t.slice(2).trim();
    if (anchor) anchors.push(anchor);
  }
  const hunk: PatchHunk = { line: first + from, header: headers.join(' '), anchors, lines: [], endOfFile: false };
  let blanks = 0;
  for (; i < lines.length; i++) {
    const l = lines[i];
    if (l.trim() === END_OF_FILE) {
      if (hunk.lines.length === 0) break;
      hunk.endOfFile = true;
      i++;
      blanks = 0;
      break;
    }
    const c = l[0];
    if (c === ' ' || c === '-' || c === '+') {
      // Blank lines inside a hunk are empty context lines (models drop the ' ' of empty lines).
      for (; blanks > 0; blanks--) hunk.lines.push({ kind: ' ', text: '' });
      hunk.lines.push({ kind: c, text: l.slice(1) });
    } else if (l === '' || l.trim() === '') blanks++;
    else break;
  }
  if (hunk.lines.length === 0) {
    const at = first + Math.min(i, lines.length - 1);
    throw new PatchSyntaxError(
      i < lines.length ? first + i : at,
      hunk.header
        ? `the hunk '${hunk.header}' (line ${hunk.line}) has no lines: ${HUNK_LINE_RULE}${i < lines.length ? `, found ${quote(lines[i])}` : ''}.`
        : `${HUNK_LINE_RULE}, found ${quote(lines[i] ?? '')}.`,
    );
  }
  // Blank lines after a hunk's last line separate it from what follows; they are not context.
  return { hunk, next: i - blanks };
}

function quote(line: string): string {
  const t = line.length > 80 ? `${line.slice(0, 80)}...` : line;
  return JSON.stringify(t);
}
