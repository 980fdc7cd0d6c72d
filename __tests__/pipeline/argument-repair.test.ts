/**
 * The argument repair table (docs/authoring-tools.md#argument-repair): each malformed input a weak
 * model sends is repaired by the pipeline before validation, and each repair is reported in the
 * result's `metadata.repairs`, through the LangChain adapter as an agent meets it.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { z } from 'zod';
import type { ToolMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { Tool, createRegistry, type ArgumentRepair } from '../../src/index.js';
import { callTool } from '../support/tool-call.js';

const STATUS = ['pending', 'in_progress', 'completed'] as const;
const probe = Tool.define('probe', {
  description: 'Echoes its parsed arguments as JSON.',
  parameters: z.object({
    flag: z.boolean().optional(),
    count: z.number().optional(),
    int: z.number().int().optional(),
    name: z.string().optional(),
    tags: z.array(z.string()).optional(),
    nums: z.array(z.number()).optional(),
    opts: z.object({ deep: z.boolean().optional(), level: z.number().optional() }).optional(),
    priority: z.enum(['low', 'medium', 'high']).optional(),
    status: z.enum(STATUS).optional(),
    items: z.array(z.object({ status: z.enum(STATUS), done: z.boolean().optional() })).optional(),
  }),
  async execute(args) {
    return { title: 'probe', metadata: {}, output: JSON.stringify(args) };
  },
});

type Row = [what: string, args: unknown, parsed: Record<string, unknown>, repairs: ArgumentRepair[]];
const r = (path: string, from: unknown, to: unknown): ArgumentRepair => ({ path, from, to });
const removed = (path: string, from: unknown = null): ArgumentRepair => ({ path, from, removed: true });

/** The table: what the model sent, what the tool received, what metadata.repairs says. */
const TABLE: Row[] = [
  ['string "true" for a boolean', { flag: 'true' }, { flag: true }, [r('flag', 'true', true)]],
  ['string "false" for a boolean', { flag: 'false' }, { flag: false }, [r('flag', 'false', false)]],
  ['upper-case "TRUE"', { flag: 'TRUE' }, { flag: true }, [r('flag', 'TRUE', true)]],
  ['padded " False "', { flag: ' False ' }, { flag: false }, [r('flag', ' False ', false)]],
  ['string integer for a number', { count: '5' }, { count: 5 }, [r('count', '5', 5)]],
  ['negative decimal string', { count: '-3.5' }, { count: -3.5 }, [r('count', '-3.5', -3.5)]],
  ['exponent string', { count: '1e3' }, { count: 1000 }, [r('count', '1e3', 1000)]],
  ['padded number string', { count: ' 42 ' }, { count: 42 }, [r('count', ' 42 ', 42)]],
  ['string for an integer', { int: '7' }, { int: 7 }, [r('int', '7', 7)]],
  ['"3.0" for an integer', { int: '3.0' }, { int: 3 }, [r('int', '3.0', 3)]],
  ['JSON array in a string', { tags: '["a","b"]' }, { tags: ['a', 'b'] }, [r('tags', '["a","b"]', ['a', 'b'])]],
  [
    'JSON array in a Markdown code fence',
    { tags: '```json\n["a"]\n```' },
    { tags: ['a'] },
    [r('tags', '```json\n["a"]\n```', ['a'])],
  ],
  ['one plain string for a list of strings', { tags: 'solo' }, { tags: ['solo'] }, [r('tags', 'solo', ['solo'])]],
  ['JSON array of numbers in a string', { nums: '[1,2]' }, { nums: [1, 2] }, [r('nums', '[1,2]', [1, 2])]],
  [
    'JSON array of number strings in a string (two rounds)',
    { nums: '["1","2"]' },
    { nums: [1, 2] },
    [r('nums', '["1","2"]', ['1', '2']), r('nums[0]', '1', 1), r('nums[1]', '2', 2)],
  ],
  ['number strings inside an array', { nums: ['3', 4] }, { nums: [3, 4] }, [r('nums[0]', '3', 3)]],
  [
    'one number string for a list of numbers',
    { nums: '5' },
    { nums: [5] },
    [r('nums', '5', ['5']), r('nums[0]', '5', 5)],
  ],
  [
    'JSON object in a string',
    { opts: '{"deep":true}' },
    { opts: { deep: true } },
    [r('opts', '{"deep":true}', { deep: true })],
  ],
  [
    'boolean string in a nested object',
    { opts: { deep: 'true' } },
    { opts: { deep: true } },
    [r('opts.deep', 'true', true)],
  ],
  ['number string in a nested object', { opts: { level: '2' } }, { opts: { level: 2 } }, [r('opts.level', '2', 2)]],
  ['null for an optional boolean', { flag: null }, {}, [removed('flag')]],
  ['null for an optional number', { count: null }, {}, [removed('count')]],
  ['null for an optional string', { name: null }, {}, [removed('name')]],
  ['null for an optional array', { tags: null }, {}, [removed('tags')]],
  ['null for an optional object', { opts: null }, {}, [removed('opts')]],
  // OpenAI strict mode makes an optional enum required-but-nullable, so a model leaving it out sends null.
  ['null for an optional enum', { priority: null }, {}, [removed('priority')]],
  [
    'null for an optional nested field',
    { opts: { deep: null, level: 1 } },
    { opts: { level: 1 } },
    [removed('opts.deep')],
  ],
  ['upper-case enum value', { priority: 'HIGH' }, { priority: 'high' }, [r('priority', 'HIGH', 'high')]],
  [
    'capitalised, padded enum value',
    { priority: ' Medium ' },
    { priority: 'medium' },
    [r('priority', ' Medium ', 'medium')],
  ],
  [
    'enum value with a space for "_"',
    { status: 'In Progress' },
    { status: 'in_progress' },
    [r('status', 'In Progress', 'in_progress')],
  ],
  [
    'enum value with "-" for "_"',
    { status: 'in-progress' },
    { status: 'in_progress' },
    [r('status', 'in-progress', 'in_progress')],
  ],
  [
    'enum inside JSON in a string (two rounds)',
    { items: '[{"status":"Pending"}]' },
    { items: [{ status: 'pending' }] },
    [r('items', '[{"status":"Pending"}]', [{ status: 'Pending' }]), r('items[0].status', 'Pending', 'pending')],
  ],
  [
    'boolean string in an array of objects',
    { items: [{ status: 'completed', done: 'true' }] },
    { items: [{ status: 'completed', done: true }] },
    [r('items[0].done', 'true', true)],
  ],
  [
    'the whole arguments as a JSON string',
    '{"flag":"true"}',
    { flag: true },
    [r('(arguments)', '{"flag":"true"}', { flag: 'true' }), r('flag', 'true', true)],
  ],
  [
    'several fields at once',
    { flag: 'true', count: '2', priority: 'LOW' },
    { flag: true, count: 2, priority: 'low' },
    [r('flag', 'true', true), r('count', '2', 2), r('priority', 'LOW', 'low')],
  ],
  [
    'a well-formed call: nothing repaired, nothing reported',
    { flag: true, tags: ['x'] },
    { flag: true, tags: ['x'] },
    [],
  ],
];

