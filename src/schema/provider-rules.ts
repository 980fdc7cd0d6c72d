/**
 * What each provider API documents as acceptable in a tool definition, as checks over one tool's
 * definition (API-neutral form): the loopback mocks of __tests__/providers/ refuse a request that
 * fails them (as the real API would, with a 400), and `toolbelt doctor` reports them before a run.
 * Must not convert schemas (portable.ts, strict.ts) nor know about requests beyond one definition.
 *
 * Sources (the APIs' own reference pages):
 * - OpenAI function calling: name `^[a-zA-Z0-9_-]{1,64}$`; `parameters` is a JSON Schema object
 *   (root `type: "object"`; an array schema needs `items`). Strict mode (Structured Outputs): every
 *   object sets `additionalProperties: false` and lists every property in `required`; supported
 *   keywords: type (a type or a list with "null"), properties, required, additionalProperties, items,
 *   enum, anyOf, description, title, $ref/$defs; strings: pattern, format (date-time, time, date,
 *   duration, email, hostname, ipv4, ipv6, uuid); numbers: minimum, maximum, exclusiveMinimum,
 *   exclusiveMaximum, multipleOf; arrays: minItems, maxItems. The root must not be anyOf; at most
 *   10 levels of object nesting.
 * - Anthropic Messages `tools[]`: name `^[a-zA-Z0-9_-]{1,64}$`; `input_schema` is a JSON Schema
 *   whose root is `type: "object"`, with no oneOf/anyOf/allOf at the top level; property keys match
 *   `^[a-zA-Z0-9_.-]{1,64}$`.
 * - Gemini `functionDeclarations[]`: name starts with a letter or `_`, then letters, digits, `_`, `.`,
 *   `:`, `-`, at most 64; `parameters` is a Schema: "a select subset of an OpenAPI 3.0 schema
 *   object" with the fields type, format, title, description, nullable, enum, maxItems, minItems,
 *   properties, required, minProperties, maxProperties, minLength, maxLength, pattern, example,
 *   anyOf, propertyOrdering, default, items, minimum, maximum (anything else: "Unknown name ... Cannot
 *   find field"); `enum` only for STRING; formats: NUMBER float/double, INTEGER int32/int64, STRING
 *   enum/date-time; parameter names start with a letter or `_` (letters, digits, `_`, at most 64);
 *   an OBJECT's `properties` must be non-empty.
 */

/** The model APIs whose rules are encoded here (OpenAI has two: Chat Completions and Responses). */
export type Api = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini';

/** One tool definition as a provider class sent it, in API-neutral form. */
export interface SentTool {
  name: string;
  description?: string;
  /** The parameters schema as sent (undefined when the API allows leaving it out and it was). */
  parameters?: Record<string, unknown>;
  strict?: boolean;
  /** Sent with `defer_loading: true` (found through the provider's tool search). */
  deferred?: boolean;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** Levels of object nesting OpenAI's strict mode accepts. */
export const OPENAI_STRICT_MAX_DEPTH = 10;
const ANTHROPIC_PROPERTY_KEY = /^[a-zA-Z0-9_.-]{1,64}$/;

const OPENAI_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ANTHROPIC_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const GEMINI_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;
const GEMINI_PARAMETER_NAME = /^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/;

const GEMINI_FIELDS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);
const GEMINI_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object', 'null']);
const GEMINI_FORMATS: Record<string, string[]> = {
  number: ['float', 'double'],
  integer: ['int32', 'int64'],
  string: ['enum', 'date-time'],
};

const STRICT_FIELDS = new Set([
  'type',
  'description',
  'title',
  'enum',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  '$ref',
  '$defs',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);
const STRICT_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);

/** What `api` would refuse in `tool`, one sentence per problem (empty when it is accepted). */
export function apiViolations(api: Api, tool: SentTool): string[] {
  const out: string[] = [];
  const where = (p: string) => `tool "${tool.name}"${p ? ` at ${p}` : ''}`;
  const params = tool.parameters;
  if (api === 'gemini') {
    if (!GEMINI_NAME.test(tool.name)) out.push(`${where('')}: invalid function name`);
    if (params) {
      if (lower(params.type) !== 'object') out.push(`${where('parameters')}: must be of type OBJECT`);
      geminiSchema(params, 'parameters', out, where);
    }
    return out;
  }
  const nameRule = api === 'anthropic' ? ANTHROPIC_NAME : OPENAI_NAME;
  if (!nameRule.test(tool.name)) out.push(`${where('')}: name must match ${nameRule}`);
  if (!params || params.type !== 'object') out.push(`${where('parameters')}: root must be type "object"`);
  if (api === 'anthropic' && params && ['oneOf', 'anyOf', 'allOf'].some((k) => k in params))
    out.push(`${where('input_schema')}: does not support oneOf, allOf, or anyOf at the top level`);
  if (api === 'anthropic' && params)
    walk(params, 'input_schema', (node, p) => {
      if (!isObject(node.properties)) return;
      for (const key of Object.keys(node.properties))
        if (!ANTHROPIC_PROPERTY_KEY.test(key))
          out.push(
            `${where(`${p}.properties`)}: Property keys should match pattern '${ANTHROPIC_PROPERTY_KEY.source}' (got ${JSON.stringify(key)})`,
          );
    });
  if (params) {
    walk(params, 'parameters', (node, p) => {
      if (node.type === 'array' && !('items' in node)) out.push(`${where(p)}: array schema missing items`);
    });
    if (tool.strict) strictSchema(params, out, where);
  }
  return out;
}

