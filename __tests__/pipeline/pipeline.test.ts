/**
 * The pipeline's own contract, through registry.execute (the same path every entry point takes):
 * updates in order and exactly one final, argument repair before validation, timeouts and aborts
 * that stop the tool, the concurrency cap, the output cap, and one failure path that never rejects.
 * Synchronisation is by events (deferred promises, abort signals), never by sleeping.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { Tool, createRegistry, type ToolUpdate } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';
import { ABORT_GRACE_MS } from '../../src/constants.js';

/** A promise with its resolve function, for waiting on an event. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A tool that reports `started`, then waits until `release` resolves or its call is aborted. */
function gatedTool(id: string, release: Promise<void>, started?: () => void, aborted?: () => void) {
  return Tool.define(id, {
    description: 'waits for its gate',
    parameters: z.object({}),
    async execute(_args, ctx) {
      started?.();
      await new Promise<void>((resolve) => {
        void release.then(resolve);
        ctx.abort.addEventListener('abort', () => {
          aborted?.();
          resolve();
        });
      });
      return { title: 'done', metadata: {}, output: `${id} done` };
    },
  });
}

const dirs: Array<{ cleanup: () => Promise<void> }> = [];
afterAll(async () => {
  for (const d of dirs) await d.cleanup();
});

describe('pipeline: order of updates', () => {
  it('delivers every progress update in order while running, then exactly one final update', async () => {
    const steps = Tool.define('steps', {
      description: 'reports three steps',
      parameters: z.object({ n: z.number() }),
      async execute(args, ctx) {
        for (let i = 1; i <= args.n; i++) ctx.metadata({ title: `step ${i}`, metadata: { i } });
        return { title: 'all steps', metadata: { steps: args.n }, output: 'ok' };
      },
    });
    const r = createRegistry().register(steps, { permissions: { required: [] } });
    const seen: ToolUpdate[] = [];
    const final = await r.execute('steps', { n: 3 }, {}, undefined, { onToolResult: (u) => seen.push(u) });
    expect(seen.map((u) => `${u.status}:${u.result.title}`)).toEqual([
      'running:step 1',
      'running:step 2',
      'running:step 3',
      'completed:all steps',
    ]);
    expect(seen.map((u) => u.result.metadata.i ?? u.result.metadata.steps)).toEqual([1, 2, 3, 3]);
    expect(seen[3]).toBe(final);
    expect(final).toMatchObject({ success: true, toolId: 'steps' });
  });

  it('repairs weak-model arguments before validating them ("3" for a number, "true" for a boolean)', async () => {
    const echo = Tool.define('typed', {
      description: 'echoes typed args',
      parameters: z.object({ n: z.number(), flag: z.boolean() }),
      async execute(args) {
        return { title: 't', metadata: {}, output: `${typeof args.n} ${args.n} ${typeof args.flag} ${args.flag}` };
      },
    });
    const r = createRegistry().register(echo, { permissions: { required: [] } });
    const res = await r.execute('typed', { n: '3', flag: 'true' });
    expect(res.result.output).toBe('number 3 boolean true');
    const bad = await r.execute('typed', { n: 'three', flag: true });
    expect(bad).toMatchObject({ status: 'error', success: false });
    expect(bad.error).toMatch(/- n: .*expected number[\s\S]*Rewrite the input/i);
  });

  it('refuses keys a plain object schema lacks; a loose object schema passes them to the tool', async () => {
    const strictish = Tool.define('plain', {
      description: 'plain object',
      parameters: z.object({ limit: z.number().optional() }),
      async execute(args) {
        return { title: 't', metadata: {}, output: JSON.stringify(args) };
      },
    });
    const loose = Tool.define('loose', {
      description: 'loose object',
      parameters: z.looseObject({ limit: z.number().optional() }),
      async execute(args) {
        return { title: 't', metadata: {}, output: JSON.stringify(args) };
      },
    });
    const r = createRegistry()
      .register(strictish, { permissions: { required: [] } })
      .register(loose, { permissions: { required: [] } });
    const refused = await r.execute('plain', { limt: 2 });
    expect(refused.status).toBe('error');
    expect(refused.error).toContain('`limt` is not a parameter of plain — did you mean `limit`?');
    expect((await r.execute('plain', { limit: 2 })).result.output).toBe('{"limit":2}');
    expect((await r.execute('loose', { limt: 2 })).result.output).toBe('{"limt":2}');
  });
});

