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
import { makeUserProject, packPackage } from '../support/user-project.js';
import { runInPty } from '../support/pty.js';

const run = promisify(execFile);
const readme = extractBlocks('README.md', readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
let tmp: string;
let project: string;

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-newcomer-'));
  const packed = await packPackage(tmp);
  // What `npm install ./agent-toolbelt-<v>.tgz @langchain/core langchain zod @langchain/openai` leaves.
  project = await makeUserProject(packed.tarball, ['@langchain/openai']);
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
