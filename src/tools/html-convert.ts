/**
 * webfetch's HTML -> markdown/text conversion, run in worker threads (html-worker.mjs): the
 * libraries are super-linear and recursive on deeply nested pages, so on the main thread one page
 * could freeze every other call. A worker cannot block the event loop, gets its own stack and heap
 * limits, and is terminated when the conversion outlives its time. sanitize-html and turndown are
 * loaded only inside the workers, so importing the package does not load them.
 * Must not fetch or check URLs (webfetch.ts, net/ssrf.ts) nor load the converters on the main thread.
 */
import { WorkerPool } from '../worker-pool.js';

/** Longest a conversion may take before its worker is terminated. */
export const MAX_CONVERT_MS = 15_000;
/** Tags nested deeper than this are dropped before conversion (their text is kept). */
export const MAX_HTML_DEPTH = 100;
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

let pool: WorkerPool<{ output: string }> | undefined;

/** Converts HTML to markdown or text in a worker; rejects on timeout (ConvertTimeoutError), abort or failure. */
export async function convertHtml(req: ConvertRequest): Promise<string> {
  pool ??= new WorkerPool(WORKER_URL, MAX_CONVERT_WORKERS, 'converter', WORKER_LIMITS);
  const { html, format, base, dropped } = req;
  const timeoutMs = Math.min(req.timeoutMs ?? MAX_CONVERT_MS, MAX_CONVERT_MS);
  const outcome = await pool.run({
    message: { html, format, base, dropped: [...dropped], maxDepth: MAX_HTML_DEPTH },
    signal: req.signal,
    timeoutMs,
  });
  if ('reply' in outcome) return outcome.reply.output;
  if (outcome.stopped === 'timeout')
    throw new ConvertTimeoutError(`The conversion took longer than ${outcome.timeoutMs} ms.`);
  throw new Error('The conversion was aborted.');
}
