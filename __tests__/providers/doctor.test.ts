/**
 * `toolbelt doctor`: a --tools module holding a tool each provider API refuses is reported per API
 * with the reason, exit 1; the same definitions sent through the real provider classes are refused
 * by the mocks for the same tools (doctor and the mocks share src/schema/provider-rules.ts); without
 * them (built-ins only, fitted to 1,024 characters) doctor exits 0. The environment section names
 * what PATH holds.
 */
import { it, expect, beforeAll, beforeEach, afterEach } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdir, symlink } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { HumanMessage } from '@langchain/core/messages';
import { CLI, ROOT, ensureDist } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { createRegistry } from '../../src/index.js';
import { startMockProvider } from './mock-server.js';
import { chatModel } from './clients.js';
import type { Api } from './subsets.js';

const TOOLS = path.join(ROOT, '__tests__', 'fixtures', 'doctor-tools.mjs');
let ws: { dir: string; cleanup: () => Promise<void> };
beforeAll(() => ensureDist(), 180_000);
beforeEach(async () => {
  ws = await tempDir('toolbelt-doctor-');
});
afterEach(async () => {
  await ws.cleanup();
});

/** The built CLI with only `PATH` in its environment. */
async function doctor(args: string[], PATH: string) {
  return promisify(execFile)(process.execPath, [CLI, 'doctor', ...args], { cwd: ws.dir, env: { PATH } }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** The lines of the section for `label`: its heading and its "  - tool: reason" lines. */
function section(stdout: string, label: string): string[] {
  const lines = stdout.split('\n');
  const start = lines.findIndex((l) => l.startsWith(label));
  const out = [lines[start]];
  for (let i = start + 1; i < lines.length && lines[i].startsWith('  - '); i++) out.push(lines[i]);
  return out;
}

it('reports, per API, the tools it would refuse and why; exit 1', async () => {
  // A PATH with rg and bwrap links only, so the environment lines do not depend on the host.
  const bin = path.join(ws.dir, 'bin');
  await mkdir(bin);
  await symlink(process.execPath, path.join(bin, 'rg'));
  const res = await doctor(['--no-builtins', '--tools', TOOLS], bin);
  expect(res.code).toBe(1);
  expect(res.stdout).toMatch(/^toolbelt doctor: 5 tools/);
  expect(section(res.stdout, 'OpenAI Chat ')[0]).toMatch(/OpenAI Chat\s+ok\s+[\d,]+ characters of definitions/);
  expect(section(res.stdout, 'OpenAI Responses')[0]).toMatch(/ok/);
  expect(section(res.stdout, 'OpenAI strict')).toEqual([
    expect.stringMatching(/1 refused/),
    expect.stringMatching(/^ {2}- nested: .*12 levels of nesting, more than the 10 allowed/),
  ]);
  expect(section(res.stdout, 'Anthropic')).toEqual([
    expect.stringMatching(/1 refused/),
    expect.stringMatching(/^ {2}- spaced_keys: .*Property keys should match pattern/),
  ]);
  expect(section(res.stdout, 'Gemini')).toEqual([
    expect.stringMatching(/2 refused/),
    expect.stringMatching(/^ {2}- spaced_keys: .*invalid parameter name "file name"/),
    expect.stringMatching(/^ {2}- 3d_render: .*invalid function name/),
  ]);
  expect(section(res.stdout, '1,024-char endpoints')).toEqual([
    expect.stringMatching(/1 refused \(pass --max-description-chars 1024 to fit them\)/),
    expect.stringMatching(/^ {2}- verbose: description of 1,327 characters/),
  ]);
  expect(res.stdout).toContain(`ripgrep          ${path.join(bin, 'rg')}`);
  // The sandbox line is the registry's own probe: no bwrap on this PATH, so it says how to get one.
  expect(res.stdout).toMatch(/ {2}OS sandbox {7}No sandbox: .*commands run uncontained.*bubblewrap/);
  expect(res.stdout).toContain('  store            in-process');
  expect(res.stdout).toMatch(/4 refusals: fix the tools above/);
});

it("a tool whose init builds a schema JSON Schema cannot hold is that tool's refusal; the others are still judged", async () => {
  const initSchema = path.join(ROOT, '__tests__', 'fixtures', 'doctor-init-schema.mjs');
  const res = await doctor(['--no-builtins', '--tools', TOOLS, '--tools', initSchema], '/nonexistent');
  expect(res.code).toBe(1);
  expect(`${res.stdout}${res.stderr}`).not.toMatch(/\n\s+at |ToolSchemaError/); // no stack trace
  expect(res.stdout).toMatch(/^toolbelt doctor: 6 tools/);
  expect(section(res.stdout, 'Every API')).toEqual([
    expect.stringMatching(/^Every API\s+1 refused: set up fails$/),
    '  - schedule: Tool "schedule": parameter "at" uses z.date(), which cannot be represented in the JSON Schema sent to model providers. Fix: use z.string() described as an ISO 8601 date (or z.iso.datetime()) and parse it in execute.',
  ]);
  // the five other tools were judged as without it
  expect(section(res.stdout, 'Gemini')[0]).toMatch(/2 refused/);
  expect(res.stdout).toMatch(/5 refusals: fix the tools above/);
});

const bwrapPath = ['/usr/bin/bwrap', '/usr/local/bin/bwrap'].find((p) => existsSync(p));
if (!bwrapPath && process.env.CI) throw new Error('CI must run doctor with a real bubblewrap: install it.');
if (!bwrapPath) console.warn('doctor.test.ts: the contained-sandbox case is skipped: bubblewrap is not installed.');
(bwrapPath ? it : it.skip)('with bubblewrap on PATH, doctor starts it and says commands run contained', async () => {
  const bin = path.join(ws.dir, 'bin-bwrap');
  await mkdir(bin);
  await symlink(bwrapPath!, path.join(bin, 'bwrap'));
  await symlink('/bin/sh', path.join(bin, 'sh'));
  await symlink('/bin/true', path.join(bin, 'true'));
  const res = await doctor(['--no-builtins', '--tools', TOOLS], bin);
  expect(res.stdout).toMatch(/ {2}OS sandbox {7}bubblewrap at .*bwrap: commands run contained \(mode auto\)/);
});

it('the mocks refuse the same tools when the real provider classes send them', async () => {
  const registry = createRegistry();
  const mod = (await import(TOOLS)) as { default: Array<{ info: never; permissions: never }> };
  for (const t of mod.default) registry.register(t.info, { permissions: t.permissions });
  const tools = await registry.tools();
  const refusedBy: Record<string, string | undefined> = {};
  for (const [label, api, strict] of [
    ['openai-chat', 'openai-chat', false],
    ['strict', 'openai-chat', true],
    ['anthropic', 'anthropic', false],
    ['gemini', 'gemini', false],
  ] as Array<[string, Api, boolean]>) {
    const mock = await startMockProvider([{ text: 'ok' }]);
    try {
      const bound = strict ? await registry.tools({ strict: true }) : tools;
      await chatModel(api, mock.url, { strict }).bindTools!(bound)
        .invoke([new HumanMessage('hi')])
        .catch(() => undefined);
      refusedBy[label] = mock.requests[0]?.refused;
    } finally {
      await mock.close();
    }
  }
  expect(refusedBy['openai-chat']).toBeUndefined();
  expect(refusedBy.strict).toMatch(/'nested'.*levels of nesting/);
  expect(refusedBy.anthropic).toMatch(/'spaced_keys'.*Property keys/);
  expect(refusedBy.gemini).toMatch(/'spaced_keys'|'3d_render'/);
});

it('the built-ins fitted with --max-description-chars 1024 pass everywhere: exit 0', async () => {
  const res = await doctor(['--max-description-chars', '1024'], '/nonexistent');
  expect(res.stdout).toMatch(/1,024-char endpoints\s+ok/);
  expect(res.stdout).toContain('ripgrep          not found');
  expect(res.stdout).toContain('No tool would be refused.');
  expect(res.code).toBe(0);
});
