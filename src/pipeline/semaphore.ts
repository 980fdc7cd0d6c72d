/**
 * The concurrency limit: a FIFO counting semaphore whose waiters can give up when their signal aborts.
 * Must not know of tools or calls: the registry owns one and the call (call.ts) takes a slot from it.
 */
/** A FIFO counting semaphore whose waiters can give up when their signal aborts. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private limit: number) {
    Semaphore.check(limit);
  }

  private static check(limit: number): void {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`Concurrency limit must be a positive integer, got ${limit}.`);
  }

  /** Calls holding a slot now. */
  get running(): number {
    return this.active;
  }

  /** Calls waiting for a slot. */
  get queued(): number {
    return this.waiters.length;
  }

  /** Changes the limit; waiters are let in if the new limit allows. */
  setLimit(limit: number): void {
    Semaphore.check(limit);
    this.limit = limit;
    this.drain();
  }

  /** Takes a free slot now and returns its release function, or undefined when all are taken. */
  tryAcquire(): (() => void) | undefined {
    if (this.active >= this.limit || this.waiters.length) return undefined;
    this.active++;
    return this.releaser();
  }

  /** Waits for a slot; resolves to its release function. Rejects if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const now = this.tryAcquire();
    if (now) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        this.active++;
        resolve(this.releaser());
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i !== -1) this.waiters.splice(i, 1);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(grant);
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
      this.drain();
    };
  }

  private drain(): void {
    while (this.active < this.limit && this.waiters.length) this.waiters.shift()!();
  }
}

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error(typeof r === 'string' ? r : 'The operation was aborted.');
}
