/**
 * Output caps. Output over the cap is cut to what fits, and the full text is written to a file the
 * model can read with the read tool (the output directory is a read-only root of every workspace).
 * Must not know which tool produced the output.
 */
import { SavedOutputs } from '../workspace/saved-outputs.js';
import { standaloneTenant } from '../workspace/tenant.js';

/** Default cap on the lines of output a model sees from one call. */
export const DEFAULT_MAX_LINES = 2000;
/** Default cap on the bytes (UTF-8) of output a model sees from one call. */
export const DEFAULT_MAX_BYTES = 50 * 1024;
/**
 * A tool that says it cut its own output (`metadata.truncated: true`, with its own "how to see the
 * rest" hint: bash's head and tail, read's offset) is left alone up to this many times the byte cap;
 * past it the registry's cap applies all the same. `truncated: false` never switches the cap off.
 */
export const SELF_CAPPED_MAX_FACTOR = 4;
/**
 * A failed call's error sentence (`metadata.error`) is put back after its cut output when it is at
 * most this many characters; a longer one (an MCP error that is the whole output) is only in the saved file.
 */
export const CAPPED_ERROR_MAX_CHARS = 2_000;

/** Caps and where full outputs go. */
export interface TruncateOptions {
  maxLines?: number;
  maxBytes?: number;
  /** Save full outputs exactly in this directory (default: the registry's private directory). */
  outputDir?: string;
  /** Where full outputs go (a registry passes its tenant's store); default the standalone tenant's. */
  store?: SavedOutputs;
}

/** The capped text and, when it was cut, where the full text is. */
export interface TruncateResult {
  output: string;
  truncated: boolean;
  outputPath?: string;
}

/**
 * The caps that apply to an output given what its tool said about it: the registry's caps, or, for
 * a tool that cut its output itself (`truncated === true`), SELF_CAPPED_MAX_FACTOR times the byte cap
 * and no line cap (its own cut keeps what it chose, such as a command's last lines).
 */
export function capsFor(selfTruncated: unknown, options: TruncateOptions): TruncateOptions {
  if (selfTruncated !== true) return options;
  return {
    ...options,
    maxBytes: (options.maxBytes ?? DEFAULT_MAX_BYTES) * SELF_CAPPED_MAX_FACTOR,
    maxLines: Number.MAX_SAFE_INTEGER,
  };
}

/** A cheap check that rules out truncation for most outputs (false means it surely fits). */
export function mayNeedTruncation(text: string, options: TruncateOptions = {}): boolean {
  const maxLines = options.maxLines ?? DEFAULT_MAX_LINES;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  // A UTF-16 code unit is at most 3 UTF-8 bytes.
  return text.length * 3 > maxBytes || countLinesUpTo(text, maxLines + 1) > maxLines;
}

/** Caps `text` to the line and byte limits, keeping the head; saves the whole text when it cuts. */
export async function truncateOutput(
  text: string,
  toolId: string,
  options: TruncateOptions = {},
): Promise<TruncateResult> {
  const maxLines = options.maxLines ?? DEFAULT_MAX_LINES;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  if (!mayNeedTruncation(text, options)) return { output: text, truncated: false };
  const totalBytes = Buffer.byteLength(text, 'utf8');
  const lines = text.split('\n');
  if (lines.length <= maxLines && totalBytes <= maxBytes) return { output: text, truncated: false };

  const kept: string[] = [];
  let bytes = 0;
  for (const line of lines) {
    if (kept.length >= maxLines) break;
    const size = Buffer.byteLength(line, 'utf8') + 1;
    if (bytes + size > maxBytes) break;
    kept.push(line);
    bytes += size;
  }
  let shown = `${kept.length} of ${lines.length} lines`;
  let nextLine = kept.length + 1;
  if (kept.length === 0 && lines.length > 0 && maxLines > 0) {
    // One line longer than the byte cap: show its beginning rather than nothing.
    const head = Buffer.from(lines[0], 'utf8')
      .subarray(0, maxBytes)
      .toString('utf8')
      .replace(/\uFFFD$/, '');
    kept.push(head);
    bytes = Buffer.byteLength(head, 'utf8');
    shown = `the first ${bytes} bytes of line 1 of ${lines.length} lines`;
    nextLine = 1;
  }
  const store = options.store ?? (options.outputDir ? new SavedOutputs(options.outputDir) : standaloneTenant.outputs);
  const file = await store.save(toolId, text);
  const hint =
    `\n\n... output truncated: showing ${shown} (${bytes} of ${totalBytes} bytes). ` +
    `The full output is saved at ${file}. Read it with the read tool using offset=${nextLine}, ` +
    `or search it with grep, instead of re-running the command.`;
  return { output: kept.join('\n') + hint, truncated: true, outputPath: file };
}

/** Writes `text` to a new 0600 file in a tenant's private output directory (default: the standalone tenant's); returns its path. */
export async function saveFullOutput(
  text: string,
  toolId: string,
  store: SavedOutputs = standaloneTenant.outputs,
): Promise<string> {
  return store.save(toolId, text);
}

function countLinesUpTo(text: string, limit: number): number {
  let count = 1;
  for (let i = text.indexOf('\n'); i !== -1 && count < limit; i = text.indexOf('\n', i + 1)) count++;
  return count;
}
