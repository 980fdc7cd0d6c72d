/**
 * Schema conformance: every tool `registerBuiltinTools` registers (so tools added later are covered
 * too) is bound to each real provider class, and the tool definitions the class actually sends to a
 * loopback mock are checked against that API's documented subset and toolbelt's own rules.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { HumanMessage } from '@langchain/core/messages';
import { createAgent } from 'langchain';
import { Tool, createRegistry, registerBuiltinTools, ToolSchemaError } from '../../src/index.js';
import { schemaEffects } from '../../src/schema/index.js';
import { startMockProvider, toolResults } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { apiViolations, sentTools, toolbeltViolations, toolsText, type Api } from './subsets.js';
import { tempDir } from '../support/helpers.js';

let workspace: { dir: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  workspace = await tempDir('toolbelt-schemas-');
  // skill is offered only when Agent Skills exist: one skill folder, so its schema is sent too.
  await mkdir(path.join(workspace.dir, 'skills', 'demo'), { recursive: true });
  await writeFile(
    path.join(workspace.dir, 'skills', 'demo', 'SKILL.md'),
    '---\nname: demo\ndescription: A demo skill for the schema checks.\n---\nSay hello.\n',
  );
  // web_search is registered only with a backend configured; configure one so it is checked too.
  process.env.SEARXNG_URL ??= 'http://127.0.0.1:9';
});
afterAll(() => workspace.cleanup());

/** Binds every built-in (or those in `only`) to the `api` class, sends one request to a mock, returns what was sent. */
async function sendBuiltins(api: Api, strict = false, only?: string[]) {
  const registry = registerBuiltinTools(createRegistry(), only);
  // task is offered only with sub-agents (registry.tools() leaves out what cannot run): give it one,
  // so that every built-in's schema is sent. The factory is never called here.
  const subagents = { helper: { model: () => chatModel(api, 'http://127.0.0.1:9'), permissions: ['read' as const] } };
  const skills = { dirs: [path.join(workspace.dir, 'skills')] };
  const tools = await registry.tools({ initCtx: { workingDir: workspace.dir, subagents, skills }, strict });
  const mock = await startMockProvider([{ text: 'ok' }]);
  try {
    const model = chatModel(api, mock.url, { strict });
    await model.bindTools!(tools).invoke([new HumanMessage('hi')]);
    expect(mock.requests.map((r) => r.refused)).toEqual([undefined]);
    return { ids: registry.ids(), body: mock.requests[0].body };
  } finally {
    await mock.close();
  }
}

describe('every built-in tool, as each provider class sends it', () => {
  const sizes: Record<string, number> = {};
  let count = 0;
  afterAll(() => {
    // The measured size of the default tool set's definitions, per API (reported in docs/providers.md).
    console.log(`tool definitions sent (characters, ${count} tools): ${JSON.stringify(sizes)}`);
  });

  for (const api of APIS) {
    it(`${api}: all tools are sent, inside the API's subset and toolbelt's rules`, async () => {
      const { ids, body } = await sendBuiltins(api);
      const sent = sentTools(api, body);
      expect(sent.map((t) => t.name)).toEqual(ids);
      expect(sent.flatMap((t) => apiViolations(api, t))).toEqual([]);
      expect(sent.flatMap((t) => toolbeltViolations(t))).toEqual([]);
      sizes[api] = toolsText(api, body).length;
      count = ids.length;
      // Without a search backend configured (a user's default), web_search is not registered.
      const withoutSearch = await sendBuiltins(
        api,
        false,
        ids.filter((id) => id !== 'web_search'),
      );
      sizes[`${api} (no web_search)`] = toolsText(api, withoutSearch.body).length;
    });
  }

  for (const api of ['openai-chat', 'openai-responses'] as const) {
    it(`${api} strict mode: every tool is sent with strict: true and passes the strict subset`, async () => {
      const { ids, body } = await sendBuiltins(api, true);
      const sent = sentTools(api, body);
      expect(sent.map((t) => [t.name, t.strict])).toEqual(ids.map((id) => [id, true]));
      expect(sent.flatMap((t) => apiViolations(api, t))).toEqual([]);
      sizes[`${api} (strict)`] = toolsText(api, body).length;
      const withoutSearch = await sendBuiltins(
        api,
        true,
        ids.filter((id) => id !== 'web_search'),
      );
      sizes[`${api} (strict, no web_search)`] = toolsText(api, withoutSearch.body).length;
    });
  }

  it('schemaEffects finds a preprocess, a transform, a refinement and an unrepresentable type, at their paths', () => {
    const schema = z.object({
      a: z.preprocess((v) => v === 'yes', z.boolean()),
      b: z.object({ c: z.string().transform((v) => v.length) }),
      d: z.array(z.number().refine((n) => n % 2 === 0)),
      e: z.date().optional(),
      f: z.string(),
    });
    expect(schemaEffects(schema).map((e) => [e.path, e.kind])).toEqual([
      ['a', 'transform'],
      ['b.c', 'transform'],
      ['d[]', 'refinement'],
      ['e', 'unrepresentable'],
    ]);
  });

  it('no built-in parameter schema carries a transform, refinement or unrepresentable type', async () => {
    const registry = registerBuiltinTools(createRegistry());
    const effects: Record<string, unknown> = {};
    for (const id of registry.ids()) {
      const tool = await registry.get(id)!.info.init({ workingDir: workspace.dir });
      const found = schemaEffects(tool.parameters);
      if (found.length) effects[id] = found;
    }
    expect(effects).toEqual({});
  });
});

