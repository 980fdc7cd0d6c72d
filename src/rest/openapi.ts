/**
 * OpenAPI 3 import: a document (file, URL or object) -> one `RestToolConfig` per operation
 * (operationId as name; path, query and header parameters and the JSON request body as the
 * arguments' schema, `$ref`s resolved by openapi-load.ts in a bounded worker). A path key that is
 * not a path keeping the server's origin skips its operation with the reason. No HTTP calls of the tools here.
 */
import type { Registry } from '../registry/registry.js';
import type { SsrfPolicy } from '../net/ssrf.js';
import { loadOpenApiDocument } from './openapi-load.js';
import { registerRestTools, type RegisterRestOptions, type RestToolConfig } from './tools.js';

/** Longest tool description an imported operation gets (summary + description), in characters. */
export const OPENAPI_MAX_DESCRIPTION_CHARS = 1024;
/** Levels of nested schema kept before the rest is summarised in a description. */
export const OPENAPI_MAX_SCHEMA_DEPTH = 8;
/**
 * Schema objects one operation's arguments may hold (within OPENAPI_MAX_SCHEMA_DEPTH); an
 * operation past it is skipped with the reason: its tool schema would be too large for a model.
 */
export const OPENAPI_MAX_SCHEMA_NODES = 10_000;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'] as const;

/** How an OpenAPI document becomes tools. */
export interface OpenApiImportOptions {
  /** Base URL of the API; default the document's first `servers` entry (a relative one resolved against the document's URL). */
  serverUrl?: string;
  /** Credentials added to every request (values may use `${ENV}`); an operation parameter they cover is not shown to the model. */
  auth?: {
    /** `Authorization: Bearer <token>`. */
    bearer?: string;
    headers?: Record<string, string>;
    query?: Record<string, string>;
  };
  /** Only operations with one of these tags. */
  tags?: string[];
  /** Only these operationIds. */
  operations?: string[];
  /** Applied to every tool made (see `RestToolConfig`). */
  cacheTtlSeconds?: number;
  concurrency?: number;
  timeoutSeconds?: number;
  /** The address policy for fetching the document and for the tools' calls. */
  ssrfPolicy?: SsrfPolicy;
  allowedHosts?: string[];
}

/** What an import produced: the tool configs, and the operations left out with the reason. */
export interface OpenApiImport {
  title: string;
  configs: RestToolConfig[];
  skipped: Array<{ operation: string; reason: string }>;
}

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  description?: string;
  required?: boolean;
  schema?: Json;
}

/** Reads and dereferences an OpenAPI 3 document and makes one REST tool config per selected operation. */
export async function importOpenApi(
  source: string | object,
  options: OpenApiImportOptions = {},
): Promise<OpenApiImport> {
  const { doc, base } = await loadOpenApiDocument(source, options.ssrfPolicy);
  const version = str(doc.openapi, '');
  if (!version.startsWith('3.'))
    throw new Error(
      `Not an OpenAPI 3 document (openapi: ${JSON.stringify(doc.openapi ?? doc.swagger ?? null)}). Convert Swagger 2 documents to OpenAPI 3 first.`,
    );
  const server = serverUrl(doc, base, options.serverUrl);
  const auth = authTemplates(options.auth);
  const configs: RestToolConfig[] = [];
  const skipped: OpenApiImport['skipped'] = [];
  const paths = (doc.paths ?? {}) as Record<string, Json>;
  for (const [route, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item?.[method] as Json | undefined;
      if (!op) continue;
      const operationId = str(op.operationId, `${method}_${route}`.replace(/[^a-zA-Z0-9]+/g, '_'));
      const tags = Array.isArray(op.tags) ? op.tags.map(String) : [];
      if (options.operations && !options.operations.includes(operationId)) continue;
      if (options.tags && !tags.some((t) => options.tags!.includes(t))) continue;
      try {
        configs.push(operationConfig({ route, method, op, item, operationId, tags, server, auth, options }));
      } catch (err) {
        skipped.push({ operation: operationId, reason: (err as Error).message });
      }
    }
  }
  const info = (doc.info ?? {}) as Json;
  return { title: str(info.title, 'API'), configs, skipped };
}

/** `importOpenApi` then `registerRestTools`: returns the registered ids and the operations left out. */
export async function registerOpenApiTools(
  registry: Registry,
  source: string | object,
  options: OpenApiImportOptions & RegisterRestOptions = {},
): Promise<{ ids: string[]; skipped: OpenApiImport['skipped'] }> {
  const imported = await importOpenApi(source, options);
  const ids = registerRestTools(registry, imported.configs, options);
  return { ids, skipped: imported.skipped };
}

