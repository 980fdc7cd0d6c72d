/**
 * apply_patch against our scenario fixtures (__tests__/fixtures/apply-patch/, in Codex's shape:
 * input/, patch.txt, expected/; plus error.txt, a sentence the refusal must contain, and `unread`,
 * the input files not read first, one a line; the others are). Each scenario runs in a fresh copy of its
 * input through the LangChain tool, and the whole tree afterwards must equal expected/ byte for byte.
 */
import { describe, it, expect } from '@jest/globals';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import { callTool } from '../../support/tool-call.js';
import { tempDir } from '../../support/helpers.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/apply-patch/', import.meta.url));

/** Every file under `dir` (relative, POSIX), with its bytes. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string, rel: string) => {
    for (const e of await fs.readdir(d, { withFileTypes: true }).catch(() => [])) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
      else out[r] = (await fs.readFile(path.join(d, e.name))).toString('latin1');
    }
  };
  await walk(dir, '');
  return out;
}

const scenarios = (await fs.readdir(FIXTURES)).sort();

describe('apply_patch scenarios', () => {
  it('has scenarios to run', () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(30);
  });

  it.each(scenarios)('%s', async (name) => {
    const root = path.join(FIXTURES, name);
    const { dir, cleanup } = await tempDir('patch-scenario-');
    try {
      await fs.cp(path.join(root, 'input'), dir, { recursive: true }).catch(() => undefined);
      const registry = registerBuiltinTools(createRegistry(), { edits: 'both' });
      const tools = await registry.tools({ initCtx: { workspaceRoot: dir } });
      const unread = (await fs.readFile(path.join(root, 'unread'), 'utf8').catch(() => '')).split('\n');
      for (const f of Object.keys(await tree(dir)))
        if (!unread.includes(f)) await callTool(tools, 'read', { filePath: f });
      const patch = await fs.readFile(path.join(root, 'patch.txt'), 'utf8');
      const res = await callTool(tools, 'apply_patch', { input: patch });
      const error = await fs.readFile(path.join(root, 'error.txt'), 'utf8').catch(() => undefined);
      if (error === undefined)
        expect([res.status, res.content]).toEqual(['success', expect.stringMatching(/^Applied the patch/)]);
      else expect([res.status, res.content]).toEqual(['error', expect.stringContaining(error.trim())]);
      expect(await tree(dir)).toEqual(await tree(path.join(root, 'expected')));
    } finally {
      await cleanup();
    }
  });
});
