import { describe, afterAll, it, expect } from '@jest/globals';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, MemorySaver } from '@langchain/langgraph';
import { Tool, createRegistry, createPolicy, argsHash, type PolicyRule } from '../../src/index.js';
import { policyMiddleware, type PolicyInterrupt, type PolicyReviewDecision } from '../../src/policy/middleware.js';
import { ensureDist, ROOT } from '../support/dist.js';

const run = promisify(execFile);
const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'policy-mw-')));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
const initCtx = { workspaceRoot: root };
const ASK_MD: PolicyRule[] = [{ tool: 'note', pattern: '*.md', action: 'ask' }];

type Call = { name: string; args: Record<string, unknown>; id: string };

async function setup(rules: PolicyRule[], calls: Call[], saver = new MemorySaver()) {
  const ran: string[] = [];
  const registry = createRegistry({ policy: createPolicy({ rules }) });
  registry.register(
    Tool.define('note', {
      description: 'Write a note',
      parameters: z.object({ filePath: z.string(), text: z.string() }),
      async execute(args) {
        ran.push(`${args.filePath}:${args.text}`);
        return { title: 'noted', metadata: {}, output: `noted ${args.filePath}` };
      },
    }),
    { permissions: { required: ['write'] } },
  );
  const tools = await registry.tools({ initCtx });
  const model = fakeModel().respondWithTools(calls).respond(new AIMessage('done'));
  const agent = createAgent({
    model,
    tools,
    middleware: [policyMiddleware(registry.policy!, { env: registry.policyEnvironment(initCtx) })],
    checkpointer: saver,
  });
  return { agent, ran, saver };
}

const config = (thread: string) => ({ configurable: { thread_id: thread } });
const toolMessages = (messages: BaseMessage[]) =>
  messages
    .filter((m): m is ToolMessage => ToolMessage.isInstance(m))
    .map((m) => [m.tool_call_id, m.status, String(m.content)]);

async function interruptOf(agent: Awaited<ReturnType<typeof setup>>['agent'], thread: string) {
  const first = await agent.invoke({ messages: [new HumanMessage('go')] }, config(thread));
  const value = (first as { __interrupt__?: Array<{ value: PolicyInterrupt }> }).__interrupt__?.[0]?.value;
  return value!;
}

const resume = (decisions: PolicyReviewDecision[]) => new Command({ resume: { decisions } });

