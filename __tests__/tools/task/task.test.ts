import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Tool, createRegistry, registerBuiltinTools, type ToolUpdate } from '../../../src/index.js';
import { LLM_ASSIST_REQUIRED } from '../../../src/tools/task/task.js';
import { tempDir, makeCtx, until } from '../../support/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ dir, cleanup } = await tempDir());
  await writeFile(path.join(dir, 'notes.txt'), 'the secret word is pelican\n');
});
afterAll(() => cleanup());

/** A sub-agent model that reads notes.txt and then answers with what it read. */
function readerModel() {
  return fakeModel()
    .respondWithTools([{ name: 'read', args: { filePath: 'notes.txt' } }])
    .respond((messages) => {
      const tool = messages.find((m) => ToolMessage.isInstance(m));
      return new AIMessage(`Found: ${(tool?.text ?? '').trim()}`);
    });
}

describe('task', () => {
  it('runs a real sub-agent that calls read, inside a parent createAgent loop, streaming its progress', async () => {
    const registry = registerBuiltinTools(createRegistry());
    const updates: ToolUpdate[] = [];
    const initCtx = {
      workspaceRoot: dir,
      subagents: { explorer: { model: readerModel(), permissions: ['read' as const], description: 'reads files' } },
    };
    const tools = await registry.tools({
      enabledPermissions: ['read', 'execute'],
      initCtx,
      onToolResult: (u) => updates.push(u),
    });
    const task = tools.find((t) => t.name === 'task')!;
    expect(task.description).toContain('- explorer: reads files');

    const parent = fakeModel()
      .respondWithTools([
        {
          name: 'task',
          args: {
            description: 'find the word',
            prompt: 'Read notes.txt and report the secret word.',
            subagent_type: 'explorer',
          },
          id: 'task1',
        },
      ])
      .respond(new AIMessage('The sub-agent found it.'));
    const agent = createAgent({ model: parent, tools });
    const out = await agent.invoke({ messages: [new HumanMessage('what is the secret word?')] });

    const tm = out.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(tm.status).toBe('success');
    expect(tm.content).toMatch(/^Found: 1: the secret word is pelican\n/);
    const taskUpdates = updates.filter((u) => u.toolId === 'task');
    expect(taskUpdates[taskUpdates.length - 1]).toMatchObject({
      status: 'completed',
      result: { metadata: { subagent: 'explorer', toolCalls: 1 } },
    });
    const progressTitles = taskUpdates.filter((u) => u.status === 'running').map((u) => u.result.title);
    expect(progressTitles[0]).toBe('find the word: started');
    expect(progressTitles).toContain('find the word: read done');
    // The sub-agent's own read call is reported too, in a child session of the parent's.
    expect(updates.filter((u) => u.toolId === 'read' && u.status === 'completed')).toEqual([]);
  });

  it('the sub-agent gets only the tools its permissions allow, and never task itself', async () => {
    const registry = registerBuiltinTools(createRegistry());
    const seen: string[][] = [];
    const spy = fakeModel().respond((messages) => new AIMessage(`messages: ${messages.length}`));
    const origBind = spy.bindTools.bind(spy);
    spy.bindTools = ((tools: Array<{ name: string }>) => {
      seen.push(tools.map((t) => t.name).sort());
      return origBind(tools as never);
    }) as typeof spy.bindTools;
    const res = await registry.execute('task', { description: 'd', prompt: 'p', subagent_type: 'ro' }, makeCtx(), {
      workspaceRoot: dir,
      subagents: { ro: { model: () => spy, permissions: ['read', 'execute'] } },
    });
    expect(res.result.output).toBe('messages: 1');
    expect(seen[0]).toEqual(
      [
        'bash',
        'bash_kill',
        'bash_output',
        'current_time',
        'file_info',
        'read',
        'todoread',
        'todowrite',
        ...(registry.has('glob') ? ['glob'] : []),
        ...(registry.has('grep') ? ['grep'] : []),
        ...(registry.has('list') ? ['list'] : []),
        ...(registry.has('lsp') ? ['lsp'] : []),
      ].sort(),
    );
  });

  it('task calls waiting on sub-agents do not hold the slots their sub-agents need (no deadlock at concurrency 1)', async () => {
    const registry = registerBuiltinTools(createRegistry({ concurrency: 1 }));
    const initCtx = {
      workspaceRoot: dir,
      subagents: {
        a: { model: readerModel(), permissions: ['read' as const] },
        b: { model: readerModel(), permissions: ['read' as const] },
      },
    };
    const results = await Promise.all([
      registry.execute('task', { description: 'one', prompt: 'go', subagent_type: 'a' }, makeCtx(), initCtx),
      registry.execute('task', { description: 'two', prompt: 'go', subagent_type: 'b' }, makeCtx(), initCtx),
    ]);
    expect(results.map((r) => r.success)).toEqual([true, true]);
    for (const r of results) expect(r.result.output).toMatch(/^Found: 1: the secret word is pelican\n/);
  });

  it('an unknown subagent_type is an error listing the configured ones', async () => {
    const registry = registerBuiltinTools(createRegistry());
    const res = await registry.execute('task', { description: 'd', prompt: 'p', subagent_type: 'nope' }, makeCtx(), {
      workspaceRoot: dir,
      subagents: {
        explorer: { model: readerModel(), permissions: ['read'] },
        writer: { model: readerModel(), permissions: ['write'] },
      },
    });
    expect(res.status).toBe('error');
    expect(res.error).toBe('Unknown subagent_type "nope". Configured sub-agents: explorer, writer. Use one of those.');
  });

  it('with no sub-agents configured the result carries LLM_ASSIST_REQUIRED and a clear text', async () => {
    const registry = registerBuiltinTools(createRegistry());
    const res = await registry.execute('task', { description: 'd', prompt: 'p', subagent_type: 'any' }, makeCtx(), {
      workspaceRoot: dir,
    });
    expect(res.error).toBe(LLM_ASSIST_REQUIRED);
    expect(res.result.metadata.error).toBe(LLM_ASSIST_REQUIRED);
    expect(res.result.output).toMatch(/no sub-agents to run.*Do the task yourself with the other tools/);
  });

  it('abort stops the sub-agent and its running tool call', async () => {
    const registry = createRegistry();
    registerBuiltinTools(registry, ['task']);
    const order: string[] = [];
    registry.register(
      Tool.define('slow', {
        description: 'waits',
        parameters: z.object({}),
        async execute(_a, ctx) {
          order.push('slow started');
          await new Promise<void>((resolve) => ctx.abort.addEventListener('abort', () => resolve()));
          order.push('slow saw abort');
          return { title: 'slow', metadata: {}, output: 'late' };
        },
      }),
      { permissions: { required: ['read'] } },
    );
    const model = fakeModel()
      .respondWithTools([{ name: 'slow', args: {} }])
      .respond(new AIMessage('never'));
    const ctx = makeCtx();
    const p = registry.execute('task', { description: 'd', prompt: 'p', subagent_type: 's' }, ctx, {
      subagents: { s: { model, permissions: ['read'] } },
    });
    await until(() => order.includes('slow started'), "the sub-agent's tool to start");
    ctx.abortNow();
    const res = await p;
    order.push('task settled');
    expect(res.status).toBe('error');
    expect(res.error).toMatch(/aborted/);
    await until(() => order.includes('slow saw abort'), "the sub-agent's tool to see the abort");
    // Both the task and the sub-agent's running tool were stopped; neither ran to its end.
    expect(order.sort()).toEqual(['slow saw abort', 'slow started', 'task settled']);
  });
});
