/**
 * OpenAI strict mode (Structured Outputs for function calling): every object lists all its
 * properties as required and sets `additionalProperties: false`; a field the tool treats as
 * optional becomes required-but-nullable, and the pipeline's argument repair turns the `null` the
 * model then sends back into "absent" before validation. Keywords strict mode refuses are dropped.
 * Must not apply provider-independent rules (portable.ts does).
 */
import type { JsonSchema } from './portable.js';

/** Keywords of the portable subset that OpenAI's strict mode does not support (the tool's own validation still applies them). */
export const STRICT_DROPPED_KEYWORDS: readonly string[] = ['minLength', 'maxLength', 'default'];

/** Turns a portable schema (see portableJsonSchema) into one OpenAI accepts with `strict: true`. */
export function strictJsonSchema(schema: JsonSchema): JsonSchema {
  return convert(schema);
}

function convert(node: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (STRICT_DROPPED_KEYWORDS.includes(key)) continue;
    if (key === 'anyOf' && Array.isArray(value)) out.anyOf = value.map((b) => convert(b as JsonSchema));
    else if (key === 'items' && isObject(value)) out.items = convert(value);
    else if (key === 'properties' && isObject(value)) {
      const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
      const props: JsonSchema = {};
      for (const [name, child] of Object.entries(value)) {
        const converted = convert(child as JsonSchema);
        props[name] = required.has(name) ? converted : nullable(converted);
      }
      out.properties = props;
      out.required = Object.keys(props);
      out.additionalProperties = false;
    } else if (key !== 'required') out[key] = value;
  }
  if (out.type === 'object' && !out.properties) {
    out.properties = {};
    out.required = [];
    out.additionalProperties = false;
  }
  return out;
}

/** `T` -> `T | null`: a type list for a plain typed node, an extra anyOf branch otherwise (enums must not list null). */
function nullable(node: JsonSchema): JsonSchema {
  if (Array.isArray(node.anyOf)) {
    const has = node.anyOf.some((b) => isObject(b) && b.type === 'null');
    return has ? node : { ...node, anyOf: [...(node.anyOf as unknown[]), { type: 'null' }] };
  }
  if (typeof node.type === 'string' && !node.enum) return { ...node, type: [node.type, 'null'] };
  const { description, ...rest } = node;
  return description !== undefined
    ? { anyOf: [rest, { type: 'null' }], description }
    : { anyOf: [rest, { type: 'null' }] };
}

function isObject(v: unknown): v is JsonSchema {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}
