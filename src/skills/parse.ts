/**
 * SKILL.md as the Agent Skills spec defines it: YAML frontmatter between two `---` lines, then the
 * Markdown body; the frontmatter checked field by field (the rules of the spec's reference library,
 * skills-ref, except that unknown fields are kept with a warning instead of refused). Every problem
 * is a sentence naming the file, the field and the fix.
 * Must not read files or folders: text in, skill out (discover.ts and catalog.ts do the reading).
 */
import { parse as parseYaml, YAMLParseError } from 'yaml';
import {
  MAX_SKILL_COMPATIBILITY_CHARS,
  MAX_SKILL_DESCRIPTION_CHARS,
  MAX_SKILL_FRONTMATTER_BYTES,
  MAX_SKILL_NAME_CHARS,
  type SkillMeta,
  type SkillProblem,
} from './types.js';

/** The fields the spec defines; others are kept in `extra`. */
const SPEC_FIELDS = new Set(['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools']);

/** Lowercase letters (any script), digits, single hyphens inside: the spec's name rule. */
const NAME_PATTERN = /^[\p{Ll}\p{Lo}\p{Nd}]+(?:-[\p{Ll}\p{Lo}\p{Nd}]+)*$/u;

/** What parsing one SKILL.md gives: the checked frontmatter (absent when an error skips the skill), the body, and the problems. */
export interface ParsedSkill {
  meta?: SkillMeta;
  /** The Markdown after the frontmatter (trimmed); absent when the frontmatter could not be found. */
  body?: string;
  problems: SkillProblem[];
}

/**
 * Parses a SKILL.md's text. `folderName` is the name of the folder holding it (the name must equal
 * it). `cut` says the text is only the file's first MAX_SKILL_FRONTMATTER_BYTES (a listing reads no more).
 */
export function parseSkillText(text: string, file: string, folderName: string, cut = false): ParsedSkill {
  const problems: SkillProblem[] = [];
  const error = (message: string, field?: string) =>
    problems.push({ file, severity: 'error', message, ...(field ? { field } : {}) });
  const warn = (message: string, field?: string) =>
    problems.push({ file, severity: 'warning', message, ...(field ? { field } : {}) });
  if (text.charCodeAt(0) === 0xfeff) {
    text = text.slice(1);
    warn(`${file} starts with a byte-order mark (U+FEFF), which was ignored; save it as UTF-8 without one.`);
  }
  if (text.includes('\r\n')) {
    text = text.replace(/\r\n/g, '\n');
    warn(`${file} has Windows (CRLF) line endings, read as LF; nothing to fix unless another tool minds.`);
  }
  const split = splitFrontmatter(text);
  if ('problem' in split) {
    if (split.problem === 'no-open')
      error(
        `${file} does not start with a "---" line, so it has no frontmatter. Put the YAML fields (name, description) between two "---" lines at the top of the file.`,
      );
    else if (cut)
      error(
        `${file}: no closing "---" line within its first ${MAX_SKILL_FRONTMATTER_BYTES} bytes. Close the frontmatter with a "---" line and keep it short (name and description).`,
      );
    else
      error(
        `${file}: the frontmatter has no closing "---" line. Add a line "---" after the last YAML field, before the Markdown.`,
      );
    return { problems };
  }
  let data: unknown;
  try {
    data = parseYaml(split.yaml, { uniqueKeys: true, maxAliasCount: 100, prettyErrors: true });
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line + 1} of the file)` : '';
    const reason = String((err as Error).message)
      .split('\n')[0]
      .replace(/ at line \d+, column \d+:?$/, '');
    error(
      `${file}: the frontmatter is not valid YAML${where}: ${reason}. Fix the YAML between the "---" lines (quote values that hold ": " or start with a special character).`,
    );
    return { problems, body: split.body };
  }
  if (data === null || data === undefined) data = {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    error(
      `${file}: the frontmatter is a YAML ${Array.isArray(data) ? 'list' : typeof data}, not a mapping. Write "name: ..." and "description: ..." lines between the "---" lines.`,
    );
    return { problems, body: split.body };
  }
  const meta = checkFields(data as Record<string, unknown>, file, folderName, error, warn);
  return { problems, body: split.body, ...(problems.some((p) => p.severity === 'error') ? {} : { meta }) };
}

type Report = (message: string, field?: string) => void;

function checkFields(
  fm: Record<string, unknown>,
  file: string,
  folderName: string,
  error: Report,
  warn: Report,
): SkillMeta {
  const name = checkName(fm.name, file, folderName, error);
  const description = checkDescription(fm.description, file, error);
  const meta: SkillMeta = { name, description };
  if (fm.license !== undefined && fm.license !== null) {
    if (typeof fm.license === 'string') meta.license = fm.license;
    else error(`${file}: "license" is a ${kindOf(fm.license)}; write it as text (a license name or file).`, 'license');
  }
  if (fm.compatibility !== undefined && fm.compatibility !== null) {
    const c = fm.compatibility;
    if (typeof c !== 'string' || !c.trim())
      error(
        `${file}: "compatibility" must be non-empty text; write what the skill needs, or remove the field.`,
        'compatibility',
      );
    else if (c.length > MAX_SKILL_COMPATIBILITY_CHARS)
      error(
        `${file}: "compatibility" has ${c.length} characters, more than the ${MAX_SKILL_COMPATIBILITY_CHARS} the spec allows. Shorten it.`,
        'compatibility',
      );
    else meta.compatibility = c;
  }
  if (fm.metadata !== undefined && fm.metadata !== null) {
    const m = fm.metadata;
    if (typeof m !== 'object' || Array.isArray(m))
      error(`${file}: "metadata" is a ${kindOf(m)}; write it as a mapping of keys to text values.`, 'metadata');
    // The spec's map is string to string; other scalars are kept as their text (as skills-ref does).
    else
      meta.metadata = Object.fromEntries(
        Object.entries(m).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
      );
  }
  const tools = fm['allowed-tools'];
  if (tools !== undefined && tools !== null) {
    if (typeof tools === 'string') meta.allowedTools = splitAllowedTools(tools);
    else if (Array.isArray(tools) && tools.every((t) => typeof t === 'string'))
      meta.allowedTools = tools.map((t) => t.trim()).filter(Boolean);
    else
      error(
        `${file}: "allowed-tools" is a ${kindOf(tools)}; write it as space-separated text ("Bash(git:*) Read") or a list of strings.`,
        'allowed-tools',
      );
  }
  const extra = Object.keys(fm).filter((k) => !SPEC_FIELDS.has(k));
  if (extra.length) {
    meta.extra = Object.fromEntries(extra.map((k) => [k, fm[k]]));
    warn(
      `${file}: ${extra.map((k) => `"${k}"`).join(', ')} ${extra.length > 1 ? 'are fields' : 'is a field'} the Agent Skills spec does not define, kept as written; move ${extra.length > 1 ? 'them' : 'it'} under "metadata" to be portable.`,
      extra[0],
    );
  }
  return meta;
}

function checkName(value: unknown, file: string, folderName: string, error: Report): string {
  const fix = `A name is 1-${MAX_SKILL_NAME_CHARS} lowercase letters, digits and single hyphens, equal to its folder's name (here "${folderName}")`;
  if (value === undefined || value === null) {
    error(`${file}: the frontmatter has no "name". Add "name: ${folderName}".`, 'name');
    return '';
  }
  if (typeof value !== 'string' || !value.trim()) {
    error(`${file}: "name" must be non-empty text. ${fix}.`, 'name');
    return '';
  }
  const name = value.trim().normalize('NFKC');
  if (/[/\\]|\.\.|^\.|\0/.test(name)) {
    error(
      `${file}: name ${JSON.stringify(name)} holds path characters ("/", "\\", ".."), which could point outside the skill's folder. ${fix}.`,
      'name',
    );
    return name;
  }
  if (name.length > MAX_SKILL_NAME_CHARS)
    error(`${file}: name "${name}" has ${name.length} characters, more than ${MAX_SKILL_NAME_CHARS}. ${fix}.`, 'name');
  else if (name !== name.toLowerCase()) error(`${file}: name "${name}" has uppercase letters. ${fix}.`, 'name');
  else if (!NAME_PATTERN.test(name))
    error(
      `${file}: name "${name}" is not lowercase letters, digits and single hyphens (no leading, trailing or double "-"). ${fix}.`,
      'name',
    );
  else if (name !== folderName.normalize('NFKC'))
    error(
      `${file}: name "${name}" differs from its folder's name "${folderName}". Rename the folder to "${name}" or set "name: ${folderName}".`,
      'name',
    );
  return name;
}

