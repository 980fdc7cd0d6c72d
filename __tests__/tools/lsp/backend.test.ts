/**
 * lsp over a deepagents backend: unavailable, with the reason, where the files are not on this host
 * (a StoreBackend); working over toDeepAgentsBackend (this host's workspace), with the backend's paths.
 */
import { it, expect, beforeAll, afterAll } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InMemoryStore } from '@langchain/langgraph';
import { StoreBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools, toDeepAgentsBackend } from '../../../src/index.js';
import { tempDir } from '../../support/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('lsp-backend-'));
  await writeFile(path.join(dir, 'tsconfig.json'), '{"compilerOptions":{"strict":true,"noEmit":true}}');
  await writeFile(path.join(dir, 'a.ts'), 'export const a: number = "x";\n');
});
afterAll(() => cleanup());

it('over a StoreBackend: not offered, and unavailable() says why', async () => {
  const registry = registerBuiltinTools(createRegistry(), ['read', 'lsp']);
  const initCtx = { backend: new StoreBackend({ store: new InMemoryStore(), namespace: ['f'] }) };
  const tools = await registry.tools({ initCtx });
  expect(tools.map((t) => t.name)).toEqual(['read']);
  const [why] = (await registry.unavailable(initCtx)).filter((u) => u.id === 'lsp');
  expect(why.reason).toMatch(
    /^lsp is not available: the files live on the backend .*, and language servers run on this host, where those files are not\./,
  );
  await registry.dispose();
});

it("over toDeepAgentsBackend: answers with the backend's paths", async () => {
  const backend = await toDeepAgentsBackend({ workspaceRoot: dir, execute: false });
  const registry = registerBuiltinTools(createRegistry(), ['lsp']);
  try {
    const final = await registry.execute(
      'lsp',
      { operation: 'diagnostics', filePath: '/a.ts' },
      { sessionID: 's' },
      { backend },
    );
    expect(final.result.output).toBe(
      "TypeScript reports 1 error in a.ts:\na.ts:1:14 - error TS2322: Type 'string' is not assignable to type 'number'.",
    );
  } finally {
    await registry.dispose();
    await backend.close();
  }
}, 60_000);
