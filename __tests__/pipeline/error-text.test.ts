/**
 * One error text everywhere: a LangChain agent (the ToolMessage), an MCP client (`isError` result)
 * and a `toolbelt run` user read the same full sentence for the same failed call; unknown argument
 * keys name the nearest parameter; `toolbelt run <tool> --help` documents the tool.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools, type Registry } from '../../src/index.js';
import { createMcpServer } from '../../src/mcp/server.js';
import { ensureDist, CLI } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';

let ws: Awaited<ReturnType<typeof tempDir>>;
let registry: Registry;

function toolbelt(args: string[], env: Record<string, string> = {}, cwd = ws.dir) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, ...env }, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** What a LangChain agent's model reads for this call. */
async function viaLangChain(tool: string, args: Record<string, unknown>): Promise<ToolMessage> {
  const [t] = await registry.tools({ ids: [tool], initCtx: { workspaceRoot: ws.dir } });
  return (await t.invoke({ type: 'tool_call', id: 'call_1', name: tool, args })) as ToolMessage;
}

/** What an MCP client receives for this call. */
async function viaMcp(tool: string, args: Record<string, unknown>): Promise<{ isError?: boolean; text: string }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(registry, { initCtx: { workspaceRoot: ws.dir } }).connect(serverSide);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  try {
    const res = (await client.callTool({ name: tool, arguments: args })) as {
      isError?: boolean;
      content: { type: string; text?: string }[];
    };
    return { isError: res.isError, text: res.content.map((c) => c.text ?? '').join('\n') };
  } finally {
    await client.close();
  }
}

beforeAll(async () => {
  ws = await tempDir();
  await writeFile(`${ws.dir}/a.txt`, 'alpha\n');
  registry = registerBuiltinTools(createRegistry());
  await ensureDist();
}, 120_000);

afterAll(async () => {
  await ws.cleanup();
});

