import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureDist, CLI, ROOT } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { ALL_PERMISSIONS } from '../../src/authoring/permissions.js';
import { checkProvider, parseModelSpec, loadChatModel } from '../../src/providers/chat-model.js';

const TOOLS = path.join(ROOT, '__tests__', 'fixtures', 'cli-tools.mjs');

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr chunks in arrival order, tagged. */
  events: Array<['out' | 'err', string]>;
}

function toolbelt(
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string; onStderr?: (text: string, kill: () => void) => void } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const ran: Ran = { code: null, stdout: '', stderr: '', events: [] };
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      ran.stdout += d;
      ran.events.push(['out', d]);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      ran.stderr += d;
      ran.events.push(['err', d]);
      opts.onStderr?.(ran.stderr, () => child.kill('SIGINT'));
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ ...ran, code }));
  });
}

let ws: Awaited<ReturnType<typeof tempDir>>;
let stateDir: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  await ensureDist();
  ws = await tempDir('toolbelt-cli-');
  stateDir = await tempDir('toolbelt-cli-state-');
  await writeFile(path.join(ws.dir, 'notes.txt'), 'hello\n');
}, 120_000);

afterAll(async () => {
  await ws.cleanup();
  await stateDir.cleanup();
});

const base = () => ['--no-builtins', '--tools', TOOLS, '--workspace', ws.dir];

