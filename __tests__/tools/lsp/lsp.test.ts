/**
 * The lsp tool with the real TypeScript server: definition, references, hover, symbols and
 * diagnostics answer workspace-relative paths with their line; positions outside a file and files
 * outside the workspace get a sentence; what the policy would not let read is left out and counted;
 * the MCP server serves it like any other tool.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { tempDir } from '../../support/helpers.js';
import { createRegistry, registerBuiltinTools, createPolicy, type ToolRegistryImpl } from '../../../src/index.js';
import { createMcpServer } from '../../../src/mcp/server.js';
import type { Tool } from '../../../src/authoring/tool.js';

let dir: string;
let cleanup: () => Promise<void>;
let registry: ToolRegistryImpl;
let initCtx: Tool.InitContext;

async function lsp(args: Record<string, unknown>, reg = registry) {
  const final = await reg.execute('lsp', args, { sessionID: 's' }, initCtx);
  return { ok: final.success, out: final.result.output };
}

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('lsp-tool-'));
  await writeFile(path.join(dir, 'tsconfig.json'), '{"compilerOptions":{"strict":true,"noEmit":true}}');
  await mkdir(path.join(dir, 'src'));
  await mkdir(path.join(dir, 'secret'));
  await writeFile(
    path.join(dir, 'src', 'math.ts'),
    '/** Adds two numbers. */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport class Calc {\n  total = 0;\n  push(n: number) {\n    this.total = add(this.total, n);\n  }\n}\n',
  );
  await writeFile(
    path.join(dir, 'src', 'main.ts'),
    "import { add } from './math';\n\nexport const three = add(1, 2);\n",
  );
  await writeFile(
    path.join(dir, 'secret', 'uses.ts'),
    "import { add } from '../src/math';\n\nexport const four = add(2, 2);\n",
  );
  registry = createRegistry();
  registerBuiltinTools(registry, ['lsp']);
  initCtx = { workspaceRoot: dir };
});

afterAll(async () => {
  await registry.dispose();
  await cleanup();
});

describe('lsp', () => {
  it('definition: by a name on the line, with the line of the definition', async () => {
    const { ok, out } = await lsp({ operation: 'definition', filePath: 'src/main.ts', line: 3, symbol: 'add' });
    expect(ok).toBe(true);
    expect(out).toBe(
      'Definition of add at line 3, column 22 of src/main.ts:\nsrc/math.ts:2:17: export function add(a: number, b: number): number {',
    );
  }, 60_000);

  it('references: every use across files, by line and column', async () => {
    const { out } = await lsp({ operation: 'references', filePath: 'src/math.ts', line: 2, column: 17 });
    expect(out.split('\n')[0]).toBe('References of line 2, column 17 of src/math.ts:');
    expect(out).toContain('src/math.ts:9:18: this.total = add(this.total, n);');
    expect(out).toContain('src/main.ts:3:22: export const three = add(1, 2);');
    expect(out).toContain('secret/uses.ts:3:21: export const four = add(2, 2);');
  }, 60_000);

  it('hover, documentSymbols, workspaceSymbols and diagnostics', async () => {
    expect((await lsp({ operation: 'hover', filePath: 'src/main.ts', line: 3, symbol: 'add' })).out).toContain(
      'add(a: number, b: number): number',
    );
    const symbols = (await lsp({ operation: 'documentSymbols', filePath: 'src/math.ts' })).out;
    expect(symbols).toBe(
      'Symbols of src/math.ts (line:column kind name):\n2:17 function add\n6:14 class Calc\n  7:3 property total\n  8:3 method push',
    );
    const found = (await lsp({ operation: 'workspaceSymbols', filePath: 'src/main.ts', symbol: 'Calc' })).out;
    expect(found).toContain('class Calc src/math.ts:6:1: export class Calc {');
    expect((await lsp({ operation: 'diagnostics', filePath: 'src/main.ts' })).out).toBe(
      'TypeScript reports no problems in src/main.ts.',
    );
  }, 60_000);

  it('positions outside the file, names not on the line and files outside the workspace get a sentence', async () => {
    expect((await lsp({ operation: 'definition', filePath: 'src/main.ts', line: 40, column: 1 })).out).toBe(
      'Line 40 is outside src/main.ts, which has 3 lines. Give a line from 1 to 3.',
    );
    expect((await lsp({ operation: 'hover', filePath: 'src/main.ts', line: 3, column: 99 })).out).toBe(
      'Column 99 is outside line 3 of src/main.ts, which has 31 characters. Give a column from 1 to 32, or symbol.',
    );
    expect((await lsp({ operation: 'hover', filePath: 'src/main.ts', line: 1, symbol: 'nothere' })).out).toBe(
      '"nothere" is not on line 1 of src/main.ts, which reads: import { add } from \'./math\';. Give the line where it appears, or a column.',
    );
    const outside = await lsp({ operation: 'diagnostics', filePath: '/etc/hostname' });
    expect(outside.ok).toBe(false);
    expect(outside.out).toMatch(/outside the workspace/);
    expect((await lsp({ operation: 'hover', filePath: 'README.md', line: 1, column: 1 })).out).toMatch(
      /^No language server serves README\.md\. Known servers: TypeScript \(\.ts, /,
    );
  }, 60_000);

  it('leaves out what the policy would not let read, counting it', async () => {
    const guarded = createRegistry({
      policy: createPolicy({ rules: [{ tool: '*', pattern: 'secret/**', action: 'deny' }] }),
    });
    registerBuiltinTools(guarded, ['lsp']);
    try {
      const { out } = await lsp({ operation: 'references', filePath: 'src/math.ts', line: 2, symbol: 'add' }, guarded);
      expect(out).toContain('src/main.ts:3:22');
      expect(out).not.toContain('secret');
      expect(out).toMatch(/1 path .*left out/);
    } finally {
      await guarded.dispose();
    }
  }, 60_000);

  it('is served over MCP like any other tool', async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(registry, { initCtx }).connect(serverSide);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(clientSide);
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name)).toContain('lsp');
    const res = await client.callTool({
      name: 'lsp',
      arguments: { operation: 'definition', filePath: 'src/main.ts', line: 3, symbol: 'add' },
    });
    expect((res.content as Array<{ text: string }>)[0].text).toContain('src/math.ts:2:17');
    await client.close();
  }, 60_000);
});
