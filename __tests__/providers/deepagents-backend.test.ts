/**
 * Our workspace as a deepagents backend: a real `createDeepAgent` (real deepagents, the real
 * ChatOpenAI and ChatAnthropic classes against the loopback mock of their APIs) lists, reads, edits,
 * greps and runs a command through `toDeepAgentsBackend`; with `virtualMode: false` it writes a script
 * by its absolute path and runs it by the same path, and is told to use `read_file` (its own tool)
 * before overwriting; and the backend's contract on its own:
 * the sandbox, stale checks, atomic writes, and execute through the registry's bash pipeline (its
 * policy applies).
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HumanMessage } from '@langchain/core/messages';
import { createDeepAgent } from 'deepagents';
import { isSandboxBackend } from 'deepagents';
import { createPolicy, createRegistry, registerBuiltinTools, toDeepAgentsBackend } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider, type RecordedRequest } from './mock-server.js';
import { chatModel } from './clients.js';
import type { Api } from './subsets.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let outside: { dir: string; cleanup: () => Promise<void> };
const mocks: MockProvider[] = [];

beforeEach(async () => {
  ws = await tempDir('toolbelt-deepagents-');
  outside = await tempDir('toolbelt-deepagents-outside-');
  await mkdir(path.join(ws.dir, 'src'));
  await writeFile(path.join(ws.dir, 'src', 'greet.ts'), 'export const greeting = "Hello, world";\n');
  await writeFile(path.join(outside.dir, 'secret.txt'), 'host secret\n');
});
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
  await ws.cleanup();
  await outside.cleanup();
});

/** The text of the tool result answering call `id` in the request that carried it. */
function resultOf(requests: RecordedRequest[], id: string): string {
  for (const r of requests) for (const t of toolResults(r)) if (t.callId === id) return t.content;
  throw new Error(`no tool result for ${id}`);
}

for (const api of ['openai-chat', 'anthropic'] as Api[]) {
  it(`${api}: createDeepAgent lists, reads, edits, greps and runs a command through toDeepAgentsBackend`, async () => {
    const id = (n: string) => (api === 'anthropic' ? `toolu_${n}` : `call_${n}`);
    const mock = await startMockProvider([
      { calls: [{ id: id('ls'), name: 'ls', args: { path: '/src' } }] },
      { calls: [{ id: id('read'), name: 'read_file', args: { file_path: '/src/greet.ts' } }] },
      {
        calls: [
          {
            id: id('edit'),
            name: 'edit_file',
            args: { file_path: '/src/greet.ts', old_string: 'Hello, world', new_string: 'Hello, backend' },
          },
        ],
      },
      { calls: [{ id: id('grep'), name: 'grep', args: { pattern: 'backend', path: '/' } }] },
      { calls: [{ id: id('exec'), name: 'execute', args: { command: 'cat src/greet.ts; echo "exit=$?"' } }] },
      { calls: [{ id: id('escape'), name: 'read_file', args: { file_path: '/../../../../etc/hostname' } }] },
      { text: 'Done.' },
    ]);
    mocks.push(mock);
    const backend = await toDeepAgentsBackend({ workspaceRoot: ws.dir });
    expect(isSandboxBackend(backend)).toBe(true);
    const agent = createDeepAgent({ model: chatModel(api, mock.url), backend });
    const out = await agent.invoke({ messages: [new HumanMessage('Change the greeting.')] });
    expect(String(out.messages.at(-1)?.content)).toBe('Done.');
    expect(mock.remaining()).toBe(0);
    expect(mock.requests.filter((r) => r.refused)).toEqual([]);

    expect(resultOf(mock.requests, id('ls'))).toContain('/src/greet.ts');
    expect(resultOf(mock.requests, id('read'))).toContain('export const greeting = "Hello, world";');
    expect(resultOf(mock.requests, id('edit'))).toMatch(/greet\.ts/);
    expect(await readFile(path.join(ws.dir, 'src', 'greet.ts'), 'utf8')).toBe(
      'export const greeting = "Hello, backend";\n',
    );
    expect(resultOf(mock.requests, id('grep'))).toContain('/src/greet.ts');
    const exec = resultOf(mock.requests, id('exec'));
    expect(exec).toContain('export const greeting = "Hello, backend";');
    expect(exec).toContain('exit=0');
    // `..` never leaves the workspace: /../../etc/hostname is <workspace>/etc/hostname, which is not there.
    expect(resultOf(mock.requests, id('escape'))).toMatch(/not found/);
    // No temp file of an atomic write was left behind.
    expect(await readdir(path.join(ws.dir, 'src'))).toEqual(['greet.ts']);
  }, 60_000);
}

