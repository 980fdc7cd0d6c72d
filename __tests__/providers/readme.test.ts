/**
 * The README's "Fifteen lines with createAgent" runs unchanged, as a user runs it: the block is
 * taken from README.md, run by node in a project that has agent-toolbelt installed, with
 * OPENAI_BASE_URL pointing ChatOpenAI (chosen by the model string) at the OpenAI mock.
 */
import { it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, ensureDist } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { startMockProvider, toolResults } from './mock-server.js';
import { sentTools } from './subsets.js';

const run = promisify(execFile);
let project: { dir: string; cleanup: () => Promise<void> };

/** The first ```ts block under `heading` in README.md, exactly as written. */
async function readmeBlock(heading: string): Promise<string> {
  const text = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const section = text.slice(text.indexOf(`## ${heading}`));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error(`README.md has no ts block under "## ${heading}"`);
  return m[1];
}

beforeAll(async () => {
  await ensureDist();
  project = await tempDir('toolbelt-readme-');
  // A project with agent-toolbelt and its peers installed: links into this repo's node_modules.
  const modules = path.join(project.dir, 'node_modules');
  await mkdir(modules);
  for (const name of await readdir(path.join(ROOT, 'node_modules'))) {
    if (!name.startsWith('.')) await symlink(path.join(ROOT, 'node_modules', name), path.join(modules, name));
  }
  await symlink(ROOT, path.join(modules, 'agent-toolbelt'));
  await mkdir(path.join(project.dir, 'src'));
  await writeFile(path.join(project.dir, 'src', 'net.ts'), 'export function withRetry() { /* retry 3 times */ }\n');
}, 180_000); // a first build of dist/ on a loaded machine
afterAll(() => project?.cleanup());

it('README quick start: createAgent with openai:gpt-4o-mini and read-only built-ins', async () => {
  const code = await readmeBlock('Fifteen lines with createAgent');
  expect(code).toContain("createAgent({ model: 'openai:gpt-4o-mini', tools })");
  await writeFile(path.join(project.dir, 'quickstart.mjs'), code);
  const mock = await startMockProvider([
    { calls: [{ name: 'grep', args: { pattern: 'retry' }, id: 'call_q1' }] },
    (req) => ({ text: `The retry logic is in ${/src\/net\.ts/.exec(toolResults(req)[0].content)?.[0] ?? '?'}.` }),
  ]);
  try {
    const { stdout } = await run(process.execPath, ['quickstart.mjs'], {
      cwd: project.dir,
      env: {
        PATH: process.env.PATH,
        TMPDIR: os.tmpdir(),
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: `${mock.url}/v1`,
      },
      timeout: 30_000,
    });
    expect(stdout).toContain('completed grep');
    expect(stdout.trim().split('\n').at(-1)).toBe('The retry logic is in src/net.ts.');
    // enabledPermissions: ['read'] — only the read-only built-ins were offered to the model.
    // initChatModel's ChatOpenAI talks to the Responses API.
    expect(mock.requests.map((r) => [r.api, r.refused])).toEqual([
      ['openai-responses', undefined],
      ['openai-responses', undefined],
    ]);
    const offered = sentTools('openai-responses', mock.requests[0].body).map((t) => t.name);
    expect(offered).toEqual(expect.arrayContaining(['read', 'grep', 'glob', 'list']));
    expect(offered).not.toContain('write');
    expect(offered).not.toContain('bash');
  } finally {
    await mock.close();
  }
});
