/**
 * Normalising any JSON Schema (from zod, or as an MCP server sent it) into the subset that every
 * provider API accepts for tool parameters: OpenAI Chat Completions and Responses, Anthropic
 * Messages and Gemini `functionDeclarations[].parameters` (the narrowest: a subset of OpenAPI 3.0).
 * What cannot be kept is dropped; what a model still needs to know (a constant, a format, integer
 * enum values) moves into the description. docs/providers.md lists each rule and why.
 * Must not know about zod or tools: JSON Schema in, JSON Schema out.
 */

/** A JSON Schema node, loosely typed: imported schemas can hold anything. */
export type JsonSchema = Record<string, unknown>;

/** The keywords a portable schema may hold (Gemini's Schema fields, minus the OpenAPI-only `nullable`/`example`). */
export const PORTABLE_KEYWORDS: ReadonlySet<string> = new Set([
  'type',
  'description',
  'enum',
  'properties',
  'required',
  'items',
  'anyOf',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'default',
]);

/** The `format` values kept: the only string format both Gemini and OpenAI's strict mode document. */
export const PORTABLE_FORMATS: ReadonlySet<string> = new Set(['date-time']);

/** How deep a recursive `$ref` is inlined before the rest is cut (named so the cut is documented). */
export const MAX_REF_DEPTH = 3;

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object', 'null']);
const SAFE_BOUND = Number.MAX_SAFE_INTEGER;

/** Normalises `schema` (a tool's parameters) into the portable subset; the root is always an object schema. */
export function portableJsonSchema(schema: unknown): JsonSchema {
  const root = isObject(schema) ? schema : {};
  const out = normalise(root, { root, refDepth: new Map() });
  if (out.type !== 'object') {
    // A tool's parameters are an object; anything else (rare in MCP) is wrapped so the call still has a shape.
    return { type: 'object', properties: {}, ...(out.description ? { description: out.description } : {}) };
  }
  if (!isObject(out.properties)) out.properties = {};
  return out;
}

interface Walk {
  root: JsonSchema;
  /** How many times each `$ref` is open on the current path (to cut recursion). */
  refDepth: Map<string, number>;
}

