import { describe, it, expect, afterEach } from '@jest/globals';
import { writeFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { MemorySaver, MessagesAnnotation, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import {
  Tool,
  Registry,
  ToolRegistry,
  ToolRegistryImpl,
  defaultRegistry,
  createRegistry,
  registerBuiltinTools,
  toolsForTurn,
  type ToolEvent,
  type ToolUpdate,
} from '../../src/index.js';
import { TOOL_SEARCH_ID } from '../../src/constants.js';
import { tempDir, makeCtx, until } from '../support/helpers.js';

const echo = Tool.define('echo', {
  description: 'Echo text back',
  parameters: z.object({ text: z.string().describe('Text to echo') }),
  async execute(args, ctx) {
    ctx.metadata({ title: 'echoing', metadata: { step: 1 } });
    return { title: 'echoed', metadata: { length: args.text.length }, output: args.text };
  },
});

function sleepTool(id = 'sleep', policy?: Tool.TimeoutPolicy) {
  const events: string[] = [];
  const info = Tool.define(id, {
    description: 'Sleeps until aborted or done',
    parameters: z.object({ ms: z.number() }),
    timeout: policy,
    async execute(args, ctx) {
      events.push('started');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, args.ms);
        ctx.abort.addEventListener('abort', () => {
          events.push('tool saw abort');
          clearTimeout(t);
          resolve();
        });
      });
      return { title: 'slept', metadata: {}, output: `slept ${args.ms}` };
    },
  });
  return { info, events };
}

afterEach(() => ToolRegistry.clear());

describe('names', () => {
  it('Registry is the class and defaultRegistry its process-wide instance; the names before 1.0 are the same objects', () => {
    expect(createRegistry()).toBeInstanceOf(Registry);
    expect(defaultRegistry).toBeInstanceOf(Registry);
    expect(ToolRegistry).toBe(defaultRegistry);
    expect(ToolRegistryImpl).toBe(Registry);
    expect(new ToolRegistryImpl()).toBeInstanceOf(Registry);
  });
});