describe('pipeline: stopping a call', () => {
  it('a timeout settles the call with a sentence naming the limit and aborts the tool', async () => {
    const toolAborted = deferred();
    const never = new Promise<void>(() => undefined);
    const r = createRegistry({ timeoutMs: 50 }).register(gatedTool('stuck', never, undefined, toolAborted.resolve), {
      permissions: { required: [] },
    });
    const res = await r.execute('stuck', {});
    expect(res).toMatchObject({ status: 'error', success: false });
    expect(res.error).toBe(
      'Tool "stuck" timed out after 50 ms and was stopped. Try a smaller request (narrower path, fewer items) or a larger timeout if the tool accepts one.',
    );
    await toolAborted.promise; // the tool's ctx.abort fired (the test would hang otherwise)
  });

  it("the caller's signal aborts a running call; its late result is ignored", async () => {
    const started = deferred();
    const release = deferred();
    const controller = new AbortController();
    const r = createRegistry().register(gatedTool('gated', release.promise, started.resolve), {
      permissions: { required: [] },
    });
    const finals: ToolUpdate[] = [];
    const pending = r.execute('gated', {}, {}, undefined, {
      signal: controller.signal,
      onToolResult: (u) => u.status !== 'running' && finals.push(u),
    });
    await started.promise;
    controller.abort(new Error('user pressed stop'));
    const res = await pending;
    expect(res.error).toBe('Tool "gated" was aborted (user pressed stop) before it finished.');
    release.resolve();
    await r.execute('gated', {}); // a later call completes normally: the gate is open
    expect(finals).toHaveLength(1);
  });
});

describe('pipeline: a stopped call keeps what the tool produced', () => {
  it('a tool that answers its abort returns its partial output with the abort notice', async () => {
    const started = deferred();
    const controller = new AbortController();
    const partial = Tool.define('partial', {
      description: 'collects until aborted',
      parameters: z.object({}),
      async execute(_args, ctx) {
        const seen = ['line 1', 'line 2'];
        started.resolve();
        await new Promise<void>((resolve) => ctx.abort.addEventListener('abort', () => resolve()));
        return { title: 'partial', metadata: { lines: seen.length }, output: seen.join('\n') };
      },
    });
    const r = createRegistry().register(partial, { permissions: { required: [] } });
    const pending = r.execute('partial', {}, {}, undefined, { signal: controller.signal });
    await started.promise;
    controller.abort(new Error('user pressed stop'));
    const res = await pending;
    expect(res).toMatchObject({ status: 'error', success: false });
    expect(res.error).toBe('Tool "partial" was aborted (user pressed stop) before it finished.');
    expect(res.result.output).toBe(
      'line 1\nline 2\n\nError: Tool "partial" was aborted (user pressed stop) before it finished.',
    );
    expect(res.result.metadata).toMatchObject({ lines: 2, error: res.error });
  });

  it('the final update comes only after the tool finished its own cleanup', async () => {
    const order: string[] = [];
    const started = deferred();
    const controller = new AbortController();
    const cleanup = Tool.define('cleanup', {
      description: 'cleans up when aborted',
      parameters: z.object({}),
      async execute(_args, ctx) {
        started.resolve();
        await new Promise<void>((resolve) => ctx.abort.addEventListener('abort', () => resolve()));
        order.push('cleanup started');
        await new Promise<void>((resolve) => setImmediate(resolve)); // a step that takes a turn of the loop
        order.push('cleanup done');
        throw new Error('stopped');
      },
    });
    const r = createRegistry().register(cleanup, { permissions: { required: [] } });
    const pending = r.execute('cleanup', {}, {}, undefined, {
      signal: controller.signal,
      onToolResult: (u) => u.status !== 'running' && order.push('final'),
    });
    await started.promise;
    controller.abort();
    const res = await pending;
    expect(order).toEqual(['cleanup started', 'cleanup done', 'final']);
    expect(res.error).toBe('Tool "cleanup" was aborted before it finished.');
  });

  it(`a tool that reads ctx.abort but never stops is answered after ABORT_GRACE_MS (${ABORT_GRACE_MS} ms)`, async () => {
    const started = deferred();
    const controller = new AbortController();
    const stubborn = Tool.define('stubborn', {
      description: 'looks at its signal, then ignores it',
      parameters: z.object({}),
      async execute(_args, ctx) {
        void ctx.abort.aborted;
        started.resolve();
        return new Promise<Tool.Result>(() => undefined);
      },
    });
    const r = createRegistry().register(stubborn, { permissions: { required: [] } });
    const pending = r.execute('stubborn', {}, {}, undefined, { signal: controller.signal });
    await started.promise;
    controller.abort();
    const res = await pending;
    expect(res.error).toBe('Tool "stubborn" was aborted before it finished.');
    expect(res.result.output).toBe(res.error);
  });
});

