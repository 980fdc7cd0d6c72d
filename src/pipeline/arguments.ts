/**
 * Argument validation with repair of weak models' mistakes ("true", "5", JSON-in-a-string, null optionals),
 * and the error sentence the model sees.
 * Must not hold call state or do I/O: pure functions of (schema, args); call.ts decides what follows a failure.
 */
import type { z } from 'zod';
import { nearestName } from '../text/similarity.js';

/** Error thrown by validation; carries the message the model should see. */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInputError';
  }
}

const MAX_COERCION_ROUNDS = 4;

/** One repair made to a call's arguments: where, the value sent, and what it became (absent: removed). */
export interface ArgumentRepair {
  /** `filePath`, `todos[0].status`, or `(arguments)` for the whole input. */
  path: string;
  from: unknown;
  to?: unknown;
  /** True when the value was dropped (`null` for an optional field). */
  removed?: true;
}

/** Parsed arguments and the repairs it took (reported as `metadata.repairs` of the call's result). */
export interface ParsedArguments {
  value: unknown;
  repairs?: ArgumentRepair[];
}

/**
 * Parses `args` with the tool's schema. Weak models send `"true"` for booleans, `"5"` for numbers,
 * JSON-in-a-string for arrays and objects, and `null` for optional fields: those are repaired
 * where the schema says what was expected. Anything else fails with a message naming each field.
 */
export function parseArguments(toolId: string, schema: z.ZodType, args: unknown): unknown {
  return parseArgumentsWithRepairs(toolId, schema, args).value;
}

/** `parseArguments`, also saying which repairs were made (see docs/authoring-tools.md#argument-repair). */
export function parseArgumentsWithRepairs(toolId: string, schema: z.ZodType, args: unknown): ParsedArguments {
  let input: unknown = args ?? {};
  const repairs: ArgumentRepair[] = [];
  if (typeof input === 'string') {
    const parsed = tryJson(input);
    if (parsed !== undefined && typeof parsed === 'object' && parsed !== null) {
      repairs.push({ path: '(arguments)', from: input, to: parsed });
      input = parsed;
    }
  }
  const first = schema.safeParse(input);
  if (first.success) {
    refuseUnknownKeys(toolId, schema, input);
    return repairs.length ? { value: first.data, repairs } : { value: first.data };
  }
  let issues = first.error.issues;
  for (let round = 0; round < MAX_COERCION_ROUNDS; round++) {
    const repaired = repair(input, issues, repairs);
    if (repaired === undefined) break;
    input = repaired;
    const again = schema.safeParse(input);
    if (again.success) {
      refuseUnknownKeys(toolId, schema, input);
      return { value: again.data, repairs };
    }
    issues = again.error.issues;
  }
  throw new ToolInputError(formatIssues(toolId, first.error.issues, unknownKeyHints(toolId, schema, input)));
}

/**
 * A call that is valid except for keys the tool does not have is refused, not run with them
 * dropped: `{ filePath, limt: 5 }` would otherwise read the whole file when the model asked for
 * five lines. The error names each unknown key and the nearest parameter.
 */
function refuseUnknownKeys(toolId: string, schema: z.ZodType, input: unknown): void {
  const hints = unknownKeyHints(toolId, schema, input);
  if (hints.length) throw new ToolInputError(formatIssues(toolId, [], hints));
}

/**
 * One line per top-level argument key a plain object schema does not know (zod would drop it
 * silently), naming the nearest parameter, so a model that wrote `path` for `filePath` learns why.
 */
function unknownKeyHints(toolId: string, schema: z.ZodType, input: unknown): string[] {
  const def = (schema as { _zod?: { def?: { type?: string; shape?: object; catchall?: z.ZodType } } })._zod?.def;
  if (def?.type !== 'object' || !def.shape || !input || typeof input !== 'object' || Array.isArray(input)) return [];
  const catchall = (def.catchall as { _zod?: { def?: { type?: string } } } | undefined)?._zod?.def?.type;
  if (catchall !== undefined && catchall !== 'never') return []; // the schema accepts extra keys
  const known = Object.keys(def.shape);
  return Object.keys(input)
    .filter((k) => !known.includes(k))
    .map((k) => {
      const near = nearestName(k, known);
      return near
        ? `- \`${k}\` is not a parameter of ${toolId} — did you mean \`${near}\`?`
        : `- \`${k}\` is not a parameter of ${toolId}. Its parameters: ${known.join(', ') || '(none)'}.`;
    });
}

type Issue = z.core.$ZodIssue;

