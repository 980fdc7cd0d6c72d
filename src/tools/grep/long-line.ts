/**
 * grep's JS backend for lines too long to match on the main thread: the line is tested in a worker
 * thread (worker.mjs), which is terminated when the call is aborted or times out. Only whether
 * the line matches is decided here; reading, context and output stay in grep-js.ts.
 */
import { WorkerPool } from '../../platform/worker-pool.js';
import type { CompiledPattern } from './pattern.js';

/**
 * A line longer than this (bytes) is matched in a worker when the pattern runs on re2js: at the
 * slowest patterns' ~10-20 µs per character, longer lines would hold the event loop past ~100 ms.
 */
export const AUTOMATON_LONG_LINE_BYTES = 8 * 1024;
/** Long-line workers running at once; more lines wait for a free one. */
export const MAX_LONG_LINE_WORKERS = 2;

const WORKER_URL = new URL('./worker.mjs', import.meta.url);

let pool: WorkerPool<{ hit: boolean }> | undefined;

/**
 * Whether one line (its bytes, without the `\n`) matches `pattern`, decided in a worker thread;
 * undefined when `signal` fired first (the worker, perhaps deep in a slow match, is ended). `bytes`
 * is unusable afterwards when it owns its whole ArrayBuffer (it is transferred, not cloned).
 */
export async function testLongLine(
  bytes: Uint8Array,
  pattern: CompiledPattern,
  signal: AbortSignal,
): Promise<boolean | undefined> {
  pool ??= new WorkerPool(WORKER_URL, MAX_LONG_LINE_WORKERS, 'long-line matcher');
  const { source, caseInsensitive, automaton } = pattern;
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  const outcome = await pool.run({
    message: { source, caseInsensitive, automaton, bytes },
    transfer: own && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [],
    signal,
  });
  return 'reply' in outcome ? outcome.reply.hit : undefined;
}
