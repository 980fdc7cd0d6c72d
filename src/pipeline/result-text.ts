/**
 * resultText: the one text a finished call shows, whoever asked for it.
 * Must not shape text per entry point: langchain.ts, mcp/server.ts and cli/run.ts all show exactly this.
 */
import type { ToolFinalUpdate } from './types.js';

/**
 * The text every entry point shows for a finished call — the LangChain ToolMessage, an MCP result
 * (`isError` or not) and `toolbelt run` — so a model, an MCP client and a CLI user read the same
 * sentence: the output, which on failure always carries the error (not just an error code).
 */
export function resultText(final: ToolFinalUpdate): string {
  return final.result.output || final.error || (final.success ? '' : `Tool "${final.toolId}" failed.`);
}
