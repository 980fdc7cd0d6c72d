/**
 * A small pool of reusable worker threads for CPU-bound work that must not hold the event loop:
 * jobs queue for a free worker, a job that is aborted or outlives its time terminates its worker,
 * and idle workers do not keep the process alive. Used by grep's long lines and webfetch's HTML.
 * Must not know what the workers compute: callers give the message and read the reply.
 */
import { Worker, type ResourceLimits, type Transferable } from 'node:worker_threads';

/**
 * The host's Node flags, less those a worker file cannot take: a worker inherits `process.execArgv`,
 * and `--input-type` (a host started as `node --input-type=module -e ...`) makes starting it throw.
 */
const WORKER_EXEC_ARGV = process.execArgv.filter((a) => !a.startsWith('--input-type') && a !== '-e' && a !== '--eval');

/** How a job ended when the worker did not answer: the caller's signal fired, or its time ran out. */
export type WorkerStop = { stopped: 'aborted' } | { stopped: 'timeout'; timeoutMs: number };

/** One job: what to post (the pool adds `id`), what to move rather than copy, and its limits. */
export interface WorkerJob {
  message: Record<string, unknown>;
  transfer?: Transferable[];
  signal?: AbortSignal;
  timeoutMs?: number;
}

interface Queued<T> {
  id: number;
  job: WorkerJob;
  resolve: (outcome: { reply: T } | WorkerStop) => void;
  reject: (err: Error) => void;
}

/** A worker's answer: `{ id, error }` is a failure, any other `{ id, ... }` is the reply. */
type Reply = { id: number; error?: string };

export class WorkerPool<T> {
  private readonly idle: Worker[] = [];
  private readonly queue: Queued<T>[] = [];
  private running = 0;
  private nextId = 1;

  /**
   * `name` words the failure when a worker dies ("The <name> stopped (exit code 1).").
   */
  constructor(
    private readonly url: URL,
    private readonly size: number,
    private readonly name: string,
    private readonly resourceLimits?: ResourceLimits,
  ) {}

  /**
   * Runs `job` on a free worker: resolves with its reply, or with how it was stopped (abort,
   * timeout); rejects when the worker reports an error or dies.
   */
  run(job: WorkerJob): Promise<{ reply: T } | WorkerStop> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, job, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length && this.running < this.size) {
      const queued = this.queue.shift() as Queued<T>;
      if (queued.job.signal?.aborted) {
        queued.resolve({ stopped: 'aborted' });
        continue;
      }
      let worker: Worker;
      try {
        worker =
          this.idle.pop() ??
          new Worker(this.url, {
            execArgv: WORKER_EXEC_ARGV,
            ...(this.resourceLimits ? { resourceLimits: this.resourceLimits } : {}),
          });
      } catch (err) {
        // No worker, no slot taken: the job fails and the queue goes on.
        queued.reject(new Error(`The ${this.name} could not be started: ${(err as Error).message}.`, { cause: err }));
        continue;
      }
      this.running++;
      this.start(queued, worker);
    }
  }

  private start({ id, job, resolve, reject }: Queued<T>, worker: Worker): void {
    worker.ref(); // a pending job keeps the process alive
    let settled = false;
    const done = (keep: boolean, finish: () => void): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      job.signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (keep) {
        worker.unref();
        this.idle.push(worker);
      } else {
        void worker.terminate(); // it may be deep in slow work: end it
      }
      this.running--;
      finish();
      this.pump();
    };
    const timeoutMs = job.timeoutMs;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => done(false, () => resolve({ stopped: 'timeout', timeoutMs })), timeoutMs);
    const onAbort = () => done(false, () => resolve({ stopped: 'aborted' }));
    const onMessage = (reply: Reply) => {
      if (reply.id !== id) return;
      if (typeof reply.error === 'string') {
        const message = reply.error;
        done(true, () => reject(new Error(message)));
      } else done(true, () => resolve({ reply: reply as T }));
    };
    const onError = (err: Error) => done(false, () => reject(err));
    const onExit = (code: number) =>
      done(false, () => reject(new Error(`The ${this.name} stopped (exit code ${code}).`)));
    job.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    try {
      worker.postMessage({ ...job.message, id }, job.transfer ?? []);
    } catch (err) {
      // Nothing was sent (a value that cannot be copied, a transfer list that is wrong): the worker
      // is as it was, so it goes back to the idle list and its slot is freed for the next job.
      const why = err instanceof Error ? err.message : String(err);
      done(true, () =>
        reject(
          new Error(
            `The ${this.name} could not be given its job: ${why}. Pass only plain data (no functions, symbols or class instances with private state).`,
            { cause: err },
          ),
        ),
      );
    }
  }
}
