/**
 * webfetch's HTML -> markdown/text conversion, run in worker threads (html-worker.mjs): the
 * libraries are super-linear and recursive on deeply nested pages, so on the main thread one page
 * could freeze every other call. A worker cannot block the event loop, gets its own stack and heap
 * limits, and is terminated when the conversion outlives its time. sanitize-html and turndown are
 * loaded only inside the workers, so importing the package does not load them.
 * Must not fetch or check URLs (webfetch.ts, net/ssrf.ts) nor load the converters on the main thread.
 */
import { Worker } from 'node:worker_threads';

/** Longest a conversion may take before its worker is terminated. */
export const MAX_CONVERT_MS = 15_000;
/** Tags nested deeper than this are dropped before conversion (their text is kept). */
export const MAX_HTML_DEPTH = 100;
/** Conversions running at once; more wait for a free worker. */
export const MAX_CONVERT_WORKERS = 2;
/** Heap and stack limits of one conversion worker. */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 512, stackSizeMb: 8 };

/** Thrown when a conversion ran out of time (`MAX_CONVERT_MS` or the caller's). */
/**
 * The host's Node flags, less those a worker file cannot take: a worker inherits `process.execArgv`,
 * and `--input-type` (a host started as `node --input-type=module -e ...`) makes starting it throw.
 */
const WORKER_EXEC_ARGV = process.execArgv.filter((a) => !a.startsWith('--input-type') && a !== '-e' && a !== '--eval');

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

interface Job {
  id: number;
  req: ConvertRequest;
  resolve(output: string): void;
  reject(err: Error): void;
}

type Reply = { id: number; output: string } | { id: number; error: string };

const WORKER_URL = new URL('./html-worker.mjs', import.meta.url);

/** A small pool of conversion workers; idle workers do not keep the process alive. */
class ConverterPool {
  private readonly idle: Worker[] = [];
  private readonly queue: Job[] = [];
  private running = 0;
  private nextId = 1;

  convert(req: ConvertRequest): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, req, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length && this.running < MAX_CONVERT_WORKERS) {
      const job = this.queue.shift() as Job;
      if (job.req.signal?.aborted) {
        job.reject(new Error('The conversion was aborted.'));
        continue;
      }
      this.running++;
      this.start(
        job,
        this.idle.pop() ?? new Worker(WORKER_URL, { resourceLimits: WORKER_LIMITS, execArgv: WORKER_EXEC_ARGV }),
      );
    }
  }

  private start(job: Job, worker: Worker): void {
    worker.ref(); // a pending conversion keeps the process alive
    let settled = false;
    const done = (keep: boolean, finish: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      job.req.signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (keep) {
        worker.unref();
        this.idle.push(worker);
      } else {
        void worker.terminate();
      }
      this.running--;
      finish();
      this.pump();
    };
    const timeoutMs = Math.min(job.req.timeoutMs ?? MAX_CONVERT_MS, MAX_CONVERT_MS);
    const timer = setTimeout(
      () => done(false, () => job.reject(new ConvertTimeoutError(`The conversion took longer than ${timeoutMs} ms.`))),
      timeoutMs,
    );
    const onAbort = () => done(false, () => job.reject(new Error('The conversion was aborted.')));
    const onMessage = (reply: Reply) => {
      if (reply.id !== job.id) return;
      if ('error' in reply) done(true, () => job.reject(new Error(reply.error)));
      else done(true, () => job.resolve(reply.output));
    };
    const onError = (err: Error) => done(false, () => job.reject(err));
    const onExit = (code: number) =>
      done(false, () => job.reject(new Error(`The converter stopped (exit code ${code}).`)));
    job.req.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    const { html, format, base, dropped } = job.req;
    worker.postMessage({ id: job.id, html, format, base, dropped: [...dropped], maxDepth: MAX_HTML_DEPTH });
  }
}

let pool: ConverterPool | undefined;

/** Converts HTML to markdown or text in a worker; rejects on timeout (ConvertTimeoutError), abort or failure. */
export function convertHtml(req: ConvertRequest): Promise<string> {
  return (pool ??= new ConverterPool()).convert(req);
}
