/**
 * Tool import: how a tool an MCP server lists becomes a registry entry — its id, permissions,
 * schema and description — and how its `tools/call` result becomes a `Tool.Result`.
 * Must not hold connection state: one listed tool in, one registry entry out.
 */
import { z } from 'zod';
import { Tool } from '../authoring/tool.js';
import type { ToolPermission } from '../authoring/permissions.js';
import type { McpPermissionsConfig, McpToolInfo } from './types.js';

/** Default time limit (ms) of one imported tool call without progress, unless the server config sets `timeoutMs`. */
export const DEFAULT_MCP_TOOL_TIMEOUT_MS = 60_000;
/** Default time limit (ms) of one imported tool call however much progress it reports (`maxTotalTimeoutMs`). */
export const DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS = 600_000;
/** How much later (ms) than the SDK's total timeout the pipeline's backstop stops an imported call. */
const PIPELINE_BACKSTOP_MS = 1_000;
/** Separator between the server name and the tool name in an imported tool's id. */
export const MCP_NAME_SEPARATOR = '__';
/** The longest tool id providers accept (OpenAI's function-name rule). */
const MAX_ID_LENGTH = 64;

/** `server__tool`, with every character outside `[a-zA-Z0-9_-]` replaced by `_` and cut to 64 characters. */
export function mcpToolId(server: string, tool: string): string {
  const raw = `${server}${MCP_NAME_SEPARATOR}${tool}`.replace(/[^a-zA-Z0-9_-]/g, '_');
  return (raw || 'mcp_tool').slice(0, MAX_ID_LENGTH);
}

/** `id`, or `id_2`, `id_3`, ... (kept within 64 characters) when `id` is taken. */
export function uniqueId(id: string, taken: ReadonlySet<string>): string {
  if (!taken.has(id)) return id;
  for (let n = 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = id.slice(0, MAX_ID_LENGTH - suffix.length) + suffix;
    if (!taken.has(candidate)) return candidate;
  }
}

/** The permissions an imported tool requires under `config`. */
export function permissionsFor(config: McpPermissionsConfig | undefined, tool: McpToolInfo): ToolPermission[] {
  let perms: ToolPermission[] | undefined;
  if (typeof config === 'function') perms = config(tool);
  else if (Array.isArray(config)) perms = config;
  else if (config) perms = config[tool.name] ?? config['*'];
  return perms ? [...perms] : tool.annotations?.readOnlyHint ? ['read'] : ['execute'];
}

/**
 * The one place where an imported tool's `inputSchema` becomes the registry entry's schema: the
 * JSON Schema clients and models are shown, and the zod schema the pipeline validates with (a
 * permissive object when zod cannot convert it; the server validates then).
 */
export function entrySchema(inputSchema: unknown): { jsonSchema: Record<string, unknown>; parameters: z.ZodType } {
  const jsonSchema =
    inputSchema && typeof inputSchema === 'object' && !Array.isArray(inputSchema)
      ? (inputSchema as Record<string, unknown>)
      : { type: 'object', properties: {} };
  let parameters: z.ZodType;
  try {
    parameters = z.fromJSONSchema(jsonSchema);
  } catch {
    parameters = z.record(z.string(), z.unknown());
  }
  return { jsonSchema, parameters };
}

/** The first line (at most 120 characters) of an imported tool's description, for lazy listings. */
export function oneLineSummary(info: McpToolInfo): string {
  const text = (info.description ?? info.title ?? info.annotations?.title ?? info.name).trim();
  const first = text.split(/\n|(?<=\.)\s/)[0] ?? text;
  return first.length > 120 ? `${first.slice(0, 117)}...` : first;
}

/** Calls a tool on the server the imported tool came from. */
export type McpCall = (tool: string, args: Record<string, unknown>, ctx: Tool.Context) => Promise<CallToolResultLike>;

/** How an imported tool is made: its server, the id it gets, what the server listed, how to call it. */
export interface ImportSpec {
  server: string;
  id: string;
  info: McpToolInfo;
  /** The pipeline's limit (ms); the SDK's own progress-aware timeout stops the call earlier. */
  maxTotalTimeoutMs: number;
  call: McpCall;
}

/** An MCP server's tool as a `Tool.Info` whose calls go to the server. */
export function importedTool({ server, id, info, maxTotalTimeoutMs, call }: ImportSpec): Tool.Info {
  const { jsonSchema, parameters } = entrySchema(info.inputSchema);
  const description = `[${server}] ${info.description ?? info.title ?? info.annotations?.title ?? info.name}`;
  return Tool.define(id, {
    description,
    parameters,
    jsonSchema,
    ...(info.title !== undefined ? { title: info.title } : {}),
    ...(info.outputSchema ? { outputJsonSchema: info.outputSchema } : {}),
    ...(info.annotations ? { annotations: info.annotations } : {}),
    // The SDK's timeout (reset by progress) stops the call and says why; the pipeline's limit is
    // only a backstop, a little later so that the SDK's clearer error wins.
    timeout: { managed: true, maxMs: maxTotalTimeoutMs + PIPELINE_BACKSTOP_MS },
    async execute(args, ctx) {
      return toResult(server, info.name, await call(info.name, args as Record<string, unknown>, ctx));
    },
  });
}

interface ContentLike {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri: string; mimeType?: string; text?: string; blob?: string };
}

/** The fields of a `tools/call` result that become a `Tool.Result`. */
export interface CallToolResultLike {
  content?: ContentLike[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  toolResult?: unknown;
}

/**
 * Maps an MCP `tools/call` result to a `Tool.Result`: text -> output, the rest -> attachments,
 * `structuredContent` -> `structuredContent` (and the output when there is no text).
 */
function toResult(server: string, tool: string, result: CallToolResultLike): Tool.Result {
  const texts: string[] = [];
  const attachments: Tool.Attachment[] = [];
  const content = Array.isArray(result.content) ? result.content : [];
  for (const item of content) {
    switch (item.type) {
      case 'text':
        texts.push(item.text ?? '');
        break;
      case 'image':
        attachments.push({ type: 'image', mime: item.mimeType ?? 'application/octet-stream', data: item.data });
        break;
      case 'audio':
        attachments.push({ type: 'file', mime: item.mimeType ?? 'application/octet-stream', data: item.data });
        break;
      case 'resource': {
        const r = item.resource;
        if (!r) break;
        attachments.push({
          type: 'resource',
          mime: r.mimeType ?? (r.text !== undefined ? 'text/plain' : 'application/octet-stream'),
          uri: r.uri,
          ...(r.text !== undefined ? { text: r.text } : {}),
          ...(r.blob !== undefined ? { data: r.blob } : {}),
        });
        break;
      }
      case 'resource_link':
        attachments.push({
          type: 'resource',
          mime: item.mimeType ?? 'application/octet-stream',
          uri: item.uri,
          filename: item.name,
        });
        texts.push(`[resource: ${item.uri}]`);
        break;
      default:
        break;
    }
  }
  if (result.toolResult !== undefined && content.length === 0) texts.push(stringify(result.toolResult));
  let output = texts.join('\n');
  if (!output && result.structuredContent) output = stringify(result.structuredContent);
  const metadata: Tool.Metadata = { server, tool };
  if (result.isError) {
    metadata.error = output || `MCP tool "${tool}" on server "${server}" reported an error without a message.`;
  }
  const out: Tool.Result = { title: `${server}: ${tool}`, metadata, output };
  if (result.structuredContent) out.structuredContent = result.structuredContent;
  if (attachments.length) out.attachments = attachments;
  return out;
}

function stringify(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
