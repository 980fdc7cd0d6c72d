/**
 * bash over a backend: deepagents' LocalShellBackend runs the command through its `execute` (never
 * our local spawn); a backend without `execute` gets no bash (it refuses in a sentence, and says so as
 * `unavailable`, nor bash_output / bash_kill: background jobs are in backend-jobs.test.ts); undo on a
 * backend looks at the backend's changes only; the policy judges a backend's paths as the backend's.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { readFile, writeFile } from 'node:fs/promises';
import fs from 'node:fs';
import path from 'node:path';
import { InMemoryStore } from '@langchain/langgraph';
import { LocalShellBackend, StoreBackend } from 'deepagents';
import { createPolicy, createRegistry, registerBuiltinTools } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';

let shellDir: { dir: string; cleanup: () => Promise<void> };
let hostDir: { dir: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  shellDir = await tempDir('backend-shell-');
  hostDir = await tempDir('backend-host-');
});
afterAll(async () => {
  await shellDir.cleanup();
  await hostDir.cleanup();
});

describe('bash over LocalShellBackend (execute)', () => {
  it('runs in the backend, sees the files our write tool put there, and reports the exit code', async () => {
    const backend = await LocalShellBackend.create({ rootDir: shellDir.dir, virtualMode: true });
    const executed: string[] = [];
    const realExecute = backend.execute.bind(backend);
    backend.execute = (command: string) => (executed.push(command), realExecute(command));
    const registry = registerBuiltinTools(createRegistry());
    const initCtx = { backend, workspaceRoot: hostDir.dir };
    const w = await registry.execute('write', { filePath: 'data/n.txt', content: '41\n' }, { sessionID: 's' }, initCtx);
    expect(w.success).toBe(true);
    const u = await registry.execute(
      'bash',
      { command: 'cat n.txt && pwd && exit 4', description: 'read it', workdir: 'data' },
      { sessionID: 's' },
      initCtx,
    );
    expect(u.success).toBe(true);
    expect(u.result.title).toBe('read it (exit 4)');
    expect(u.result.output).toMatch(new RegExp(`^41\\n${path.join(shellDir.dir, 'data')}\\n`));
    expect(u.result.output).toMatch(/\[exit code 4\]$/);
    expect(u.result.metadata).toMatchObject({
      exitCode: 4,
      backend: expect.stringMatching(/^LocalShellBackend \(local-/),
    });
    expect(executed).toEqual(["cd -- 'data' && cat n.txt && pwd && exit 4"]);
    // The host workspace given beside the backend saw nothing.
    await expect(readFile(path.join(hostDir.dir, 'data', 'n.txt'))).rejects.toThrow();
  });

  it('the time limit holds over execute: a command past it fails with a sentence naming the backend', async () => {
    const backend = await LocalShellBackend.create({ rootDir: shellDir.dir, virtualMode: true });
    const registry = registerBuiltinTools(createRegistry());
    const u = await registry.execute(
      'bash',
      { command: 'sleep 1; touch slept', description: 'wait', timeout: 200 },
      { sessionID: 's' },
      { backend },
    );
    expect(u.success).toBe(false);
    expect(u.error).toMatch(
      /^The backend LocalShellBackend \(local-[0-9a-f]+\) did not finish the command within its time limit of 200 ms; it may still be running there/,
    );
    // It did go on there: wait for it to end, so the suite leaves no process behind.
    const slept = path.join(shellDir.dir, 'slept');
    for (let i = 0; i < 100 && !fs.existsSync(slept); i++) await new Promise((r) => setTimeout(r, 50));
    expect(fs.existsSync(slept)).toBe(true);
  });
});

describe('bash given a backend without execute never runs on the host', () => {
  it('refuses in a sentence, says so as unavailable, and no command runs', async () => {
    const marker = path.join(hostDir.dir, 'ran.txt');
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['x'] });
    const registry = registerBuiltinTools(createRegistry());
    const initCtx = { backend, workspaceRoot: hostDir.dir };
    const u = await registry.execute(
      'bash',
      { command: `touch ${marker}`, description: 'touch' },
      { sessionID: 's' },
      initCtx,
    );
    expect(u.error).toBe(
      'bash is not available: the files live on the backend StoreBackend, which cannot run commands (it has no execute method and id), and a command run on this host would not see them. Use the file tools, or give the agent a sandbox backend.',
    );
    await expect(readFile(marker)).rejects.toThrow();
    expect((await registry.initialized('bash', initCtx)).unavailable).toBe(u.error);
    // No background jobs there either: bash_output and bash_kill say why.
    expect((await registry.initialized('bash_output', initCtx)).unavailable).toBe(
      'bash_output is not available: the backend StoreBackend cannot run commands (it has no execute method and id), so there are no background jobs to read.',
    );
    const kill = await registry.execute('bash_kill', { id: 'job-1' }, { sessionID: 's' }, initCtx);
    expect(kill.error).toBe(
      'bash_kill is not available: the backend StoreBackend cannot run commands (it has no execute method and id), so there are no background jobs to stop.',
    );
  });
});

describe('undo on a backend works on the backend, never on this host', () => {
  it("undo_file looks only at the backend's recorded changes (backend-undo.test.ts has the rest)", async () => {
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['y'] });
    const registry = registerBuiltinTools(createRegistry());
    const u = await registry.execute('undo_file', { path: 'a.txt' }, { sessionID: 's' }, { backend });
    expect(u.error).toMatch(/^No change to a\.txt is recorded for undo \(undo remembers the last 100 changes/);
  });
});

describe("the policy judges a backend path as the backend's, never as a host path", () => {
  it('a deny rule on .env applies to the backend file; the host workspace file of the same name is not what was judged', async () => {
    await writeFile(path.join(hostDir.dir, 'ok.txt'), 'host\n');
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['p'] });
    const policy = createPolicy({
      rules: [
        { tool: 'read', pattern: '.env', action: 'deny', reason: 'secrets' },
        { tool: 'write', pattern: 'tmp/**', action: 'deny', reason: 'not there' },
      ],
    });
    const registry = registerBuiltinTools(createRegistry({ policy }));
    const initCtx = { backend, workspaceRoot: hostDir.dir };
    const denied = await registry.execute('read', { filePath: '/.env' }, { sessionID: 's' }, initCtx);
    expect(denied.error).toMatch(/secrets/);
    // An absolute backend path like /tmp/x is the backend's tmp/x: judged by the tmp/** rule, not as a
    // host path outside the workspace (which would be judged as "outside").
    const tmp = await registry.execute('write', { filePath: '/tmp/x.txt', content: 'x' }, { sessionID: 's' }, initCtx);
    expect(tmp.error).toMatch(/not there/);
    const fine = await registry.execute(
      'write',
      { filePath: '/notes/x.txt', content: 'x' },
      { sessionID: 's' },
      initCtx,
    );
    expect(fine.success).toBe(true);
  });
});

describe('not offered means not offered: registry.tools() and the AI SDK leave out what cannot run', () => {
  it('over a backend without execute: no bash, bash_output or bash_kill (undo is offered); unavailable() says why', async () => {
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['z'] });
    const registry = registerBuiltinTools(createRegistry());
    const initCtx = { backend };
    const names = (await registry.tools({ initCtx })).map((t) => t.name);
    const unavailable = await registry.unavailable(initCtx);
    // lsp: language servers run on this host, where a StoreBackend's files are not; skill: no skills there.
    expect(unavailable.map((u) => u.id).sort()).toEqual(
      ['bash', 'bash_kill', 'bash_output', 'lsp', 'skill', 'task'].sort(),
    );
    expect(names).toEqual(expect.arrayContaining(['undo_file', 'undo_turn']));
    expect(unavailable.find((u) => u.id === 'bash')!.reason).toBe(
      'bash is not available: the files live on the backend StoreBackend, which cannot run commands (it has no execute method and id), and a command run on this host would not see them. Use the file tools, or give the agent a sandbox backend.',
    );
    expect(names).toEqual(registry.ids().filter((id) => !unavailable.some((u) => u.id === id)));
    // The permission filter still applies, and unavailable() takes it too.
    expect((await registry.unavailable(initCtx, { enabledPermissions: ['read'] })).map((u) => u.id).sort()).toEqual([
      'lsp',
      'skill',
    ]);
    const { toAISDKTools } = await import('../../src/registry/ai-sdk.js');
    const aiTools = Object.keys(await toAISDKTools(registry, { initCtx }));
    expect(aiTools).toEqual(names);
  });

  it('over LocalShellBackend bash and its job tools are offered; task only once it has sub-agents', async () => {
    const backend = await LocalShellBackend.create({ rootDir: shellDir.dir, virtualMode: true });
    const registry = registerBuiltinTools(createRegistry());
    const names = (await registry.tools({ initCtx: { backend } })).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['bash', 'bash_output', 'bash_kill', 'read']));
    expect(names).not.toContain('task');
    expect((await registry.unavailable({ backend }, { ids: ['task'] }))[0].reason).toMatch(
      /^The task tool has no sub-agents to run \(LLM_ASSIST_REQUIRED\)/,
    );
  });
});

describe('tool_search does not list a deferred tool that cannot run', () => {
  it('a deferred bash over a backend without execute is neither offered nor named by tool_search', async () => {
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['d'] });
    const registry = registerBuiltinTools(createRegistry(), { defer: ['bash', 'webfetch'] });
    const tools = await registry.tools({ initCtx: { backend } });
    const search = tools.find((t) => t.name === 'tool_search')!;
    expect(search.description).toContain('webfetch');
    expect(search.description).not.toMatch(/\bbash\b/);
    expect(tools.map((t) => t.name)).not.toContain('bash');
    const found = await registry.execute(
      'tool_search',
      { query: 'bash' },
      { sessionID: 's' },
      { backend },
      { toolSet: registry.toolSet({ ids: tools.map((t) => t.name) }) },
    );
    expect(found.result.output).toMatch(/^No tool available under this grant matches "bash" \(1 can be loaded\)/);
  });
});
