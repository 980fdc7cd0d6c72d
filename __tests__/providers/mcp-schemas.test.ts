/**
 * Imported MCP tools carry arbitrary JSON Schemas: before they reach a provider class they are
 * normalised (src/schema/portable.ts) so every API accepts them. Proven with
 * @modelcontextprotocol/server-everything over real stdio, through every provider class, and
 * end to end through ChatGoogleGenerativeAI against the Gemini mock; plus a hostile hand-written
 * schema ($ref recursion, allOf, oneOf, const, type lists, exclusive bounds, integer enums).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { Tool, createRegistry, connectMcp, portableJsonSchema, type Registry } from '../../src/index.js';
import { startMockProvider, toolResults } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { apiViolations, sentTools, type Api } from './subsets.js';

const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');

let registry: Registry;
let close: () => Promise<void>;

beforeAll(async () => {
  registry = createRegistry();
  const conn = await connectMcp(registry, {
    servers: [{ name: 'everything', transport: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] }],
  });
  close = () => conn.close();
}, 60_000);
afterAll(() => close?.());

async function sendTo(api: Api, tools: unknown[]) {
  const mock = await startMockProvider([{ text: 'ok' }]);
  try {
    await chatModel(api, mock.url).bindTools!(tools as never)
      .invoke([new HumanMessage('hi')])
      .catch(() => undefined);
    return mock.requests[0];
  } finally {
    await mock.close();
  }
}

describe("server-everything's tools", () => {
  it('arrive with schemas Gemini would refuse as they are ($schema, format: uri)', async () => {
    const ids = registry.ids();
    expect(ids).toEqual(expect.arrayContaining(['everything__echo', 'everything__get-sum']));
    const raw = await Promise.all(ids.map(async (id) => (await registry.get(id)!.info.init()).jsonSchema!));
    const refused = raw.flatMap((parameters, i) => apiViolations('gemini', { name: ids[i], parameters }));
    expect(refused).toEqual(expect.arrayContaining([expect.stringMatching(/Unknown name "\$schema"/)]));
    expect(refused).toContainEqual(expect.stringMatching(/format "uri"/));
  });

  for (const api of APIS) {
    it(`${api}: every imported tool is accepted`, async () => {
      const tools = await registry.tools();
      const req = await sendTo(api, tools);
      expect(req.refused).toBeUndefined();
      const sent = sentTools(api, req.body);
      expect(sent.map((t) => t.name)).toEqual(registry.ids());
      expect(sent.flatMap((t) => apiViolations(api, t))).toEqual([]);
      const text = JSON.stringify(sent);
      expect(text).not.toContain('$schema');
      expect(text).not.toContain('"format":"uri"');
    });
  }

  it('ChatGoogleGenerativeAI agent calls an imported tool and gets its result', async () => {
    const mock = await startMockProvider([
      { calls: [{ name: 'everything__get-sum', args: { a: 2, b: 40 }, id: 'gem_sum' }] },
      (req) => ({ text: `Sum: ${toolResults(req)[0].content}` }),
    ]);
    try {
      const agent = createAgent({ model: chatModel('gemini', mock.url), tools: await registry.tools() });
      const out = await agent.invoke({ messages: [new HumanMessage('add 2 and 40')] });
      expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
      expect((out.messages.at(-1) as unknown as { text: string }).text).toMatch(/Sum: .*42/);
    } finally {
      await mock.close();
    }
  });
});

describe('portableJsonSchema on a hostile schema', () => {
  const hostile = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: {
      node: {
        type: 'object',
        description: 'A tree node',
        properties: {
          name: { type: 'string', description: 'Name' },
          children: { type: 'array', items: { $ref: '#/$defs/node' } },
        },
      },
    },
    properties: {
      tree: { $ref: '#/$defs/node' },
      mode: { const: 'fast', description: 'Mode' },
      level: { enum: [1, 2, 3], description: 'Level' },
      ratio: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1, description: 'Ratio' },
      count: { type: 'integer', exclusiveMinimum: 0, maximum: 9007199254740991, description: 'Count' },
      maybe: { type: ['string', 'null'], description: 'Maybe' },
      either: { oneOf: [{ type: 'string' }, { type: 'integer' }], description: 'Either' },
      merged: {
        allOf: [
          { type: 'object', properties: { a: { type: 'string', description: 'A' } }, required: ['a'] },
          { properties: { b: { type: 'boolean', description: 'B' } } },
        ],
        description: 'Merged',
      },
      link: { type: 'string', format: 'uri', description: 'Link' },
      free: { description: 'Anything' },
      dict: { type: 'object', additionalProperties: { type: 'string' }, description: 'Dict' },
    },
    required: ['tree', 'ghost'],
    additionalProperties: false,
  };

  it('keeps what every API accepts and moves the rest into descriptions', () => {
    const out = portableJsonSchema(hostile) as {
      properties: Record<string, Record<string, unknown>>;
      required: string[];
    };
    const p = out.properties;
    expect(JSON.stringify(out)).not.toMatch(
      /\$ref|\$defs|\$schema|const|exclusive|oneOf|allOf|9007199254740991|additionalProperties/,
    );
    expect(out.required).toEqual(['tree']);
    expect(p.mode).toEqual({ type: 'string', enum: ['fast'], description: 'Mode' });
    expect(p.level).toEqual({ type: 'integer', description: 'Level (one of 1, 2, 3)' });
    expect(p.ratio).toMatchObject({ minimum: 0, maximum: 1 });
    expect(p.count).toEqual({ type: 'integer', minimum: 1, description: 'Count' });
    expect(p.maybe).toEqual({ anyOf: [{ type: 'string' }, { type: 'null' }], description: 'Maybe' });
    expect(p.either).toEqual({ anyOf: [{ type: 'string' }, { type: 'integer' }], description: 'Either' });
    expect(p.merged).toMatchObject({
      type: 'object',
      required: ['a'],
      properties: { a: { type: 'string' }, b: { type: 'boolean' } },
    });
    expect(p.link).toEqual({ type: 'string', description: 'Link (format: uri)' });
    expect(p.free).toEqual({ type: 'string', description: 'Anything (any JSON value)' });
    // Recursion is inlined a bounded number of levels, then cut with a note.
    expect(JSON.stringify(p.tree)).toContain('nested deeper than shown here');
  });

  for (const api of APIS) {
    it(`${api}: a tool with that schema is accepted`, async () => {
      const r = createRegistry();
      r.register(
        Tool.define('hostile', {
          description: 'A tool whose JSON Schema uses everything',
          parameters: z.record(z.string(), z.unknown()),
          jsonSchema: hostile,
          async execute() {
            return { title: '', metadata: {}, output: '' };
          },
        }),
        { permissions: { required: ['read'] } },
      );
      const req = await sendTo(api, await r.tools());
      expect(req.refused).toBeUndefined();
      expect(sentTools(api, req.body).flatMap((t) => apiViolations(api, t))).toEqual([]);
    });
  }
});