describe('registration', () => {
  it('validates ids, permissions and duplicates with clear errors', () => {
    const r = createRegistry();
    expect(() =>
      r.register({ id: 'bad id', init: (c) => echo.init(c) }, { permissions: { required: ['read'] } }),
    ).toThrow(/Invalid tool id "bad id"/);
    expect(() => r.register(echo, { permissions: { required: ['fly' as never] } })).toThrow(
      /unknown permission "fly".*read, write, execute, network/,
    );
    r.register(echo, { permissions: { required: ['read'] } });
    expect(() => r.register(echo, { permissions: { required: ['read'] } })).toThrow(/already registered/);
    r.register(echo, { permissions: { required: ['write'] }, replace: true });
    expect(r.permissions('echo')).toEqual({ required: ['write'], optional: [] });
  });

  it('get/has/ids/all/size/unregister/clear', () => {
    const r = createRegistry();
    r.register(echo, { permissions: { required: ['read'], optional: ['network'] } });
    r.register(sleepTool().info, { permissions: { required: ['execute'] } });
    expect(r.ids()).toEqual(['echo', 'sleep']);
    expect(r.size).toBe(2);
    expect(r.has('echo')).toBe(true);
    expect(r.get('echo')?.info).toBe(echo);
    expect(r.all().map((e) => e.info.id)).toEqual(['echo', 'sleep']);
    expect(r.permissions('echo')).toEqual({ required: ['read'], optional: ['network'] });
    expect(r.unregister('echo')).toBe(true);
    expect(r.unregister('echo')).toBe(false);
    expect(r.has('echo')).toBe(false);
    r.clear();
    expect(r.size).toBe(0);
  });

  it('a tool that declares its permissions, .txt description and danger in Tool.define needs no register options', async () => {
    const dir = await tempDir();
    const txt = path.join(dir.dir, 'declared.txt');
    await writeFile(txt, 'Declared description in ${workspace}');
    const declared = Tool.define(
      {
        id: 'declared',
        permissions: { required: ['read'], optional: ['network'] },
        descriptionPath: txt,
        danger: 'safe',
      },
      {
        description: 'inline',
        parameters: z.object({}),
        execute: async () => ({ title: '', metadata: {}, output: 'ok' }),
      },
    );
    const r = createRegistry().register(declared);
    expect(r.permissions('declared')).toEqual({ required: ['read'], optional: ['network'] });
    expect(r.get('declared')).toMatchObject({ descriptionPath: txt, danger: 'safe' });
    const [t] = await r.tools({ initCtx: { workspaceRoot: dir.dir } });
    expect(t.description).toBe(`Declared description in ${dir.dir}`);
    // register's options override what the tool declared
    r.register(declared, { permissions: { required: ['write'] }, danger: 'dangerous', replace: true });
    expect(r.permissions('declared')).toEqual({ required: ['write'], optional: [] });
    expect(r.get('declared')?.danger).toBe('dangerous');
    await dir.cleanup();
  });

  it('a tool that declares no permissions must get them from register, with a sentence saying how', () => {
    expect(() => createRegistry().register(echo)).toThrow(
      /Tool "echo" declares no permissions: pass them, e\.g\. register\(tool, \{ permissions/,
    );
  });

  it('the default ToolRegistry has the same API', async () => {
    ToolRegistry.register(echo, { permissions: { required: ['read'] } });
    expect(ToolRegistry.enabled(new Set(['read']))).toEqual(['echo']);
    const res = await ToolRegistry.execute('echo', { text: 'hi' }, makeCtx());
    expect(res).toMatchObject({ status: 'completed', success: true, result: { output: 'hi' } });
  });
});

describe('permission filtering', () => {
  const r = createRegistry();
  const noop = (id: string) =>
    Tool.define(id, {
      description: id,
      parameters: z.object({}),
      execute: async () => ({ title: id, metadata: {}, output: id }),
    });
  r.register(noop('reader'), { permissions: { required: ['read'] } });
  r.register(noop('writer'), { permissions: { required: ['read', 'write'] } });
  r.register(noop('fetcher'), { permissions: { required: ['network'], optional: ['read'] } });
  r.register(noop('free'), { permissions: { required: [] } });

  it('enabled() needs every required permission; accepts a Set or an array', () => {
    expect(r.enabled(new Set(['read']))).toEqual(['reader', 'free']);
    expect(r.enabled(['read', 'write'])).toEqual(['reader', 'writer', 'free']);
    expect(r.enabled(['network'])).toEqual(['fetcher', 'free']);
    expect(r.enabled([])).toEqual(['free']);
  });

  it('tools() returns only the granted tools, and ids intersect', async () => {
    expect((await r.tools({ enabledPermissions: new Set(['read', 'network']) })).map((t) => t.name)).toEqual([
      'reader',
      'fetcher',
      'free',
    ]);
    expect((await r.tools({ ids: ['writer', 'reader'], enabledPermissions: ['read'] })).map((t) => t.name)).toEqual([
      'reader',
    ]);
    await expect(r.tools({ ids: ['nope'] })).rejects.toThrow(
      /Unknown tool "nope". Known tools: reader, writer, fetcher, free/,
    );
  });

  it('execute() with a grant refuses a tool that needs more, naming the missing permission', async () => {
    const res = await r.execute('writer', {}, makeCtx(), undefined, { enabledPermissions: ['read'] });
    expect(res.status).toBe('error');
    expect(res.error).toMatch(/needs the write permission, which is not granted/);
  });
});

describe('external descriptions', () => {
  const saved = process.env.AGENT_WORKSPACE_ROOT;
  afterEach(() => {
    if (saved === undefined) delete process.env.AGENT_WORKSPACE_ROOT;
    else process.env.AGENT_WORKSPACE_ROOT = saved;
  });

  it('a .txt replaces the inline description, with ${workspace}, ${directory}, ${cwd}; unknown ${x} stays', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const file = path.join(dir, 'echo.txt');
      await writeFile(file, 'Works in ${workspace}; dir ${directory}; cwd ${cwd}; keep ${unknown} and $notvar.\n');
      delete process.env.AGENT_WORKSPACE_ROOT;
      const r = createRegistry().register(echo, { permissions: { required: ['read'] }, descriptionPath: file });
      const [t] = await r.tools({ initCtx: { workingDir: '/project' } });
      expect(t.description).toBe('Works in /project; dir /project; cwd /project; keep ${unknown} and $notvar.');

      process.env.AGENT_WORKSPACE_ROOT = '/ws-root';
      const [t2] = await r.tools({ initCtx: { workingDir: '/project' } });
      expect(t2.description).toBe('Works in /ws-root; dir /project; cwd /project; keep ${unknown} and $notvar.');

      const [t3] = await createRegistry()
        .register(echo, { permissions: { required: [] }, descriptionPath: file })
        .tools();
      expect(t3.description).toContain(`dir ${process.cwd()};`);
    } finally {
      await cleanup();
    }
  });

  it('a missing file falls back to the inline description with a visible warning event', async () => {
    const r = createRegistry().register(echo, {
      permissions: { required: ['read'] },
      descriptionPath: '/nonexistent/echo.txt',
    });
    const warnings: ToolEvent[] = [];
    r.on('warning', (e) => warnings.push(e));
    const [t] = await r.tools();
    expect(t.description).toBe('Echo text back');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ type: 'warning', toolId: 'echo' });
    expect((warnings[0] as { message: string }).message).toMatch(
      /\/nonexistent\/echo.txt could not be read \(ENOENT\); using the inline description/,
    );
  });

  it('a missing file with no inline description is a clear error', async () => {
    const bare = Tool.define('bare', {
      description: '',
      parameters: z.object({}),
      execute: async () => ({ title: '', metadata: {}, output: '' }),
    });
    const r = createRegistry().register(bare, {
      permissions: { required: [] },
      descriptionPath: '/nonexistent/bare.txt',
    });
    await expect(r.tools()).rejects.toThrow(/could not be read.*no inline description/);
    const res = await r.execute('bare', {}, makeCtx());
    expect(res.error).toMatch(/could not be initialised.*no inline description/);
  });

  it('descriptions are loaded once per init context, not per call', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const file = path.join(dir, 'echo.txt');
      await writeFile(file, 'version one');
      let inits = 0;
      const counted = Tool.define('echo', async () => {
        inits++;
        return await echo.init();
      });
      const r = createRegistry().register(counted, { permissions: { required: [] }, descriptionPath: file });
      const initCtx = { workingDir: dir };
      for (let i = 0; i < 3; i++) await r.execute('echo', { text: 'x' }, makeCtx(), initCtx);
      const [t] = await r.tools({ initCtx });
      expect(inits).toBe(1);
      await writeFile(file, 'version two');
      expect(t.description).toBe('version one');
      const [fresh] = await r.tools({ initCtx: { workingDir: dir } });
      expect(fresh.description).toBe('version two');
      expect(inits).toBe(2);
    } finally {
      await cleanup();
    }
  });
});

