/**
 * Diagnostics after a change, with the real servers (typescript-language-server and
 * pyright-langserver from the dev dependencies): write and edit add what their change introduced
 * (not what the file had before), say what it fixed, and say "not known yet" past the wait, never
 * "clean"; a file no server serves costs no server and no text.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { writeFile, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { tempDir } from '../support/helpers.js';
import { createRegistry, registerBuiltinTools, type ToolRegistryImpl } from '../../src/index.js';
import type { Tool } from '../../src/authoring/tool.js';
import { managerFor } from '../../src/lsp/manager.js';
import { processGone } from './support.js';

let dir: string;
let cleanup: () => Promise<void>;
let registry: ToolRegistryImpl;
let initCtx: Tool.InitContext;

async function call(tool: string, args: Record<string, unknown>) {
  const final = await registry.execute(tool, args, { sessionID: 's1' }, initCtx);
  if (!final.success) throw new Error(final.result.output || String(final.error));
  return final.result;
}

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('lsp-diag-'));
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true } }));
  await writeFile(
    path.join(dir, 'math.ts'),
    'export function add(a: number, b: number): number {\n  return a + b;\n}\n',
  );
  await writeFile(
    path.join(dir, 'main.ts'),
    "import { add } from './math';\n\nconst total: number = add(1, 2);\nconst broken: string = 42;\nconsole.log(total, broken);\n",
  );
  await mkdir(path.join(dir, 'py'));
  await writeFile(path.join(dir, 'py', 'pyproject.toml'), '[project]\nname = "p"\n');
  await writeFile(
    path.join(dir, 'py', 'calc.py'),
    'def add(a: int, b: int) -> int:\n    return a + b\n\nx: int = add(1, 2)\n',
  );
  // A host secret the servers must not inherit (they get PATH, HOME, the locale and their own TMPDIR).
  process.env.LSP_TEST_API_KEY = 'sk-host-secret';
  registry = createRegistry();
  registerBuiltinTools(registry, ['read', 'write', 'edit', 'lsp']);
  // Generous: a cold server on a loaded machine; the wait is what is tested below, not the speed.
  initCtx = { workspaceRoot: dir, lsp: { diagnosticsWaitMs: 60_000 } };
}, 30_000);

afterAll(async () => {
  delete process.env.LSP_TEST_API_KEY;
  await registry.dispose();
  await cleanup();
});

describe('diagnostics after an edit (TypeScript)', () => {
  it('names the error the edit introduced, not the one the file had before; the next edit says it is fixed', async () => {
    await call('read', { filePath: 'main.ts' });
    const broke = await call('edit', { filePath: 'main.ts', oldString: 'add(1, 2)', newString: "add('1', 2)" });
    expect(broke.output).toMatch(/^Edited main\.ts: 1 replacement at line 3/);
    expect(broke.output).toContain('TypeScript found 1 error this change introduced:');
    expect(broke.output).toContain(
      "main.ts:3:27 - error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
    );
    // The error the file had before (line 4) is not repeated as new.
    expect(broke.output).not.toMatch(/main\.ts:4:\d+ - error/);
    expect(broke.output).toContain('(main.ts has 2 errors now.)');
    expect(broke.metadata.diagnostics).toMatchObject({
      introduced: [{ path: 'main.ts', line: 3, column: 27, severity: 'error', code: 'TS2345' }],
    });

    const fixed = await call('edit', { filePath: 'main.ts', oldString: "add('1', 2)", newString: 'add(1, 2)' });
    expect(fixed.output).toMatch(
      /TypeScript: this change fixed 1 error \(line 3: TS2345 Argument of type 'string' is not assignable to parameter of type 'number'\.\); main\.ts has 1 error now\./,
    );
  }, 120_000);

  it('a created file: every problem is new; a clean write says there are no new problems', async () => {
    const created = await call('write', { filePath: 'extra.ts', content: 'export const n: number = "x";\n' });
    expect(created.output).toContain('TypeScript found 1 error this change introduced:');
    expect(created.output).toContain("extra.ts:1:14 - error TS2322: Type 'string' is not assignable to type 'number'.");
    const clean = await call('write', { filePath: 'extra.ts', content: 'export const n: number = 1;\n' });
    expect(clean.output).toMatch(/TypeScript: this change fixed 1 error .*; extra\.ts has no errors now\./);
    const same = await call('edit', { filePath: 'extra.ts', oldString: '= 1', newString: '= 2' });
    expect(same.output).toContain('TypeScript: no new problems; extra.ts has no errors now.');
  }, 120_000);

  it('one server per language and root, reused by every call', async () => {
    const servers = managerFor({ extra: { registry } }).running();
    expect(servers.map((s) => s.spec.id)).toEqual(['typescript']);
  });

  it("the server runs in its own temp dir and without the host's secrets", async () => {
    const [server] = managerFor({ extra: { registry } }).running();
    const env = (await readFile(`/proc/${server.pid}/environ`, 'utf8')).split('\0');
    expect(env.some((e) => e.startsWith('LSP_TEST_API_KEY='))).toBe(false);
    expect(env.find((e) => e.startsWith('TMPDIR='))).toMatch(/toolbelt-lsp-/);
  });
});

describe('diagnostics after an edit (Python, pyright)', () => {
  it('names the error the edit introduced and its code', async () => {
    await call('read', { filePath: 'py/calc.py' });
    const res = await call('edit', { filePath: 'py/calc.py', oldString: 'add(1, 2)', newString: 'add("1", 2)' });
    expect(res.output).toContain('Python (pyright) found 1 error this change introduced:');
    expect(res.output).toMatch(
      /py\/calc\.py:4:14 - error reportArgumentType: Argument of type "Literal\['1'\]" cannot be assigned/,
    );
    const root = managerFor({ extra: { registry } })
      .running()
      .find((s) => s.spec.id === 'python');
    // The project root is the directory with pyproject.toml, not the workspace.
    expect(root?.root).toBe(path.join(dir, 'py'));
  }, 120_000);
});

describe('files no server serves, and the switch', () => {
  it('a .md file gets nothing added and starts nothing', async () => {
    const fresh = createRegistry();
    registerBuiltinTools(fresh, ['write']);
    const final = await fresh.execute(
      'write',
      { filePath: 'notes.md', content: '# hi\n' },
      { sessionID: 'x' },
      { workspaceRoot: dir },
    );
    expect(final.result.output).toBe('Created notes.md (5 bytes, +1 lines).');
    expect(managerFor({ extra: { registry: fresh } }).running()).toEqual([]);
    await fresh.dispose();
  });

  it('initCtx.lsp = false: a .ts edit gets nothing added, and the lsp tool says it is off', async () => {
    const fresh = createRegistry();
    registerBuiltinTools(fresh, ['write', 'lsp']);
    const off = { workspaceRoot: dir, lsp: false as const };
    const final = await fresh.execute(
      'write',
      { filePath: 'off.ts', content: 'const x: number = "no";\n' },
      { sessionID: 'x' },
      off,
    );
    expect(final.result.output).toBe('Created off.ts (24 bytes, +1 lines).');
    expect(managerFor({ extra: { registry: fresh } }).running()).toEqual([]);
    await fresh.dispose();
  });
});

describe('the wait', () => {
  it('past LSP_DIAGNOSTICS_WAIT_MS the answer says not known yet, never clean; the edit is written', async () => {
    const fresh = createRegistry();
    registerBuiltinTools(fresh, ['write']);
    const final = await fresh.execute(
      'write',
      { filePath: 'wait.ts', content: 'export const w: number = "late";\n' },
      { sessionID: 'x' },
      { workspaceRoot: dir, lsp: { diagnosticsWaitMs: 0 } },
    );
    expect(final.success).toBe(true);
    expect(final.result.output).toContain(
      'Diagnostics not known yet (the TypeScript server did not answer within 0 ms); this says nothing about whether wait.ts has errors.',
    );
    expect(final.result.output).not.toMatch(/no (new )?problems|no errors/);
    const [server] = managerFor({ extra: { registry: fresh } }).running();
    await fresh.dispose();
    expect(await processGone(server.pid!)).toBe(true);
  }, 60_000);
});
