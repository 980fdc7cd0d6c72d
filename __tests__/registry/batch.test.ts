import { describe, it, expect } from '@jest/globals';
import { z } from 'zod';
import { Tool, createRegistry } from '../../src/index.js';

/** Resolves once `n` parties have arrived: a parallel schedule passes it, a serial one times out. */
function barrier(n: number) {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return async () => {
    if (++arrived >= n) open();
    await opened;
  };
}

const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

function makeRegistry() {
  const log: string[] = [];
  const active = { exclusive: 0, maxExclusive: 0 };
  const gates = new Map<string, () => Promise<void>>();
  const registry = createRegistry({ timeoutMs: 5_000, loopGuard: false });
  const params = z.object({ filePath: z.string().optional(), tag: z.string(), fail: z.boolean().optional() });
  registry.register(
    Tool.define('look', {
      description: 'read-only',
      parameters: params,
      async execute(args) {
        log.push(`${args.tag}:start`);
        await gates.get(args.tag)?.();
        if (args.fail) throw new Error(`look ${args.tag} failed`);
        log.push(`${args.tag}:end`);
        return { title: args.tag, metadata: {}, output: args.tag };
      },
    }),
    { permissions: { required: ['read'] } },
  );
  registry.register(
    Tool.define('put', {
      description: 'writes a path',
      parameters: params,
      async execute(args) {
        log.push(`${args.tag}:start`);
        await gates.get(args.tag)?.();
        await ticks(5);
        log.push(`${args.tag}:end`);
        return { title: args.tag, metadata: {}, output: args.tag };
      },
    }),
    { permissions: { required: ['write'] } },
  );
  registry.register(
    Tool.define('shell', {
      description: 'executes',
      parameters: params,
      async execute(args) {
        active.exclusive++;
        active.maxExclusive = Math.max(active.maxExclusive, active.exclusive);
        log.push(`${args.tag}:start`);
        await ticks(5);
        log.push(`${args.tag}:end`);
        active.exclusive--;
        return { title: args.tag, metadata: {}, output: args.tag };
      },
    }),
    { permissions: { required: ['execute'] } },
  );
  return { registry, log, active, gates };
}

describe('executeBatch', () => {
  it('runs read-only calls in parallel, and one failure cancels nothing; results in the given order', async () => {
    const { registry, gates } = makeRegistry();
    const all = barrier(3);
    for (const t of ['r1', 'r2', 'r3']) gates.set(t, all);
    const results = await registry.executeBatch([
      { id: 'look', args: { tag: 'r1' } },
      { id: 'look', args: { tag: 'r2', fail: true } },
      { id: 'look', args: { tag: 'r3' } },
    ]);
    expect(results.map((r) => [r.result.output, r.success])).toEqual([
      ['r1', true],
      ['look r2 failed', false],
      ['r3', true],
    ]);
  });

  it('writes to different paths run in parallel; writes to one path run in the given order', async () => {
    const { registry, log, gates } = makeRegistry();
    const both = barrier(2);
    gates.set('b', both);
    gates.set('c', both);
    const results = await registry.executeBatch([
      { id: 'put', args: { filePath: 'a.txt', tag: 'a1' } },
      { id: 'put', args: { filePath: 'b.txt', tag: 'b' } },
      { id: 'put', args: { filePath: './x/../a.txt', tag: 'a2' } },
      { id: 'put', args: { filePath: 'c.txt', tag: 'c' } },
      { id: 'put', args: { filePath: 'a.txt', tag: 'a3' } },
    ]);
    expect(results.map((r) => r.result.output)).toEqual(['a1', 'b', 'a2', 'c', 'a3']);
    const a = log.filter((e) => e.startsWith('a'));
    expect(a).toEqual(['a1:start', 'a1:end', 'a2:start', 'a2:end', 'a3:start', 'a3:end']);
  });

  it('runs bash-like (execute) calls one at a time, in order', async () => {
    const { registry, log, active } = makeRegistry();
    const results = await registry.executeBatch([
      { id: 'shell', args: { tag: 's1' } },
      { id: 'look', args: { tag: 'r' } },
      { id: 'shell', args: { tag: 's2' } },
      { id: 'shell', args: { tag: 's3' } },
    ]);
    expect(results.filter((r) => !r.success)).toEqual([]);
    expect(active.maxExclusive).toBe(1);
    expect(log.filter((e) => e.startsWith('s'))).toEqual([
      's1:start',
      's1:end',
      's2:start',
      's2:end',
      's3:start',
      's3:end',
    ]);
  });

  it('an unknown tool in a batch is an error result in its place', async () => {
    const { registry } = makeRegistry();
    const results = await registry.executeBatch([
      { id: 'look', args: { tag: 'ok' } },
      { id: 'nope', args: {} },
    ]);
    expect(results.map((r) => r.success)).toEqual([true, false]);
    expect(results[1].error).toMatch(/^Unknown tool "nope"/);
  });
});