describe('toolbelt list', () => {
  it('lists the tools the permissions allow, with permissions and the first description line', async () => {
    const all = await toolbelt(['list', ...base()]);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^fx_echo\s+\[read\]\s+Echo text back\.$/m);
    expect(all.stdout).not.toMatch(/Second line/);
    expect(all.stdout).toMatch(/^fx_wait\s+\[execute\]/m);
    const readOnly = await toolbelt(['list', ...base(), '--permissions', 'read']);
    expect(readOnly.stdout).toMatch(/^fx_echo/m);
    expect(readOnly.stdout).not.toMatch(/fx_wait|fx_change/);
    expect(readOnly.stdout).toMatch(/^fx_whoami/m); // requires nothing
  });

  it('lists the built-in undo tools under the write permission', async () => {
    const res = await toolbelt(['list', '--workspace', ws.dir, '--permissions', 'write']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^undo_file\s+\[write\]\s+Undoes the last change made to one file/m);
    expect(res.stdout).toMatch(/^undo_turn\s+\[write\]\s+Undoes every file change/m);
  });

  it('says what to set for web_search when no search backend is configured, and lists it once one is', async () => {
    const unset = { SEARXNG_URL: '', BRAVE_SEARCH_API_KEY: '', TAVILY_API_KEY: '', WEB_SEARCH_BACKEND: '' };
    const without = await toolbelt(['list', '--workspace', ws.dir], { env: unset });
    expect(without.code).toBe(0);
    expect(without.stdout).not.toMatch(/^web_search/m);
    expect(without.stderr).toMatch(
      /web_search is not registered: .*set SEARXNG_URL .*BRAVE_SEARCH_API_KEY .*TAVILY_API_KEY/,
    );
    const withBackend = await toolbelt(['list', '--workspace', ws.dir], {
      env: { ...unset, SEARXNG_URL: 'http://127.0.0.1:9' },
    });
    expect(withBackend.stdout).toMatch(/^web_search\s+\[network\]\s+Searches the web/m);
    expect(withBackend.stderr).not.toMatch(/web_search/);
  });

  it('shows a tool that cannot run here as not offered, with its reason, in the table and in --json', async () => {
    const unavailableTools = path.join(ROOT, '__tests__', 'fixtures', 'cli-unavailable-tools.mjs');
    const flags = ['--no-builtins', '--tools', TOOLS, '--tools', unavailableTools, '--workspace', ws.dir];
    const table = await toolbelt(['list', ...flags]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      /^task\s+\[execute\]\s+not offered: The task tool has no sub-agents to run \(LLM_ASSIST_REQUIRED\): none are configured\. Do the task yourself/m,
    );
    expect(table.stdout).toMatch(/^fx_echo\s+\[read\]\s+Echo text back\.$/m);
    const json = JSON.parse((await toolbelt(['list', '--json', ...flags])).stdout) as Array<{
      name: string;
      unavailable?: string;
    }>;
    expect(json.find((t) => t.name === 'task')!.unavailable).toMatch(/^The task tool has no sub-agents to run/);
    expect(json.find((t) => t.name === 'fx_echo')).not.toHaveProperty('unavailable');
  });

  it('--rest-config registers REST and OpenAPI tools from a config file, and reports operations left out', async () => {
    const config = path.join(ws.dir, 'rest.json');
    await writeFile(
      config,
      JSON.stringify({
        tools: [{ name: 'weather', description: 'Weather for a city.', url: 'https://api.example.com/w/{city}' }],
        openapi: [
          {
            document: path.join(ROOT, '__tests__', 'fixtures', 'openapi', 'petstore3.json'),
            serverUrl: 'https://petstore3.swagger.io/api/v3',
            operations: ['getPetById', 'uploadFile'],
          },
        ],
      }),
    );
    const res = await toolbelt(['list', '--no-builtins', '--rest-config', config]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^rest__weather\s+\[network\]\s+Weather for a city\.$/m);
    expect(res.stdout).toMatch(/^rest__getPetById\s+\[network\]\s+Find pet by ID\. Returns a single pet\./m);
    expect(res.stderr).toContain(
      'OpenAPI operation "uploadFile" left out: its request body is application/octet-stream',
    );
    const bad = await toolbelt(['list', '--no-builtins', '--rest-config', path.join(ws.dir, 'missing.json')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Cannot read the REST config');
  });

  it('shows the built-in http_request under the network permission', async () => {
    const res = await toolbelt(['list', '--workspace', ws.dir, '--permissions', 'network']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^http_request\s+\[network\]\s+Sends one HTTP request to an API/m);
    expect(res.stdout).not.toMatch(/^read\s/m);
  });

  it('--json gives names, permissions, descriptions and input JSON Schemas', async () => {
    const res = await toolbelt(['list', ...base(), '--json', '--permissions', 'read']);
    expect(res.code).toBe(0);
    const tools = JSON.parse(res.stdout) as Array<{
      name: string;
      permissions: { required: string[] };
      description: string;
      inputSchema: { properties: Record<string, { description?: string }> };
    }>;
    const echo = tools.find((t) => t.name === 'fx_echo')!;
    expect(echo.permissions.required).toEqual(['read']);
    expect(echo.description).toBe('Echo text back.\nSecond line of the description.');
    expect(echo.inputSchema.properties.text.description).toBe('Text to echo');
    expect(tools.map((t) => t.name)).not.toContain('fx_wait');
  });

  it("a lazy MCP server's tool_search, listed or helped, names only the tools --permissions allows", async () => {
    const config = path.join(ws.dir, 'lazy-mcp.json');
    const fixture = path.join(ROOT, '__tests__', 'fixtures', 'mcp-fixture-server.mjs');
    const server = { name: 'gh', transport: 'stdio', command: process.execPath, lazy: true };
    const args = [fixture, '--only-echo', '--generated', '8'];
    const permissions = { op_7: ['network'], '*': ['read'] };
    await writeFile(config, JSON.stringify({ servers: [{ ...server, args, permissions }] }));
    const flags = ['--no-builtins', '--workspace', ws.dir, '--mcp-config', config, '--permissions', 'read'];
    const listed = await toolbelt(['list', '--json', ...flags]);
    expect(listed.code).toBe(0);
    const search = (JSON.parse(listed.stdout) as Array<{ name: string; description: string }>).find(
      (t) => t.name === 'tool_search',
    )!;
    expect(search.description).toContain('- gh__op_6: Operation 6');
    expect(search.description).not.toContain('gh__op_7');
    const help = await toolbelt(['run', 'tool_search', '--help', ...flags]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('- gh__op_6: Operation 6');
    expect(help.stdout).not.toContain('gh__op_7');
  }, 60_000);
});

describe('toolbelt run', () => {
  it('prints the output to stdout and exits 0', async () => {
    const res = await toolbelt(['run', 'fx_echo', '{"text":"hi there"}', ...base()]);
    expect(res).toMatchObject({ code: 0, stdout: 'hi there\n' });
  });

  it('streams progress to stderr as it happens, before the output', async () => {
    const res = await toolbelt(['run', 'fx_steps', '{"n":3}', ...base()]);
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(
      /\[fx_steps\] step 1\/3 \{"step":1\}\n[\s\S]*\[fx_steps\] step 2\/3[\s\S]*\[fx_steps\] step 3\/3/,
    );
    const firstOut = res.events.findIndex(([k]) => k === 'out');
    const lastProgress = res.events.map(([k, t]) => k === 'err' && t.includes('step 3/3')).lastIndexOf(true);
    expect(lastProgress).toBeGreaterThanOrEqual(0);
    expect(lastProgress).toBeLessThan(firstOut);
    expect(res.stdout).toBe('finished 3 steps\n');
  });

  it("exits 1 with the tool's message on stderr when the tool fails", async () => {
    const res = await toolbelt(['run', 'fx_fail', ...base()]);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/The widget at \/ws\/w.txt is broken\. Fix the widget, then retry\./);
  });

  it('exits 1 for invalid arguments, naming the field', async () => {
    const res = await toolbelt(['run', 'fx_steps', '{"n":11}', ...base()]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/Invalid arguments for tool "fx_steps":\n- n:/);
  });

  it('--json prints the whole final update', async () => {
    const res = await toolbelt(['run', 'fx_image', '{}', '--json', ...base()]);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({
      status: 'completed',
      toolId: 'fx_image',
      result: { output: 'an image', attachments: [{ type: 'image', mime: 'image/png' }] },
    });
  });

  it('reports attachments on stderr', async () => {
    const res = await toolbelt(['run', 'fx_image', ...base()]);
    expect(res.stderr).toMatch(/\[fx_image\] attachment: image image\/png \(\d+ bytes\)/);
  });

  it('refuses a tool the permissions do not grant (exit 1)', async () => {
    const res = await toolbelt(['run', 'fx_change', '{"filePath":"notes.txt"}', ...base(), '--permissions', 'read']);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/needs the write permission, which is not granted/);
  });

  it('Ctrl-C aborts the running tool, which sees its abort signal', async () => {
    const marker = path.join(ws.dir, 'aborted.txt');
    let sent = false; // a second Ctrl-C would kill the process outright
    const res = await toolbelt(['run', 'fx_wait', JSON.stringify({ marker }), ...base()], {
      onStderr: (text, kill) => {
        if (!sent && text.includes('[fx_wait] waiting')) {
          sent = true;
          kill();
        }
      },
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/was aborted \(interrupted by the user\)/);
    expect(readFileSync(marker, 'utf8')).toBe('aborted');
  });

  it('--session shares read-before-edit state across invocations; without it each run is a new session', async () => {
    const env = { TOOLBELT_STATE_DIR: stateDir.dir };
    const unread = await toolbelt(['run', 'fx_change', '{"filePath":"notes.txt"}', ...base(), '--session', 's1'], {
      env,
    });
    expect(unread.code).toBe(1);
    expect(unread.stderr).toMatch(/has not been read in this session/);
    expect(
      (await toolbelt(['run', 'fx_look', '{"filePath":"notes.txt"}', ...base(), '--session', 's1'], { env })).code,
    ).toBe(0);
    const ok = await toolbelt(['run', 'fx_change', '{"filePath":"notes.txt"}', ...base(), '--session', 's1'], { env });
    expect(ok).toMatchObject({ code: 0, stdout: 'may change notes.txt\n' });
    const other = await toolbelt(['run', 'fx_change', '{"filePath":"notes.txt"}', ...base(), '--session', 's2'], {
      env,
    });
    expect(other.code).toBe(1);
    const none = await toolbelt(['run', 'fx_change', '{"filePath":"notes.txt"}', ...base()], { env });
    expect(none.code).toBe(1);
    // a change on disk since the read is still caught across processes
    // (its mtime set a minute ahead, so the change shows however coarse the file system's clock is)
    await writeFile(path.join(ws.dir, 'notes.txt'), 'changed by someone else\n');
    const later = new Date(Date.now() + 60_000);
    await utimes(path.join(ws.dir, 'notes.txt'), later, later);
    const stale = await toolbelt(['run', 'fx_change', '{"filePath":"notes.txt"}', ...base(), '--session', 's1'], {
      env,
    });
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/has changed on disk since it was read/);
    const sessionId = await toolbelt(['run', 'fx_whoami', ...base(), '--session', 's1'], { env });
    expect(sessionId.stdout).toBe('s1\n');
    // Seven CLI processes in a row: on a loaded 2-core machine each start can take seconds, so this
    // test gets a longer safety limit than jest's default (it asserts no timing).
  }, 120_000);
});

