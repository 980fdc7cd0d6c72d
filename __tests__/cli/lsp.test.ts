/**
 * `toolbelt lsp diagnostics FILE` and the other operations from the command line (the built CLI, a
 * real TypeScript server), and `toolbelt doctor` naming the servers it found. The command leaves no
 * server running when it returns.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../support/helpers.js';
import { CLI, ensureDist } from '../support/dist.js';

const run = promisify(execFile);
let dir: string;
let cleanup: () => Promise<void>;

async function toolbelt(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, '--workspace', dir], {
      cwd: dir,
      env: { PATH: process.env.PATH, TMPDIR: os.tmpdir(), HOME: dir },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  await ensureDist();
  ({ dir, cleanup } = await tempDir('lsp-cli-'));
  await writeFile(path.join(dir, 'tsconfig.json'), '{"compilerOptions":{"strict":true,"noEmit":true}}');
  await writeFile(path.join(dir, 'a.ts'), 'export function twice(n: number): number {\n  return n * 2;\n}\n');
  await writeFile(path.join(dir, 'b.ts'), "import { twice } from './a';\nexport const s: string = twice(2);\n");
}, 180_000);
afterAll(() => cleanup());

describe('toolbelt lsp', () => {
  it('diagnostics FILE prints the errors, definition FILE LINE:NAME the definition', async () => {
    const diag = await toolbelt('lsp', 'diagnostics', 'b.ts');
    expect(diag.code).toBe(0);
    expect(diag.stdout).toBe(
      "TypeScript reports 1 error in b.ts:\nb.ts:2:14 - error TS2322: Type 'number' is not assignable to type 'string'.\n",
    );
    const def = await toolbelt('lsp', 'definition', 'b.ts', '2:twice');
    expect(def.stdout).toBe(
      'Definition of twice at line 2, column 26 of b.ts:\na.ts:1:17: export function twice(n: number): number {\n',
    );
    const bad = await toolbelt('lsp', 'definition', 'b.ts', 'here');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('The position must be LINE:COLUMN or LINE:NAME (e.g. 12:7 or 12:add), got "here".');
  }, 120_000);

  it('doctor names the servers it found', async () => {
    const { stdout } = await toolbelt('doctor');
    expect(stdout).toMatch(
      /language servers TypeScript \(typescript-language-server, from agent-toolbelt's dependencies\); Python \(pyright\) \(pyright-langserver, from agent-toolbelt's dependencies\)/,
    );
  }, 60_000);
});
