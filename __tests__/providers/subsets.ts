/**
 * The provider APIs' rules as the mocks apply them: what one request body of each API carries
 * (`sentTools`, `serverTools`) and the rules toolbelt holds itself to (`toolbeltViolations`). The
 * APIs' own rules live in src/schema/provider-rules.ts (shared with `toolbelt doctor`) and are
 * re-exported here.
 */
import { apiViolations, type Api, type SentTool } from '../../src/schema/provider-rules.js';

export { apiViolations, type Api, type SentTool };

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