describe('usage errors exit 2 with a clear message', () => {
  it.each([
    [['run', 'nope', '{}', '--no-builtins', '--tools', TOOLS], /Unknown tool "nope"\. Known tools: fx_echo, /],
    [
      ['run', 'fx_echo', '{text:hi}', '--no-builtins', '--tools', TOOLS],
      /arguments for "fx_echo" are not valid JSON[\s\S]*toolbelt run fx_echo '\{"key":"value"\}'/,
    ],
    [['list', '--bogus'], /Unknown option '--bogus'/],
    [['list', '--workspce', '.'], /Unknown option '--workspce' — did you mean --workspace\?/],
    [['run', 'raed', '{}'], /Unknown tool "raed" — did you mean "read"\? Known tools: read, /],
    [['rnu', 'read'], /Unknown command "rnu" — did you mean "run"\?/],
    [['frobnicate'], /Unknown command "frobnicate"\. Commands: list, run, mcp, agent/],
    [['list', '--permissions', 'read,root'], /Unknown permission "root"/],
    [['run'], /"toolbelt run" takes 1-2 arguments, got 0/],
    [
      ['run', 'fx_echo', '{}', '--session', 'a/b', '--no-builtins', '--tools', TOOLS],
      /--session "a\/b" is not a valid session id/,
    ],
    [['list', '--workspace', '/definitely/not/here'], /--workspace "\/definitely\/not\/here" is not a directory/],
    [['mcp', '--http', 'abc'], /--http needs a port number/],
    [['agent', 'do it'], /needs a model: pass --model provider:model/],
    [['agent', 'do it', '--model', 'gpt-4o'], /not of the form provider:model/],
  ])('%j', async (args, message) => {
    const res = await toolbelt(args, { env: { TOOLBELT_MODEL: '' } });
    expect(res.stderr).toMatch(message);
    expect(res.code).toBe(2);
  });

  it('--help prints usage and exits 0; no command prints usage and exits 2', async () => {
    const help = await toolbelt(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage:\n\s+toolbelt list/);
    expect(help.stdout).toMatch(/toolbelt agent "<task>" --model provider:model/);
    // every permission --permissions takes, memory included
    for (const p of ALL_PERMISSIONS) expect(help.stdout).toMatch(new RegExp(`--permissions LIST .*\\b${p}\\b`));
    const none = await toolbelt([]);
    expect(none.code).toBe(2);
  });

  it('agent: a provider whose package is missing names the package to install', async () => {
    const hasOpenAI = existsSync(path.join(ROOT, 'node_modules', '@langchain', 'openai'));
    const res = await toolbelt(['agent', 'hello', '--model', 'openai:gpt-4o-mini', '--no-builtins'], {
      env: { OPENAI_API_KEY: '' },
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(
      hasOpenAI
        ? /OPENAI_API_KEY/
        : /needs the package @langchain\/openai, which is not installed\. Install it with: npm install @langchain\/openai/,
    );
  });
});

describe('model spec checks (in-process)', () => {
  it('parses provider:model and rejects anything else', () => {
    expect(parseModelSpec('openai:gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(parseModelSpec('ollama:llama3.1:8b')).toEqual({ provider: 'ollama', model: 'llama3.1:8b' });
    expect(() => parseModelSpec('gpt-4o')).toThrow(/provider:model/);
    expect(() => parseModelSpec(undefined)).toThrow(/TOOLBELT_MODEL/);
  });

  it('names the missing key when the package is there but the key is not', async () => {
    const present = async () => ({});
    await expect(checkProvider('anthropic', { env: {}, importModule: present })).rejects.toThrow(
      /needs an API key in the environment variable ANTHROPIC_API_KEY, which is not set/,
    );
    await expect(
      checkProvider('anthropic', { env: { ANTHROPIC_API_KEY: 'k' }, importModule: present }),
    ).resolves.toBeUndefined();
    await expect(checkProvider('ollama', { env: {}, importModule: present })).resolves.toBeUndefined();
    const missing = async () => {
      throw Object.assign(new Error("Cannot find package '@langchain/groq'"), { code: 'ERR_MODULE_NOT_FOUND' });
    };
    await expect(loadChatModel('groq:llama', { env: {}, importModule: missing })).rejects.toThrow(
      /npm install @langchain\/groq/,
    );
  });
});
