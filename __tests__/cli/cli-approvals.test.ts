/**
 * The CLI applies the default policy everywhere (run, agent, mcp) unless --no-policy or a file with
 * "extends": false, and each entry point has an approver: at a terminal (a real pseudo-terminal
 * here) `run` and `agent` ask the human, y / n / a; off a terminal they refuse with a sentence
 * naming --yes and the rule; --yes approves asks; `toolbelt mcp` asks the client by elicitation
 * when it declared the capability (the SDK's own client), else refuses with a sentence.
 */
import { describe, it, expect, beforeAll, beforeEach, afterEach } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI, ensureDist } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { runInPty } from '../support/pty.js';
import { startMockProvider, toolResults, type MockProvider } from '../providers/mock-server.js';

const SECRET = 'DB_PASSWORD=hunter2';
const PROMPT = /Allow it\? \[y\] yes, once {2}\[n\] no {2}\[a\] always for this session: /;

let ws: { dir: string; cleanup: () => Promise<void> };
let mock: MockProvider | undefined;

beforeAll(() => ensureDist(), 180_000);
beforeEach(async () => {
  ws = await tempDir('toolbelt-approvals-');
  await writeFile(path.join(ws.dir, '.env'), `${SECRET}\n`);
  await mkdir(path.join(ws.dir, 'build'));
  await writeFile(path.join(ws.dir, 'build', 'out.js'), 'built\n');
});
afterEach(async () => {
  await mock?.close();
  mock = undefined;
  await ws.cleanup();
});

/** The environment of every run: no key, state or policy leaks in from the host. */
const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  HOME: ws.dir,
  TMPDIR: os.tmpdir(),
  TOOLBELT_STATE_DIR: path.join(ws.dir, '.state'),
  ...extra,
});

/** The CLI with stdin that is not a terminal (as in a script or CI). */
function toolbelt(args: string[], extra: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ws.dir, env: env(extra), stdio: 'pipe' });
    child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const inPty = (args: string[], extra: Record<string, string> = {}) =>
  runInPty(process.execPath, [CLI, ...args], { cwd: ws.dir, env: env(extra) });

const readEnv = ['run', 'read', '{"filePath":".env"}'];
const rmBuild = ['run', 'bash', '{"command":"rm -rf build","description":"clean"}', '--sandbox', 'off'];

describe('toolbelt run at a terminal asks the human', () => {
  it('shows the call and the rule that asked; y runs it', async () => {
    const t = inPty(readEnv);
    await t.waitFor(PROMPT);
    expect(t.screen()).toContain('toolbelt: read {"filePath":".env"}\n');
    expect(t.screen()).toMatch(
      /read of \.env, asked by default rule #1 \{"permission":"read","pattern":"\.env\*","action":"ask","reason":"it reads a file that usually holds secrets"\}/,
    );
    expect(t.screen()).not.toContain(SECRET); // nothing read before the answer
    t.type('y\n');
    const { code, screen } = await t.done;
    expect(code).toBe(0);
    expect(screen).toContain(`1: ${SECRET}`);
  }, 60_000);

  it('n refuses the dangerous command, which does not run; an answer it does not know is asked again', async () => {
    const t = inPty(rmBuild);
    const asked = await t.waitFor(PROMPT);
    expect(t.screen()).toMatch(
      /bash command "rm -rf build", asked by default rule #\d+ \{"tool":"bash","danger":"dangerous"/,
    );
    t.type('maybe\n');
    await t.waitFor(/Answer y, n or a \(got "maybe"\)\.\n/, asked);
    await t.waitFor(PROMPT, asked);
    t.type('n\n');
    const { code, screen } = await t.done;
    expect(code).toBe(1);
    expect(screen).toContain('toolbelt: bash was not run: you answered no.');
    // the human reads their own answer, not the sentence written for a model
    expect(screen).not.toMatch(/Do not retry/);
    expect(existsSync(path.join(ws.dir, 'build', 'out.js'))).toBe(true);
  }, 60_000);
});

describe('toolbelt run off a terminal', () => {
  it('refuses an ask with a sentence for the human naming the rule and --yes; nothing is read', async () => {
    const res = await toolbelt(readEnv);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('toolbelt: read {"filePath":".env"} was not run: the policy asks for approval');
    expect(res.stderr).toContain('default rule #1 {"permission":"read","pattern":".env*"');
    expect(res.stderr).toMatch(/there is no terminal to ask you at \(stdin is not a TTY\)[\s\S]*add --yes/);
    expect(res.stderr).not.toMatch(/Do not retry|ask the user/);
  });

  it('--yes approves asks (and says so); it never lifts a deny', async () => {
    const yes = await toolbelt([...readEnv, '--yes']);
    expect(yes.code).toBe(0);
    expect(yes.stdout).toContain(`1: ${SECRET}`);
    expect(yes.stderr).toMatch(
      /^toolbelt: --yes approved read \{"filePath":"\.env"\}: read of \.env, asked by default rule #1/,
    );
    const outside = await toolbelt([
      'run',
      'write',
      `{"filePath":"${path.join(os.tmpdir(), 'toolbelt-yes-x.txt')}","content":"x"}`,
      '--yes',
    ]);
    expect(outside.code).toBe(1);
    expect(outside.stderr).toMatch(/is denied by default rule #\d+ .*it writes outside the workspace/);
    expect(existsSync(path.join(os.tmpdir(), 'toolbelt-yes-x.txt'))).toBe(false);
  });

  it('the dangerous-command ask applies without a policy file; --no-policy or "extends": false lifts it', async () => {
    const refused = await toolbelt(rmBuild);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/bash command "rm -rf build", asked by default rule/);
    expect(existsSync(path.join(ws.dir, 'build'))).toBe(true);

    const none = await toolbelt([...readEnv, '--no-policy']);
    expect([none.code, none.stdout]).toEqual([0, expect.stringContaining(SECRET)]);

    await writeFile(path.join(ws.dir, 'toolbelt.policy.json'), '{ "extends": false }');
    const replaced = await toolbelt(rmBuild);
    expect(replaced.code).toBe(0);
    expect(existsSync(path.join(ws.dir, 'build'))).toBe(false);
  });

  it('--no-policy with --policy is a usage error', async () => {
    await writeFile(path.join(ws.dir, 'p.json'), '{}');
    const res = await toolbelt([...readEnv, '--no-policy', '--policy', 'p.json']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--no-policy and --policy contradict each other/);
  });
});

