/**
 * `toolbelt agent --edits`: the built CLI against the OpenAI mock (the real ChatOpenAI class, pointed
 * there by OPENAI_BASE_URL). `auto` offers apply_patch without edit and write to a GPT-5 model, and
 * edit and write without apply_patch to gpt-4o-mini; the GPT-5 agent's patch lands; a mode that does
 * not exist is one usage line.
 */
import { describe, it, expect, beforeAll, beforeEach, afterEach } from '@jest/globals';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureDist } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { runCli } from '../support/cli-run.js';
import { startMockProvider, toolResults, type MockProvider } from './mock-server.js';
import { sentTools } from './subsets.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let mock: MockProvider | undefined;

beforeAll(() => ensureDist(), 180_000);
beforeEach(async () => {
  ws = await tempDir('toolbelt-cli-edits-');
  await writeFile(path.join(ws.dir, 'notes.md'), 'deploy: ops/deploy.sh\n');
});
afterEach(async () => {
  await mock?.close();
  mock = undefined;
  await ws.cleanup();
});

/** Runs the built CLI in the workspace with exactly `env` (plus PATH): no key or URL leaks in from the host. */
const toolbelt = (args: string[], env: Record<string, string> = {}) => runCli(ws.dir, args, env);

const openai = (url: string) => ({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `${url}/v1` });
const PATCH = [
  '*** Begin Patch',
  '*** Update File: notes.md',
  '@@',
  '-deploy: ops/deploy.sh',
  '+deploy: ops/ship.sh',
  '*** End Patch',
].join('\n');

describe('toolbelt agent --edits auto', () => {
  it('offers apply_patch (not edit or write) to a GPT-5 model, and its patch lands', async () => {
    mock = await startMockProvider([
      { calls: [{ name: 'read', args: { filePath: 'notes.md' } }] },
      { calls: [{ name: 'apply_patch', args: { input: PATCH } }] },
      (req) => ({ text: toolResults(req)[0]?.content ?? '' }),
    ]);
    const res = await toolbelt(
      ['agent', 'rename the script', '--model', 'openai:gpt-5', '--edits', 'auto'],
      openai(mock.url),
    );
    expect([res.code, res.stdout.trim()]).toEqual([
      0,
      'Applied the patch to 1 file (+1 -1 lines):\nM notes.md (+1 -1)',
    ]);
    const offered = sentTools(mock.requests[0].api, mock.requests[0].body).map((t) => t.name);
    expect(offered).toContain('apply_patch');
    expect(offered).not.toContain('edit');
    expect(offered).not.toContain('write');
    expect(await readFile(path.join(ws.dir, 'notes.md'), 'utf8')).toBe('deploy: ops/ship.sh\n');
  });

  it('offers edit and write (not apply_patch) to gpt-4o-mini, and by default', async () => {
    for (const extra of [['--edits', 'auto'], []]) {
      mock = await startMockProvider([{ text: 'ok' }]);
      const res = await toolbelt(['agent', 'hi', '--model', 'openai:gpt-4o-mini', ...extra], openai(mock.url));
      expect(res.code).toBe(0);
      const offered = sentTools(mock.requests[0].api, mock.requests[0].body).map((t) => t.name);
      expect([extra, offered]).toEqual([extra, expect.arrayContaining(['edit', 'write'])]);
      expect(offered).not.toContain('apply_patch');
      await mock.close();
      mock = undefined;
    }
  });

  it('refuses a mode that does not exist with one line saying which exist', async () => {
    const res = await toolbelt(
      ['agent', 'hi', '--model', 'openai:gpt-5', '--edits', 'sometimes'],
      openai('http://127.0.0.1:9'),
    );
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--edits must be one of replace, auto, patch, both');
  });
});