describe('one error text everywhere', () => {
  it('an unknown argument key: the model, the MCP client and the CLI user read the same did-you-mean sentence', async () => {
    const args = { path: 'a.txt' };
    const message = await viaLangChain('read', args);
    const mcp = await viaMcp('read', args);
    const cli = await toolbelt(['run', 'read', JSON.stringify(args), '--workspace', ws.dir]);
    expect(message.status).toBe('error');
    expect(message.content).toContain('`path` is not a parameter of read — did you mean `filePath`?');
    expect(mcp.isError).toBe(true);
    expect(mcp.text).toBe(message.content);
    expect(cli.code).toBe(1);
    expect(cli.stderr.trim()).toBe(message.content);
  }, 60_000);

  it('names the nearest parameter for snake_case and typos, and lists the parameters when none is close', async () => {
    const snake = await viaLangChain('read', { file_path: 'a.txt', limt: 'x' });
    expect(snake.content).toContain('`file_path` is not a parameter of read — did you mean `filePath`?');
    expect(snake.content).toContain('`limt` is not a parameter of read — did you mean `limit`?');
    const far = await viaLangChain('read', { zzzzzz: 1 });
    expect(far.content).toContain('`zzzzzz` is not a parameter of read. Its parameters: filePath, offset, limit.');
  });

  it('an otherwise valid call with an extra key is refused, not run with the key dropped', async () => {
    // `limt` would be dropped by zod and read the whole file instead of 1 line: the model must learn it.
    await writeFile(`${ws.dir}/two.txt`, 'one\ntwo\n');
    const args = { filePath: 'two.txt', limt: 1 };
    const message = await viaLangChain('read', args);
    expect(message.status).toBe('error');
    expect(message.content).toBe(
      'Invalid arguments for tool "read":\n- `limt` is not a parameter of read — did you mean `limit`?\n' +
        "Rewrite the input so it satisfies the tool's schema, then call the tool again.",
    );
    expect(message.content).not.toContain('two\n');
    const mcp = await viaMcp('read', args);
    expect(mcp).toEqual({ isError: true, text: message.content });
    const cli = await toolbelt(['run', 'read', JSON.stringify(args), '--workspace', ws.dir]);
    expect(cli.code).toBe(1);
    expect(cli.stderr.trim()).toBe(message.content);
    // With no close parameter the sentence lists them; the same call without the key runs.
    const far = await viaLangChain('read', { filePath: 'two.txt', zzzzzz: true });
    expect(far.content).toContain('`zzzzzz` is not a parameter of read. Its parameters: filePath, offset, limit.');
    const ok = await viaLangChain('read', { filePath: 'two.txt', limit: 1 });
    expect(ok.status).toBe('success');
    expect(ok.content).toContain('one');
    expect(ok.content).not.toContain('two\n');
  }, 60_000);

  it('task without sub-agents: not offered to a model; a direct call and an MCP client get the same sentence, not only the error code', async () => {
    const args = { description: 'look around', prompt: 'Find the config', subagent_type: 'explorer' };
    const initCtx = { workspaceRoot: ws.dir };
    // registry.tools() leaves out a tool that cannot run; unavailable() gives the same sentence.
    expect(await registry.tools({ ids: ['task'], initCtx })).toEqual([]);
    const direct = await registry.execute('task', args, { sessionID: 's' }, initCtx);
    const mcp = await viaMcp('task', args);
    expect(direct.success).toBe(false);
    expect(direct.result.output).toMatch(
      /^The task tool has no sub-agents to run \(LLM_ASSIST_REQUIRED\): none are configured\. Do the task yourself with the other tools, .*initCtx\.subagents.*\.$/s,
    );
    expect(mcp).toEqual({ isError: true, text: direct.result.output });
    expect(await registry.unavailable(initCtx, { ids: ['task'] })).toEqual([
      { id: 'task', reason: direct.result.output },
    ]);
  });

  it('the CLI does not offer task (it cannot configure sub-agents) and says why when asked for it', async () => {
    const list = await toolbelt(['list']);
    expect(list.stdout).toMatch(/^read /m);
    expect(list.stdout).not.toMatch(/^task /m);
    const run = await toolbelt(['run', 'task', '{"description":"x","prompt":"y","subagent_type":"z"}']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('The task tool needs sub-agents, which are chat models configured in code');
  }, 60_000);
});

describe('toolbelt run <tool> --help', () => {
  it('prints the description, every parameter with type and whether required, and an example call that validates', async () => {
    const res = await toolbelt(['run', 'read', '--help']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^read \(permissions: read\)\n\nReads a file from the workspace/);
    expect(res.stdout).toContain('\nParameters:\n  filePath (string, required): ');
    expect(res.stdout).toMatch(/\n {2}offset \(integer, optional\): .+\n {2}limit \(integer, optional\): /);
    const example = /\nExample:\n {2}toolbelt run read '(.*)'\n$/.exec(res.stdout);
    expect(example).not.toBeNull();
    const parsed = registry.get('read')!.info;
    const tool = await parsed.init({ workspaceRoot: ws.dir });
    expect(tool.parameters.safeParse(JSON.parse(example![1])).success).toBe(true);
  }, 60_000);

  it('builds an example from the required parameters when the tool has no documented one', async () => {
    const res = await toolbelt(['run', 'todoread', '--help']);
    expect(res.stdout).toContain('Parameters:\n  (none)\n');
    expect(res.stdout).toMatch(/Example:\n {2}toolbelt run todoread '\{\}'\n$/);
  }, 60_000);

  it('an unknown tool is a usage error naming the known ones', async () => {
    const res = await toolbelt(['run', 'raed', '--help']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/raed/);
    expect(res.stderr).toMatch(/read/);
  }, 60_000);
});

describe('toolbelt usage and help', () => {
  it('the usage printed after a run mistake shows every run flag', async () => {
    const res = await toolbelt(['run', 'read', '--nope']);
    expect(res.code).toBe(2);
    const usage = res.stderr.split('\n').find((l) => l.startsWith('Usage: toolbelt run'));
    for (const flag of ['--workspace', '--session', '--timeout', '--json']) expect(usage).toContain(flag);
  }, 60_000);

  it('help says AGENT_WORKSPACE_ROOT wins over the current directory, and it does', async () => {
    const help = await toolbelt(['--help']);
    expect(help.stdout).toMatch(
      /--workspace DIR .*\(default: \$AGENT_WORKSPACE_ROOT\s+if set, else the current directory\)/,
    );
    const other = await tempDir();
    try {
      const res = await toolbelt(['run', 'read', '{"filePath":"a.txt"}'], { AGENT_WORKSPACE_ROOT: ws.dir }, other.dir);
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('1: alpha');
    } finally {
      await other.cleanup();
    }
  }, 60_000);
});
