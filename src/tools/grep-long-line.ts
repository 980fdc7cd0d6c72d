/**
 * grep's JS backend for lines too long to match on the main thread: the line is tested in a worker
 * thread (grep-worker.mjs), which is terminated when the call is aborted or times out. Only whether
 * the line matches is decided here; reading, context and output stay in grep-js.ts.
 */
import { Worker } from 'node:worker_threads';
import type { CompiledPattern } from './grep-pattern.js';

/**
 * A line longer than this (bytes) is matched in a worker when the pattern runs on re2js: at the
 * slowest patterns' ~10-20 µs per character, longer lines would hold the event loop past ~100 ms.
 */
export const AUTOMATON_LONG_LINE_BYTES = 8 * 1024;
/** Long-line workers running at once; more lines wait for a free one. */
export const MAX_LONG_LINE_WORKERS = 2;

/** The host's Node flags, less those a worker file cannot take (see html-convert.ts). */
const WORKER_EXEC_ARGV = process.execArgv.filter((a) => !a.startsWith('--input-type') && a !== '-e' && a !== '--eval');
const WORKER_URL = new URL('./grep-worker.mjs', import.meta.url);

type Reply = { id: number; hit: boolean } | { id: number; error: string };

interface Job {
  id: number;
  bytes: Uint8Array;
  pattern: CompiledPattern;
  signal: AbortSignal;
  resolve(hit: boolean | undefined): void;
  reject(err: Error): void;
}

/** A few workers, reused; idle ones do not keep the process alive. */
class LongLinePool {
  private readonly idle: Worker[] = [];
  private readonly queue: Job[] = [];
  private running = 0;
  private nextId = 1;

  test(bytes: Uint8Array, pattern: CompiledPattern, signal: AbortSignal): Promise<boolean | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, bytes, pattern, signal, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length && this.running < MAX_LONG_LINE_WORKERS) {
      const job = this.queue.shift() as Job;
      if (job.signal.aborted) {
        job.resolve(undefined);
        continue;
      }
      this.running++;
      this.start(job, this.idle.pop() ?? new Worker(WORKER_URL, { execArgv: WORKER_EXEC_ARGV }));
    }
  }

  private start(job: Job, worker: Worker): void {
    worker.ref(); // a pending test keeps the process alive
    let settled = false;
    const done = (keep: boolean, finish: () => void): void => {
      if (settled) return;
      settled = true;
      job.signal.removeEventListener('abort', onAbort);
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
    // Aborted (or timed out): the worker may be deep in a slow match; end it.
    const onAbort = () => done(false, () => job.resolve(undefined));
    const onMessage = (reply: Reply) => {
      if (reply.id !== job.id) return;
      if ('error' in reply) done(true, () => job.reject(new Error(reply.error)));
      else done(true, () => job.resolve(reply.hit));
    };
    const onError = (err: Error) => done(false, () => job.reject(err));
    const onExit = (code: number) =>
      done(false, () => job.reject(new Error(`The long-line matcher stopped (exit code ${code}).`)));
    job.signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    const { source, caseInsensitive, automaton } = job.pattern;
    // A buffer of its own (Buffer.concat of a long line) is moved to the worker, not cloned.
    const { bytes } = job;
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    worker.postMessage(
      { id: job.id, source, caseInsensitive, automaton, bytes },
      own && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [],
    );
  }
}

let pool: LongLinePool | undefined;

/**
 * Whether one line (its bytes, without the `\n`) matches `pattern`, decided in a worker thread;
 * undefined when `signal` fired first. `bytes` is unusable afterwards when it owns its whole
 * ArrayBuffer (it is transferred).
 */
export function testLongLine(
  bytes: Uint8Array,
  pattern: CompiledPattern,
  signal: AbortSignal,
): Promise<boolean | undefined> {
  return (pool ??= new LongLinePool()).test(bytes, pattern, signal);
}