describe('pipeline: limits', () => {
  it('the concurrency cap holds a call until a slot is released', async () => {
    const firstStarted = deferred();
    const secondStarted = deferred();
    const releaseFirst = deferred();
    const order: string[] = [];
    const r = createRegistry({ concurrency: 1 })
      .register(
        gatedTool('first', releaseFirst.promise, () => {
          order.push('first started');
          firstStarted.resolve();
        }),
        { permissions: { required: [] } },
      )
      .register(
        gatedTool('second', Promise.resolve(), () => {
          order.push('second started');
          secondStarted.resolve();
        }),
        { permissions: { required: [] } },
      );
    const secondRequested = deferred();
    r.subscribe((e) => {
      if (e.type === 'requested' && e.toolId === 'second') secondRequested.resolve();
    });
    const first = r.execute('first', {});
    await firstStarted.promise;
    const second = r.execute('second', {});
    await secondRequested.promise;
    expect(r.load()).toEqual({ running: 1, queued: 1 });
    order.push('first released');
    releaseFirst.resolve();
    await Promise.all([first, second, secondStarted.promise]);
    expect(order).toEqual(['first started', 'first released', 'second started']);
  });

  it('caps a large output and keeps the full text in a file the model can read', async () => {
    const dir = await tempDir();
    dirs.push(dir);
    const full = Array.from({ length: 50 }, (_, i) => `line ${i + 1} ${'x'.repeat(40)}`).join('\n');
    const big = Tool.define('big', {
      description: 'prints a lot',
      parameters: z.object({}),
      async execute() {
        return { title: 'big', metadata: {}, output: full };
      },
    });
    const r = createRegistry({ truncate: { maxBytes: 500, outputDir: dir.dir } }).register(big, {
      permissions: { required: [] },
    });
    const res = await r.execute('big', {});
    expect(res.result.metadata).toMatchObject({ truncated: true });
    const outputPath = res.result.metadata.outputPath as string;
    expect(await readFile(outputPath, 'utf8')).toBe(full);
    expect(res.result.output.startsWith('line 1 ')).toBe(true);
    expect(res.result.output).toContain(outputPath);
    expect(res.result.output.length).toBeLessThan(full.length);
  });
});

describe('pipeline: one failure path', () => {
  it('a throw, an invalid result and metadata.error all resolve to one error update; nothing rejects', async () => {
    const make = (id: string, execute: () => Promise<Tool.Result>) =>
      Tool.define(id, { description: id, parameters: z.object({}), execute });
    const r = createRegistry()
      .register(
        make('throws', async () => {
          throw new Error('disk is full: free space and try again');
        }),
        { permissions: { required: [] } },
      )
      .register(
        make('invalid', async () => ({ title: 'x' }) as unknown as Tool.Result),
        { permissions: { required: [] } },
      )
      .register(
        make('flags', async () => ({ title: 'f', metadata: { error: 'quota exceeded' }, output: 'partial' })),
        { permissions: { required: [] } },
      );
    const results = await Promise.all(['throws', 'invalid', 'flags', 'missing'].map((id) => r.execute(id, {})));
    expect(results.map((u) => [u.toolId, u.status, u.success])).toEqual([
      ['throws', 'error', false],
      ['invalid', 'error', false],
      ['flags', 'error', false],
      ['missing', 'error', false],
    ]);
    expect(results.map((u) => u.error)).toEqual([
      'disk is full: free space and try again',
      'Tool "invalid" returned an invalid result (expected { title, metadata, output }). This is a bug in the tool.',
      'quota exceeded',
      expect.stringMatching(/Unknown tool "missing"/),
    ]);
    expect(results[2].result.output).toBe('partial\n\nError: quota exceeded');
    expect(r.stats().throws).toMatchObject({
      calls: 1,
      failures: 1,
      lastError: 'disk is full: free space and try again',
    });
  });
});
