/**
 * Language servers as a model meets them, through the real provider classes against the loopback
 * mocks of their APIs: the model's edit introduces a type error and the tool result it reads names
 * the line and the message; its next edit fixes it and the result says the error is gone; lsp
 * definition and references answer on the same project (the real TypeScript server throughout).
 */
import { it, expect, beforeAll, afterAll } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';
import { startMockProvider, toolResults } from './mock-server.js';
import { chatModel } from './clients.js';

let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('lsp-agent-'));
  await writeFile(path.join(dir, 'tsconfig.json'), '{"compilerOptions":{"strict":true,"noEmit":true}}');
  await writeFile(
    path.join(dir, 'price.ts'),
    'export function net(gross: number): number {\n  return gross / 1.2;\n}\n',
  );
  await writeFile(
    path.join(dir, 'cart.ts'),
    "import { net } from './price';\n\nexport const total: number = net(12);\n",
  );
});
afterAll(() => cleanup());

for (const api of ['openai-chat', 'anthropic'] as const) {
  it(`${api}: the edit's result names the error it introduced, the fix's result says it is gone; definition and references answer`, async () => {
    const seen: string[][] = [];
    const record = (req: Parameters<typeof toolResults>[0]) => seen.push(toolResults(req).map((r) => r.content));
    const mock = await startMockProvider([
      { calls: [{ name: 'read', args: { filePath: 'cart.ts' } }] },
      { calls: [{ name: 'edit', args: { filePath: 'cart.ts', oldString: 'net(12)', newString: "net('12')" } }] },
      (req) => {
        record(req);
        return {
          calls: [{ name: 'edit', args: { filePath: 'cart.ts', oldString: "net('12')", newString: 'net(12)' } }],
        };
      },
      (req) => {
        record(req);
        return {
          calls: [
            { name: 'lsp', args: { operation: 'definition', filePath: 'cart.ts', line: 3, symbol: 'net' } },
            { name: 'lsp', args: { operation: 'references', filePath: 'price.ts', line: 1, symbol: 'net' } },
          ],
        };
      },
      (req) => {
        record(req);
        return { text: 'done' };
      },
    ]);
    const registry = createRegistry();
    registerBuiltinTools(registry, ['read', 'edit', 'lsp']);
    try {
      const tools = await registry.tools({ initCtx: { workspaceRoot: dir, lsp: { diagnosticsWaitMs: 60_000 } } });
      const agent = createAgent({ model: chatModel(api, mock.url), tools });
      await agent.invoke({ messages: [new HumanMessage('change the cart')] });
    } finally {
      await registry.dispose();
      await mock.close();
    }
    const [[broke], [fixed], [definition, references]] = seen;
    expect(broke).toContain('TypeScript found 1 error this change introduced:');
    expect(broke).toContain(
      "cart.ts:3:34 - error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
    );
    expect(fixed).toMatch(/TypeScript: this change fixed 1 error \(line 3: TS2345 .*\); cart\.ts has no errors now\./);
    expect(definition).toBe(
      'Definition of net at line 3, column 30 of cart.ts:\nprice.ts:1:17: export function net(gross: number): number {',
    );
    expect(references).toContain('cart.ts:3:30: export const total: number = net(12);');
    expect(references).toContain('cart.ts:1:10: import { net } from');
  }, 120_000);
}
