/**
 * A newcomer follows the README in an empty directory: installs the packed tarball (as
 * "In your project" says), runs the README's offline agent, lists the tools with `npx toolbelt`,
 * and starts `toolbelt mcp` with the README's host config — and each works, without reading source.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT } from '../support/dist.js';
import { extractBlocks } from '../support/doc-blocks.js';
import { makeUserProject, packPackage, repoPackage } from '../support/user-project.js';
import { runInPty } from '../support/pty.js';

const run = promisify(execFile);
const readme = extractBlocks('README.md', readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
let tmp: string;
let project: string;
let tarball: string;

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-newcomer-'));
  tarball = (await packPackage(tmp)).tarball;
  // What `npm install ./agent-toolbelt-<v>.tgz @langchain/core langchain zod @langchain/openai` leaves
  // (with TypeScript, for the projects that type-check).
  project = await makeUserProject(tarball, ['@langchain/openai', 'typescript', '@types/node']);
  mkdirSync(path.join(project, 'src'));
  writeFileSync(path.join(project, 'src', 'retry.ts'), 'export async function retry() {}\n');
}, 180_000);

afterAll(() => {
  for (const dir of [tmp, project]) if (dir) rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ PATH: process.env.PATH ?? '', HOME: tmp, TMPDIR: os.tmpdir() });

describe('a newcomer following the README', () => {
  it('the install line names the peers and the provider of the first example', () => {
    const install = readme.find((b) => b.kind === 'shell' && /npm install .*\.tgz/.test(b.body));
    expect(install?.body).toMatch(/@langchain\/core langchain zod @langchain\/openai/);
    const first = readme.find((b) => b.kind === 'code');
    expect(first?.body).toMatch(/model: 'openai:/);
  });

  it('runs the offline agent example: the model calls grep on the project and answers', async () => {
    const example = readme.find((b) => b.kind === 'code' && b.body.includes('fakeModel'));
    expect(example).toBeDefined();
    // The example is plain JavaScript as well as TypeScript: run it as a newcomer would paste it.
    writeFileSync(path.join(project, 'agent.mjs'), example!.body);
    const { stdout } = await run(process.execPath, ['agent.mjs'], { cwd: project, env: env() });
    // grep's result, fed back to the model, then the model's answer
    expect(stdout).toMatch(/^tool: Found 1 match in 1 file\.\s+src\/retry\.ts:\s+1: export async function retry/m);
    expect(stdout).toMatch(/^ai: The retry logic is in src\/retry\.ts\.$/m);
  }, 60_000);

  it('npx toolbelt lists the read-only tools', async () => {
    const cmd = readme.find((b) => b.kind === 'shell' && b.body.startsWith('npx toolbelt'))!.body.trim();
    const { stdout } = await run('sh', ['-c', cmd], { cwd: project, env: env() });
    expect(stdout.split('\n').map((l) => l.split(/\s+/)[0])).toEqual(
      expect.arrayContaining(['read', 'list', 'glob', 'grep']),
    );
    expect(stdout).not.toMatch(/^(write|edit|bash)\s/m);
  }, 60_000);

  it("the README's MCP host config starts toolbelt mcp, which lists and runs the tools", async () => {
    const config = readme.find((b) => b.kind === 'json' && b.body.includes('mcpServers'))!;
    const server = JSON.parse(config.body.replaceAll('/path/to/project', project)).mcpServers.toolbelt as {
      command: string;
      args: string[];
    };
    const client = new Client({ name: 'newcomer', version: '1.0.0' });
    // A host starts the command from its own directory, not the project's.
    await client.connect(
      new StdioClientTransport({ command: server.command, args: server.args, env: env(), cwd: os.tmpdir() }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['read', 'write', 'edit', 'grep']));
      expect(names).not.toContain('bash'); // --permissions read,write
      const res = await client.callTool({ name: 'read', arguments: { filePath: 'src/retry.ts' } });
      expect(res.isError).toBeFalsy();
      expect(JSON.stringify(res.content)).toContain('export async function retry');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('npx toolbelt at a terminal asks before reading .env (the default policy), and runs it on y', async () => {
    writeFileSync(path.join(project, '.env'), 'API_TOKEN=newcomer-secret\n');
    const t = runInPty('npx', ['toolbelt', 'run', 'read', '{"filePath":".env"}'], { cwd: project, env: env() });
    await t.waitFor(/Allow it\? \[y\] yes, once {2}\[n\] no {2}\[a\] always for this session: /);
    expect(t.screen()).toMatch(/read of \.env, asked by default rule #1 .*it reads a file that usually holds secrets/);
    expect(t.screen()).not.toContain('newcomer-secret');
    t.type('y\n');
    const { code, screen } = await t.done;
    expect(code).toBe(0);
    expect(screen).toContain('1: API_TOKEN=newcomer-secret');
  }, 60_000);
});

/** The README's createAgent example as a module body: its imports, then the rest inside `main()` when `wrap` (CommonJS has no top-level await). */
function readmeAgentExample(wrap: boolean): string {
  const body = readme.find((b) => b.kind === 'code' && b.body.includes("model: 'openai:"))!.body;
  if (!wrap) return body;
  const lines = body.split('\n');
  const imports = lines.filter((l) => l.startsWith('import '));
  const rest = lines.filter((l) => !l.startsWith('import '));
  return `${imports.join('\n')}\n\nexport async function main(): Promise<void> {\n${rest.join('\n')}\n}\n`;
}