function serverUrl(doc: Json, base: URL | undefined, given: string | undefined): string {
  const servers = Array.isArray(doc.servers) ? (doc.servers as Json[]) : [];
  let raw = given ?? (servers[0]?.url as string | undefined);
  if (!raw) throw new Error('The document lists no servers; pass serverUrl.');
  if (!given && servers[0]?.variables) {
    for (const [name, v] of Object.entries(servers[0].variables as Record<string, Json>))
      raw = raw.replaceAll(`{${name}}`, str(v.default, ''));
  }
  if (/^https?:\/\//i.test(raw)) return raw.replace(/\/+$/, '');
  if (!base)
    throw new Error(
      `The document's server URL ${JSON.stringify(raw)} is relative and the document has no URL; pass serverUrl.`,
    );
  return new URL(raw, base).href.replace(/\/+$/, '');
}

function authTemplates(auth: OpenApiImportOptions['auth']): {
  headers: Record<string, string>;
  query: Record<string, string>;
} {
  const headers = { ...(auth?.headers ?? {}) };
  if (auth?.bearer) headers.Authorization = `Bearer ${auth.bearer}`;
  return { headers, query: { ...(auth?.query ?? {}) } };
}

interface OperationInput {
  route: string;
  method: string;
  op: Json;
  item: Json;
  operationId: string;
  tags: string[];
  server: string;
  auth: { headers: Record<string, string>; query: Record<string, string> };
  options: OpenApiImportOptions;
}

function operationConfig(input: OperationInput): RestToolConfig {
  const { route, method, op, item, operationId, server, auth, options } = input;
  const params = mergeParameters(item.parameters, op.parameters);
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  const query: Record<string, string> = { ...auth.query };
  const headers: Record<string, string> = { ...auth.headers };
  const covered = (p: Parameter) =>
    (p.in === 'header' && Object.keys(auth.headers).some((h) => h.toLowerCase() === p.name.toLowerCase())) ||
    (p.in === 'query' && p.name in auth.query);
  checkRoute(route, server);
  const budget = { left: OPENAPI_MAX_SCHEMA_NODES };
  let path = route;
  for (const p of params) {
    if (p.in === 'cookie') {
      if (p.required) throw new Error(`it needs the cookie parameter "${p.name}", which is not supported`);
      continue;
    }
    if (covered(p)) continue;
    const arg = argName(p.name, properties);
    properties[arg] = schemaToJson(
      p.schema ?? { type: 'string' },
      p.description || `${p.in} parameter ${p.name}`,
      0,
      budget,
    );
    if (p.required || p.in === 'path') required.push(arg);
    if (p.in === 'path') path = path.replaceAll(`{${p.name}}`, `{${arg}}`);
    else if (p.in === 'query') query[p.name] = `{${arg}}`;
    else headers[p.name] = `{${arg}}`;
  }
  let body: unknown;
  const requestBody = op.requestBody as Json | undefined;
  if (requestBody) {
    const content = (requestBody.content ?? {}) as Record<string, Json>;
    const type = Object.keys(content).find((t) => t === 'application/json' || /\+json$/.test(t));
    if (!type) {
      throw new Error(`its request body is ${Object.keys(content).join(', ')}; only JSON request bodies are supported`);
    } else {
      const arg = argName('body', properties);
      properties[arg] = schemaToJson(
        (content[type].schema as Json) ?? {},
        str(requestBody.description, 'The request body'),
        0,
        budget,
      );
      if (requestBody.required) required.push(arg);
      body = `{${arg}}`;
      headers['Content-Type'] = type;
    }
  }
  const text = [op.summary, op.description]
    .filter((s) => typeof s === 'string' && s.trim())
    .map((s) => String(s).trim());
  if (text.length === 2 && text[1].startsWith(text[0].replace(/\.$/, ''))) text.shift();
  let description = `${text.join(' ') || `${method.toUpperCase()} ${route}`} (${method.toUpperCase()} ${route})`;
  if (description.length > OPENAPI_MAX_DESCRIPTION_CHARS)
    description = `${description.slice(0, OPENAPI_MAX_DESCRIPTION_CHARS - 3)}...`;
  return {
    name: operationId,
    description,
    method: method.toUpperCase() as RestToolConfig['method'],
    url: `${server}${path}`,
    query,
    headers,
    ...(body !== undefined ? { body } : {}),
    parametersSchema: { type: 'object', properties, ...(required.length ? { required } : {}) },
    unusedArguments: 'ignore',
    ...(options.cacheTtlSeconds !== undefined ? { cacheTtlSeconds: options.cacheTtlSeconds } : {}),
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.timeoutSeconds !== undefined ? { timeoutSeconds: options.timeoutSeconds } : {}),
    ...(options.ssrfPolicy ? { ssrfPolicy: options.ssrfPolicy } : {}),
    ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
  };
}

/**
 * A path key must be a path (`/pets/{id}`) that keeps the server's origin: one starting with `@`,
 * `:port`, `.host` or `//` would make `server + path` another host, and the auth go there.
 */
