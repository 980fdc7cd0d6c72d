/**
 * Pay only for what you use: importing the package loads none of the heavy dependencies a single
 * tool needs (HTML conversion, globbing, diffs, the MCP SDK); the first use loads them. Checked in
 * fresh processes against the built package (timings are bench/import.bench.mjs's job).
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, ensureDist } from './dist.js';

const run = promisify(execFile);
const HEAVY = ['sanitize-html', 'turndown', 'fast-glob', 'diff', '@modelcontextprotocol/sdk'];

/** The heavy packages a fresh process has loaded after running `script` (an ES module body). */
async function loadedAfter(script: string): Promise<string[]> {
  const probe = `
    import { createRequire } from 'node:module';
    ${script}
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    const heavy = ${JSON.stringify(HEAVY)};
    console.log(JSON.stringify(heavy.filter((p) => loaded.some((f) => f.includes('/node_modules/' + p + '/')))));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe], { cwd: ROOT });
  return JSON.parse(stdout.trim().split('\n').pop()!) as string[];
}

const INDEX = JSON.stringify(path.join(ROOT, 'dist', 'index.js'));

beforeAll(() => ensureDist(), 180_000);

describe('import cost', () => {
  it('importing the package loads none of the heavy dependencies', async () => {
    expect(await loadedAfter(`await import(${INDEX});`)).toEqual([]);
  }, 60_000);

  it('glob and diff load what they need on first use; HTML conversion loads sanitize-html and turndown only in its worker', async () => {
    const loaded = await loadedAfter(`
      const { builtinTools } = await import(${INDEX});
      const { htmlToMarkdown } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'tools', 'webfetch.js'))});
      const { unifiedDiff } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'diff.js'))});
      const md = await htmlToMarkdown('<p>hi</p>', new URL('https://example.test/'));
      if (md.trim() !== 'hi') throw new Error('conversion failed: ' + md);
      unifiedDiff('a.txt', 'a\\n', 'b\\n');
      const glob = await builtinTools.find((t) => t.info.id === 'glob').info.init({ workspaceRoot: ${JSON.stringify(ROOT)} });
      await glob.execute({ pattern: 'src/*.ts' }, { sessionID: 's', messageID: 'm', agent: 'a', abort: new AbortController().signal, metadata() {} });`);
    expect(loaded).toEqual(['fast-glob', 'diff']);
  }, 60_000);
});
