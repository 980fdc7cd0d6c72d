import { describe, afterAll, it, expect } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolMessage } from '@langchain/core/messages';
import { Tool, createRegistry, createPolicy, registerBuiltinTools, type PermissionRequest } from '../../src/index.js';
import { createMcpServer } from '../../src/mcp/server.js';

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'policy-pipeline-')));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
const initCtx = { workspaceRoot: root };

function counterTool() {
  let runs = 0;
  const info = Tool.define('note', {
    description: 'Write a note',
    parameters: z.object({ filePath: z.string(), text: z.string() }),
    async execute(args) {
      runs++;
      return { title: 'noted', metadata: {}, output: `noted ${args.filePath}` };
    },
  });
  return { info, runs: () => runs };
}

const rules = createPolicy({
  rules: [
    { tool: 'note', pattern: 'secret/**', action: 'deny', reason: 'secrets are off limits' },
    { tool: 'note', pattern: '*.md', action: 'ask' },
  ],
});

describe('every entry point obeys the policy', () => {
  it('registry.execute: deny and ask (no approver) are errors the model reads; the tool never runs', async () => {
    const registry = createRegistry({ policy: rules });
    const tool = counterTool();
    registry.register(tool.info, { permissions: { required: ['write'] } });
    const denied = await registry.execute('note', { filePath: './x/../secret/a.txt', text: 't' }, {}, initCtx);
    expect(denied.error).toBe(
      'The note call was not run: note of secret/a.txt is denied by rule #1 {"tool":"note","pattern":"secret/**","action":"deny","reason":"secrets are off limits"} (secrets are off limits). Do not retry it; do the task another way or tell the user it is not permitted.',
    );
    const asked = await registry.execute('note', { filePath: 'README.md', text: 't' }, {}, initCtx);
    expect(asked.error).toMatch(/needs approval by rule #2 .* and no approver is configured/);
    const fine = await registry.execute('note', { filePath: 'a.txt', text: 't' }, {}, initCtx);
    expect(fine.success).toBe(true);
    expect(tool.runs()).toBe(1);
  });

  it('the approver sees the request and its answer decides', async () => {
    const seen: PermissionRequest[] = [];
    const policy = createPolicy(
      { rules: [{ tool: 'note', pattern: '*.md', action: 'ask' }] },
      {
        onPermissionRequest: (r) => (
          seen.push(r),
          r.args && (r.args as { text: string }).text === 'ok' ? 'once' : { reply: 'reject', message: 'not that text' }
        ),
      },
    );
    const registry = createRegistry({ policy });
    const tool = counterTool();
    registry.register(tool.info, { permissions: { required: ['write'] } });
    const ok = await registry.execute('note', { filePath: 'a.md', text: 'ok' }, { sessionID: 's' }, initCtx, {
      callID: 'c1',
    });
    expect(ok.success).toBe(true);
    const no = await registry.execute('note', { filePath: 'a.md', text: 'bad' }, { sessionID: 's' }, initCtx, {
      callID: 'c2',
    });
    expect(no.error).toBe(
      'The note call was not run: the user rejected it with this message: not that text. Do not retry the same call.',
    );
    expect(seen.map((r) => [r.toolId, r.callID, r.sessionID, r.decision.action])).toEqual([
      ['note', 'c1', 's', 'ask'],
      ['note', 'c2', 's', 'ask'],
    ]);
    expect(seen[0].argsHash).toMatch(/^[0-9a-f]{16}$/);
    expect(tool.runs()).toBe(1);
  });

  it('LangChain tools: a refusal is an error ToolMessage', async () => {
    const registry = createRegistry({ policy: rules });
    registry.register(counterTool().info, { permissions: { required: ['write'] } });
    const [tool] = await registry.tools({ initCtx });
    const msg = (await tool.invoke({
      type: 'tool_call',
      id: 'tc1',
      name: 'note',
      args: { filePath: 'secret/k', text: 'x' },
    })) as ToolMessage;
    expect(ToolMessage.isInstance(msg)).toBe(true);
    expect(msg.status).toBe('error');
    expect(String(msg.content)).toMatch(/^The note call was not run: note of secret\/k is denied by rule #1/);
  });

  it('the MCP server: a refusal is an isError result', async () => {
    const registry = createRegistry({ policy: rules });
    registry.register(counterTool().info, { permissions: { required: ['write'] } });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(registry, { initCtx }).connect(serverSide);
    const client = new Client({ name: 't', version: '1' });
    await client.connect(clientSide);
    const res = await client.callTool({ name: 'note', arguments: { filePath: 'secret/k', text: 'x' } });
    expect(res.isError).toBe(true);
    expect(JSON.stringify(res.content)).toMatch(/denied by rule #1/);
    await client.close();
  });

  it('bash under the default policy: a dangerous command asks, a redirection outside the workspace is denied', async () => {
    const registry = registerBuiltinTools(createRegistry({ policy: createPolicy() }), ['bash']);
    fs.mkdirSync(path.join(root, 'build'), { recursive: true });
    const r1 = await registry.execute('bash', { command: 'ls && rm -rf build', description: 'x' }, {}, initCtx);
    expect(r1.error).toMatch(
      /bash command "rm -rf build" needs approval by default rule #\d+ \{"tool":"bash","danger":"dangerous","action":"ask"/,
    );
    expect(fs.existsSync(path.join(root, 'build'))).toBe(true);
    const r2 = await registry.execute('bash', { command: 'echo hi > ../escape.txt', description: 'x' }, {}, initCtx);
    expect(r2.error).toMatch(/bash writes to \/.*escape\.txt is denied by default rule/);
    expect(fs.existsSync(path.join(path.dirname(root), 'escape.txt'))).toBe(false);
    const r3 = await registry.execute('bash', { command: 'echo hi', description: 'x' }, {}, initCtx);
    expect(r3.result.output.trim()).toBe('hi');
  });
});

describe('loop guard', () => {
  function make(options: Parameters<typeof createRegistry>[0] = {}) {
    const registry = createRegistry(options);
    const tool = counterTool();
    registry.register(tool.info, { permissions: { required: ['write'] } });
    return { registry, tool };
  }
  const args = { filePath: 'a.txt', text: 'same' };

  it('never counts exempt tools (polling a job is progress, not a loop): default bash_output, or as configured', async () => {
    const { registry } = make({ loopGuard: { exempt: ['note'] } });
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await registry.execute('note', args, { sessionID: 's1' }));
    expect(results.map((r) => r.success)).toEqual([true, true, true, true]);
  });

  it('is on by default: the third identical call in a row in a session is refused', async () => {
    const { registry, tool } = make();
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await registry.execute('note', args, { sessionID: 's1' }));
    expect(results.map((r) => r.success)).toEqual([true, true, false]);
    expect(results[2].error).toBe(
      'You are repeating yourself: this is call 3 in a row of "note" with exactly the same arguments, and it was not run. The earlier results are still valid. Use them, change the arguments, or do something else.',
    );
    // Another session, or a different call in between, starts over.
    expect((await registry.execute('note', args, { sessionID: 's2' })).success).toBe(true);
    await registry.execute('note', { ...args, text: 'other' }, { sessionID: 's1' });
    expect((await registry.execute('note', args, { sessionID: 's1' })).success).toBe(true);
    expect(tool.runs()).toBe(5);
  });

  it('threshold is configurable and the guard can be turned off', async () => {
    const five = make({ loopGuard: { threshold: 5 } });
    const off = make({ loopGuard: false });
    const a = [];
    const b = [];
    for (let i = 0; i < 5; i++) {
      a.push((await five.registry.execute('note', args, { sessionID: 's' })).success);
      b.push((await off.registry.execute('note', args, { sessionID: 's' })).success);
    }
    expect(a).toEqual([true, true, true, true, false]);
    expect(b).toEqual([true, true, true, true, true]);
    expect(() => createRegistry({ loopGuard: { threshold: 1 } })).toThrow(
      'loopGuard.threshold must be a whole number of at least 2, got 1.',
    );
  });

  it('can be routed to the approver', async () => {
    const asked: string[] = [];
    const policy = createPolicy(
      { rules: [], loopGuard: { action: 'ask' } },
      { onPermissionRequest: (r) => (asked.push(r.decision.reason), 'once') },
    );
    const { registry, tool } = make({ policy });
    for (let i = 0; i < 3; i++) await registry.execute('note', args, { sessionID: 's' }, initCtx);
    expect(tool.runs()).toBe(3);
    expect(asked).toEqual(['ask note of a.txt: the loop guard (the same call 3 times in a row).']);
  });
});