for (const api of ['openai-chat', 'anthropic'] as Api[]) {
  it(`${api}: with virtualMode false, write_file writes a script by its absolute path and execute runs it by the same path`, async () => {
    const id = (n: string) => (api === 'anthropic' ? `toolu_${n}` : `call_${n}`);
    const script = path.join(ws.dir, 'tools', 'hello.sh');
    const existing = path.join(ws.dir, 'src', 'greet.ts');
    const mock = await startMockProvider([
      {
        calls: [
          {
            id: id('write'),
            name: 'write_file',
            args: { file_path: script, content: '#!/bin/sh\necho "hello from $0"\n' },
          },
        ],
      },
      { calls: [{ id: id('run'), name: 'execute', args: { command: `sh ${script}` } }] },
      { calls: [{ id: id('ls'), name: 'ls', args: { path: path.join(ws.dir, 'tools') } }] },
      // Overwriting a file never read: the sentence names the tool this agent has, read_file.
      { calls: [{ id: id('stale'), name: 'write_file', args: { file_path: existing, content: 'x' } }] },
      {
        calls: [
          {
            id: id('outside'),
            name: 'write_file',
            args: { file_path: path.join(outside.dir, 'planted.sh'), content: 'x' },
          },
        ],
      },
      { text: 'Done.' },
    ]);
    mocks.push(mock);
    const backend = await toDeepAgentsBackend({ workspaceRoot: ws.dir, virtualMode: false });
    try {
      const agent = createDeepAgent({ model: chatModel(api, mock.url), backend });
      const out = await agent.invoke({ messages: [new HumanMessage('Write a greeting script and run it.')] });
      expect(String(out.messages.at(-1)?.content)).toBe('Done.');
      expect(mock.remaining()).toBe(0);
      expect(await readFile(script, 'utf8')).toBe('#!/bin/sh\necho "hello from $0"\n');
      expect(resultOf(mock.requests, id('run'))).toContain(`hello from ${script}`);
      expect(resultOf(mock.requests, id('ls'))).toContain(script);
      expect(resultOf(mock.requests, id('stale'))).toMatch(
        /has not been read in this session\. Read it first with read_file,/,
      );
      expect(await readFile(existing, 'utf8')).toBe('export const greeting = "Hello, world";\n');
      // Still confined to the workspace: an absolute path outside it is refused.
      expect(resultOf(mock.requests, id('outside'))).toMatch(/outside the workspace/);
      await expect(readdir(outside.dir)).resolves.toEqual(['secret.txt']);
    } finally {
      await backend.close();
    }
  }, 60_000);
}

describe('toDeepAgentsBackend: the protocol contract with our workspace behind it', () => {
  it('ls / read / readRaw / glob / grep answer in the protocol shapes, with backend paths', async () => {
    const b = await toDeepAgentsBackend({ workspaceRoot: ws.dir, execute: false });
    expect(isSandboxBackend(b)).toBe(false);
    expect((await b.ls('/')).files).toEqual([expect.objectContaining({ path: '/src/', is_dir: true })]);
    expect(await b.read('/src/greet.ts', 0, 10)).toMatchObject({
      content: 'export const greeting = "Hello, world";',
      totalLines: 1,
      startLine: 1,
      endLine: 1,
    });
    expect((await b.readRaw('/src/greet.ts')).data?.content).toBe('export const greeting = "Hello, world";\n');
    expect((await b.glob('**/*.ts')).files?.map((f) => f.path)).toEqual(['/src/greet.ts']);
    expect((await b.grep('greeting', '/', null, null)).matches).toEqual([
      { path: '/src/greet.ts', line: 1, text: 'export const greeting = "Hello, world";' },
    ]);
    expect((await b.read('/missing.txt')).error).toBe("File '/missing.txt' not found");
  });

  it('the sandbox holds: a symlink out of the workspace is refused for read, write, ls and glob', async () => {
    await symlink(outside.dir, path.join(ws.dir, 'link'));
    const b = await toDeepAgentsBackend({ workspaceRoot: ws.dir, execute: false });
    expect((await b.read('/link/secret.txt')).error).toMatch(/outside the workspace/);
    expect((await b.write('/link/new.txt', 'x')).error).toMatch(/outside the workspace/);
    expect((await b.glob('**/*.txt')).files).toEqual([]);
    expect((await b.grep('secret', '/')).matches).toEqual([]);
    expect((await b.ls('/')).files?.map((f) => f.path)).toEqual(['/src/']);
    await expect(readdir(outside.dir)).resolves.toEqual(['secret.txt']);
  });

  it('stale checks: overwriting or editing needs a read, and a change on disk since the read refuses', async () => {
    const b = await toDeepAgentsBackend({ workspaceRoot: ws.dir, execute: false });
    expect((await b.write('/src/greet.ts', 'x')).error).toBe(
      'File /src/greet.ts has not been read in this session. Read it first with read_file, then retry the change.',
    );
    expect((await b.edit('/src/greet.ts', 'world', 'there')).error).toMatch(/has not been read in this session/);
    await b.read('/src/greet.ts');
    await writeFile(path.join(ws.dir, 'src', 'greet.ts'), 'changed by someone else\n');
    expect((await b.edit('/src/greet.ts', 'changed', 'x')).error).toMatch(/has changed on disk since it was read/);
    await b.read('/src/greet.ts');
    expect(await b.edit('/src/greet.ts', 'someone', 'me')).toEqual({
      path: '/src/greet.ts',
      filesUpdate: null,
      occurrences: 1,
    });
    expect((await b.write('/new/file.txt', 'new\n')).error).toBeUndefined();
    expect(await readFile(path.join(ws.dir, 'new', 'file.txt'), 'utf8')).toBe('new\n');
    expect((await b.delete('/new')).error).toBeUndefined();
    expect((await b.delete('/')).error).toMatch(/workspace root; it cannot be deleted/);
  });

  it("execute runs through the registry's bash pipeline: its policy refuses what it denies", async () => {
    const registry = registerBuiltinTools(
      createRegistry({
        policy: createPolicy({ rules: [{ tool: 'bash', pattern: 'curl *', action: 'deny', reason: 'no network' }] }),
      }),
      ['bash'],
    );
    const b = await toDeepAgentsBackend({ workspaceRoot: ws.dir, registry });
    const ok = await b.execute('echo hi && exit 3');
    expect(ok.exitCode).toBe(3);
    expect(ok.output).toMatch(/^hi\n/);
    const denied = await b.execute('curl http://127.0.0.1:9/');
    expect(denied.exitCode).toBe(1);
    expect(denied.output).toMatch(/no network/);
    expect(registry.stats().bash.calls).toBe(2);
  });
});
