/**
 * What each provider API documents as acceptable in a tool definition, as checks over the request
 * body a provider class actually sent. The mock servers refuse a request that fails them (as the
 * real API would, with a 400), and the schema-conformance suite asserts every tool passes them.
 *
 * Sources (the APIs' own reference pages):
 * - OpenAI function calling: name `^[a-zA-Z0-9_-]{1,64}$`; `parameters` is a JSON Schema object
 *   (root `type: "object"`; an array schema needs `items`). Strict mode (Structured Outputs): every
 *   object sets `additionalProperties: false` and lists every property in `required`; supported
 *   keywords: type (a type or a list with "null"), properties, required, additionalProperties, items,
 *   enum, anyOf, description, title, $ref/$defs; strings: pattern, format (date-time, time, date,
 *   duration, email, hostname, ipv4, ipv6, uuid); numbers: minimum, maximum, exclusiveMinimum,
 *   exclusiveMaximum, multipleOf; arrays: minItems, maxItems. The root must not be anyOf.
 * - Anthropic Messages `tools[]`: name `^[a-zA-Z0-9_-]{1,64}$`; `input_schema` is a JSON Schema
 *   whose root is `type: "object"`, with no oneOf/anyOf/allOf at the top level.
 * - Gemini `functionDeclarations[]`: name starts with a letter or `_`, then letters, digits, `_`, `.`,
 *   `:`, `-`, at most 64; `parameters` is a Schema: "a select subset of an OpenAPI 3.0 schema
 *   object" with the fields type, format, title, description, nullable, enum, maxItems, minItems,
 *   properties, required, minProperties, maxProperties, minLength, maxLength, pattern, example,
 *   anyOf, propertyOrdering, default, items, minimum, maximum (anything else: "Unknown name ... Cannot
 *   find field"); `enum` only for STRING; formats: NUMBER float/double, INTEGER int32/int64, STRING
 *   enum/date-time; parameter names start with a letter or `_` (letters, digits, `_`, at most 64);
 *   an OBJECT's `properties` must be non-empty.
 */

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

/**
 * The provider's own (server) tools in a request body: OpenAI Responses' `{ type: 'tool_search' }`
 * and other built-ins, Anthropic's typed tools such as `tool_search_tool_bm25_20251119`.
 */
export function serverTools(api: Api, body: Json): Json[] {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObject) : [];
  if (api === 'openai-responses') return tools.filter((t) => t.type !== undefined && t.type !== 'function');
  if (api === 'anthropic') return tools.filter((t) => typeof t.type === 'string' && t.type !== 'custom');
  return [];
}

/** The tool definitions in a request body of `api` (function tools; the provider's own are `serverTools`). */
export function sentTools(api: Api, body: Json): SentTool[] {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObject) : [];
  switch (api) {
    case 'openai-chat':
      return tools.map((t) => {
        const f = isObject(t.function) ? t.function : {};
        return {
          name: String(f.name),
          description: f.description as string | undefined,
          parameters: f.parameters as Json | undefined,
          strict: f.strict === true,
          ...(t.defer_loading === true ? { deferred: true } : {}),
        };
      });
    case 'openai-responses': {
      const server = new Set(serverTools(api, body));
      return tools
        .filter((t) => !server.has(t))
        .map((t) => ({
          name: String(t.name),
          description: t.description as string | undefined,
          parameters: t.parameters as Json | undefined,
          strict: t.strict === true,
          ...(t.defer_loading === true ? { deferred: true } : {}),
        }));
    }
    case 'anthropic': {
      const server = new Set(serverTools(api, body));
      return tools
        .filter((t) => !server.has(t))
        .map((t) => ({
          name: String(t.name),
          description: t.description as string | undefined,
          parameters: t.input_schema as Json | undefined,
          ...(t.defer_loading === true ? { deferred: true } : {}),
        }));
    }
    case 'gemini':
      return tools
        .flatMap((t): unknown[] => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations : []))
        .filter(isObject)
        .map((f) => ({
          name: String(f.name),
          description: f.description as string | undefined,
          parameters: f.parameters as Json | undefined,
        }));
  }
}

/** The JSON text of the tool definitions in a request body (what the measured sizes count). */
export function toolsText(api: Api, body: Json): string {
  return JSON.stringify(body.tools ?? []);
}

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

/** The rules toolbelt holds every schema it sends to: the intersection of the APIs, plus descriptions for every parameter. */
export function toolbeltViolations(tool: SentTool): string[] {
  const out: string[] = [];
  const where = (p: string) => `tool "${tool.name}" at ${p}`;
  if (!tool.description?.trim()) out.push(`tool "${tool.name}": no description`);
  if (tool.description && tool.description.length > 4096)
    out.push(`tool "${tool.name}": description over 4096 characters`);
  if (!tool.parameters) return out;
  walk(tool.parameters, 'parameters', (node, p) => {
    for (const key of ['$schema', '$ref', '$defs', 'definitions', 'const', 'exclusiveMinimum', 'exclusiveMaximum']) {
      if (key in node) out.push(`${where(p)}: has "${key}"`);
    }
    for (const key of ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems']) {
      const v = node[key];
      if (typeof v === 'number' && Math.abs(v) >= Number.MAX_SAFE_INTEGER) out.push(`${where(p)}: ${key} is ${v}`);
    }
    if (typeof node.format === 'string' && node.format !== 'date-time')
      out.push(`${where(p)}: format "${node.format}"`);
    if (isObject(node.properties)) {
      for (const [name, child] of Object.entries(node.properties)) {
        if (!isObject(child) || typeof child.description !== 'string' || !child.description.trim())
          out.push(`${where(`${p}.properties.${name}`)}: no description`);
      }
    }
  });
  return out;
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