describe('policyMiddleware in a createAgent loop with a checkpointer', () => {
  it("interrupts only the calls the rules ask about, in humanInTheLoopMiddleware's shape", async () => {
    const { agent, ran } = await setup(ASK_MD, [
      { name: 'note', args: { filePath: 'a.txt', text: 'free' }, id: 'c1' },
      { name: 'note', args: { filePath: 'a.md', text: 'asks' }, id: 'c2' },
    ]);
    const value = await interruptOf(agent, 't-shape');
    expect(value.reviewConfigs).toEqual([{ actionName: 'note', allowedDecisions: ['approve', 'edit', 'reject'] }]);
    expect(value.actionRequests).toEqual([
      {
        name: 'note',
        args: { filePath: 'a.md', text: 'asks' },
        id: 'c2',
        argsHash: argsHash('note', { filePath: 'a.md', text: 'asks' }),
        description: expect.stringMatching(/^Tool execution requires approval: ask note of a\.md: rule #1/),
      },
    ]);
    expect(ran).toEqual([]);
    const done = await agent.invoke(resume([{ type: 'approve' }]), config('t-shape'));
    expect(ran.sort()).toEqual(['a.md:asks', 'a.txt:free']);
    expect(toolMessages(done.messages).map(([id, status]) => [id, status])).toEqual([
      ['c1', 'success'],
      ['c2', 'success'],
    ]);
  });

  it('reject: the call does not run; the model reads the message and the loop goes on', async () => {
    const { agent, ran } = await setup(ASK_MD, [{ name: 'note', args: { filePath: 'a.md', text: 'x' }, id: 'c1' }]);
    await interruptOf(agent, 't-reject');
    const done = await agent.invoke(
      resume([{ type: 'reject', message: 'write it to notes.txt instead' }]),
      config('t-reject'),
    );
    expect(ran).toEqual([]);
    expect(toolMessages(done.messages)).toEqual([['c1', 'error', 'write it to notes.txt instead']]);
    expect(done.messages.at(-1)!.content).toBe('done');
  });

  it('an edit the policy denies is refused as stale', async () => {
    const rules: PolicyRule[] = [...ASK_MD, { tool: 'note', pattern: 'secret/**', action: 'deny' }];
    const { agent, ran } = await setup(rules, [{ name: 'note', args: { filePath: 'a.md', text: 'x' }, id: 'c1' }]);
    await interruptOf(agent, 't-edit-deny');
    const done = await agent.invoke(
      resume([{ type: 'edit', editedAction: { name: 'note', args: { filePath: 'secret/k.md', text: 'x' } } }]),
      config('t-edit-deny'),
    );
    expect(ran).toEqual([]);
    expect(toolMessages(done.messages)[0][2]).toMatch(
      /^The approval for call c1 is stale: deny note of secret\/k\.md: rule #2/,
    );
  });

  it('edit: the edited call runs, and the approval covers exactly the edited arguments', async () => {
    const { agent, ran } = await setup(ASK_MD, [{ name: 'note', args: { filePath: 'a.md', text: 'draft' }, id: 'c1' }]);
    await interruptOf(agent, 't-edit');
    await agent.invoke(
      resume([{ type: 'edit', editedAction: { name: 'note', args: { filePath: 'b.md', text: 'final' } } }]),
      config('t-edit'),
    );
    expect(ran).toEqual(['b.md:final']);
  });

  it('several interrupted calls each get their own decision, in order', async () => {
    const { agent, ran } = await setup(ASK_MD, [
      { name: 'note', args: { filePath: '1.md', text: 'a' }, id: 'c1' },
      { name: 'note', args: { filePath: '2.md', text: 'b' }, id: 'c2' },
      { name: 'note', args: { filePath: '3.md', text: 'c' }, id: 'c3' },
    ]);
    const value = await interruptOf(agent, 't-many');
    expect(value.actionRequests.map((r) => r.id)).toEqual(['c1', 'c2', 'c3']);
    const done = await agent.invoke(
      resume([{ type: 'approve' }, { type: 'reject', message: 'not 2' }, { type: 'approve' }]),
      config('t-many'),
    );
    expect(ran.sort()).toEqual(['1.md:a', '3.md:c']);
    expect(toolMessages(done.messages).find(([id]) => id === 'c2')).toEqual(['c2', 'error', 'not 2']);
  });

  it('a stale decision (another call, other arguments) is refused with a message', async () => {
    const { agent, ran } = await setup(ASK_MD, [
      { name: 'note', args: { filePath: 'a.md', text: 'x' }, id: 'c1' },
      { name: 'note', args: { filePath: 'b.md', text: 'y' }, id: 'c2' },
    ]);
    await interruptOf(agent, 't-stale');
    const done = await agent.invoke(
      resume([
        { type: 'approve', id: 'c2' }, // names the other call
        { type: 'approve', argsHash: argsHash('note', { filePath: 'b.md', text: 'changed' }) },
      ]),
      config('t-stale'),
    );
    expect(ran).toEqual([]);
    const msgs = toolMessages(done.messages);
    expect(msgs.map(([id, status]) => [id, status])).toEqual([
      ['c1', 'error'],
      ['c2', 'error'],
    ]);
    expect(msgs[0][2]).toMatch(/^The decision given for call c1 of "note" was made for a different call \(c2/);
  });

  it('an approval the policy now denies (resumed under a changed policy) is refused', async () => {
    const saver = new MemorySaver();
    const calls = [{ name: 'note', args: { filePath: 'a.md', text: 'x' }, id: 'c1' }];
    const before = await setup(ASK_MD, calls, saver);
    await interruptOf(before.agent, 't-changed');
    const after = await setup(
      [{ tool: 'note', pattern: '*.md', action: 'deny', reason: 'docs are frozen' }],
      calls,
      saver,
    );
    const done = await after.agent.invoke(resume([{ type: 'approve' }]), config('t-changed'));
    expect(after.ran).toEqual([]);
    // The call is no longer asked about: the new policy's deny decides, whatever the old approval said.
    expect(toolMessages(done.messages)[0][2]).toMatch(
      /^The note call was not run: note of a\.md is denied by rule #1 .*docs are frozen/,
    );
  });

  it('resumes in a fresh process from a persisted checkpoint', async () => {
    await ensureDist();
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-mw-proc-'));
    fs.mkdirSync(path.join(ws, 'build'));
    const file = path.join(ws, '..', `${path.basename(ws)}.checkpoint.json`);
    const script = path.join(ROOT, '__tests__', 'fixtures', 'policy-agent.mjs');
    const dist = path.join(ROOT, 'dist');
    const first = JSON.parse((await run(process.execPath, [script, dist, ws, file, 'start'], { cwd: ROOT })).stdout);
    expect(first.interrupt.actionRequests).toEqual([
      expect.objectContaining({ name: 'bash', id: 'call-1', args: { command: 'rm -rf build', description: 'clean' } }),
    ]);
    expect(fs.existsSync(path.join(ws, 'build'))).toBe(true);
    // A second process: nothing in memory but the checkpoint file.
    const second = JSON.parse(
      (
        await run(
          process.execPath,
          [
            script,
            dist,
            ws,
            file,
            'resume',
            JSON.stringify({
              decisions: [{ type: 'approve', id: 'call-1', argsHash: first.interrupt.actionRequests[0].argsHash }],
            }),
          ],
          { cwd: ROOT },
        )
      ).stdout,
    );
    expect(second.interrupt).toBeNull();
    expect(second.messages.filter((m: { type: string }) => m.type === 'tool')).toEqual([
      expect.objectContaining({ id: 'call-1', status: 'success' }),
    ]);
    expect(fs.existsSync(path.join(ws, 'build'))).toBe(false);
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(file, { force: true });
  }, 120_000);
});
