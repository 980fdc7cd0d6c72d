/**
 * Hostile values never make a call reject: a tool throwing a Proxy that throws on every access, an
 * object whose `message` getter throws, null, a Symbol; an `onToolResult` that throws; a result
 * with a throwing getter; a hostile context. `registry.execute` and the LangChain adapter always
 * resolve with one error result (the pipeline's one failure path) whose text is a sentence.
 */
import { describe, it, expect } from '@jest/globals';
import { z } from 'zod';
import { ToolMessage } from '@langchain/core/messages';
import { Tool, createRegistry } from '../../src/index.js';

const trap = (): never => {
  throw new Error('trap');
};
const hostileProxy = (): object =>
  new Proxy(
    {},
    {
      get: trap,
      has: trap,
      ownKeys: trap,
      getPrototypeOf: trap,
      getOwnPropertyDescriptor: trap,
      apply: trap,
    },
  );

const thrown: Array<[string, () => unknown]> = [
  ['a Proxy that throws on every access', hostileProxy],
  [
    'an object whose message getter throws',
    () => ({
      get message(): string {
        throw new Error('no message for you');
      },
    }),
  ],
  ['null', () => null],
  ['undefined', () => undefined],
  ['a Symbol', () => Symbol('boom')],
  ['an empty string', () => ''],
  ['a number', () => 42],
  ['a circular object', () => ((o: Record<string, unknown>) => ((o.self = o), o))({})],
  ['an Error with an empty message', () => new TypeError('')],
  ['a system error from another realm', () => ({ code: 'ENAMETOOLONG', syscall: 'open', path: '/x'.repeat(300) })],
];

const results: Array<[string, () => unknown]> = [
  ['a Proxy that throws on every access', hostileProxy],
  [
    'an output getter that throws',
    () => ({
      title: 't',
      metadata: {},
      get output(): string {
        throw new Error('getter');
      },
    }),
  ],
  [
    'a metadata getter that throws',
    () => ({
      title: 't',
      output: 'o',
      metadata: {
        get x(): number {
          throw new Error('getter');
        },
      },
    }),
  ],
  ['null', () => null],
  ['a Symbol', () => Symbol('r')],
];

function isSentence(text: unknown): boolean {
  return (
    typeof text === 'string' &&
    text.length >= 15 &&
    /[a-zA-Z]{3,} [a-zA-Z]/.test(text) &&
    !text.includes('[object Object]')
  );
}

function registryWith(execute: () => Promise<unknown>) {
  const tool = Tool.define('hostile', {
    description: 'throws hostile values',
    parameters: z.object({}),
    execute: execute as never,
  });
  return createRegistry().register(tool, { permissions: { required: [] } });
}

describe('one failure path for hostile values', () => {
  it.each(thrown)('a tool throwing %s: execute and the adapter resolve with an error sentence', async (_name, make) => {
    const r = registryWith(async () => {
      throw make();
    });
    const final = await r.execute('hostile', {});
    expect(final.status).toBe('error');
    expect(isSentence(final.error)).toBe(true);
    expect(final.result.output).toBe(final.error);
    const [lc] = await r.tools();
    const msg = await lc.invoke({ type: 'tool_call', id: 'c1', name: 'hostile', args: {} });
    expect(msg).toBeInstanceOf(ToolMessage);
    expect((msg as ToolMessage).status).toBe('error');
    expect(r.stats('hostile')?.failures).toBe(2);
  });

  it.each(results)('a tool returning %s: resolves with an error sentence', async (_name, make) => {
    const r = registryWith(async () => make());
    const final = await r.execute('hostile', {});
    expect(final.status).toBe('error');
    expect(isSentence(final.error)).toBe(true);
  });

  it('an onToolResult that throws a hostile value, and a subscriber that does, change nothing', async () => {
    const r = registryWith(async () => ({ title: 't', metadata: {}, output: 'fine' }));
    r.subscribe(() => {
      throw hostileProxy();
    });
    const ok = await r.execute('hostile', {}, {}, undefined, {
      onToolResult: () => {
        throw hostileProxy();
      },
    });
    expect(ok.status).toBe('completed');
    expect(ok.result.output).toBe('fine');
    const [lc] = await r.tools({
      onToolResult: () => {
        throw Symbol('listener');
      },
    });
    const msg = await lc.invoke({ type: 'tool_call', id: 'c2', name: 'hostile', args: {} });
    expect((msg as ToolMessage).content).toBe('fine');
  });

  it('unknown tools, refused permissions and hostile contexts resolve through the same path', async () => {
    const r = registryWith(async () => ({ title: 't', metadata: {}, output: 'fine' }));
    const seen: string[] = [];
    const unknown = await r.execute('nope', {}, {}, undefined, {
      onToolResult: (u) => {
        seen.push(u.status);
        throw hostileProxy();
      },
    });
    expect(unknown.status).toBe('error');
    expect(unknown.error).toMatch(/Unknown tool "nope"/);
    expect(seen).toEqual(['error']);
    const proxyCtx = await r.execute('hostile', {}, hostileProxy());
    expect(proxyCtx.status).toBe('error');
    expect(isSentence(proxyCtx.error)).toBe(true);
    const proxyOptions = await r.execute('hostile', {}, {}, undefined, hostileProxy());
    expect(proxyOptions.status).toBe('error');
  });
});