/** Inputs that are not guessed at: the call fails with a message naming the field. */
const NOT_REPAIRED: Array<[what: string, args: Record<string, unknown>, field: RegExp]> = [
  ['"yes" for a boolean', { flag: 'yes' }, /- flag: Invalid input: expected boolean, received string/],
  ['words for a number', { count: 'five' }, /- count: Invalid input: expected number, received string/],
  [
    'an enum value that matches none',
    { priority: 'urgent' },
    /- priority: Invalid option: expected one of "low"\|"medium"\|"high"/,
  ],
  ['a fraction for an integer', { int: '1.5' }, /- int: Invalid input: expected number, received string/],
];

let tools: StructuredToolInterface[];
beforeAll(async () => {
  tools = await createRegistry()
    .register(probe, { permissions: { required: [] } })
    .tools();
});

async function call(args: unknown): Promise<ToolMessage & { result: Tool.Result }> {
  if (typeof args !== 'string') return callTool(tools, 'probe', args as Record<string, unknown>);
  const msg = (await tools[0].invoke({ type: 'tool_call', id: 'call_str', name: 'probe', args })) as ToolMessage;
  return Object.assign(msg, { result: msg.artifact as Tool.Result });
}

describe(`argument repair table (${TABLE.length - 1} malformed inputs)`, () => {
  it.each(TABLE)('%s', async (_what, args, parsed, repairs) => {
    const res = await call(args);
    expect(res.status).toBe('success');
    expect(JSON.parse(String(res.content))).toEqual(parsed);
    expect(res.result.metadata.repairs).toEqual(repairs.length ? repairs : undefined);
  });

  it.each(NOT_REPAIRED)('does not guess: %s', async (_what, args, field) => {
    const res = await call(args);
    expect(res.status).toBe('error');
    expect(res.content).toMatch(field);
    expect(res.content).toMatch(/Rewrite the input so it satisfies the tool's schema/);
  });
});