describe('execute: one pipeline, never rejects', () => {
  it('passes parsed arguments (defaults applied) to execute', async () => {
    const seen: unknown[] = [];
    const t = Tool.define('defaults', {
      description: 'd',
      parameters: z.object({ n: z.number().default(7), s: z.string().optional() }),
      async execute(args) {
        seen.push(args);
        return { title: 't', metadata: {}, output: String(args.n) };
      },
    });
    const r = createRegistry().register(t, { permissions: { required: [] } });
    const res = await r.execute('defaults', {}, makeCtx());
    expect(res.result.output).toBe('7');
    expect(seen).toEqual([{ n: 7 }]);
  });

  it('an unknown id resolves to an error naming the known tools', async () => {
    const r = createRegistry().register(echo, { permissions: { required: [] } });
    const updates: ToolUpdate[] = [];
    const res = await r.execute('ecko', {}, makeCtx(), undefined, { onToolResult: (u) => updates.push(u) });
    expect(res).toMatchObject({ status: 'error', success: false });
    expect(res.error).toBe('Unknown tool "ecko". Known tools: echo. Call one of those instead.');
    expect(updates).toHaveLength(1);
  });

  it('invalid arguments name the field and what was expected', async () => {
    const r = createRegistry().register(echo, { permissions: { required: [] } });
    const res = await r.execute('echo', { text: 42 }, makeCtx());
    expect(res.status).toBe('error');
    expect(res.error).toMatch(
      /^Invalid arguments for tool "echo":\n- text: Invalid input: expected string, received number\nRewrite the input so it satisfies/,
    );
    const missing = await r.execute('echo', {}, makeCtx());
    expect(missing.error).toMatch(/- text: .*expected string, received undefined/);
  });

  it('repairs what weak models send: "true", "5", JSON-in-a-string, null for optionals', async () => {
    const seen: unknown[] = [];
    const t = Tool.define('lenient', {
      description: 'd',
      parameters: z.object({
        flag: z.boolean(),
        count: z.number().int(),
        items: z.array(z.object({ a: z.number() })),
        opts: z.object({ deep: z.boolean() }),
        note: z.string().optional(),
      }),
      async execute(args) {
        seen.push(args);
        return { title: 't', metadata: {}, output: 'ok' };
      },
    });
    const r = createRegistry().register(t, { permissions: { required: [] } });
    const res = await r.execute(
      'lenient',
      { flag: 'TRUE', count: '5', items: '[{"a":1}]', opts: '{"deep":"false"}', note: null },
      makeCtx(),
    );
    expect(res.error).toBeUndefined();
    expect(seen).toEqual([{ flag: true, count: 5, items: [{ a: 1 }], opts: { deep: false } }]);
    // Whole arguments as a JSON string are accepted too.
    const res2 = await r.execute(
      'lenient',
      JSON.stringify({ flag: false, count: 1, items: [], opts: { deep: true } }),
      makeCtx(),
    );
    expect(res2.success).toBe(true);
    // Unrepairable input still fails, reporting the original problem.
    const bad = await r.execute('lenient', { flag: 'yes', count: '1.5', items: [], opts: {} }, makeCtx());
    expect(bad.error).toMatch(/- flag: .*expected boolean, received string/);
    expect(bad.error).toMatch(/- opts.deep: /);
  });

  it('a throwing tool and a metadata.error result are both errors with the message', async () => {
    const r = createRegistry();
    r.register(
      Tool.define('thrower', {
        description: 'd',
        parameters: z.object({}),
        execute: async () => {
          throw new Error('No such branch "dev". List branches first.');
        },
      }),
      { permissions: { required: [] } },
    );
    r.register(
      Tool.define('soft', {
        description: 'd',
        parameters: z.object({}),
        execute: async () => ({ title: 'soft', metadata: { error: 'quota exceeded' }, output: 'partial output' }),
      }),
      { permissions: { required: [] } },
    );
    r.register(
      Tool.define('nonerror', {
        description: 'd',
        parameters: z.object({}),
        execute: async () => {
          throw 'plain string';
        },
      }),
      { permissions: { required: [] } },
    );
    const a = await r.execute('thrower', {}, makeCtx());
    expect(a).toMatchObject({ status: 'error', error: 'No such branch "dev". List branches first.' });
    const b = await r.execute('soft', {}, makeCtx());
    expect(b).toMatchObject({
      status: 'error',
      error: 'quota exceeded',
      result: { output: 'partial output\n\nError: quota exceeded' },
    });
    const c = await r.execute('nonerror', {}, makeCtx());
    expect(c.error).toBe('plain string');
  });

  it("the caller's ctx.metadata and onToolResult both hear every progress call, in order", async () => {
    const r = createRegistry().register(
      Tool.define('steps', {
        description: 'd',
        parameters: z.object({}),
        async execute(_a, ctx) {
          for (let i = 1; i <= 3; i++) ctx.metadata({ title: `step ${i}`, metadata: { i } });
          return { title: 'done', metadata: { i: 3 }, output: 'ok' };
        },
      }),
      { permissions: { required: [] } },
    );
    const ctx = makeCtx();
    const updates: ToolUpdate[] = [];
    const res = await r.execute('steps', {}, ctx, undefined, { onToolResult: (u) => updates.push(u) });
    expect(ctx.updates.map((u) => u.title)).toEqual(['step 1', 'step 2', 'step 3']);
    expect(updates.map((u) => `${u.status}:${u.result.title}`)).toEqual([
      'running:step 1',
      'running:step 2',
      'running:step 3',
      'completed:done',
    ]);
    expect(updates.filter((u) => u.callID !== 'call-1' || u.toolId !== 'steps')).toEqual([]);
    expect(res).toBe(updates[3]);
  });
});

