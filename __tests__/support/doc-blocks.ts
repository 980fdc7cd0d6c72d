/**
 * Fenced code blocks of README.md and docs/**\/*.md, classified for the docs test
 * (__tests__/package/docs.test.ts). The conventions are documented in docs/contributing.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** What the docs test does with a block. */
export type BlockKind = 'code' | 'shell' | 'json' | 'text';

/** A doc's `<!-- doctest: ... -->` marker on the line(s) before a fence. */
export type Marker =
  | { mode: 'skip'; reason: string } // neither type-checked nor run
  | { mode: 'no-run'; reason: string } // type-checked (code) or parsed (json), not run
  | { mode: 'continues' }; // code: appended to the previous code block of the same doc

export interface DocBlock {
  /** Doc path relative to the repo root, e.g. `docs/cli.md`. */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** Info string's first word, lower-cased ('' when none). */
  lang: string;
  kind: BlockKind | 'unknown';
  body: string;
  marker?: Marker;
  /** Markers that could not be parsed (the test reports them). */
  markerError?: string;
  /** The nearest heading above the block. */
  heading: string;
}

const LANGS: Record<string, BlockKind> = {
  ts: 'code',
  typescript: 'code',
  js: 'code',
  javascript: 'code',
  mjs: 'code',
  sh: 'shell',
  bash: 'shell',
  shell: 'shell',
  console: 'shell',
  json: 'json',
  jsonc: 'json',
  text: 'text',
  txt: 'text',
  diff: 'text',
};

const MARKER = /^<!--\s*doctest:\s*(.*?)\s*-->$/;

/** README.md plus every .md under docs/, sorted, relative to `root`. */
export function docFiles(root: string): string[] {
  const out = ['README.md'];
  const walk = (dir: string): void => {
    for (const e of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out.sort();
}

function parseMarker(text: string): { marker?: Marker; error?: string } {
  const m = /^(skip|no-run|continues)\b\s*(?:[-—:]\s*)?(.*)$/.exec(text);
  if (!m) return { error: `unknown doctest marker "${text}" (use skip, no-run or continues)` };
  const [, mode, reason] = m;
  if (mode === 'continues') return { marker: { mode } };
  if (!reason.trim()) return { error: `the doctest marker "${mode}" needs a reason after it` };
  return { marker: { mode: mode as 'skip' | 'no-run', reason: reason.trim() } };
}

/** Every fenced block of one markdown text. */
export function extractBlocks(doc: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const h = /^#{1,6}\s+(.*)$/.exec(lines[i]);
    if (h) heading = h[1].trim();
    const open = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)?.*$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info = ''] = open;
    let j = i + 1;
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    while (j < lines.length && !close.test(lines[j])) j++;
    const body = lines
      .slice(i + 1, j)
      .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart()))
      .join('\n');
    // The marker is the nearest non-blank line above the fence.
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') k--;
    const mm = k >= 0 ? MARKER.exec(lines[k].trim()) : null;
    const parsed = mm ? parseMarker(mm[1]) : {};
    const lang = info.toLowerCase();
    blocks.push({
      doc,
      line: i + 1,
      lang,
      kind: LANGS[lang] ?? 'unknown',
      body: body + '\n',
      marker: parsed.marker,
      markerError: parsed.error,
      heading,
    });
    i = j;
  }
  return blocks;
}

/** Every block of every doc under `root`. */
export function allBlocks(root: string): DocBlock[] {
  return docFiles(root).flatMap((doc) => extractBlocks(doc, readFileSync(path.join(root, doc), 'utf8')));
}

/** `docs/tools/task.md:23` */
export function where(b: DocBlock): string {
  return `${b.doc}:${b.line}`;
}

/** One shell step: the command, and the output the doc shows for it (undefined when none). */
export interface ShellStep {
  command: string;
  expected?: string;
}

/**
 * A shell block's steps. With `$ ` prompts, the lines after a prompt are its shown output;
 * without prompts, every non-blank, non-comment line is a command whose output is not shown.
 */
export function shellSteps(body: string): ShellStep[] {
  const lines = body.replace(/\n$/, '').split('\n');
  if (!lines.some((l) => l.startsWith('$ '))) {
    return lines.filter((l) => l.trim() && !l.trim().startsWith('#')).map((command) => ({ command }));
  }
  const steps: ShellStep[] = [];
  for (const l of lines) {
    if (l.startsWith('$ ')) steps.push({ command: l.slice(2) });
    else if (steps.length) {
      const s = steps[steps.length - 1];
      s.expected = s.expected === undefined ? l : `${s.expected}\n${l}`;
    }
  }
  for (const s of steps) if (s.expected !== undefined && !s.expected.trim()) s.expected = undefined;
  return steps;
}

/**
 * Whether `actual` matches the output a doc shows: line by line, trailing spaces ignored;
 * `...` stands for any text (within a line, or as a line of its own for any number of lines).
 */
export function outputMatches(expected: string, actual: string): boolean {
  const norm = (s: string) =>
    s
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .trim();
  const parts = norm(expected)
    .split('\n')
    .map((l) =>
      l.trim() === '...'
        ? '(?:[^\\n]*(?:\\n|$))*?'
        : l
            .split('...')
            .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
            .join('[^\\n]*') + '(?:\\n|$)',
    );
  return new RegExp(`^${parts.join('')}$`).test(norm(actual) + '\n');
}

/** A name a doc presents as exported from the package, and where. */
export interface DocName {
  name: string;
  doc: string;
  line: number;
}

/** Names the docs present as exported: see docs/contributing.md. `envVars` are excluded. */
export function exportedNames(root: string, envVars: Set<string>): DocName[] {
  const out: DocName[] = [];
  for (const doc of docFiles(root)) {
    const lines = readFileSync(path.join(root, doc), 'utf8').split('\n');
    let heading = '';
    let inFence = false;
    lines.forEach((l, i) => {
      if (/^\s*(`{3,}|~{3,})/.test(l)) inFence = !inFence;
      if (inFence) return;
      const h = /^#{1,6}\s+(.*)$/.exec(l);
      if (h) heading = h[1];
      const add = (name: string) => out.push({ name, doc, line: i + 1 });
      for (const m of l.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`/g)) if (!envVars.has(m[1])) add(m[1]);
      // A table row under an "exported" heading: the names in its first cell.
      if (/exported/i.test(heading) && /^\|\s*`/.test(l))
        for (const m of l.split('|')[1].matchAll(/`([A-Za-z_$][\w$]*)`/g)) add(m[1]);
      // A sentence that says a name is exported: `name` or `name(...)` on the same line.
      if (/\bexported\b/.test(l))
        for (const m of l.matchAll(/`([A-Za-z_$][\w$]*)(?:\([^`]*\))?`/g))
          if (!/^(src|dist)$/.test(m[1]) && !envVars.has(m[1])) add(m[1]);
    });
  }
  const seen = new Set<string>();
  return out.filter((n) => {
    const key = `${n.name}@${n.doc}:${n.line}`;
    return seen.has(key) ? false : (seen.add(key), true);
  });
}