function geminiSchema(node: Json, p: string, out: string[], where: (p: string) => string): void {
  for (const key of Object.keys(node)) {
    if (!GEMINI_FIELDS.has(key)) out.push(`${where(p)}: Unknown name "${key}": Cannot find field.`);
  }
  const type = lower(node.type);
  if (node.type === undefined && !Array.isArray(node.anyOf)) out.push(`${where(p)}: type must be specified`);
  else if (node.type !== undefined && (typeof node.type !== 'string' || !GEMINI_TYPES.has(type)))
    out.push(`${where(p)}: invalid type ${JSON.stringify(node.type)}`);
  if ('enum' in node && type !== 'string') out.push(`${where(p)}: enum is only allowed for STRING type`);
  if (typeof node.format === 'string' && !(GEMINI_FORMATS[type] ?? []).includes(node.format))
    out.push(`${where(p)}: format "${node.format}" is not supported for ${type || 'this'} type`);
  if (type === 'object' && isObject(node.properties)) {
    if (p === 'parameters' && !Object.keys(node.properties).length)
      out.push(`${where(p)}.properties: should be non-empty for OBJECT type`);
    for (const [name, child] of Object.entries(node.properties)) {
      if (!GEMINI_PARAMETER_NAME.test(name)) out.push(`${where(p)}: invalid parameter name ${JSON.stringify(name)}`);
      if (isObject(child)) geminiSchema(child, `${p}.properties.${name}`, out, where);
    }
  }
  if (isObject(node.items)) geminiSchema(node.items, `${p}.items`, out, where);
  if (Array.isArray(node.anyOf))
    node.anyOf.forEach((b, i) => isObject(b) && geminiSchema(b, `${p}.anyOf[${i}]`, out, where));
}

function strictSchema(root: Json, out: string[], where: (p: string) => string): void {
  if ('anyOf' in root) out.push(`${where('parameters')}: strict mode: the root must not be anyOf`);
  const depth = objectDepth(root);
  if (depth > OPENAI_STRICT_MAX_DEPTH)
    out.push(
      `${where('parameters')}: strict mode: the schema has ${depth} levels of nesting, more than the ${OPENAI_STRICT_MAX_DEPTH} allowed`,
    );
  walk(root, 'parameters', (node, p) => {
    for (const key of Object.keys(node)) {
      if (!STRICT_FIELDS.has(key)) out.push(`${where(p)}: strict mode: '${key}' is not permitted`);
    }
    if (typeof node.format === 'string' && !STRICT_FORMATS.has(node.format))
      out.push(`${where(p)}: strict mode: format "${node.format}" is not supported`);
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (types.includes('object')) {
      if (node.additionalProperties !== false)
        out.push(`${where(p)}: strict mode: 'additionalProperties' is required to be supplied and to be false`);
      const keys = Object.keys(isObject(node.properties) ? node.properties : {});
      const required = Array.isArray(node.required) ? node.required : [];
      const missing = keys.filter((k) => !required.includes(k));
      if (missing.length)
        out.push(
          `${where(p)}: strict mode: 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0]}'`,
        );
    }
  });
}

/** Levels of nested objects (the root object is level 1). */
function objectDepth(node: Json): number {
  let deepest = 0;
  const children = [
    ...(isObject(node.properties) ? Object.values(node.properties) : []),
    ...(isObject(node.items) ? [node.items] : []),
    ...(['anyOf', 'oneOf', 'allOf'] as const).flatMap((k) => (Array.isArray(node[k]) ? (node[k] as unknown[]) : [])),
  ];
  for (const c of children) if (isObject(c)) deepest = Math.max(deepest, objectDepth(c));
  const types = Array.isArray(node.type) ? node.type : [node.type];
  return deepest + (types.includes('object') ? 1 : 0);
}

function walk(node: Json, p: string, visit: (node: Json, p: string) => void): void {
  visit(node, p);
  if (isObject(node.properties))
    for (const [k, v] of Object.entries(node.properties)) if (isObject(v)) walk(v, `${p}.properties.${k}`, visit);
  if (isObject(node.items)) walk(node.items, `${p}.items`, visit);
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const list = node[key];
    if (Array.isArray(list)) list.forEach((b, i) => isObject(b) && walk(b, `${p}.${key}[${i}]`, visit));
  }
  if (isObject(node.$defs))
    for (const [k, v] of Object.entries(node.$defs)) if (isObject(v)) walk(v, `${p}.$defs.${k}`, visit);
}

function lower(v: unknown): string {
  return typeof v === 'string' ? v.toLowerCase() : '';
}
