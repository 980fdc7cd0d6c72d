/**
 * A store (a LangGraph BaseStore or any ToolStore) whose every operation rejects with a value
 * String() cannot show, and a namespace function that throws one: each call still answers with the
 * store's sentence, and nothing escapes as an unhandled rejection (issue 31 item 7).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { z } from 'zod';
import { Tool, createRegistry, registerBuiltinTools, type ToolStore, type StoreNamespace } from '../../src/index.js';
import { MEMORY_TOOLS } from '../../src/constants.js';
import { tempDir } from '../support/helpers.js';
import { HOSTILE_VALUES, letRejectionsSurface } from '../support/hostile-values.js';

const askTool = Tool.define(
  { id: 'ask_person', permissions: { required: ['read'] } },
  {
    description: 'Ask a person; the answer comes later.',
    parameters: z.object({ question: z.string() }),
    async execute() {
      return Tool.pending({ message: 'Asked.', expiresInMs: 60_000 });
    },
  },
);

/** A store whose every operation rejects with `make()`. */
function failingStore(make: () => Error): ToolStore {
  const fail = () => Promise.reject(make());
  return { get: fail, put: fail, delete: fail, search: fail };
}

let ws: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  ws = await tempDir('toolbelt-store-hostile-');
});
afterAll(async () => {
  await ws.cleanup();
});

function registry(store: ToolStore, namespace?: StoreNamespace) {
  const r = createRegistry({ store, namespace, loopGuard: false });
  registerBuiltinTools(r, ['todowrite', 'todoread', ...MEMORY_TOOLS]);
  r.register(askTool);
  return r;
}
const call = (r: ReturnType<typeof registry>, id: string, args: unknown) =>
  r.execute(id, args, { sessionID: 's-1' }, { workingDir: ws.dir, workspaceRoot: ws.dir });

const CALLS: Array<[string, unknown]> = [
  ['todowrite', { todos: [{ id: '1', content: 'Ship it', status: 'in_progress' }] }],
  ['todoread', {}],
  ['memory_list', {}],
  ['ask_person', { question: 'Which one?' }],
];

describe.each(HOSTILE_VALUES)('a store that rejects with %s', (_what, make) => {
  it.each(CALLS)('%s answers with the store sentence', async (id, args) => {
    const r = registry(failingStore(make), ['team']);
    const res = await call(r, id, args);
    expect(res.success).toBe(false);
    expect(res.result.output).toMatch(
      /failed while .*\((an object without a text form|the symbol hostile)\), so the call did not complete/,
    );
    expect(res.result.output).not.toMatch(/TypeError|Cannot convert|undefined/);
    await letRejectionsSurface();
  });

  it('a namespace function that throws it is named in a sentence', async () => {
    const r = registry(failingStore(make), () => {
      throw make();
    });
    const res = await call(r, 'todoread', {});
    expect(res.success).toBe(false);
    expect(res.result.output).toMatch(
      /The store namespace function threw: (an object without a text form|the symbol hostile)\. Fix/,
    );
    await letRejectionsSurface();
  });
});
