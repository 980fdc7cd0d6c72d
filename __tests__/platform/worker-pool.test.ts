/**
 * The worker pool keeps working after a job it could not hand over: postMessage throwing (a value
 * that cannot be copied to a worker, a bad transfer list) fails that job with a sentence and frees
 * its slot, for every user of the pool. A real worker thread answering real jobs.
 */
import { describe, it, expect } from '@jest/globals';
import { WorkerPool } from '../../src/platform/worker-pool.js';

const ECHO = new URL('../fixtures/echo-worker.mjs', import.meta.url);

describe('WorkerPool after postMessage throws', () => {
  it('each job that cannot be sent fails with a sentence, and the next job still runs (pool of one)', async () => {
    const pool = new WorkerPool<{ echo: unknown }>(ECHO, 1, 'echo worker');
    const buffer = new ArrayBuffer(8);
    const unsendable = [
      { message: { value: () => 1 } },
      { message: { value: Symbol('s') } },
      { message: { value: 'x' }, transfer: [buffer, buffer] },
    ];
    // More failures than the pool has slots: without the fix the first one holds the only slot forever.
    for (const job of unsendable) {
      await expect(pool.run(job)).rejects.toThrow(
        /^The echo worker could not be given its job: .+\. Pass only plain data/,
      );
    }
    await expect(pool.run({ message: { value: 'after' } })).resolves.toEqual({
      reply: expect.objectContaining({ echo: 'after' }),
    });
  }, 30_000);

  it('jobs queued behind a failing one run (pool of one, sent together)', async () => {
    const pool = new WorkerPool<{ echo: unknown }>(ECHO, 1, 'echo worker');
    const results = await Promise.allSettled([
      pool.run({ message: { value: 'first' } }),
      pool.run({ message: { value: () => 2 } }),
      pool.run({ message: { value: 'third' } }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseFulfilledResult<{ reply: { echo: unknown } }>).value.reply.echo).toBe('third');
  }, 30_000);
});
