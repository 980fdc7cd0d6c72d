import { describe, it, expect } from '@jest/globals';
import { z } from 'zod';
import { Tool } from '../../src/authoring/tool.js';

describe('Tool.define', () => {
  it('rejects invalid ids with a clear error', () => {
    expect(() =>
      Tool.define('bad id!', {
        description: 'x',
        parameters: z.object({}),
        execute: async () => ({ title: '', metadata: {}, output: '' }),
      }),
    ).toThrow(/must match/);
    expect(() =>
      Tool.define('a'.repeat(65), {
        description: 'x',
        parameters: z.object({}),
        execute: async () => ({ title: '', metadata: {}, output: '' }),
      }),
    ).toThrow(/1-64/);
  });

  it('init returns a fresh object each time and passes the init context to init functions', async () => {
    const seen: unknown[] = [];
    const info = Tool.define('t', async (initCtx) => {
      seen.push(initCtx.workingDir);
      return {
        description: `in ${initCtx.workingDir}`,
        parameters: z.object({}),
        execute: async () => ({ title: 't', metadata: {}, output: 'ok' }),
      };
    });
    const a = await info.init({ workingDir: '/a' });
    const b = await info.init({ workingDir: '/b' });
    expect(a).not.toBe(b);
    expect(a.description).toBe('in /a');
    expect(b.description).toBe('in /b');
    expect(a.id).toBe('t');
    expect(seen).toEqual(['/a', '/b']);
  });

  it('does not mutate an object definition', async () => {
    const def = {
      description: 'd',
      parameters: z.object({}),
      execute: async () => ({ title: 't', metadata: {}, output: 'ok' }),
    };
    const info = Tool.define('t2', def);
    const a = await info.init();
    (a as { description: string }).description = 'changed';
    const b = await info.init();
    expect(b.description).toBe('d');
    expect(def.description).toBe('d');
  });
});
