import type { ToolFinalUpdate } from './pipeline/types.js';

/**
 * The text every entry point shows for a finished call — the LangChain ToolMessage, an MCP result
 * (`isError` or not) and `toolbelt run` — so a model, an MCP client and a CLI user read the same
 * sentence: the output, which on failure always carries the error (not just an error code).
 */
export function resultText(final: ToolFinalUpdate): string {
  return final.result.output || final.error || (final.success ? '' : `Tool "${final.toolId}" failed.`);
}