function formatIssues(toolId: string, issues: readonly Issue[], hints: string[] = []): string {
  // A strict schema's own "unrecognized keys" issue says less than the hints that replace it.
  if (hints.length) issues = issues.filter((i) => i.code !== 'unrecognized_keys');
  const problems = issues.slice(0, 10).map((issue) => {
    const where = pathText(issue.path);
    return `- ${where}: ${issue.message}`;
  });
  if (issues.length > 10) problems.push(`- ... and ${issues.length - 10} more problems`);
  const lines = [...hints, ...problems];
  return `Invalid arguments for tool "${toolId}":\n${lines.join('\n')}\nRewrite the input so it satisfies the tool's schema, then call the tool again.`;
}

/** A path as messages and repair reports show it: `todos[0].status`, or `(arguments)`. */
function pathText(p: readonly PropertyKey[]): string {
  return p.length
    ? p
        .map((k) => (typeof k === 'number' ? `[${k}]` : String(k)))
        .join('.')
        .replace(/\.\[/g, '[')
    : '(arguments)';
}

/** JSON in a string (also inside a Markdown code fence), when it is an array or an object. */
function tryJson(text: string): unknown {
  let t = text.trim();
  const fenced = /^```[a-z]*\s*\n([\s\S]*?)\n?```$/i.exec(t);
  if (fenced) t = fenced[1].trim();
  if (!t || !'[{'.includes(t[0])) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/** Spellings of one enum value that differ only in case, spaces, hyphens or underscores. */
function enumKey(s: string): string {
  return s
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '_');
}

/** What a value becomes where the schema expected `expected` (NO_CHANGE when it cannot be told). */
function repairValue(value: unknown, issue: Issue): unknown {
  // null where a value was expected: an optional field left out (OpenAI strict mode sends null for
  // every optional field, enums included); a required one then fails as missing.
  if (value === null && (issue.code === 'invalid_type' || issue.code === 'invalid_value')) return REMOVE;
  if (issue.code === 'invalid_value') {
    if (typeof value !== 'string') return NO_CHANGE;
    const options = issue.values.filter((v): v is string => typeof v === 'string');
    const matches = options.filter((v) => enumKey(v) === enumKey(value));
    return matches.length === 1 ? matches[0] : NO_CHANGE;
  }
  if (issue.code !== 'invalid_type') return NO_CHANGE;
  const expected = issue.expected;
  if (value === null) return REMOVE;
  if (typeof value !== 'string') return NO_CHANGE;
  const v = value.trim();
  if (expected === 'boolean') return /^(true|false)$/i.test(v) ? v.toLowerCase() === 'true' : NO_CHANGE;
  if (expected === 'number' || expected === 'int')
    return v !== '' && Number.isFinite(Number(v)) ? Number(v) : NO_CHANGE;
  if (expected === 'array' || expected === 'object') {
    const parsed = tryJson(v);
    if (parsed !== undefined && parsed !== null && (expected === 'array') === Array.isArray(parsed)) return parsed;
    // One plain value where a list was expected: a list of that one value.
    if (expected === 'array' && parsed === undefined && v !== '') return [value];
  }
  return NO_CHANGE;
}

/** Applies one round of repairs at the issues' paths, noting each in `log`; undefined when nothing could be repaired. */
function repair(input: unknown, issues: readonly Issue[], log: ArgumentRepair[]): unknown {
  const root = structuredClone(input);
  let changed = false;
  for (const issue of issues) {
    if (issue.path.length === 0) continue;
    const parentPath = issue.path.slice(0, -1);
    const key = issue.path[issue.path.length - 1] as string | number;
    const parent = getAt(root, parentPath);
    if (!parent || typeof parent !== 'object') continue;
    const container = parent as Record<string | number, unknown>;
    const value = container[key];
    const next = repairValue(value, issue);
    if (next === NO_CHANGE || (next === REMOVE && Array.isArray(parent))) continue;
    if (next === REMOVE) {
      delete container[key];
      log.push({ path: pathText(issue.path), from: value, removed: true });
    } else {
      container[key] = next;
      log.push({ path: pathText(issue.path), from: value, to: next });
    }
    changed = true;
  }
  return changed ? root : undefined;
}
const NO_CHANGE = Symbol('no-change');
const REMOVE = Symbol('remove');

function getAt(root: unknown, p: readonly PropertyKey[]): unknown {
  let cur = root;
  for (const k of p) {
    if (!cur || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[k];
  }
  return cur;
}
