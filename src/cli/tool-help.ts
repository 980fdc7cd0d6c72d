/**
 * `toolbelt run <tool> --help`: the tool's description, its parameters and an example call.
 * Must not run the tool: it initialises it through the registry to describe it, as list.ts does.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { unknownTool, type Setup } from './command.js';

/** A JSON Schema fragment, as much of it as the help reads. */
interface JsonSchemaNode {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
  properties?: Record<string, JsonSchemaNode>;
  required?: string[];
  default?: unknown;
  description?: string;
}

function typeName(s: JsonSchemaNode): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf) return s.anyOf.map(typeName).join(' | ');
  if (s.type === 'array') return `${s.items ? typeName(s.items) : 'any'}[]`;
  if (Array.isArray(s.type)) return s.type.join(' | ');
  return s.type ?? 'any';
}

/** A value of the schema's type for the example call. */
function exampleValue(name: string, s: JsonSchemaNode): unknown {
  if (s.default !== undefined) return s.default;
  if (s.enum?.length) return s.enum[0];
  const t = Array.isArray(s.type) ? s.type[0] : (s.type ?? s.anyOf?.[0]?.type);
  if (t === 'number' || t === 'integer') return 1;
  if (t === 'boolean') return true;
  if (t === 'array') return [];
  if (t === 'object') return {};
  return `<${name}>`;
}

/** The first json block under "## Example" of the tool's page in the shipped docs, if any. */
async function documentedExample(toolId: string): Promise<string | undefined> {
  const here = path.dirname(fileURLToPath(import.meta.url)); // dist/cli/ (or src/cli/)
  const text = await readFile(path.join(here, '..', '..', 'docs', 'tools', `${toolId}.md`), 'utf8').catch(() => '');
  const block = /^## Example[\s\S]*?^```json\n([\s\S]*?)^```/m.exec(text)?.[1];
  try {
    return block === undefined ? undefined : JSON.stringify(JSON.parse(block));
  } catch {
    return undefined;
  }
}

/** Prints the help of one tool; exit code 0. */
export async function toolHelp({ registry, initCtx, grant }: Setup, toolId: string): Promise<number> {
  if (!registry.has(toolId)) throw unknownTool(registry, toolId);
  const tool = await registry.initialized(toolId, initCtx, registry.toolSet({ enabledPermissions: grant }));
  const { z } = await import('zod');
  const schema = (tool.jsonSchema ??
    z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' })) as JsonSchemaNode;
  const props = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const perms = registry.permissions(toolId)!;
  const example =
    (await documentedExample(toolId)) ??
    JSON.stringify(Object.fromEntries(props.filter(([n]) => required.has(n)).map(([n, p]) => [n, exampleValue(n, p)])));
  const out = [
    `${toolId} (permissions: ${[...perms.required, ...(perms.optional ?? []).map((p) => `${p}?`)].join(', ') || 'none'})`,
    '',
    tool.description.trim(),
    '',
    'Parameters:',
    ...(props.length ? [] : ['  (none)']),
    ...props.map(([name, p]) => {
      const info = [typeName(p), required.has(name) ? 'required' : 'optional'];
      if (p.default !== undefined) info.push(`default ${JSON.stringify(p.default)}`);
      return `  ${name} (${info.join(', ')})${p.description ? `: ${p.description}` : ''}`;
    }),
    '',
    'Example:',
    `  toolbelt run ${toolId} '${example}'`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
}