/** `tsc` with the settings a strict user has (module nodenext, declarations of libraries checked too) on `file`. */
async function typecheck(dir: string, file: string): Promise<{ code: number; output: string }> {
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
      },
      files: [file],
    }),
  );
  const tsc = path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, env: env() });
    return { code: 0, output: '' };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('a newcomer in a CommonJS project (npm init -y writes "type": "commonjs")', () => {
  let cjs: string;
  beforeAll(async () => {
    cjs = await makeUserProject(tarball, ['@langchain/openai', 'typescript', '@types/node'], 'commonjs');
    mkdirSync(path.join(cjs, 'lib'));
    writeFileSync(path.join(cjs, 'lib', 'retry.js'), 'exports.retry = async () => {};\n');
  }, 180_000);
  afterAll(() => rmSync(cjs, { recursive: true, force: true }));

  it("require('agent-toolbelt') and each entry of its exports load, and the tools run", async () => {
    const entries = Object.keys(repoPackage().exports).filter((e) => e !== './package.json');
    writeFileSync(
      path.join(cjs, 'main.js'),
      `const { createRegistry, registerBuiltinTools } = require('agent-toolbelt');
for (const e of ${JSON.stringify(entries)}) console.log(e, Object.keys(require('agent-toolbelt' + e.slice(1))).length > 0);
registerBuiltinTools(createRegistry())
  .tools({ enabledPermissions: ['read'], initCtx: { workspaceRoot: __dirname } })
  .then(async (tools) => {
    const grep = tools.find((t) => t.name === 'grep');
    console.log(await grep.invoke({ pattern: 'retry', path: 'lib' }));
  });
`,
    );
    const { stdout, stderr } = await run(process.execPath, ['main.js'], { cwd: cjs, env: env() });
    expect(stdout).toContain(entries.map((e) => `${e} true`).join('\n'));
    expect(stdout).toMatch(/Found 1 match in 1 file\.\s+lib\/retry\.js:\s+1: exports\.retry/);
    expect(stderr).toBe('');
  }, 60_000);

  it("tsc (module nodenext, skipLibCheck false) passes on the README's createAgent example", async () => {
    writeFileSync(path.join(cjs, 'agent.ts'), readmeAgentExample(true));
    expect(await typecheck(cjs, 'agent.ts')).toEqual({ code: 0, output: '' });
  }, 120_000);
});

describe("a newcomer's ES module project with skipLibCheck false", () => {
  it("tsc passes on the README's createAgent example (no dependency's types leak through ours)", async () => {
    writeFileSync(path.join(project, 'agent.ts'), readmeAgentExample(false));
    expect(await typecheck(project, 'agent.ts')).toEqual({ code: 0, output: '' });
  }, 120_000);
});
