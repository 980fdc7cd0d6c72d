/**
 * A tool's zod parameters as the JSON Schema every provider receives: zod's own conversion (input
 * side), then `portableJsonSchema`. A schema that cannot be converted fails here, once, with the
 * tool, the field and the fix, instead of later inside a provider class's `bindTools`.
 * Must not know about providers beyond calling portableJsonSchema.
 */
import { z } from 'zod';
import { portableJsonSchema, type JsonSchema } from './portable.js';
import { strictJsonSchema } from './strict.js';

/** A tool's parameter schema cannot be sent to model providers; the message names the tool, the field and the fix. */
export class ToolSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolSchemaError';
  }
}

/** Something in a zod schema a provider never sees: a transform, a refinement, or a type JSON Schema cannot express. */
export interface SchemaEffect {
  /** Dotted path of the field (`(parameters)` for the root, `[]` for array items). */
  path: string;
  kind: 'transform' | 'refinement' | 'unrepresentable';
  /** zod's name for the node, e.g. `pipe`, `date`, `custom`. */
  zodType: string;
}

const UNREPRESENTABLE: Readonly<Record<string, string>> = {
  transform:
    'declare the plain type the model should send (e.g. z.boolean()) and convert inside execute; sloppy input such as "true", "5", JSON text or null for an optional field is already repaired before validation',
  date: 'use z.string() described as an ISO 8601 date (or z.iso.datetime()) and parse it in execute',
  bigint: 'use z.number().int() or z.string()',
  map: 'use z.record(z.string(), ...) instead',
  set: 'use z.array(...) instead',
  symbol: 'use a JSON type (string, number, boolean, array or object)',
  undefined: 'use .optional() on a JSON type instead',
  void: 'use .optional() on a JSON type instead',
  function: 'use a JSON type (string, number, boolean, array or object)',
  promise: 'use a JSON type (string, number, boolean, array or object)',
  custom: 'use a JSON type (string, number, boolean, array or object), with a description of what it must hold',
  nan: 'use z.number()',
};

type Def = Record<string, unknown> & { type: string; checks?: Array<{ _zod: { def: { check: string } } }> };

function defOf(schema: unknown): Def | undefined {
  return (schema as { _zod?: { def?: Def } })?._zod?.def;
}

/** Lists every transform, refinement and unrepresentable type in `schema` (the side the model writes). */
export function schemaEffects(schema: z.ZodType): SchemaEffect[] {
  const found: SchemaEffect[] = [];
  const seen = new Set<unknown>();
  const visit = (node: unknown, path: string[]): void => {
    const def = defOf(node);
    if (!def || seen.has(node)) return;
    seen.add(node);
    const where = path.length ? path.join('.').replace(/\.\[\]/g, '[]') : '(parameters)';
    if (def.checks?.some((c) => c._zod.def.check === 'custom'))
      found.push({ path: where, kind: 'refinement', zodType: def.type });
    if (def.type === 'transform') found.push({ path: where, kind: 'transform', zodType: def.type });
    else if (def.type in UNREPRESENTABLE) found.push({ path: where, kind: 'unrepresentable', zodType: def.type });
    switch (def.type) {
      case 'object':
        for (const [key, child] of Object.entries(def.shape as Record<string, unknown>)) visit(child, [...path, key]);
        if (def.catchall) visit(def.catchall, [...path, '*']);
        break;
      case 'array':
        visit(def.element, [...path, '[]']);
        break;
      case 'tuple':
        (def.items as unknown[]).forEach((child, i) => visit(child, [...path, `[${i}]`]));
        if (def.rest) visit(def.rest, [...path, '[]']);
        break;
      case 'union':
        for (const child of def.options as unknown[]) visit(child, path);
        break;
      case 'intersection':
        visit(def.left, path);
        visit(def.right, path);
        break;
      case 'record':
        visit(def.valueType, [...path, '*']);
        break;
      case 'pipe':
        // A transform on the way in (z.preprocess) changes what the model must send; one after the
        // type (.transform) does not, but it is still an effect a built-in must not carry.
        visit(def.in, path);
        if (defOf(def.out)?.type === 'transform') found.push({ path: where, kind: 'transform', zodType: 'pipe' });
        else visit(def.out, path);
        break;
      case 'lazy':
        visit((def.getter as () => unknown)(), path);
        break;
      default:
        if (def.innerType) visit(def.innerType, path);
    }
  };
  visit(schema, []);
  return found;
}

/** Throws a ToolSchemaError when `schema` cannot be the parameters of a tool sent to model providers. */
export function assertRepresentable(toolId: string, schema: z.ZodType): void {
  const root = defOf(schema);
  if (root?.type !== 'object') {
    throw new ToolSchemaError(
      `Tool "${toolId}": its parameters must be a z.object({...}) (every provider requires an object schema for tool arguments), got z.${root?.type ?? typeof schema}(). Wrap the value in an object field, e.g. z.object({ value: ... }).`,
    );
  }
  const problem = schemaEffects(schema).find(
    (e) => e.kind === 'unrepresentable' || (e.kind === 'transform' && e.zodType === 'transform'),
  );
  if (problem) {
    const what = problem.zodType === 'transform' ? 'a transform (z.preprocess)' : `z.${problem.zodType}()`;
    throw new ToolSchemaError(
      `Tool "${toolId}": parameter "${problem.path}" uses ${what}, which cannot be represented in the JSON Schema sent to model providers. Fix: ${UNREPRESENTABLE[problem.zodType]}.`,
    );
  }
}

const portableCache = new WeakMap<z.ZodType, JsonSchema>();
const strictCache = new WeakMap<z.ZodType, JsonSchema>();

/**
 * The JSON Schema every provider receives for a tool's zod parameters (see portableJsonSchema);
 * computed once per schema object. Throws a ToolSchemaError naming the field when it cannot be.
 */
export function toolJsonSchema(toolId: string, schema: z.ZodType): JsonSchema {
  let out = portableCache.get(schema);
  if (!out) {
    assertRepresentable(toolId, schema);
    let raw: JsonSchema;
    try {
      raw = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw' });
    } catch (err) {
      throw new ToolSchemaError(
        `Tool "${toolId}": its parameters cannot be represented in the JSON Schema sent to model providers (${(err as Error).message}). Use plain JSON types (string, number, boolean, array, object) and convert inside execute.`,
      );
    }
    out = portableJsonSchema(raw);
    portableCache.set(schema, out);
  }
  return out;
}

/** The OpenAI strict-mode form of toolJsonSchema (see strictJsonSchema); computed once per schema object. */
export function strictToolJsonSchema(toolId: string, schema: z.ZodType): JsonSchema {
  let out = strictCache.get(schema);
  if (!out) {
    out = strictJsonSchema(toolJsonSchema(toolId, schema));
    strictCache.set(schema, out);
  }
  return out;
}
