/**
 * A user's tool that throws or rejects with a value String() cannot show (an object without a
 * prototype, a throwing toString, a symbol, a proxy whose traps throw) — from execute, from init,
 * or from an onToolResult listener: registry.execute and the LangChain adapter answer with a
 * sentence, and nothing escapes as an unhandled rejection (issue 31 item 7).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { z } from 'zod';
import { ToolMessage } from '@langchain/core/messages';
import { Tool, createRegistry } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';
import { HOSTILE_VALUES, letRejectionsSurface } from '../support/hostile-values.js';

let ws: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  ws = await tempDir('toolbelt-tool-hostile-');
});
afterAll(async () => {
  await ws.cleanup();
});

const initCtx = () => ({ workingDir: ws.dir, workspaceRoot: ws.dir });
/** A sentence naming the tool, never a TypeError from describing the value. */
const SENTENCE = /^Tool "hostile[a-z_]*" (failed|could not be initialised)[^\n]*\S/;

function hostileTools(make: () => Error) {
  const r = createRegistry({ loopGuard: false });
  r.register(
    Tool.define(
      { id: 'hostile_throw', permissions: { required: ['read'] } },
      {
        description: 'Throws.',
        parameters: z.object({}),
        execute() {
          throw make();
        },
      },
    ),
  );
  r.register(
    Tool.define(
      { id: 'hostile_reject', permissions: { required: ['read'] } },
      {
        description: 'Rejects.',
        parameters: z.object({}),
        execute: () => Promise.reject(make()),
      },
    ),
  );
  r.register(
    Tool.define({ id: 'hostile_init', permissions: { required: ['read'] } }, () => {
      throw make();
    }),
  );
  return r;
}

describe.each(HOSTILE_VALUES)('a tool that throws %s', (_what, make) => {
  it.each(['hostile_throw', 'hostile_reject', 'hostile_init'])(
    'registry.execute(%s) answers a sentence',
    async (id) => {
      const res = await hostileTools(make).execute(id, {}, { sessionID: 's' }, initCtx());
      expect(res.success).toBe(false);
      expect(res.result.output).toMatch(SENTENCE);
      expect(res.result.output).not.toMatch(/TypeError|Cannot convert|undefined/);
      await letRejectionsSurface();
    },
  );

  it('the LangChain adapter answers a ToolMessage with the sentence', async () => {
    const tools = await hostileTools(make).tools({ ids: ['hostile_throw', 'hostile_reject'], initCtx: initCtx() });
    for (const t of tools) {
      const msg = (await t.invoke({ type: 'tool_call', id: `c-${t.name}`, name: t.name, args: {} })) as ToolMessage;
      expect(msg).toBeInstanceOf(ToolMessage);
      expect(String(msg.content)).toMatch(SENTENCE);
      expect(String(msg.content)).not.toMatch(/TypeError|Cannot convert|undefined/);
    }
    await letRejectionsSurface();
  });

  it('an onToolResult listener that throws it leaves the result as it was', async () => {
    const r = createRegistry({ loopGuard: false });
    r.register(
      Tool.define(
        { id: 'fine', permissions: { required: ['read'] } },
        {
          description: 'Answers.',
          parameters: z.object({}),
          execute: async () => ({ title: 'ok', metadata: {}, output: 'fine' }),
        },
      ),
    );
    const [t] = await r.tools({
      ids: ['fine'],
      initCtx: initCtx(),
      onToolResult: () => {
        throw make();
      },
    });
    const msg = (await t.invoke({ type: 'tool_call', id: 'c-fine', name: 'fine', args: {} })) as ToolMessage;
    expect(String(msg.content)).toContain('fine');
    await letRejectionsSurface();
  });
});