/** The OpenAI mock: the model reads .env twice, then answers with what the tool results said. */
async function readTwiceThenAnswer() {
  mock = await startMockProvider([
    { calls: [{ name: 'read', args: { filePath: '.env' }, id: 'call_1' }] },
    { calls: [{ name: 'read', args: { filePath: '.env' }, id: 'call_2' }] },
    (req) => ({
      text: `results: ${toolResults(req)
        .map((r) => r.content)
        .join(' | ')}`,
    }),
  ]);
  return { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `${mock.url}/v1` };
}
const agentArgs = ['agent', 'What is in .env?', '--model', 'openai:gpt-4o-mini', '--no-task'];

describe('toolbelt agent', () => {
  it('at a terminal: a = always for this session, so the second read is not asked', async () => {
    const t = inPty(agentArgs, await readTwiceThenAnswer());
    const asked = await t.waitFor(PROMPT);
    t.type('a\n');
    const { code, screen } = await t.done;
    expect(code).toBe(0);
    expect(screen.slice(asked).match(PROMPT)).toBeNull(); // asked once
    expect(toolResults(mock!.requests[1])[0].content).toContain(SECRET);
    expect(toolResults(mock!.requests[2])[0].content).toContain(SECRET);
  }, 60_000);

  it('off a terminal: the model reads a refusal, the human a sentence naming --yes; with --yes both reads run', async () => {
    const res = await toolbelt(agentArgs, await readTwiceThenAnswer());
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/toolbelt: read \{"filePath":"\.env"\} was not run: [\s\S]*add --yes/);
    const seen = toolResults(mock!.requests[1])[0].content;
    expect(seen).not.toContain(SECRET);
    expect(seen).toMatch(/The read call was not run: read of \.env needs approval by default rule #1/);
    await mock!.close();

    const yes = await toolbelt([...agentArgs, '--yes'], await readTwiceThenAnswer());
    expect(yes.code).toBe(0);
    expect(toolResults(mock!.requests[2])[0].content).toContain(SECRET);
  }, 60_000);
});

/** A client of `toolbelt mcp` over stdio; `answer` set means it declares elicitation and answers so. */
async function mcpClient(answer?: (message: string) => ElicitResult) {
  const client = new Client(
    { name: 'approvals-test', version: '1.0.0' },
    answer ? { capabilities: { elicitation: {} } } : {},
  );
  const asked: string[] = [];
  if (answer)
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return answer(request.params.message);
    });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      cwd: ws.dir,
      env: env(),
      stderr: 'pipe',
    }),
  );
  return { client, asked };
}

const text = (res: unknown) => JSON.stringify((res as { content?: unknown }).content);

describe('toolbelt mcp', () => {
  it('asks a client that declares elicitation: accept runs the call, "always" covers the session, decline refuses', async () => {
    let decision: ElicitResult = { action: 'accept', content: { decision: 'always' } };
    const { client, asked } = await mcpClient(() => decision);
    try {
      const first = await client.callTool({ name: 'read', arguments: { filePath: '.env' } });
      expect(first.isError).toBeFalsy();
      expect(text(first)).toContain(SECRET);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatch(
        /^Run read \{"filePath":"\.env"\}\?\nThe policy asks about it: read of \.env, asked by default rule #1/,
      );
      const again = await client.callTool({ name: 'read', arguments: { filePath: '.env', offset: 1 } });
      expect(text(again)).toContain(SECRET);
      expect(asked).toHaveLength(1); // "always" for this session

      decision = { action: 'decline' };
      const rm = await client.callTool({ name: 'bash', arguments: { command: 'rm -rf build', description: 'clean' } });
      expect(asked).toHaveLength(2);
      expect(rm.isError).toBe(true);
      expect(text(rm)).toMatch(/The bash call was not run: the user rejected it/);
      expect(existsSync(path.join(ws.dir, 'build', 'out.js'))).toBe(true);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('refuses an ask with a sentence when the client cannot be asked', async () => {
    const { client } = await mcpClient();
    try {
      const res = await client.callTool({ name: 'read', arguments: { filePath: '.env' } });
      expect(res.isError).toBe(true);
      expect(text(res)).not.toContain(SECRET);
      expect(text(res)).toMatch(/needs approval by default rule #1.*the MCP client does not support elicitation/);
    } finally {
      await client.close();
    }
  }, 60_000);
});
