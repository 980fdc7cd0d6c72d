import { describe, it, expect, beforeAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ensureDist, ROOT } from '../support/dist.js';
import { builtinTools } from '../../src/tools/index.js';
import { DEMO_TOOLS } from '../../src/cli/demo.js';

function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // --offline: a developer's .env with TOOLBELT_MODEL must not make this test call a paid API.
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'cli', 'demo.js'), '--offline'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run demo (node dist/cli/demo.js)', () => {
  beforeAll(async () => {
    await ensureDist();
  }, 120_000);

  it('the demo needs only built-in tools', () => {
    for (const id of DEMO_TOOLS) expect(builtinTools.map((t) => t.info.id)).toContain(id);
  });

  it('runs the offline agent loop to completion and exits 0, printing calls, progress and results in order', async () => {
    const res = await runDemo();
    expect(res.stderr).not.toMatch(/demo failed/);
    expect(res.code).toBe(0);
    const out = res.stdout;
    const order = [
      '-> model calls grep',
      'ok grep',
      '-> model calls read',
      'ok read',
      '-> model calls edit',
      'ok edit',
      "export const greeting = 'Hi, world'",
      'model: Changed the greeting',
      'done: src/greet.ts',
    ];
    const positions = order.map((s) => out.indexOf(s));
    expect(order.filter((_, i) => positions[i] < 0)).toEqual([]);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(out).toMatch(/\.\.\. grep: /); // streamed progress, printed while the call ran
  });
});
