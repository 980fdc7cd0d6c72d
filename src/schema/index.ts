/**
 * The JSON Schema a tool's parameters are sent to model providers as: one place that decides it,
 * used by the LangChain adapter (and so by every provider class), the demo and the CLI.
 * Must not hold conversion rules: portable.ts, strict.ts and zod.ts do.
 */
import type { z } from 'zod';
import { portableJsonSchema, type JsonSchema } from './portable.js';
import { strictJsonSchema } from './strict.js';
import { strictToolJsonSchema, toolJsonSchema } from './zod.js';

export { portableJsonSchema, PORTABLE_KEYWORDS, PORTABLE_FORMATS, MAX_REF_DEPTH, type JsonSchema } from './portable.js';
export { strictJsonSchema, STRICT_DROPPED_KEYWORDS } from './strict.js';
export { ToolSchemaError, assertRepresentable, schemaEffects, toolJsonSchema, type SchemaEffect } from './zod.js';

/** How the schema is shaped: `portable` for every provider, `strict` for OpenAI's strict mode. */
export interface ProviderSchemaOptions {
  strict?: boolean;
}

const fromJson = new WeakMap<object, JsonSchema>();
const fromJsonStrict = new WeakMap<object, JsonSchema>();

/**
 * The parameters' JSON Schema as providers receive it: a tool's own `jsonSchema` (tools imported
 * from MCP servers) normalised by portableJsonSchema, else its zod `parameters` converted.
 */
export function providerJsonSchema(
  tool: { id: string; parameters: z.ZodType; jsonSchema?: Record<string, unknown> },
  options: ProviderSchemaOptions = {},
): JsonSchema {
  const given = tool.jsonSchema;
  if (!given)
    return options.strict ? strictToolJsonSchema(tool.id, tool.parameters) : toolJsonSchema(tool.id, tool.parameters);
  const cache = options.strict ? fromJsonStrict : fromJson;
  let out = cache.get(given);
  if (!out) {
    const portable = fromJson.get(given) ?? portableJsonSchema(given);
    fromJson.set(given, portable);
    out = options.strict ? strictJsonSchema(portable) : portable;
    cache.set(given, out);
  }
  return out;
}
