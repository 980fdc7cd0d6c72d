/**
 * Issue 21, item 5: the loop guard sees progress. A repeat is refused only when it would make no
 * progress: the earlier identical calls returned the same result, or the tool declares its repeats
 * useless. A read of a file edited in between, or `git status` after a build, is not refused.
 * Real files, a real git repository, real tools, and an MCP client over Streamable HTTP.
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Tool, createRegistry, createPolicy, registerBuiltinTools } from '../../src/index.js';
import { serveMcp } from '../../src/mcp/index.js';
import { LoopGuard, LOOP_RESULT_KEPT_CHARS } from '../../src/policy/loop-guard.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  ws = await tempDir('loop-progress-');
  fs.writeFileSync(path.join(ws.dir, 'a.txt'), 'one\n');
});
afterEach(() => ws.cleanup());

const UNCHANGED =
  /^You are repeating yourself: this is call \d+ in a row of "\w+" with exactly the same arguments, and it returned exactly the same result as the calls before it/;

function builtins() {
  return registerBuiltinTools(createRegistry());
}

describe('the loop guard refuses a repeat only when it makes no progress', () => {
  it('a read of a file edited between the calls is not refused; an unchanged third read is', async () => {
    const registry = builtins();
    const initCtx = { workspaceRoot: ws.dir };
    const read = () => registry.execute('read', { filePath: 'a.txt' }, { sessionID: 's' }, initCtx);
    expect((await read()).result.output).toContain('one');
    expect((await read()).result.output).toContain('one');
    fs.writeFileSync(path.join(ws.dir, 'a.txt'), 'two\n'); // the user edits the file
    const third = await read();
    expect([third.error, third.result.output]).toEqual([undefined, expect.stringContaining('two')]);
    // Two different results just before: still progress.
    expect((await read()).error).toBeUndefined();
    // Now the last two agree, and the next read returns the same again: refused after it ran.
    const stuck = await read();
    expect(stuck.error).toMatch(UNCHANGED);
  });

  it('git status after a build is not refused; git status with nothing changed is', async () => {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ws.dir, stdio: 'pipe' });
    git('init', '-q');
    const registry = builtins();
    const initCtx = { workspaceRoot: ws.dir };
    const status = () =>
      registry.execute('bash', { command: 'git status --short', description: 'status' }, { sessionID: 's' }, initCtx);
    expect((await status()).error).toBeUndefined();
    expect((await status()).error).toBeUndefined();
    fs.writeFileSync(path.join(ws.dir, 'build.out'), 'built\n'); // a build outside the session
    const after = await status();
    expect([after.error, after.result.output]).toEqual([undefined, expect.stringContaining('build.out')]);
    await status();
    expect((await status()).error).toMatch(UNCHANGED);
  });

  it('a call with effects whose earlier results differ is not refused; one whose results repeat is refused before it runs', async () => {
    const registry = createRegistry();
    let runs = 0;
    let stamp = 0;
    registry.register(
      Tool.define('bump', {
        description: 'Bump a counter',
        parameters: z.object({ by: z.number() }),
        async execute() {
          runs++;
          return { title: 'bumped', metadata: {}, output: `value ${stamp}` };
        },
      }),
      { permissions: { required: ['write'] } },
    );
    const bump = () => registry.execute('bump', { by: 1 }, { sessionID: 's' });
    stamp = 1;
    await bump();
    stamp = 2;
    await bump();
    expect((await bump()).error).toBeUndefined(); // the two before returned 1 then 2: progress
    expect(runs).toBe(3);
    const refused = await bump(); // the two before both returned "value 2": no progress, and it has effects
    expect(refused.error).toBe(
      'You are repeating yourself: this is call 4 in a row of "bump" with exactly the same arguments, and it was not run. The earlier results are still valid. Use them, change the arguments, or do something else.',
    );
    expect(runs).toBe(3);
  });

  it('a tool that declares its repeats useless is refused on count alone', async () => {
    const registry = createRegistry();
    let n = 0;
    registry.register(
      Tool.define(
        { id: 'roll', repeats: 'useless', permissions: { required: ['read'] } },
        {
          description: 'Roll',
          parameters: z.object({}),
          async execute() {
            return { title: 'rolled', metadata: {}, output: `roll ${n++}` };
          },
        },
      ),
    );
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await registry.execute('roll', {}, { sessionID: 's' }));
    expect(results.map((r) => r.success)).toEqual([true, true, false]);
    expect(n).toBe(2);
  });
});

describe('LOOP_RESULT_KEPT_CHARS', () => {
  it('results at the limit are kept as they are, one past it as a hash: the same result is recognised either way', () => {
    for (const size of [LOOP_RESULT_KEPT_CHARS, LOOP_RESULT_KEPT_CHARS + 1]) {
      const guard = new LoopGuard();
      const args = { filePath: 'a.txt' };
      const text = 'y'.repeat(size);
      guard.note('s', 'read', args);
      expect(guard.result('s', 'read', args, text)).toBe(false);
      guard.note('s', 'read', args);
      expect(guard.result('s', 'read', args, `${text.slice(1)}z`)).toBe(false);
      guard.note('s', 'read', args);
      expect(guard.result('s', 'read', args, `${text.slice(1)}z`)).toBe(true);
      expect(guard.judge('s', false, false)).toBe('refuse');
    }
  });
});

describe('with action "ask"', () => {
  it('a repeat without progress goes to the approver before it runs, read-only or not; one with progress does not', async () => {
    const asked: string[] = [];
    const policy = createPolicy(
      { rules: [], loopGuard: { action: 'ask' } },
      { onPermissionRequest: (r) => (asked.push(r.decision.reason), 'reject') },
    );
    const registry = registerBuiltinTools(createRegistry({ policy }));
    const initCtx = { workspaceRoot: ws.dir };
    const read = () => registry.execute('read', { filePath: 'a.txt' }, { sessionID: 's' }, initCtx);
    await read();
    fs.writeFileSync(path.join(ws.dir, 'a.txt'), 'two\n');
    await read();
    expect((await read()).error).toBeUndefined(); // one then two: progress, nobody asked
    expect(asked).toEqual([]);
    expect((await read()).error).toMatch(/the user rejected it/); // two, two: asked first
    expect(asked).toEqual(['ask read of a.txt: the loop guard (the same call 4 times in a row).']);
  });
});

describe('over MCP (Streamable HTTP), each client session is guarded on its own and sees progress', () => {
  it('a host re-reading a changed file is not refused; a second client is not affected by the first', async () => {
    const registry = builtins();
    const serving = await serveMcp(registry, { transport: 'http', initCtx: { workspaceRoot: ws.dir } });
    const connect = async () => {
      const client = new Client({ name: 'host', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(serving.url!)));
      return client;
    };
    const a = await connect();
    const b = await connect();
    try {
      const read = async (c: Client) => {
        const r = (await c.callTool({ name: 'read', arguments: { filePath: 'a.txt' } })) as {
          isError?: boolean;
          content: Array<{ text: string }>;
        };
        return { isError: r.isError === true, text: r.content.map((x) => x.text).join('') };
      };
      expect((await read(a)).text).toContain('one');
      expect((await read(a)).text).toContain('one');
      fs.writeFileSync(path.join(ws.dir, 'a.txt'), 'two\n');
      const third = await read(a);
      expect([third.isError, third.text]).toEqual([false, expect.stringContaining('two')]);
      // The other client's first reads are its own run.
      expect((await read(b)).isError).toBe(false);
      expect((await read(b)).isError).toBe(false);
      await read(a);
      const stuck = await read(a);
      expect([stuck.isError, stuck.text]).toEqual([true, expect.stringMatching(UNCHANGED)]);
    } finally {
      await a.close();
      await b.close();
      await serving.close();
    }
  });
});