describe('abort and timeout', () => {
  it('abort during a long call ends it promptly: the final update comes before the tool would have finished', async () => {
    const { info, events } = sleepTool();
    const r = createRegistry().register(info, { permissions: { required: [] } });
    const ctx = makeCtx();
    const order: string[] = [];
    const p = r.execute('sleep', { ms: 20_000 }, ctx).then((res) => {
      order.push('final');
      return res;
    });
    await until(() => events.includes('started'), 'the tool to start');
    order.push('abort');
    ctx.abortNow();
    const res = await p;
    expect(res.status).toBe('error');
    expect(res.error).toMatch(/Tool "sleep" was aborted before it finished/);
    expect(order).toEqual(['abort', 'final']);
    expect(events).toEqual(['started', 'tool saw abort']);
  });

  it('an already-aborted signal never starts the tool', async () => {
    const { info, events } = sleepTool();
    const r = createRegistry().register(info, { permissions: { required: [] } });
    const res = await r.execute('sleep', { ms: 1 }, makeCtx(), undefined, {
      signal: AbortSignal.abort('user hit stop'),
    });
    expect(res.error).toMatch(/aborted \(user hit stop\)/);
    expect(events).toEqual([]);
  });

  it('the registry default timeout stops a slow tool with a clear message; a per-call override wins', async () => {
    const { info } = sleepTool();
    const r = createRegistry({ timeoutMs: 50 }).register(info, { permissions: { required: [] } });
    const res = await r.execute('sleep', { ms: 10_000 }, makeCtx());
    expect(res.error).toMatch(/timed out after 50 ms/);
    const ok = await r.execute('sleep', { ms: 100 }, makeCtx(), undefined, { timeoutMs: 5_000 });
    expect(ok.success).toBe(true);
  });

  it('a tool that manages its own time is not cut short by the registry default; its maxMs still caps overrides', async () => {
    const managed = sleepTool('managed', { managed: true, maxMs: 300 });
    const r = createRegistry({ timeoutMs: 20 }).register(managed.info, { permissions: { required: [] } });
    const ok = await r.execute('managed', { ms: 150 }, makeCtx());
    expect(ok.success).toBe(true);
    const capped = await r.execute('managed', { ms: 10_000 }, makeCtx(), undefined, { timeoutMs: 1_000_000 });
    expect(capped.error).toMatch(/timed out after 300 ms/);
    const own = sleepTool('own', { defaultMs: 40 });
    r.register(own.info, { permissions: { required: [] } });
    expect((await r.execute('own', { ms: 200 }, makeCtx())).error).toMatch(/timed out after 40 ms/);
  });

  it('LangChain config.signal aborts a call made through the adapter', async () => {
    const { info, events } = sleepTool();
    const r = createRegistry().register(info, { permissions: { required: [] } });
    const [t] = await r.tools();
    const controller = new AbortController();
    const p = t.invoke(
      { type: 'tool_call', id: 'tc1', name: 'sleep', args: { ms: 20_000 } },
      { signal: controller.signal },
    );
    await until(() => events.includes('started'), 'the tool to start');
    controller.abort();
    const msg = (await p) as ToolMessage;
    expect(msg.status).toBe('error');
    expect(msg.content).toMatch(/was aborted/);
    expect(events).toEqual(['started', 'tool saw abort']);
  });
});

