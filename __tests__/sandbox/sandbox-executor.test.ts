/**
 * The sandbox as a deepagents sandbox backend: `createSandboxExecutor` passes deepagents' own
 * `isSandboxBackend`, runs commands contained (real bubblewrap), and a real `createDeepAgent` whose
 * backend is a FilesystemBackend plus the executor runs its `execute` tool in it, driven by a real
 * provider class against the loopback mock of its API.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createDeepAgent, FilesystemBackend, isSandboxBackend } from 'deepagents';
import { HumanMessage } from '@langchain/core/messages';
import { createSandboxExecutor, toDeepAgentsBackend, type SandboxExecutor } from '../../src/index.js';
import { SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS } from '../../src/sandbox/executor.js';
import { tempDir } from '../support/helpers.js';
import { startMockProvider, toolResults, type MockProvider } from '../providers/mock-server.js';
import { chatModel } from '../providers/clients.js';

const works = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', '/bin/true']).status === 0;
if (!works && process.env.CI) throw new Error('CI must run the sandbox executor suite: install bubblewrap.');
if (!works) console.warn('sandbox-executor.test.ts skipped: bwrap cannot run here. Install bubblewrap to run it.');
const suite = works ? describe : describe.skip;

suite('createSandboxExecutor: a local OS sandbox for deepagents', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let home: string;
  let executor: SandboxExecutor;
  const mocks: MockProvider[] = [];

  beforeAll(async () => {
    base = await tempDir('sandbox-executor-');
    ws = path.join(base.dir, 'ws');
    home = path.join(base.dir, 'home');
    await mkdir(path.join(home, '.ssh'), { recursive: true });
    await mkdir(ws);
    await writeFile(path.join(home, '.ssh/id_rsa'), 'DECOY-EXECUTOR-KEY');
    executor = createSandboxExecutor({ workspaceRoot: ws, sandbox: { filesystem: { home } } });
  });

  afterAll(async () => {
    await executor.close();
    await Promise.all(mocks.map((m) => m.close()));
    await base.cleanup();
  });

  it("passes deepagents' isSandboxBackend and runs commands contained", async () => {
    expect(isSandboxBackend(executor)).toBe(true);
    expect(executor.id).toMatch(/^toolbelt-sandbox-[0-9a-f]{8}$/);
    expect(await executor.status()).toMatchObject({ mode: 'required', enabled: true, engine: 'bwrap' });
    const ok = await executor.execute('echo made > made.txt && cat made.txt');
    expect(ok).toEqual({ output: 'made\n', exitCode: 0, truncated: false });
    const refused = await executor.execute('echo x > ../escaped; cat ~/.ssh/id_rsa');
    expect(refused.exitCode).not.toBe(0);
    expect(refused.output).not.toContain('DECOY-EXECUTOR-KEY');
    expect(refused.output).toContain('is hidden by the sandbox');
    expect(existsSync(path.join(base.dir, 'escaped'))).toBe(false);
  });

  it(`keeps SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS (${SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS}) characters and says when it cut`, async () => {
    const at = await executor.execute(`head -c ${SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS} /dev/zero | tr '\\0' a`);
    expect([at.output.length, at.truncated]).toEqual([SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS, false]);
    const past = await executor.execute(`head -c ${SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS + 1} /dev/zero | tr '\\0' a`);
    expect([past.output.length, past.truncated]).toEqual([SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS, true]);
  });

  it("toDeepAgentsBackend({ sandbox }) runs deepagents' execute through our bash inside the OS sandbox", async () => {
    const backend = await toDeepAgentsBackend({
      workspaceRoot: ws,
      sandbox: { mode: 'required', filesystem: { home } },
    });
    try {
      expect(isSandboxBackend(backend)).toBe(true);
      const ok = await backend.execute('echo through-backend > via-backend.txt && cat via-backend.txt');
      expect(ok).toMatchObject({ exitCode: 0 });
      expect(ok.output).toContain('through-backend');
      expect(readFileSync(path.join(ws, 'via-backend.txt'), 'utf8')).toBe('through-backend\n');
      const refused = await backend.execute('echo x > ../escaped-backend; cat ~/.ssh/id_rsa');
      expect(refused.exitCode).not.toBe(0);
      expect(refused.output).not.toContain('DECOY-EXECUTOR-KEY');
      expect(existsSync(path.join(base.dir, 'escaped-backend'))).toBe(false);
    } finally {
      // The registry toDeepAgentsBackend made is the backend's: close() disposes it (and its sandbox dir).
      await backend.close();
    }
  });

  it('a timeout ends the contained tree and says so', async () => {
    const short = createSandboxExecutor({ workspaceRoot: ws, sandbox: { filesystem: { home } }, timeoutMs: 300 });
    try {
      const res = await short.execute('sleep 31342 & sleep 31342');
      expect(res.output).toContain('[Command killed: timed out after 300 ms');
    } finally {
      await short.close();
    }
  });

  it("a real createDeepAgent runs its execute tool in it (openai-chat through the provider's class)", async () => {
    const mock = await startMockProvider([
      { calls: [{ name: 'execute', args: { command: 'echo from-agent > agent.txt; cat ~/.ssh/id_rsa' } }] },
      (req) => ({ text: `done: ${toolResults(req).at(-1)?.content ?? ''}` }),
    ]);
    mocks.push(mock);
    const fsBackend = new FilesystemBackend({ rootDir: ws, virtualMode: true });
    // The file half from deepagents, the execution half from the sandbox.
    const backend = Object.assign(fsBackend, { id: executor.id, execute: (c: string) => executor.execute(c) });
    const agent = createDeepAgent({ model: chatModel('openai-chat', mock.url), backend });
    await agent.invoke({ messages: [new HumanMessage('Write agent.txt')] });
    expect(readFileSync(path.join(ws, 'agent.txt'), 'utf8')).toBe('from-agent\n');
    const result = toolResults(mock.requests[1]).at(-1)!.content;
    expect(result).toContain('is hidden by the sandbox: it usually holds secrets');
    expect(result).not.toContain('DECOY-EXECUTOR-KEY');
  }, 60_000);
});