describe('strict mode end to end', () => {
  it('optional fields arrive as null from the model and reach execute as absent', async () => {
    const seen: Record<string, unknown>[] = [];
    const registry = createRegistry();
    registry.register(
      Tool.define('probe', {
        description: 'Records its arguments',
        parameters: z.object({
          name: z.string().describe('A name'),
          count: z.number().int().min(1).optional().describe('How many'),
          tags: z
            .array(z.object({ k: z.string().describe('key'), v: z.string().optional().describe('value') }))
            .optional()
            .describe('Tags'),
        }),
        async execute(args) {
          seen.push(args);
          return { title: 'probed', metadata: {}, output: JSON.stringify(args) };
        },
      }),
      { permissions: { required: ['read'] } },
    );
    const tools = await registry.tools({ strict: true });
    const mock = await startMockProvider([
      { calls: [{ name: 'probe', args: { name: 'a', count: null, tags: [{ k: 'x', v: null }] }, id: 'call_p1' }] },
      (req) => ({ text: `got ${toolResults(req)[0].content}` }),
    ]);
    try {
      const agent = createAgent({ model: chatModel('openai-chat', mock.url, { strict: true }), tools });
      const out = await agent.invoke({ messages: [new HumanMessage('probe it')] });
      expect(seen).toEqual([{ name: 'a', tags: [{ k: 'x' }] }]);
      expect('count' in seen[0]).toBe(false);
      expect(out.messages.at(-1)!.text).toBe('got {"name":"a","tags":[{"k":"x"}]}');
      const [def] = sentTools('openai-chat', mock.requests[0].body);
      expect(def.parameters).toMatchObject({
        required: ['name', 'count', 'tags'],
        additionalProperties: false,
        properties: { count: { type: ['integer', 'null'] } },
      });
    } finally {
      await mock.close();
    }
  });
});

describe('a user tool whose schema cannot be sent fails where it is defined', () => {
  it('z.preprocess: names the tool, the field and the fix', () => {
    const define = () =>
      Tool.define('flaky', {
        description: 'x',
        parameters: z.object({
          opts: z
            .object({ force: z.preprocess((v) => v === 'yes', z.boolean()).describe('Force it') })
            .describe('Options'),
        }),
        async execute() {
          return { title: '', metadata: {}, output: '' };
        },
      });
    expect(define).toThrow(ToolSchemaError);
    expect(define).toThrow(
      'Tool "flaky": parameter "opts.force" uses a transform (z.preprocess), which cannot be represented in the JSON Schema sent to model providers. Fix: declare the plain type the model should send (e.g. z.boolean()) and convert inside execute',
    );
  });

  it('z.date() in an init-function tool: the error comes when the registry initialises it, naming the fix', async () => {
    const registry = createRegistry();
    registry.register(
      Tool.define('when', async () => ({
        description: 'x',
        parameters: z.object({ at: z.array(z.date()).describe('Dates') }),
        async execute() {
          return { title: '', metadata: {}, output: '' };
        },
      })),
      { permissions: { required: ['read'] } },
    );
    await expect(registry.tools()).rejects.toThrow(
      /Tool "when": parameter "at\[\]" uses z\.date\(\).*Fix: use z\.string\(\) described as an ISO 8601 date/,
    );
  });

  it('parameters that are not an object are refused with the fix', () => {
    expect(() =>
      Tool.define('scalar', {
        description: 'x',
        parameters: z.string(),
        async execute() {
          return { title: '', metadata: {}, output: '' };
        },
      }),
    ).toThrow(/Tool "scalar": its parameters must be a z\.object\(\{\.\.\.\}\).*got z\.string\(\)/);
  });
});