describe('limits', () => {
  it('the concurrency limit queues excess calls', async () => {
    let active = 0;
    let peak = 0;
    const t = Tool.define('busy', {
      description: 'd',
      parameters: z.object({}),
      async execute() {
        active++;
        peak = Math.max(peak, active);
        await new Promise((res) => setTimeout(res, 20));
        active--;
        return { title: 'b', metadata: {}, output: 'ok' };
      },
    });
    const r = createRegistry({ concurrency: 3 }).register(t, { permissions: { required: [] } });
    const all = Array.from({ length: 10 }, () => r.execute('busy', {}, makeCtx()));
    await until(() => active === 3, 'three calls to run');
    expect(r.load()).toEqual({ running: 3, queued: 7 });
    const results = await Promise.all(all);
    expect(results.filter((x) => !x.success)).toEqual([]);
    expect(peak).toBe(3);
    expect(() => createRegistry({ concurrency: 0 })).toThrow(/positive integer/);
  });

  it('a queued call can be aborted while waiting, and exempt tools skip the queue', async () => {
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    const r = createRegistry({ concurrency: 1 });
    r.register(
      Tool.define('hold', {
        description: 'd',
        parameters: z.object({}),
        execute: async () => {
          await gate;
          return { title: 'h', metadata: {}, output: 'held' };
        },
      }),
      { permissions: { required: [] } },
    );
    r.register(
      Tool.define('free', {
        description: 'd',
        parameters: z.object({}),
        concurrency: 'exempt',
        execute: async () => ({ title: 'f', metadata: {}, output: 'free' }),
      }),
      { permissions: { required: [] } },
    );
    const held = r.execute('hold', {}, makeCtx());
    const queuedCtx = makeCtx();
    const queued = r.execute('hold', {}, queuedCtx);
    expect((await r.execute('free', {}, makeCtx())).result.output).toBe('free');
    queuedCtx.abortNow();
    expect((await queued).error).toMatch(/aborted/);
    release();
    expect((await held).success).toBe(true);
    expect(r.load()).toEqual({ running: 0, queued: 0 });
  });

  it('caps output at 2000 lines / 50 KB with the full text saved and a hint; at the edge nothing is cut', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');
      const t = Tool.define('big', {
        description: 'd',
        parameters: z.object({ n: z.number(), text: z.string().optional() }),
        execute: async (a) => ({ title: 'big', metadata: {}, output: a.text ?? lines(a.n) }),
      });
      const r = createRegistry({ truncate: { outputDir: dir } }).register(t, { permissions: { required: [] } });
      const atEdge = await r.execute('big', { n: 2000 }, makeCtx());
      expect(atEdge.result.output).toBe(lines(2000));
      expect(atEdge.result.metadata.truncated).toBeUndefined();
      const past = await r.execute('big', { n: 2001 }, makeCtx());
      expect(past.result.metadata.truncated).toBe(true);
      const saved = past.result.metadata.outputPath as string;
      expect(path.dirname(saved)).toBe(dir);
      expect(await readFile(saved, 'utf8')).toBe(lines(2001));
      expect(past.result.output.startsWith(lines(2000))).toBe(true);
      expect(past.result.output).toMatch(/showing 2000 of 2001 lines.*saved at .*offset=2001/s);
      const exactBytes = 'x'.repeat(50 * 1024 - 1);
      expect((await r.execute('big', { n: 0, text: exactBytes }, makeCtx())).result.output).toBe(exactBytes);
      const overBytes = await r.execute('big', { n: 0, text: 'y'.repeat(50 * 1024 + 1) + '\nnext' });
      expect(overBytes.result.metadata.truncated).toBe(true);
      expect(overBytes.result.output).toMatch(/showing the first 51200 bytes of line 1 of 2 lines/);
      expect(overBytes.result.output.startsWith('y'.repeat(50 * 1024) + '\n\n...')).toBe(true);
    } finally {
      await cleanup();
    }
  });

  it('a tool that cut its output itself (metadata.truncated: true) is left alone; truncated: false is not', async () => {
    const long = 'z\n'.repeat(5000);
    const t = Tool.define('self', {
      description: 'd',
      parameters: z.object({ truncated: z.boolean() }),
      execute: async (args) => ({ title: 's', metadata: { truncated: args.truncated }, output: long }),
    });
    const r = createRegistry().register(t, { permissions: { required: [] } });
    expect((await r.execute('self', { truncated: true }, makeCtx())).result.output).toBe(long);
    const capped = (await r.execute('self', { truncated: false }, makeCtx())).result;
    expect(capped.output).toContain('... output truncated: showing 2000 of 5001 lines');
    await r.dispose();
  });
});