function normalise(input: JsonSchema, walk: Walk): JsonSchema {
  let node = input;
  if (typeof node.$ref === 'string') {
    const ref = node.$ref;
    const depth = walk.refDepth.get(ref) ?? 0;
    const target = resolveRef(walk.root, ref);
    const { $ref: _ref, ...siblings } = node;
    if (!target || depth >= MAX_REF_DEPTH) {
      const kind = target && typeof target.type === 'string' ? target.type : 'object';
      return withNote(
        { type: kind === 'array' ? 'array' : kind, ...(kind === 'array' ? { items: {} } : {}) },
        stringOf(siblings.description) ?? stringOf(target?.description),
        target ? 'nested deeper than shown here: same shape as its parent' : `unresolved reference ${ref}`,
      );
    }
    walk.refDepth.set(ref, depth + 1);
    try {
      return normalise({ ...target, ...siblings }, walk);
    } finally {
      walk.refDepth.set(ref, depth);
    }
  }
  if (Array.isArray(node.allOf)) node = mergeAllOf(node, walk);

  const notes: string[] = [];
  const out: JsonSchema = {};
  const description = stringOf(node.description) ?? stringOf(node.title);

  // Alternatives: oneOf reads as anyOf for a model; a type list is an anyOf of its types.
  const alternatives = Array.isArray(node.anyOf) ? node.anyOf : Array.isArray(node.oneOf) ? node.oneOf : undefined;
  if (alternatives) {
    const { anyOf: _a, oneOf: _o, ...base } = node;
    const branches = alternatives.filter(isObject).map((b) => normalise({ ...withoutDescription(base), ...b }, walk));
    return collapseAnyOf(branches, description);
  }
  let type = node.type;
  if (Array.isArray(type)) {
    const types = type.filter((t): t is string => typeof t === 'string' && JSON_TYPES.has(t));
    if (types.length > 1) {
      const { type: _t, ...base } = node;
      return collapseAnyOf(
        types.map((t) => normalise({ ...withoutDescription(base), type: t }, walk)),
        description,
      );
    }
    type = types[0];
  }
  if (typeof type !== 'string' || !JSON_TYPES.has(type)) {
    type = inferType(node);
    if (type === ANY) {
      type = 'string';
      notes.push('any JSON value');
    }
  }
  out.type = type;

  if ('const' in node) {
    if (typeof node.const === 'string') out.enum = [node.const];
    else notes.push(`must be ${JSON.stringify(node.const)}`);
  }
  if (Array.isArray(node.enum)) {
    const values = node.enum.filter((v) => v !== null);
    if (values.length && values.every((v) => typeof v === 'string') && type === 'string') out.enum = values;
    else if (values.length) notes.push(`one of ${values.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if (type === 'object') {
    const props: JsonSchema = {};
    if (isObject(node.properties)) {
      for (const [key, value] of Object.entries(node.properties)) {
        if (isObject(value)) props[key] = normalise(value, walk);
        else if (value === true) props[key] = { type: 'string' };
      }
    }
    out.properties = props;
    const required = Array.isArray(node.required)
      ? node.required.filter((k): k is string => typeof k === 'string' && k in props)
      : [];
    if (required.length) out.required = [...new Set(required)];
    if (isObject(node.additionalProperties) && !Object.keys(props).length)
      notes.push('an object whose keys are free-form');
  }
  if (type === 'array') {
    const items = Array.isArray(node.prefixItems) ? undefined : node.items;
    out.items = isObject(items) ? normalise(items, walk) : {};
    copyNumber(node, out, 'minItems');
    copyNumber(node, out, 'maxItems');
  }
  if (type === 'string') {
    copyNumber(node, out, 'minLength');
    copyNumber(node, out, 'maxLength');
    if (typeof node.pattern === 'string') out.pattern = node.pattern;
    if (typeof node.format === 'string') {
      if (PORTABLE_FORMATS.has(node.format)) out.format = node.format;
      else notes.push(`format: ${node.format}`);
    }
  }
  if (type === 'number' || type === 'integer') bounds(node, out, type === 'integer');
  if ('default' in node && node.default !== undefined && isJsonValue(node.default)) out.default = node.default;
  return withNote(out, description, notes.join('; '));
}

/** `minimum`/`maximum` kept; exclusive bounds become inclusive ones; bounds at the safe-integer edge mean "none". */
function bounds(node: JsonSchema, out: JsonSchema, integer: boolean): void {
  const lower = pickBound(node.minimum, node.exclusiveMinimum, integer, +1);
  const upper = pickBound(node.maximum, node.exclusiveMaximum, integer, -1);
  if (lower !== undefined) out.minimum = lower;
  if (upper !== undefined) out.maximum = upper;
}

function pickBound(inclusive: unknown, exclusive: unknown, integer: boolean, step: 1 | -1): number | undefined {
  let value: number | undefined;
  if (typeof inclusive === 'number' && Number.isFinite(inclusive)) value = inclusive;
  if (typeof exclusive === 'number' && Number.isFinite(exclusive)) {
    // An integer just past an exclusive bound is the inclusive one; a number keeps the bound itself
    // (the tool's own validation still refuses the edge value with a clear message).
    const asInclusive = integer
      ? Number.isInteger(exclusive)
        ? exclusive + step
        : Math[step > 0 ? 'ceil' : 'floor'](exclusive)
      : exclusive;
    value = value === undefined ? asInclusive : step > 0 ? Math.max(value, asInclusive) : Math.min(value, asInclusive);
  }
  if (value === undefined || Math.abs(value) >= SAFE_BOUND) return undefined;
  return value;
}

function collapseAnyOf(branches: JsonSchema[], description: string | undefined): JsonSchema {
  const unique: JsonSchema[] = [];
  for (const b of branches) if (!unique.some((u) => JSON.stringify(u) === JSON.stringify(b))) unique.push(b);
  if (unique.length === 1) return withNote(unique[0], description ?? stringOf(unique[0].description), '');
  return description ? { anyOf: unique, description } : { anyOf: unique };
}

function mergeAllOf(node: JsonSchema, walk: Walk): JsonSchema {
  const { allOf, ...rest } = node;
  const merged: JsonSchema = { ...rest };
  for (const part of (allOf as unknown[]).filter(isObject)) {
    const resolved = typeof part.$ref === 'string' ? (resolveRef(walk.root, part.$ref) ?? {}) : part;
    for (const [key, value] of Object.entries(resolved)) {
      if (key === 'properties' && isObject(value)) {
        merged.properties = { ...(isObject(merged.properties) ? merged.properties : {}), ...value };
      } else if (key === 'required' && Array.isArray(value)) {
        merged.required = [
          ...(Array.isArray(merged.required) ? (merged.required as unknown[]) : []),
          ...(value as unknown[]),
        ];
      } else if (!(key in merged)) merged[key] = value;
    }
  }
  return merged;
}

function inferType(node: JsonSchema): string {
  if (isObject(node.properties) || isObject(node.additionalProperties)) return 'object';
  if ('items' in node || 'prefixItems' in node) return 'array';
  if (Array.isArray(node.enum) && node.enum.length) {
    const kinds = new Set(node.enum.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
    if (kinds.size === 1) {
      const [kind] = kinds;
      if (kind === 'string' || kind === 'integer' || kind === 'number' || kind === 'boolean') return kind;
    }
  }
  if ('const' in node) {
    const v = node.const;
    if (typeof v === 'string' || typeof v === 'boolean') return typeof v;
    if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  }
  if ('minimum' in node || 'maximum' in node) return 'number';
  return ANY;
}

/** inferType's answer for a node that says nothing about its type: sent as a string, described as "any JSON value". */
const ANY = 'any';

function resolveRef(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let cur: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(cur)) return undefined;
    cur = cur[key];
  }
  return isObject(cur) ? cur : undefined;
}

function withNote(node: JsonSchema, description: string | undefined, note: string): JsonSchema {
  const text = [description, note ? `(${note})` : ''].filter(Boolean).join(' ');
  const { description: _d, ...rest } = node;
  return text ? { ...rest, description: text } : rest;
}

function withoutDescription(node: JsonSchema): JsonSchema {
  const { description: _d, title: _t, ...rest } = node;
  return rest;
}

function copyNumber(from: JsonSchema, to: JsonSchema, key: string): void {
  const v = from[key];
  if (typeof v === 'number' && Number.isFinite(v) && v >= 0 && v < SAFE_BOUND) to[key] = v;
}

function stringOf(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() ? v : undefined;
}

function isObject(v: unknown): v is JsonSchema {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function isJsonValue(v: unknown): boolean {
  try {
    return JSON.stringify(v) !== undefined;
  } catch {
    return false;
  }
}