function checkDescription(value: unknown, file: string, error: Report): string {
  if (value === undefined || value === null) {
    error(
      `${file}: the frontmatter has no "description". Add one saying what the skill does and when to use it.`,
      'description',
    );
    return '';
  }
  if (typeof value !== 'string' || !value.trim()) {
    error(
      `${file}: "description" must be non-empty text saying what the skill does and when to use it.`,
      'description',
    );
    return '';
  }
  if (value.length > MAX_SKILL_DESCRIPTION_CHARS)
    error(
      `${file}: "description" has ${value.length} characters, more than the ${MAX_SKILL_DESCRIPTION_CHARS} the spec allows. Shorten it; put details in the body.`,
      'description',
    );
  return value.trim();
}

/** `allowed-tools` as text: entries separated by spaces, a `Tool(...)` entry kept whole even with spaces inside. */
export function splitAllowedTools(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let depth = 0;
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    if (/\s/.test(ch) && depth === 0) {
      if (current) out.push(current);
      current = '';
    } else current += ch;
  }
  if (current) out.push(current);
  return out;
}

/** The frontmatter's YAML and the body, or which `---` line is missing. */
function splitFrontmatter(text: string): { yaml: string; body: string } | { problem: 'no-open' | 'no-close' } {
  const firstEnd = text.indexOf('\n');
  const first = firstEnd === -1 ? text : text.slice(0, firstEnd);
  if (first.trimEnd() !== '---') return { problem: 'no-open' };
  if (firstEnd === -1) return { problem: 'no-close' };
  const close = /^---[ \t]*$/m;
  const rest = text.slice(firstEnd + 1);
  const m = close.exec(rest);
  if (!m) return { problem: 'no-close' };
  return { yaml: rest.slice(0, m.index), body: rest.slice(m.index + m[0].length).trim() };
}

function kindOf(v: unknown): string {
  return Array.isArray(v) ? 'list' : v === null ? 'null' : typeof v === 'object' ? 'mapping' : typeof v;
}