describe('observability and isolation', () => {
  it('statistics count calls, failures and average duration', async () => {
    const r = createRegistry().register(echo, { permissions: { required: [] } });
    await r.execute('echo', { text: 'a' }, makeCtx());
    await r.execute('echo', { text: 'b' }, makeCtx());
    await r.execute('echo', { text: 3 }, makeCtx());
    const s = r.stats('echo')!;
    expect(s).toMatchObject({ calls: 3, failures: 1 });
    expect(s.lastError).toMatch(/Invalid arguments/);
    expect(s.averageDurationMs).toBeGreaterThanOrEqual(0);
    expect(Object.keys(r.stats())).toEqual(['echo']);
  });

  it('events: requested, progress, completed, failed; unsubscribe stops them', async () => {
    const r = createRegistry().register(echo, { permissions: { required: [] } });
    const seen: string[] = [];
    const off = r.subscribe((e) => seen.push(e.type));
    await r.execute('echo', { text: 'a' }, makeCtx());
    await r.execute('echo', {}, makeCtx());
    off();
    await r.execute('echo', { text: 'a' }, makeCtx());
    expect(seen).toEqual(['requested', 'progress', 'completed', 'requested', 'failed']);
  });

  it('two isolated registries used concurrently never see each other’s tools, callbacks or results', async () => {
    const make = (tag: string) => {
      const r = createRegistry();
      r.register(
        Tool.define('work', {
          description: tag,
          parameters: z.object({ n: z.number() }),
          async execute(a, ctx) {
            for (let i = 0; i < 5; i++) {
              ctx.metadata({ title: `${tag}-${a.n}-${i}` });
              await new Promise((res) => setTimeout(res, 1));
            }
            return { title: tag, metadata: { tag }, output: `${tag}:${a.n}` };
          },
        }),
        { permissions: { required: [] } },
      );
      r.register(
        Tool.define(`only_${tag}`, {
          description: tag,
          parameters: z.object({}),
          execute: async () => ({ title: '', metadata: {}, output: '' }),
        }),
        { permissions: { required: [] } },
      );
      return r;
    };
    const a = make('A');
    const b = make('B');
    const aUpdates: ToolUpdate[] = [];
    const bUpdates: ToolUpdate[] = [];
    const aEvents: ToolEvent[] = [];
    a.subscribe((e) => aEvents.push(e));
    const [aTools, bTools] = await Promise.all([
      a.tools({ onToolResult: (u) => aUpdates.push(u) }),
      b.tools({ onToolResult: (u) => bUpdates.push(u) }),
    ]);
    expect(aTools.map((t) => t.name)).toEqual(['work', 'only_A']);
    expect(bTools.map((t) => t.name)).toEqual(['work', 'only_B']);
    const calls = [];
    for (let n = 0; n < 10; n++) {
      calls.push(aTools[0].invoke({ type: 'tool_call', id: `a${n}`, name: 'work', args: { n } }));
      calls.push(bTools[0].invoke({ type: 'tool_call', id: `b${n}`, name: 'work', args: { n } }));
    }
    const msgs = (await Promise.all(calls)) as ToolMessage[];
    for (const m of msgs)
      expect(m.content).toBe(`${m.tool_call_id.startsWith('a') ? 'A' : 'B'}:${m.tool_call_id.slice(1)}`);
    expect(aUpdates).toHaveLength(60);
    expect(bUpdates).toHaveLength(60);
    expect(aUpdates.filter((u) => !u.callID.startsWith('a') || !u.result.title.startsWith('A'))).toEqual([]);
    expect(bUpdates.filter((u) => !u.callID.startsWith('b') || !u.result.title.startsWith('B'))).toEqual([]);
    expect(aEvents.filter((e) => 'callID' in e && !e.callID.startsWith('a'))).toEqual([]);
    expect(b.stats('work')?.calls).toBe(10);
  });

  it('wrappers from one registry with different onToolResult are scoped to their own agent', async () => {
    const r = createRegistry().register(echo, { permissions: { required: [] } });
    const first: ToolUpdate[] = [];
    const second: ToolUpdate[] = [];
    const [t1] = await r.tools({ onToolResult: (u) => first.push(u) });
    const [t2] = await r.tools({
      onToolResult: (u) => second.push(u),
      createContext: () => ({ sessionID: 'S2', agent: 'second' }),
    });
    await t1.invoke({ type: 'tool_call', id: 'one', name: 'echo', args: { text: 'x' } });
    await t2.invoke({ type: 'tool_call', id: 'two', name: 'echo', args: { text: 'y' } });
    expect(first.map((u) => u.callID)).toEqual(['one', 'one']);
    expect(second.map((u) => u.callID)).toEqual(['two', 'two']);
  });
});

