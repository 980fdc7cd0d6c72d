/**
 * Argument validation with repair of weak models' mistakes ("true", "5", JSON-in-a-string, null optionals),
 * and the error sentence the model sees.
 * Must not hold call state or do I/O: pure functions of (schema, args); call.ts decides what follows a failure.
 */
import type { z } from 'zod';
import { nearestName } from '../similarity.js';

/** Error thrown by validation; carries the message the model should see. */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInputError';
  }
}

const MAX_COERCION_ROUNDS = 4;

/**
 * Parses `args` with the tool's schema. Weak models send `"true"` for booleans, `"5"` for numbers,
 * JSON-in-a-string for arrays and objects, and `null` for optional fields: those are repaired
 * where the schema says what was expected. Anything else fails with a message naming each field.
 */
export function parseArguments(toolId: string, schema: z.ZodType, args: unknown): unknown {
  let input: unknown = args ?? {};
  if (typeof input === 'string') {
    const parsed = tryJson(input);
    if (parsed !== undefined && typeof parsed === 'object') input = parsed;
  }
  const first = schema.safeParse(input);
  if (first.success) return refuseUnknownKeys(toolId, schema, input, first.data);
  let issues = first.error.issues;
  for (let round = 0; round < MAX_COERCION_ROUNDS; round++) {
    const repaired = repair(input, issues);
    if (repaired === undefined) break;
    input = repaired;
    const again = schema.safeParse(input);
    if (again.success) return refuseUnknownKeys(toolId, schema, input, again.data);
    issues = again.error.issues;
  }
  throw new ToolInputError(formatIssues(toolId, first.error.issues, unknownKeyHints(toolId, schema, input)));
}

/**
 * A call that is valid except for keys the tool does not have is refused, not run with them
 * dropped: `{ filePath, limt: 5 }` would otherwise read the whole file when the model asked for
 * five lines. The error names each unknown key and the nearest parameter.
 */
function refuseUnknownKeys(toolId: string, schema: z.ZodType, input: unknown, data: unknown): unknown {
  const hints = unknownKeyHints(toolId, schema, input);
  if (hints.length) throw new ToolInputError(formatIssues(toolId, [], hints));
  return data;
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
    const where = issue.path.length
      ? issue.path
          .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
          .join('.')
          .replace(/\.\[/g, '[')
      : '(arguments)';
    return `- ${where}: ${issue.message}`;
  });
  if (issues.length > 10) problems.push(`- ... and ${issues.length - 10} more problems`);
  const lines = [...hints, ...problems];
  return `Invalid arguments for tool "${toolId}":\n${lines.join('\n')}\nRewrite the input so it satisfies the tool's schema, then call the tool again.`;
}

function tryJson(text: string): unknown {
  const t = text.trim();
  if (!t || !'[{'.includes(t[0])) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/** Applies one round of repairs at the issues' paths; undefined when nothing could be repaired. */
function repair(input: unknown, issues: readonly Issue[]): unknown {
  const root = structuredClone(input);
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'invalid_type' || issue.path.length === 0) continue;
    const parentPath = issue.path.slice(0, -1);
    const key = issue.path[issue.path.length - 1] as string | number;
    const parent = getAt(root, parentPath);
    if (!parent || typeof parent !== 'object') continue;
    const container = parent as Record<string | number, unknown>;
    const value = container[key];
    const expected = issue.expected;
    let next: unknown = NO_CHANGE;
    if (value === null && !Array.isArray(parent)) next = REMOVE;
    else if (typeof value === 'string') {
      const v = value.trim();
      if (expected === 'boolean' && /^(true|false)$/i.test(v)) next = v.toLowerCase() === 'true';
      else if ((expected === 'number' || expected === 'int') && v !== '' && Number.isFinite(Number(v)))
        next = Number(v);
      else if (expected === 'array' || expected === 'object') {
        const parsed = tryJson(v);
        if (parsed !== undefined && (expected === 'array') === Array.isArray(parsed)) next = parsed;
      }
    }
    if (next === NO_CHANGE) continue;
    if (next === REMOVE) delete container[key];
    else container[key] = next;
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
