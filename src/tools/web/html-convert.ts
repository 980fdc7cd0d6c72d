/**
 * webfetch's HTML -> markdown/text conversion, run in worker threads (html-worker.mjs): the
 * libraries are super-linear and recursive on deeply nested pages, so on the main thread one page
 * could freeze every other call. A worker cannot block the event loop, gets its own stack and heap
 * limits, and is terminated when the conversion outlives its time. sanitize-html and turndown are
 * loaded only inside the workers, so importing the package does not load them.
 * Must not fetch or check URLs (webfetch.ts, net/ssrf.ts) nor load the converters on the main thread.
 */
import { WorkerPool } from '../../platform/worker-pool.js';

/** Longest a conversion may take before its worker is terminated. */
export const MAX_CONVERT_MS = 15_000;
/** Tags nested deeper than this are dropped before conversion (their text is kept). */
export const MAX_HTML_DEPTH = 100;
/**
 * Nesting allowed in the raw page before it is parsed: open tags deeper than this are dropped
 * (with their end tags; their text is kept) by a linear pre-pass, so the parser, whose cost grows
 * with the square of the depth of unclosed tags, never goes deeper. Twice MAX_HTML_DEPTH, since
 * raw nesting counts elements that sanitizing removes.
 */
export const MAX_HTML_PARSE_DEPTH = 2 * MAX_HTML_DEPTH;
/** Elements converted to markdown (turndown costs ~30 µs each); the page is cut at the next one, and the result says so. */
export const MAX_HTML_ELEMENTS = 50_000;
/** Elements of the raw page parsed for either format (markdown or text); the page is cut at the next one, and the result says so. */
export const MAX_HTML_PARSE_ELEMENTS = 200_000;
/** Conversions running at once; more wait for a free worker. */
export const MAX_CONVERT_WORKERS = 2;
/** Heap and stack limits of one conversion worker. */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 512, stackSizeMb: 8 };

/** Thrown when a conversion ran out of time (`MAX_CONVERT_MS` or the caller's). */
export class ConvertTimeoutError extends Error {}

/** What to convert. */
export interface ConvertRequest {
  html: string;
  format: 'markdown' | 'text';
  /** Links and images are made absolute against this URL (markdown). */
  base?: string;
  /** Elements removed with their content. */
  dropped: readonly string[];
  signal?: AbortSignal;
  /** Time limit (ms), at most MAX_CONVERT_MS. */
  timeoutMs?: number;
}

const WORKER_URL = new URL('./html-worker.mjs', import.meta.url);

/** A conversion's result. */
export interface Converted {
  output: string;
  /** The element limit (MAX_HTML_ELEMENTS or MAX_HTML_PARSE_ELEMENTS) at which the page was cut; 0 if it was not. */
  truncatedAt: number;
}

const LIMITS = {
  maxDepth: MAX_HTML_DEPTH,
  maxParseDepth: MAX_HTML_PARSE_DEPTH,
  maxElements: MAX_HTML_ELEMENTS,
  maxParseElements: MAX_HTML_PARSE_ELEMENTS,
};

let pool: WorkerPool<Converted> | undefined;

/** Converts HTML to markdown or text in a worker; rejects on timeout (ConvertTimeoutError), abort or failure. */
export async function convertHtml(req: ConvertRequest): Promise<Converted> {
  pool ??= new WorkerPool(WORKER_URL, MAX_CONVERT_WORKERS, 'converter', WORKER_LIMITS);
  const { html, format, base, dropped } = req;
  const timeoutMs = Math.min(req.timeoutMs ?? MAX_CONVERT_MS, MAX_CONVERT_MS);
  const outcome = await pool.run({
    message: { html, format, base, dropped: [...dropped], limits: LIMITS },
    signal: req.signal,
    timeoutMs,
  });
  if ('reply' in outcome) return { output: outcome.reply.output, truncatedAt: outcome.reply.truncatedAt };
  if (outcome.stopped === 'timeout')
    throw new ConvertTimeoutError(`The conversion took longer than ${outcome.timeoutMs} ms.`);
  throw new Error('The conversion was aborted.');
}