describe('LangChain adapter', () => {
  it('invoke with a ToolCall returns a ToolMessage whose artifact is the structured result', async () => {
    const r = createRegistry().register(echo, { permissions: { required: [] } });
    const [t] = await r.tools();
    const msg = (await t.invoke({ type: 'tool_call', id: 'tc', name: 'echo', args: { text: 'hey' } })) as ToolMessage;
    expect(ToolMessage.isInstance(msg)).toBe(true);
    expect(msg).toMatchObject({ content: 'hey', tool_call_id: 'tc', name: 'echo', status: 'success' });
    expect(msg.artifact).toEqual({ title: 'echoed', metadata: { length: 3 }, output: 'hey' });
    expect(await t.invoke({ text: 'plain' })).toBe('plain');
  });

  it("artifact: 'minimal' keeps only what the text does not carry, in the checkpointed thread too; the default keeps the whole result", async () => {
    const shaped = Tool.define('shaped', {
      description: 'Answers with structured content',
      parameters: z.object({}),
      outputSchema: z.object({ n: z.number() }),
      execute: async () => ({ title: 's', metadata: {}, output: 'n is 1', structuredContent: { n: 1 } }),
    });
    const pictured = Tool.define('pictured', {
      description: 'Answers with an attachment',
      parameters: z.object({}),
      execute: async () => ({
        title: 'p',
        metadata: {},
        output: 'one image',
        attachments: [{ type: 'image' as const, mime: 'image/png', data: 'iVBORw0KGgo=' }],
      }),
    });
    const r = registerBuiltinTools(
      createRegistry()
        .register(echo, { permissions: { required: [] } })
        .register(shaped, { permissions: { required: [] } })
        .register(pictured, { permissions: { required: [] } }),
      { only: ['glob'], defer: ['glob'] },
    );
    // One graph step per call through LangGraph's ToolNode, the thread kept by MemorySaver: the
    // messages read back below are the ones revived from the checkpoint, as a resumed thread sees them.
    const run = async (artifact?: 'minimal') => {
      const tools = await r.tools({ ids: ['echo', 'shaped', 'pictured', 'glob', TOOL_SEARCH_ID], artifact });
      const saver = new MemorySaver();
      const graph = new StateGraph(MessagesAnnotation)
        .addNode('tools', new ToolNode(tools))
        .addEdge('__start__', 'tools')
        .compile({ checkpointer: saver });
      const config = { configurable: { thread_id: `t-${artifact ?? 'default'}` } };
      const calls: [string, Record<string, unknown>][] = [
        ['echo', { text: 'hey' }],
        ['shaped', {}],
        ['pictured', {}],
        [TOOL_SEARCH_ID, { query: 'glob' }],
      ];
      for (const [name, args] of calls)
        await graph.invoke(
          { messages: [new AIMessage({ content: '', tool_calls: [{ id: `c_${name}`, name, args }] })] },
          config,
        );
      const { values } = await graph.getState(config);
      const messages = (values as { messages: unknown[] }).messages.filter((m) => ToolMessage.isInstance(m));
      // The thread as MemorySaver holds it (serialised), newest checkpoint last.
      const checkpoints = saver.storage[config.configurable.thread_id][''];
      const [bytes] = checkpoints[Object.keys(checkpoints).sort().at(-1)!];
      const stored = new TextDecoder().decode(bytes);
      return { messages, stored, byName: Object.fromEntries(messages.map((m) => [m.name, m])) };
    };
    const lean = await run('minimal');
    expect(lean.byName.echo).toMatchObject({ content: 'hey', status: 'success' });
    expect(lean.byName.echo.artifact).toBeUndefined();
    expect(lean.stored).toContain('"content":"hey"');
    // Not even a key on the message itself: a checkpointer's serialiser writes an `undefined` value as a record.
    const [echoTool] = await r.tools({ ids: ['echo'], artifact: 'minimal' });
    const direct = await echoTool.invoke({ type: 'tool_call', id: 'd', name: 'echo', args: { text: 'hey' } });
    const [, serialised] = await new MemorySaver().serde.dumpsTyped(direct);
    expect(new TextDecoder().decode(serialised)).not.toContain('artifact');
    expect(lean.byName.shaped.artifact).toMatchObject({ structuredContent: { n: 1 }, output: 'n is 1' });
    expect(lean.byName.pictured.artifact.attachments).toEqual([
      { type: 'image', mime: 'image/png', data: 'iVBORw0KGgo=' },
    ]);
    // Deferral reads what tool_search loaded from the conversation: still there after the checkpoint.
    expect(lean.byName[TOOL_SEARCH_ID].artifact.metadata.found).toEqual(['glob']);
    const glob = { name: 'glob' };
    expect(toolsForTurn(r, [glob], lean.messages)).toEqual([glob]);
    const full = await run();
    expect(full.byName.echo.artifact).toEqual({ title: 'echoed', metadata: { length: 3 }, output: 'hey' });
  });

  it('passes the session from createContext to the tool', async () => {
    const sessions: string[] = [];
    const t = Tool.define('who', {
      description: 'd',
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        sessions.push(`${ctx.sessionID}/${ctx.agent}/${ctx.callID}`);
        return { title: '', metadata: {}, output: '' };
      },
    });
    const r = createRegistry().register(t, { permissions: { required: [] } });
    const [w] = await r.tools({
      createContext: (id, callID) => ({ sessionID: 'S', agent: `agent-for-${id}`, messageID: callID }),
    });
    await w.invoke({ type: 'tool_call', id: 'c9', name: 'who', args: {} });
    expect(sessions).toEqual(['S/agent-for-who/c9']);
    const [defaulted] = await r.tools();
    await defaulted.invoke({ type: 'tool_call', id: 'c10', name: 'who', args: {} });
    await defaulted.invoke({ type: 'tool_call', id: 'c11', name: 'who', args: {} });
    expect(sessions[1].split('/')[0]).toMatch(/^session-/);
    expect(sessions[1].split('/')[0]).toBe(sessions[2].split('/')[0]);
  });
});