function checkRoute(route: string, server: string): void {
  if (!route.startsWith('/')) throw new Error(`its path ${JSON.stringify(route)} does not start with "/"`);
  // `{param}` and `${ENV}` stand for values; the origin is judged with a placeholder in their place.
  const plain = (text: string) => text.replace(/\$?\{[^}]*\}/g, 'x');
  let built: URL;
  let base: URL;
  try {
    base = new URL(plain(server));
    built = new URL(`${plain(server)}${plain(route)}`);
  } catch {
    throw new Error(`its path ${JSON.stringify(route)} does not make a valid URL with the server ${server}`);
  }
  if (built.origin !== base.origin || built.username !== base.username || built.password !== base.password)
    throw new Error(
      `its path ${JSON.stringify(route)} would send requests to ${built.origin} instead of the server ${base.origin}`,
    );
}

/** Path-level parameters, overridden by the operation's own with the same name and location. */
function mergeParameters(pathLevel: unknown, opLevel: unknown): Parameter[] {
  const out = new Map<string, Parameter>();
  for (const list of [pathLevel, opLevel])
    if (Array.isArray(list)) for (const p of list as Parameter[]) if (p?.name && p.in) out.set(`${p.in}:${p.name}`, p);
  return [...out.values()];
}

/** A parameter name every provider accepts (letters, digits, `_`; not starting with a digit), unique among `taken`. */
function argName(name: string, taken: Record<string, unknown>): string {
  let arg = name.replace(/[^a-zA-Z0-9_]/g, '_');
  if (!/^[a-zA-Z_]/.test(arg)) arg = `_${arg}`;
  arg = arg.slice(0, 60);
  let n = 2;
  const stem = arg;
  while (arg in taken) arg = `${stem}_${n++}`;
  return arg;
}

const KEPT = [
  'type',
  'enum',
  'format',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'default',
  'title',
] as const;

/** An OpenAPI 3.0 schema object as JSON Schema: `nullable` as a type list, OpenAPI-only keywords dropped, a description everywhere. */
function schemaToJson(schema: Json, fallbackDescription: string, depth: number, budget: { left: number }): Json {
  if (--budget.left < 0)
    throw new Error(
      `its argument schemas have more than ${OPENAPI_MAX_SCHEMA_NODES.toLocaleString('en-US')} schema objects ` +
        '(OPENAPI_MAX_SCHEMA_NODES), too large for a tool schema',
    );
  if (!schema || typeof schema !== 'object') return { type: 'string', description: fallbackDescription };
  if (typeof schema.$ref === 'string' || depth > OPENAPI_MAX_SCHEMA_DEPTH)
    return {
      type: 'object',
      description: `${fallbackDescription} (a nested ${refName(schema)} object; shown no deeper)`,
    };
  const out: Json = {};
  for (const key of KEPT) if (schema[key] !== undefined) out[key] = schema[key];
  if (out.format === 'binary' || out.format === 'byte') delete out.format;
  // OpenAPI 3.0's boolean exclusive bounds.
  if (schema.exclusiveMinimum === true && typeof schema.minimum === 'number') out.exclusiveMinimum = schema.minimum;
  if (schema.exclusiveMaximum === true && typeof schema.maximum === 'number') out.exclusiveMaximum = schema.maximum;
  if (out.exclusiveMinimum !== undefined) delete out.minimum;
  if (out.exclusiveMaximum !== undefined) delete out.maximum;
  let description = str(schema.description, fallbackDescription);
  if (schema.example !== undefined) description += ` (e.g. ${JSON.stringify(schema.example)})`;
  out.description = description;
  if (schema.properties && typeof schema.properties === 'object') {
    const props: Json = {};
    for (const [name, child] of Object.entries(schema.properties as Record<string, Json>)) {
      if (child?.readOnly === true) continue; // set by the server, never sent
      props[name] = schemaToJson(child, name, depth + 1, budget);
    }
    out.properties = props;
    if (!out.type) out.type = 'object';
    const req = Array.isArray(schema.required)
      ? schema.required.filter((r) => typeof r === 'string' && r in props)
      : [];
    if (req.length) out.required = req;
  }
  if (schema.items && typeof schema.items === 'object')
    out.items = schemaToJson(schema.items as Json, 'an item', depth + 1, budget);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
    out.additionalProperties = schemaToJson(schema.additionalProperties as Json, 'a value', depth + 1, budget);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const list = schema[key];
    if (Array.isArray(list)) out[key] = list.map((s: Json, i) => schemaToJson(s, `option ${i + 1}`, depth + 1, budget));
  }
  if (schema.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

function refName(schema: Json): string {
  return typeof schema.$ref === 'string' ? (schema.$ref.split('/').pop() ?? 'recursive') : 'deeper';
}

/** A string, number or boolean as text; anything else (absent, an object) is `fallback`. */
function str(value: unknown, fallback: string): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : fallback;
}