describe('DeadlineQueue', () => {
  it('fires each live deadline once, in order per duration, and never a cancelled one', async () => {
    const { DeadlineQueue } = await import('../../src/pipeline/deadlines.js');
    const q = new DeadlineQueue();
    const fired: string[] = [];
    let last!: () => void;
    const allFired = new Promise<void>((r) => (last = r));
    const a = q.add(30, () => fired.push('a30'));
    q.add(10, () => fired.push('b10'));
    const c = q.add(30, () => fired.push('c30'));
    q.add(30, () => {
      fired.push('d30');
      last();
    });
    q.add(5, () => fired.push('e5'));
    a.cancel();
    a.cancel();
    await allFired; // d30 is the last live deadline: once it fired, every other one had its turn
    c.cancel(); // after firing: a no-op
    expect(fired).toEqual(['e5', 'b10', 'c30', 'd30']);
  });

  it('cancelled deadlines retain nothing and their timer never holds the process open', async () => {
    const { DeadlineQueue } = await import('../../src/pipeline/deadlines.js');
    const q = new DeadlineQueue();
    const handles = Array.from({ length: 3000 }, () =>
      q.add(60_000, () => {
        throw new Error('must not fire');
      }),
    );
    expect(q.lane(60_000)).toEqual({ retained: 3000, timerHoldsProcess: true });
    for (const h of handles) h.cancel();
    expect(q.lane(60_000)).toEqual({ retained: 0, timerHoldsProcess: false });
    const again = q.add(60_000, () => undefined);
    expect(q.lane(60_000)).toEqual({ retained: 1, timerHoldsProcess: true });
    again.cancel();
    expect(q.lane(60_000)).toEqual({ retained: 0, timerHoldsProcess: false });
    // A lane whose timer fires with nothing left in it is dropped (a deadline of the same length,
    // added after it, fires after it: the lane is gone by then).
    const short = q.add(5, () => undefined);
    short.cancel();
    await new Promise<void>((r) => new DeadlineQueue().add(5, r));
    await new Promise<void>((r) => setImmediate(r));
    expect(q.lane(5)).toBeUndefined();
  });
});
